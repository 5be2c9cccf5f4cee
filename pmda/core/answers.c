/* Answers: a fetch of one of a family's metrics answered as the module's
 * answers table says (pmda/core/rows.h). */
#include "virt.h"
#include "rows.h"

/* The count of the histogram bucket instance inst of hindom. */
static int answer_bucket(enum virt_indom_id hindom, unsigned int inst, pmAtomValue *atom)
{
	const uint64_t *count = virt_bucket_of_inst(virt_indom(hindom), inst);

	if (!count)
		return PM_ERR_INST;
	atom->ull = *count;
	return PMDA_FETCH_STATIC;
}

static int answer_string(const char *s, const char *empty, pmAtomValue *atom)
{
	atom->cp = (char *)(s && s[0] ? s : empty ? empty : "");
	return PMDA_FETCH_STATIC;
}

static int answer_sum(const struct virt_sums *s, unsigned int w, pmAtomValue *atom)
{
	if (w >= s->n)
		return PMDA_FETCH_NOVALUES;
	atom->ull = s->sum[w];
	return PMDA_FETCH_STATIC;
}

/* The instance's name as the prefix of its buckets ("web-01": "web_01"),
 * in a buffer pmdaFetch copies before the next instance's answer. */
static int answer_bucket_prefix(enum virt_indom_id id, unsigned int inst, pmAtomValue *atom)
{
	static char prefix[VIRT_NAME_MAX];
	char *name = NULL;
	size_t i;

	if (pmdaCacheLookup(virt_indom(id), (int)inst, &name, NULL) != PMDA_CACHE_ACTIVE)
		return PM_ERR_INST;
	for (i = 0; i + 1 < sizeof(prefix) && name[i]; i++)
		prefix[i] = virt_bucket_char(name[i]);
	prefix[i] = '\0';
	atom->cp = prefix;
	return PMDA_FETCH_STATIC;
}

/* The answers that need no row. */
static int answer_rowless(const struct virt_answer *a, struct virt_family *fam,
			  unsigned int inst, pmAtomValue *atom)
{
	char *name = NULL;

	switch (a->kind) {
	case VIRT_ANS_BUCKET:
		return answer_bucket(a->indom, inst, atom);
	case VIRT_ANS_NAME:
		if (pmdaCacheLookup(virt_indom(a->indom), (int)inst, &name, NULL) != PMDA_CACHE_ACTIVE)
			return PM_ERR_INST;
		atom->cp = name;
		return PMDA_FETCH_STATIC;
	case VIRT_ANS_BUCKET_PREFIX:
		return answer_bucket_prefix(a->indom, inst, atom);
	case VIRT_ANS_STATE:
		if (!fam->priv)
			return PMDA_FETCH_NOVALUES;
		atom->ull = *(const uint64_t *)(const void *)((const char *)fam->priv + a->off);
		return PMDA_FETCH_STATIC;
	case VIRT_ANS_EVENTS:
		return fam->priv ? a->events(fam, atom) : PMDA_FETCH_NOVALUES;
	default:
		return PMDA_FETCH_NOVALUES;
	}
}

int virt_answer(const struct virt_answer *a, struct virt_family *fam, unsigned int inst,
		pmAtomValue *atom)
{
	const char *row;

	switch (a->kind) {
	case VIRT_ANS_WORD:
	case VIRT_ANS_SUM:
	case VIRT_ANS_PERCENTILE:
	case VIRT_ANS_STRING:
	case VIRT_ANS_STRING_VIA:
		break;
	default:
		return answer_rowless(a, fam, inst, atom);
	}
	if (!(row = (const char *)virt_row_of(virt_indom(a->indom), inst)))
		return PM_ERR_INST;
	if (a->kind == VIRT_ANS_PERCENTILE)
		return virt_row_percentile((const struct virt_row *)(const void *)(row + a->off),
					   a->pct, atom);
	if (a->when && !*(const bool *)(const void *)(row + a->when))
		return PMDA_FETCH_NOVALUES;
	if (a->kind == VIRT_ANS_STRING)
		return answer_string(row + a->off, a->empty, atom);
	if (a->kind == VIRT_ANS_STRING_VIA) {
		const char *p = *(const char *const *)(const void *)(row + a->off);

		return answer_string(p ? p + a->at : NULL, a->empty, atom);
	}
	if (a->kind == VIRT_ANS_SUM)
		return answer_sum((const struct virt_sums *)(const void *)(row + a->off), a->word, atom);
	atom->ull = *(const uint64_t *)(const void *)(row + a->off);
	return PMDA_FETCH_STATIC;
}
