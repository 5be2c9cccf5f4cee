#include "rows.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t window_ms = 10000;

void virt_rows_set_window(uint64_t ms)
{
	window_ms = ms;
}

uint64_t virt_rows_window(void)
{
	return window_ms;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void virt_row_init(struct virt_row *r, pmInDom indom, pmInDom hindom,
		   const char *name)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->indom = indom;
	r->hindom = hindom;
	r->inst = -1;
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++) {
		r->hinst[b] = -1;
		r->ref[b] = (struct virt_bucket_ref){ r, b };
	}
}

void virt_row_set(struct virt_row *r, const uint64_t *v, unsigned int nv,
		  const uint64_t *hist)
{
	for (unsigned int w = 0; w < nv && w < VIRT_ROW_WORDS; w++)
		r->v[w] = r->base[w] + v[w];
	if (!hist)
		return;
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		r->hist[b] = r->hbase[b] + hist[b];
	if (r->hindom == PM_INDOM_NULL || r->no_percentiles)
		return;
	if (!r->win) {
		static const uint64_t none[VIRT_HIST_BUCKETS];

		if (!(r->win = calloc(1, sizeof(*r->win))))
			return;		/* no percentiles for this row */
		/* a row is usually born with counts in it (a queue first seen
		 * after its first kicks): they happened since the last refresh,
		 * so they belong to the current window, not to the baseline */
		virt_window_push(r->win, mono_ms(), window_ms, none);
		r->win->t_ms[0] -= window_ms / VIRT_WIN_PERIODS;	/* next push is not "too soon" */
	}
	virt_window_push(r->win, mono_ms(), window_ms, r->hist);
}

int virt_row_percentile(const struct virt_row *r, unsigned int p, pmAtomValue *atom)
{
	uint64_t v;

	if (!virt_window_percentile(r->win, mono_ms(), window_ms, r->hist, p, &v))
		return PMDA_FETCH_NOVALUES;
	atom->ull = v;
	return PMDA_FETCH_STATIC;
}

void virt_row_rebase(struct virt_row *r)
{
	memcpy(r->base, r->v, sizeof(r->base));
	memcpy(r->hbase, r->hist, sizeof(r->hbase));
}

void virt_row_expose(struct virt_row *r, bool always)
{
	char name[VIRT_NAME_MAX + 64];

	if (r->indom != PM_INDOM_NULL && r->inst < 0 && (always || r->v[0])) {
		r->inst = pmdaCacheStore(r->indom, PMDA_CACHE_ADD, r->name, r);
		if (r->inst < 0)
			pmNotifyErr(LOG_ERR, "instance %s: %s", r->name, pmErrStr(r->inst));
	}
	if (r->hindom == PM_INDOM_NULL)
		return;
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++) {
		if (r->hinst[b] >= 0 || !r->hist[b])
			continue;
		virt_bucket_name(name, sizeof(name), r->name, b);
		r->hinst[b] = pmdaCacheStore(r->hindom, PMDA_CACHE_ADD, name, &r->ref[b]);
	}
}

void virt_row_retire(struct virt_row *r)
{
	char name[VIRT_NAME_MAX + 64];

	if (r->inst >= 0)
		pmdaCacheStore(r->indom, PMDA_CACHE_CULL, r->name, NULL);
	r->inst = -1;
	free(r->win);
	r->win = NULL;
	if (r->hindom == PM_INDOM_NULL)
		return;
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++) {
		if (r->hinst[b] < 0)
			continue;
		virt_bucket_name(name, sizeof(name), r->name, b);
		pmdaCacheStore(r->hindom, PMDA_CACHE_CULL, name, NULL);
		r->hinst[b] = -1;
	}
}

struct virt_row *virt_row_of(pmInDom indom, unsigned int inst)
{
	void *priv = NULL;

	if (pmdaCacheLookup(indom, (int)inst, NULL, &priv) != PMDA_CACHE_ACTIVE)
		return NULL;
	return priv;
}

struct virt_bucket_ref *virt_bucket_of_inst(pmInDom hindom, unsigned int inst)
{
	void *priv = NULL;

	if (pmdaCacheLookup(hindom, (int)inst, NULL, &priv) != PMDA_CACHE_ACTIVE)
		return NULL;
	return priv;
}

int virt_row_fetch(enum virt_indom_id indom, int word, unsigned int inst,
		   pmAtomValue *atom)
{
	if (word == VIRT_ROW_HIST) {
		struct virt_bucket_ref *ref = virt_bucket_of_inst(virt_indom(indom), inst);

		if (!ref)
			return PM_ERR_INST;
		atom->ull = ref->row->hist[ref->bucket];
		return PMDA_FETCH_STATIC;
	} else {
		struct virt_row *r = virt_row_of(virt_indom(indom), inst);

		if (!r || word < 0 || word >= VIRT_ROW_WORDS)
			return PM_ERR_INST;
		atom->ull = r->v[word];
		return PMDA_FETCH_STATIC;
	}
}
