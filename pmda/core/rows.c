#include "rows.h"

#include <stdlib.h>
#include <string.h>

static uint64_t window_ms = 10000;
static size_t windows_freed;

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
	return virt_mono_ns() / 1000000;
}

static uint64_t (*clock_ms)(void) = mono_ms;

void virt_rows_set_clock(uint64_t (*now_ms)(void))
{
	clock_ms = now_ms ? now_ms : mono_ms;
}

size_t virt_rows_freed(void)
{
	size_t n = windows_freed;

	windows_freed = 0;
	return n;
}

void virt_row_init(struct virt_row *r, pmInDom indom, pmInDom hindom,
		   const char *name)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->indom = indom;
	r->hindom = hindom;
	r->inst = -1;
}

static void free_window(struct virt_row *r)
{
	if (!r->win)
		return;
	windows_freed += virt_window_size(r->win->nb);
	free(r->win);
	r->win = NULL;
}

/* Nothing counted in the last window, for certain: the snapshot that
 * percentiles take deltas from is a whole window old and holds what the
 * histogram holds now. */
static bool window_idle(const struct virt_row *r, uint64_t now)
{
	uint64_t delta[VIRT_HIST_BUCKETS];
	bool full;

	if (!virt_window_delta(r->win, now, window_ms, r->hist, delta, &full) || !full)
		return false;
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		if (delta[b])
			return false;
	return true;
}

/* A window is kept only while the histogram changes: an idle row's
 * percentiles have no value, so its window is freed, and made again at the
 * next change with what the row held before it (zeros for a new row) as
 * the baseline. The change happened since the last refresh, so it belongs
 * to the current window: the baseline is dated one period back, which
 * also keeps the next snapshot from being "too soon". */
static void update_window(struct virt_row *r, const uint64_t *before, bool changed)
{
	uint64_t now = clock_ms(), period = window_ms / VIRT_WIN_PERIODS;

	if (r->win && !changed && window_idle(r, now)) {
		free_window(r);
		return;
	}
	if (!r->win) {
		if (!changed)
			return;		/* idle */
		if (virt_window_push(&r->win, now > period ? now - period : 0, window_ms, before))
			return;		/* out of memory: no percentiles for now */
	}
	virt_window_push(&r->win, now, window_ms, r->hist);
}

/* The row's words, and its histogram, as sums over the row's own storage:
 * one live object (this attach's map), earlier objects' in the base. */
static struct virt_sums row_words(struct virt_row *r)
{
	return (struct virt_sums){ .base = r->base, .sum = r->v, .n = VIRT_ROW_WORDS };
}

static struct virt_sums row_hist(struct virt_row *r)
{
	return (struct virt_sums){ .base = r->hbase, .sum = r->hist, .n = VIRT_HIST_BUCKETS };
}

void virt_row_set(struct virt_row *r, const uint64_t *v, unsigned int nv,
		  const uint64_t *hist)
{
	uint64_t before[VIRT_HIST_BUCKETS];
	struct virt_sums s = row_words(r), h = row_hist(r);

	if (nv) {
		virt_sums_begin(&s);
		virt_sums_add_n(&s, v, nv);
	}
	if (!hist)
		return;
	memcpy(before, r->hist, sizeof(before));
	if (h.base)
		virt_sums_begin(&h);
	else
		memset(r->hist, 0, sizeof(r->hist));
	virt_sums_add(&h, hist);
	if (r->hindom == PM_INDOM_NULL || r->no_percentiles)
		return;
	update_window(r, before, memcmp(before, r->hist, sizeof(before)) != 0);
}

int virt_row_percentile(const struct virt_row *r, unsigned int p, pmAtomValue *atom)
{
	uint64_t v;

	if (!virt_window_percentile(r->win, clock_ms(), window_ms, r->hist, p, &v))
		return PMDA_FETCH_NOVALUES;
	atom->ull = v;
	return PMDA_FETCH_STATIC;
}

