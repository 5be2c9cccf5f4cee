/* Sums: counters kept monotonic as the objects that count them come and
 * go (pmda/core/rows.h). */
#include "virt.h"
#include "rows.h"

#include <stdlib.h>
#include <string.h>

int virt_sums_init(struct virt_sums *s, unsigned int n)
{
	uint64_t *words = calloc(2 * (size_t)(n ? n : 1), sizeof(*words));

	if (!words)
		return -1;
	*s = (struct virt_sums){ .base = words, .sum = words + n, .n = n };
	return 0;
}

void virt_sums_release(struct virt_sums *s)
{
	free(s->base);
	*s = (struct virt_sums){ 0 };
}

void virt_sums_fold_n(struct virt_sums *s, const uint64_t *w, unsigned int nw)
{
	for (unsigned int i = 0; i < s->n && i < nw; i++)
		s->base[i] += w[i];
}

void virt_sums_fold(struct virt_sums *s, const uint64_t *w)
{
	virt_sums_fold_n(s, w, s->n);
}

void virt_sums_fold_word(struct virt_sums *s, unsigned int i, uint64_t v)
{
	if (i < s->n)
		s->base[i] += v;
}

void virt_sums_begin(struct virt_sums *s)
{
	if (s->n)
		memcpy(s->sum, s->base, s->n * sizeof(*s->sum));
	s->live = 0;
}

void virt_sums_add_n(struct virt_sums *s, const uint64_t *w, unsigned int nw)
{
	for (unsigned int i = 0; i < s->n && i < nw; i++)
		s->sum[i] += w[i];
	s->live++;
}

void virt_sums_add(struct virt_sums *s, const uint64_t *w)
{
	virt_sums_add_n(s, w, s->n);
}

void virt_sums_rebase(struct virt_sums *s)
{
	if (s->n)
		memcpy(s->base, s->sum, s->n * sizeof(*s->base));
}
