#include "virt.h"
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

void virt_sanitize(char *dst, size_t len, const char *src)
{
	size_t i;

	if (len == 0)
		return;
	for (i = 0; i + 1 < len && src[i]; i++) {
		unsigned char c = (unsigned char)src[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '_' || c == '.' ||
			 c == ':' || c == '/';

		dst[i] = src[i];
		if (!ok)
			dst[i] = '_';
	}
	dst[i] = '\0';
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

/*
 * A culled name stays in the pmdaCache (a PMDA_CACHE_EMPTY entry, ~150
 * bytes) until the cache's hash table next doubles or PMDA_CACHE_REORG:
 * with names that never come back (pids), memory that grows with the
 * names ever culled. REORG frees them, but PCP 6.0.3's also frees a culled
 * entry of the highest instance id, after which the cache appends (a use
 * after free in the next pmdaCacheStore, valgrind): a domain is
 * reorganised only while its highest id, the last an add returned, is
 * not culled.
 */
#define REORG_CULLED 64

static struct culls {
	pmInDom indom;
	int top;			/* highest instance id seen */
	unsigned int culled;		/* since the last REORG */
} culls[VIRT_NINDOMS + 8];

static struct culls *culls_of(pmInDom indom)
{
	for (size_t i = 0; i < sizeof(culls) / sizeof(culls[0]); i++) {
		if (culls[i].indom == indom)
			return &culls[i];
		if (!culls[i].indom) {
			culls[i] = (struct culls){ .indom = indom, .top = -1 };
			return &culls[i];
		}
	}
	return NULL;
}

static void note_inst(pmInDom indom, int inst)
{
	struct culls *c = culls_of(indom);

	if (c && inst > c->top)
		c->top = inst;
}

static void cull(pmInDom indom, const char *name)
{
	struct culls *c = culls_of(indom);

	if (pmdaCacheStore(indom, PMDA_CACHE_CULL, name, NULL) < 0 || !c)
		return;
	if (++c->culled < REORG_CULLED || pmdaCacheLookup(indom, c->top, NULL, NULL) < 0)
		return;
	pmdaCacheOp(indom, PMDA_CACHE_REORG);
	c->culled = 0;
}

void virt_row_expose(struct virt_row *r, bool always)
{
	char name[VIRT_NAME_MAX + 64];

	if (r->indom != PM_INDOM_NULL && r->inst < 0 && (always || r->v[0])) {
		r->inst = pmdaCacheStore(r->indom, PMDA_CACHE_ADD, r->name, r);
		if (r->inst < 0)
			pmNotifyErr(LOG_ERR, "instance %s: %s", r->name, pmErrStr(r->inst));
		note_inst(r->indom, r->inst);
	}
	if (r->hindom == PM_INDOM_NULL)
		return;
	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++) {
		int inst;

		if ((r->exposed >> b & 1) || !r->hist[b])
			continue;
		virt_bucket_name(name, sizeof(name), r->name, b);
		inst = pmdaCacheStore(r->hindom, PMDA_CACHE_ADD, name, &r->hist[b]);
		note_inst(r->hindom, inst);
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
 * stamped, so it cannot age them out); a released row's are culled
 * (virt_row_release). *hidden: the domain's hidden names, counted once
 * per retire (PMDA_CACHE_SIZE_INACTIVE walks the cache). */
static void hide(pmInDom indom, const char *name, int *hidden)
{
	bool keep = *hidden < VIRT_HIDDEN_MAX;

	if (keep)
		pmdaCacheStore(indom, PMDA_CACHE_HIDE, name, NULL);
	else
		cull(indom, name);
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

/* A name retire hid, unless a row has it again. */
static void cull_hidden(pmInDom indom, const char *name)
{
	if (pmdaCacheLookupName(indom, name, NULL, NULL) == PMDA_CACHE_INACTIVE)
		cull(indom, name);
}

/* Gone for good (an unnamed VM, a queue of an exited VMM): its names are
 * not kept hidden for a return, ~150 bytes each for as long as the agent
 * runs (qa 504: some 30 names per VM that came and went). */
void virt_row_release(struct virt_row *r)
{
	char name[VIRT_NAME_MAX + 64];

	virt_row_retire(r);
	if (r->indom != PM_INDOM_NULL)
		cull_hidden(r->indom, r->name);
	for (unsigned int b = 0; r->hindom != PM_INDOM_NULL && b < VIRT_HIST_BUCKETS; b++) {
		if (!r->hist[b])
			continue;
		virt_bucket_name(name, sizeof(name), r->name, b);
		cull_hidden(r->hindom, name);
	}
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