void virt_row_rebase(struct virt_row *r)
{
	struct virt_sums s = row_words(r), h;

	virt_sums_rebase(&s);
	if (!r->hbase && !(r->hbase = malloc(sizeof(r->hist)))) {
		pmNotifyErr(LOG_ERR, "%s: out of memory: its histogram restarts from 0", r->name);
		return;
	}
	h = row_hist(r);
	virt_sums_rebase(&h);
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
		int inst;

		if ((r->exposed >> b & 1) || !r->hist[b])
			continue;
		virt_bucket_name(name, sizeof(name), r->name, b);
		inst = pmdaCacheStore(r->hindom, PMDA_CACHE_ADD, name, &r->hist[b]);
		if (inst >= 0)
			r->exposed |= (uint64_t)1 << b;	/* else: again next refresh */
	}
}

/* A retired row's instances are hidden, not culled: a row that comes back
 * under its name (a VM restarted as web01) gets its instance ids back
 * (pmdaCacheStore(PMDA_CACHE_ADD) reactivates a hidden name), so a
 * pmlogger archive holds one instance, not two of one name. Hidden names
 * are bounded per instance domain (VIRT_HIDDEN_MAX): past it, a retired
 * name is culled (pmdaCachePurge culls only entries PMDA_CACHE_SAVE
 * stamped, so it cannot age them out). *hidden: the domain's hidden
 * names, counted once per retire (PMDA_CACHE_SIZE_INACTIVE walks the
 * cache). */
static void hide(pmInDom indom, const char *name, int *hidden)
{
	bool keep = *hidden < VIRT_HIDDEN_MAX;

	pmdaCacheStore(indom, keep ? PMDA_CACHE_HIDE : PMDA_CACHE_CULL, name, NULL);
	*hidden += keep;
}

void virt_row_retire(struct virt_row *r)
{
	char name[VIRT_NAME_MAX + 64];
	int hidden;

	if (r->inst >= 0) {
		hidden = pmdaCacheOp(r->indom, PMDA_CACHE_SIZE_INACTIVE);
		hide(r->indom, r->name, &hidden);
	}
	r->inst = -1;
	free_window(r);
	hidden = r->exposed ? pmdaCacheOp(r->hindom, PMDA_CACHE_SIZE_INACTIVE) : 0;
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++) {
		if (!(r->exposed >> b & 1))
			continue;
		virt_bucket_name(name, sizeof(name), r->name, b);
		hide(r->hindom, name, &hidden);
	}
	r->exposed = 0;
}

void virt_row_release(struct virt_row *r)
{
	virt_row_retire(r);
	free(r->hbase);
	r->hbase = NULL;
}

struct virt_row *virt_row_of(pmInDom indom, unsigned int inst)
{
	void *priv = NULL;

	if (pmdaCacheLookup(indom, (int)inst, NULL, &priv) != PMDA_CACHE_ACTIVE)
		return NULL;
	return priv;
}

const uint64_t *virt_bucket_of_inst(pmInDom hindom, unsigned int inst)
{
	void *priv = NULL;

	if (pmdaCacheLookup(hindom, (int)inst, NULL, &priv) != PMDA_CACHE_ACTIVE)
		return NULL;
	return priv;
}

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

/* ------------------------------------------------------------- sums */

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

/* ------------------------------------------------------------- tables */

uint64_t virt_name_key(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = (h ^ *c) * 0x100000001b3ull;
	return h;
}

static size_t key_slot(uint64_t key, size_t nslot)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;	/* murmur3's fmix64 */
	key ^= key >> 33;
	return (size_t)key & (nslot - 1);
}

/* The index position of entry i's key, from its home slot on. */
static void index_entry(struct virt_table *t, size_t i)
{
	size_t h = key_slot(t->v[i]->key, t->nslot);

	while (t->slot[h])
		h = (h + 1) & (t->nslot - 1);
	t->slot[h] = (uint32_t)i + 1;
}

/* (Re)build the index, growing it to keep it at most half full. */
static int reindex(struct virt_table *t)
{
	size_t nslot = t->nslot ? t->nslot : 64;

	while (nslot <= 2 * t->n)
		nslot *= 2;
	if (nslot != t->nslot) {
		uint32_t *slot = calloc(nslot, sizeof(*slot));

		if (!slot)
			return -1;
		free(t->slot);
		t->slot = slot;
		t->nslot = nslot;
	} else {
		memset(t->slot, 0, nslot * sizeof(*t->slot));
	}
	for (size_t i = 0; i < t->n; i++)
		index_entry(t, i);
	return 0;
}

void *virt_table_find_if(const struct virt_table *t, uint64_t key,
			 bool (*match)(const void *entry, const void *arg), const void *arg)
{
	if (!t->nslot)
		return NULL;
	for (size_t h = key_slot(key, t->nslot); t->slot[h]; h = (h + 1) & (t->nslot - 1)) {
		struct virt_keyed *e = t->v[t->slot[h] - 1];

		if (e->key == key && (!match || match(e, arg)))
			return e;
	}
	return NULL;
}

void *virt_table_find(const struct virt_table *t, uint64_t key)
{
	return virt_table_find_if(t, key, NULL, NULL);
}

static bool has_name(const void *entry, const void *name)
{
	return strcmp(((const struct virt_keyed *)entry)->row.name, name) == 0;
}

void *virt_table_find_name(const struct virt_table *t, const char *name)
{
	return virt_table_find_if(t, virt_name_key(name), has_name, name);
}

static struct virt_sums *sums_of(const struct virt_table *t, struct virt_keyed *e)
{
	return (struct virt_sums *)(void *)((char *)e + t->sums_off);
}

/* The entry's row and sums released, the entry freed. */
static void entry_free(const struct virt_table *t, struct virt_keyed *e)
{
	virt_row_release(&e->row);
	if (t->nsums)
		virt_sums_release(sums_of(t, e));
	free(e);
}

void *virt_table_add(struct virt_table *t, uint64_t key, pmInDom indom,
		     pmInDom hindom, const char *name)
{
	struct virt_keyed *e;

	if (VIRT_GROW(t->v, t->cap, t->n + 1) < 0 || !(e = calloc(1, t->entry_size)))
		return NULL;
	if (t->nsums && virt_sums_init(sums_of(t, e), t->nsums) < 0) {
		free(e);
		return NULL;
	}
	e->key = key;
	virt_row_init(&e->row, indom, hindom, name);
	t->v[t->n++] = e;
	if (t->nslot <= 2 * t->n) {
		if (reindex(t) < 0) {
			entry_free(t, t->v[--t->n]);
			return NULL;
		}
	} else {
		index_entry(t, t->n - 1);
	}
	return e;
}

void *virt_table_get_name(struct virt_table *t, pmInDom indom, pmInDom hindom,
			  const char *name)
{
	void *e = virt_table_find_name(t, name);

	return e ? e : virt_table_add(t, virt_name_key(name), indom, hindom, name);
}

void virt_table_rekey(struct virt_table *t, void *entry, uint64_t key)
{
	((struct virt_keyed *)entry)->key = key;
	reindex(t);		/* same size: cannot fail */
}

/* Rare (a VM or queue gone for good): remove and rebuild the index. */
void virt_table_remove(struct virt_table *t, void *entry)
{
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i] != entry)
			continue;
		entry_free(t, t->v[i]);
		t->v[i] = t->v[--t->n];
		reindex(t);		/* same size: cannot fail */
		return;
	}
}

void virt_table_clear(struct virt_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		entry_free(t, t->v[i]);
	free(t->v);
	free(t->slot);
	t->v = NULL;
	t->slot = NULL;
	t->n = t->cap = t->nslot = 0;
}
