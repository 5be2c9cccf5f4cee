/* Rows (pmda/core/rows.c, answers.c, sums.c, keyed.c): bucket instances, re-attach bases, percentile
 * windows kept only while a row's histogram changes, the keyed table,
 * sums and answers. */
#include "virt.h"
#include "rows.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static uint64_t fake_now = 1000000;

static uint64_t fake_clock(void)
{
	return fake_now;
}

/* rows.c's collaborators in the agent */
uint64_t virt_mono_ns(void)
{
	return fake_now * 1000000;
}

pmInDom virt_indom(enum virt_indom_id id)
{
	return pmInDom_build(511, (unsigned int)id);
}

static bool pct(const struct virt_row *r, unsigned int p, uint64_t *out)
{
	pmAtomValue a;

	if (virt_row_percentile(r, p, &a) != PMDA_FETCH_STATIC)
		return false;
	*out = a.ull;
	return true;
}

/* one refresh per window period, the histogram unchanged */
static void idle_periods(struct virt_row *r, const uint64_t *hist, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		fake_now += virt_rows_window() / VIRT_WIN_PERIODS;
		virt_row_set(r, NULL, 0, hist);
	}
}

/* A family entry: the table's header first, then the family's fields. */
struct fam_entry {
	struct virt_keyed k;
	int extra;
};

static bool extra_is(const void *entry, const void *arg)
{
	return ((const struct fam_entry *)entry)->extra == *(const int *)arg;
}

/* The keyed table: by key and by name, stable pointers across growth,
 * removal, and a name whose hash collides with a key. */
static void check_table(void)
{
	struct virt_table t = VIRT_TABLE_OF(struct fam_entry);
	pmInDom indom = virt_indom(2), hindom = virt_indom(3);
	struct fam_entry *first, *e;
	char name[32];
	int ok = 1;

	CHECK(virt_table_find(&t, 7) == NULL && virt_table_find_name(&t, "x") == NULL);
	first = virt_table_add(&t, 7, indom, hindom, "nr7");
	if (!first) {
		CHECK(first != NULL);
		return;
	}
	CHECK(first->k.key == 7 && first->extra == 0);
	CHECK(strcmp(first->k.row.name, "nr7") == 0 && first->k.row.inst == -1);
	first->extra = 42;
	for (uint64_t k = 100; k < 1100; k++) {
		snprintf(name, sizeof(name), "nr%llu", (unsigned long long)k);
		if (!virt_table_add(&t, k, indom, PM_INDOM_NULL, name))
			ok = 0;
	}
	CHECK(ok && t.n == 1001 && t.nslot > 2 * t.n);
	CHECK(virt_table_find(&t, 7) == first && first->extra == 42);
	for (uint64_t k = 100; k < 1100; k++) {
		e = virt_table_find(&t, k);
		if (!e || e->k.key != k)
			ok = 0;
	}
	CHECK(ok);
	CHECK(virt_table_find(&t, 1100) == NULL);

	/* by name: a named entry is keyed by its name's hash */
	e = virt_table_get_name(&t, indom, hindom, "virtio1/req.0");
	CHECK(e && e->k.key == virt_name_key("virtio1/req.0"));
	CHECK(virt_table_get_name(&t, indom, hindom, "virtio1/req.0") == e);
	CHECK(virt_table_find_name(&t, "virtio1/req.0") == e);
	CHECK(virt_table_find_name(&t, "virtio1/req.1") == NULL);
	/* an entry whose key equals a name's hash is not that name */
	virt_table_add(&t, virt_name_key("web01"), indom, hindom, "other");
	CHECK(virt_table_find_name(&t, "web01") == NULL);
	CHECK(virt_table_get_name(&t, indom, hindom, "web01") != NULL);

	/* keys that collide, told apart by a match */
	{
		struct fam_entry *a = virt_table_add(&t, 4242, indom, hindom, "a");
		struct fam_entry *b = virt_table_add(&t, 4242, indom, hindom, "b");
		int one = 1, two = 2, three = 3;

		if (a && b) {
			a->extra = 1;
			b->extra = 2;
		}
		CHECK(a && b && virt_table_find_if(&t, 4242, extra_is, &one) == a);
		CHECK(virt_table_find_if(&t, 4242, extra_is, &two) == b);
		CHECK(virt_table_find_if(&t, 4242, extra_is, &three) == NULL);
		virt_table_remove(&t, a);
		CHECK(virt_table_find_if(&t, 4242, extra_is, &two) == b);
		virt_table_remove(&t, b);
	}

	/* rekey (a VM's row: its pid while it runs, its name once it
	 * exited, a new pid when it is restarted): same entry, new key */
	{
		struct fam_entry *vm = virt_table_add(&t, 31337, indom, hindom, "vm7");

		virt_table_rekey(&t, vm, virt_name_key("vm7"));
		CHECK(vm && virt_table_find(&t, 31337) == NULL && virt_table_find_name(&t, "vm7") == vm);
		virt_table_rekey(&t, vm, 31338);
		CHECK(virt_table_find(&t, 31338) == vm && virt_table_find_name(&t, "vm7") == NULL);
		CHECK(virt_table_find(&t, 7) == first);
		virt_table_remove(&t, vm);
	}

	/* removal: the others stay where they are and are still found */
	virt_table_remove(&t, virt_table_find(&t, 500));
	CHECK(virt_table_find(&t, 500) == NULL && t.n == 1003);
	CHECK(virt_table_find(&t, 7) == first && virt_table_find(&t, 1099) != NULL);
	CHECK(virt_table_find_name(&t, "virtio1/req.0") == e);
	virt_table_clear(&t);
	CHECK(t.n == 0 && t.v == NULL && virt_table_find(&t, 7) == NULL);
	CHECK(t.entry_size == sizeof(struct fam_entry));
	CHECK(virt_table_add(&t, 1, indom, hindom, "again") != NULL);
	virt_table_clear(&t);
}

/* An entry whose words and second histogram live outside its row. */
struct ans_bin {
	int dummy;
	char path[16];
};
struct ans_entry {
	struct virt_keyed k;
	struct virt_row second;
	uint64_t sum[3];
	struct virt_sums sums;
	bool measured;
	char label[8];
	const struct ans_bin *bin;
};
struct ans_state {
	int dummy;
	uint64_t total;
};

enum { A_WORD, A_WHEN, A_BUCKET, A_PCT, A_PCT2, A_NONE, A_NAME, A_STR, A_VIA, A_STATE,
       A_EVENTS, A_SUM, A_SUM_WHEN, A_SUM_PAST, A_N };

static int events_called;
static int ans_events(struct virt_family *fam, pmAtomValue *atom)
{
	(void)fam;
	events_called++;
	atom->ull = 99;
	return PMDA_FETCH_STATIC;
}

/* Answers: a word, a word while measured, a bucket, percentiles of the
 * main and of a second row, no value, the instance's name, strings in
 * the entry and through its pointer (empty: a default), a word of the
 * family's state (no instances), events, and an unknown instance. */
static void check_answers(void)
{
	static const struct virt_answer ans[A_N] = {
		[A_WORD] = { .kind = VIRT_ANS_WORD, .indom = 4,
			     .off = VIRT_ANSWER_OFF(struct ans_entry, k.row, sum[2]) },
		[A_WHEN] = { .kind = VIRT_ANS_WORD, .indom = 4,
			     .off = VIRT_ANSWER_OFF(struct ans_entry, k.row, sum[1]),
			     .when = VIRT_ANSWER_OFF(struct ans_entry, k.row, measured) },
		[A_BUCKET] = { .kind = VIRT_ANS_BUCKET, .indom = 5 },
		[A_PCT] = { .kind = VIRT_ANS_PERCENTILE, .indom = 4,
			    .off = VIRT_ANSWER_OFF(struct ans_entry, k.row, k.row), .pct = 50 },
		[A_PCT2] = { .kind = VIRT_ANS_PERCENTILE, .indom = 4,
			     .off = VIRT_ANSWER_OFF(struct ans_entry, k.row, second), .pct = 50 },
		[A_NONE] = VIRT_ANSWER_NOVALUES,
		[A_NAME] = { .kind = VIRT_ANS_NAME, .indom = 4 },
		[A_STR] = { .kind = VIRT_ANS_STRING, .indom = 4,
			    .off = VIRT_ANSWER_OFF(struct ans_entry, k.row, label), .empty = "none" },
		[A_VIA] = { .kind = VIRT_ANS_STRING_VIA, .indom = 4,
			    .off = VIRT_ANSWER_OFF(struct ans_entry, k.row, bin),
			    .at = (ptrdiff_t)offsetof(struct ans_bin, path), .empty = "" },
		[A_STATE] = VIRT_ANSWER_STATE(struct ans_state, total),
		[A_EVENTS] = VIRT_ANSWER_EVENTS(ans_events),
		[A_SUM] = { .kind = VIRT_ANS_SUM, .indom = 4,
			    .off = VIRT_ANSWER_OFF(struct ans_entry, k.row, sums), .word = 4 },
		[A_SUM_WHEN] = { .kind = VIRT_ANS_SUM, .indom = 4,
				 .off = VIRT_ANSWER_OFF(struct ans_entry, k.row, sums), .word = 0,
				 .when = VIRT_ANSWER_OFF(struct ans_entry, k.row, measured) },
		[A_SUM_PAST] = { .kind = VIRT_ANS_SUM, .indom = 4,
				 .off = VIRT_ANSWER_OFF(struct ans_entry, k.row, sums), .word = 5 },
	};
	static const struct ans_bin bin = { 0, "/usr/bin/x" };
	struct ans_state state = { 0, 1234 };
	struct virt_family fam = { 0 };
	struct virt_table t = VIRT_TABLE_OF(struct ans_entry);
	struct ans_entry *e = virt_table_add(&t, 1, virt_indom(4), virt_indom(5), "q");
	uint64_t h[VIRT_HIST_BUCKETS] = { 0 }, h2[VIRT_HIST_BUCKETS] = { 0 };
	pmAtomValue a;
	int hinst;

	if (!e) {
		CHECK(e != NULL);
		return;
	}
	virt_row_init(&e->second, PM_INDOM_NULL, virt_indom(6), "q");
	e->sum[2] = 77;
	h[3] = 5;
	h2[20] = 1;
	virt_row_set(&e->k.row, NULL, 0, h);
	virt_row_set(&e->second, NULL, 0, h2);
	virt_row_expose(&e->k.row, true);
	virt_row_expose(&e->second, true);
	CHECK(virt_answer(&ans[A_WORD], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_STATIC &&
	      a.ull == 77);
	e->sum[1] = 0;
	CHECK(virt_answer(&ans[A_WHEN], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_NOVALUES);
	e->measured = true;
	CHECK(virt_answer(&ans[A_WHEN], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_STATIC &&
	      a.ull == 0);
	CHECK(virt_answer(&ans[A_PCT], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_STATIC &&
	      a.ull >= 8 && a.ull <= 15);
	CHECK(virt_answer(&ans[A_PCT2], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_STATIC &&
	      a.ull >= 1u << 20 && a.ull < 1u << 21);
	CHECK(pmdaCacheLookupName(virt_indom(5), "q::8-15", &hinst, NULL) == PMDA_CACHE_ACTIVE);
	CHECK(virt_answer(&ans[A_BUCKET], &fam, (unsigned int)hinst, &a) == PMDA_FETCH_STATIC &&
	      a.ull == 5);
	CHECK(virt_answer(&ans[A_NONE], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_NOVALUES);
	CHECK(virt_answer(&ans[A_WORD], &fam, (unsigned int)e->k.row.inst + 1, &a) == PM_ERR_INST);
	CHECK(virt_answer(&ans[A_NAME], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_STATIC &&
	      strcmp(a.cp, "q") == 0);
	CHECK(virt_answer(&ans[A_STR], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_STATIC &&
	      strcmp(a.cp, "none") == 0);
	snprintf(e->label, sizeof(e->label), "blk");
	CHECK(virt_answer(&ans[A_STR], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_STATIC &&
	      strcmp(a.cp, "blk") == 0);
	CHECK(virt_answer(&ans[A_VIA], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_STATIC &&
	      strcmp(a.cp, "") == 0);
	e->bin = &bin;
	CHECK(virt_answer(&ans[A_VIA], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_STATIC &&
	      strcmp(a.cp, "/usr/bin/x") == 0);
	/* the family's state: none before attach, then its word */
	CHECK(virt_answer(&ans[A_STATE], &fam, PM_IN_NULL, &a) == PMDA_FETCH_NOVALUES);
	CHECK(virt_answer(&ans[A_EVENTS], &fam, PM_IN_NULL, &a) == PMDA_FETCH_NOVALUES &&
	      events_called == 0);
	fam.priv = &state;
	CHECK(virt_answer(&ans[A_STATE], &fam, PM_IN_NULL, &a) == PMDA_FETCH_STATIC && a.ull == 1234);
	CHECK(virt_answer(&ans[A_EVENTS], &fam, PM_IN_NULL, &a) == PMDA_FETCH_STATIC &&
	      events_called == 1 && a.ull == 99);
	CHECK(virt_answer(&ans[A_NAME], &fam, (unsigned int)e->k.row.inst + 1, &a) == PM_ERR_INST);
	/* words of sums: none before init, then the sum's; past its words none */
	e->measured = false;
	CHECK(virt_answer(&ans[A_SUM], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_NOVALUES);
	CHECK(virt_sums_init(&e->sums, 5) == 0);
	e->sums.sum[4] = 44;
	e->sums.sum[0] = 10;
	CHECK(virt_answer(&ans[A_SUM], &fam, (unsigned int)e->k.row.inst, &a) == PMDA_FETCH_STATIC &&
	      a.ull == 44);
	CHECK(virt_answer(&ans[A_SUM_WHEN], &fam, (unsigned int)e->k.row.inst, &a) ==
	      PMDA_FETCH_NOVALUES);
	e->measured = true;
	CHECK(virt_answer(&ans[A_SUM_WHEN], &fam, (unsigned int)e->k.row.inst, &a) ==
	      PMDA_FETCH_STATIC && a.ull == 10);
	CHECK(virt_answer(&ans[A_SUM_PAST], &fam, (unsigned int)e->k.row.inst, &a) ==
	      PMDA_FETCH_NOVALUES);
	CHECK(virt_answer(&ans[A_SUM], &fam, (unsigned int)e->k.row.inst + 1, &a) == PM_ERR_INST);
	virt_sums_release(&e->sums);
	virt_row_release(&e->second);
	virt_table_clear(&t);
}

/* A table of entries with sums: each entry's made with it, zeroed, and
 * released with it (remove, clear). */
static void check_table_sums(void)
{
	struct virt_table t = VIRT_TABLE_OF_SUMS(struct ans_entry, sums, 4);
	struct ans_entry *a = virt_table_add(&t, 1, PM_INDOM_NULL, PM_INDOM_NULL, "a");
	struct ans_entry *b = virt_table_add(&t, 2, PM_INDOM_NULL, PM_INDOM_NULL, "b");

	CHECK(a && b && a->sums.n == 4 && b->sums.n == 4 && a->sums.base != b->sums.base);
	CHECK(a && a->sums.base[3] == 0 && a->sums.sum[3] == 0);
	virt_table_remove(&t, a);
	CHECK(t.n == 1 && virt_table_find(&t, 2) == b);
	virt_table_clear(&t);
	CHECK(t.n == 0);
}

/* Sums: base + live objects' words; a gone object's words stay (fold),
 * and a detach that forgets every object keeps the sum (rebase). */
static void check_sums(void)
{
	struct virt_sums s = { 0 };
	const uint64_t a[3] = { 1, 2, 3 }, b[3] = { 10, 20, 30 }, a2[3] = { 4, 5, 6 };

	CHECK(virt_sums_init(&s, 3) == 0 && s.n == 3 && s.base && s.sum);
	CHECK(s.sum[0] == 0 && s.base[2] == 0 && s.live == 0);
	virt_sums_begin(&s);
	virt_sums_add(&s, a);
	virt_sums_add(&s, b);
	CHECK(s.live == 2 && s.sum[0] == 11 && s.sum[1] == 22 && s.sum[2] == 33);
	/* a gone: its last words into the base; b grew */
	virt_sums_fold(&s, a);
	virt_sums_begin(&s);
	virt_sums_add(&s, a2);
	CHECK(s.live == 1 && s.base[0] == 1 && s.sum[0] == 5 && s.sum[2] == 9);
	/* everything forgotten (a detach): the sum stays the base */
	virt_sums_rebase(&s);
	virt_sums_begin(&s);
	CHECK(s.live == 0 && s.sum[0] == 5 && s.sum[1] == 7 && s.sum[2] == 9);
	/* objects of fewer words (the last: the agent's own), one word folded
	 * of an object that goes on; past the words nothing */
	virt_sums_add_n(&s, b, 2);
	CHECK(s.live == 1 && s.sum[0] == 15 && s.sum[1] == 27 && s.sum[2] == 9);
	virt_sums_fold_n(&s, b, 2);
	virt_sums_fold_word(&s, 2, 100);
	virt_sums_fold_word(&s, 3, 1000);
	virt_sums_begin(&s);
	CHECK(s.live == 0 && s.sum[0] == 15 && s.sum[1] == 27 && s.sum[2] == 109);
	virt_sums_release(&s);
	CHECK(s.n == 0 && s.base == NULL && s.sum == NULL);
	/* none at all */
	CHECK(virt_sums_init(&s, 0) == 0 && s.n == 0);
	virt_sums_begin(&s);
	virt_sums_add(&s, a);
	CHECK(s.live == 1);
	virt_sums_release(&s);
}

/* the instance names made of kernel-provided parts */
static void check_sanitize(void)
{
	char buf[64];

	virt_sanitize(buf, sizeof(buf), "virtio-net 0\x01\xff/rx.0");
	CHECK(strcmp(buf, "virtio_net_0__/rx.0") == 0);
	virt_sanitize(buf, 4, "abcdef");
	CHECK(strcmp(buf, "abc") == 0);
}

static void check_grow(void)
{
	int *a = NULL;
	size_t cap = 0;

	CHECK(VIRT_GROW(a, cap, 1) == 0 && a && cap == 16);
	CHECK(VIRT_GROW(a, cap, 16) == 0 && cap == 16);
	CHECK(VIRT_GROW(a, cap, 17) == 0 && cap == 32);
	a[31] = 1;
	CHECK(VIRT_GROW(a, cap, 100) == 0 && cap == 128 && a[31] == 1);
	free(a);
}

int main(void)
{
	static struct virt_row r;
	uint64_t h[VIRT_HIST_BUCKETS] = { 0 }, v = 0;
	uint64_t cnt[1] = { 5 };
	pmInDom indom = virt_indom(0), hindom = virt_indom(1);
	const uint64_t *bucket;
	void *priv = NULL;
	int inst;

	virt_rows_set_clock(fake_clock);
	virt_rows_set_window(8000);
	virt_row_init(&r, indom, hindom, "vm1");
	CHECK(!pct(&r, 50, &v));

	/* a new row: what it holds was counted in the current window */
	h[3] = 5;
	virt_row_set(&r, cnt, 1, h);
	virt_row_expose(&r, false);
	CHECK(r.inst >= 0 && r.v[0] == 5);
	CHECK(pct(&r, 50, &v) && v >= 8 && v <= 15);
	CHECK(r.exposed == 1u << 3);
	CHECK(pmdaCacheLookupName(hindom, "vm1::8-15", &inst, &priv) == PMDA_CACHE_ACTIVE);
	bucket = virt_bucket_of_inst(hindom, (unsigned int)inst);
	CHECK(bucket == &r.hist[3] && bucket == priv && *bucket == 5);

	/* idle: the percentile has no value once a window has passed with
	 * nothing counted, and then the window is freed */
	idle_periods(&r, h, VIRT_WIN_PERIODS - 1);
	CHECK(r.win && pct(&r, 50, &v));
	idle_periods(&r, h, 2);
	CHECK(!pct(&r, 50, &v));
	idle_periods(&r, h, 2);
	CHECK(r.win == NULL);
	CHECK(virt_rows_freed() == virt_window_size(1));
	CHECK(virt_rows_freed() == 0);
	CHECK(!pct(&r, 50, &v));

	/* counts again: the window comes back with the old histogram as its
	 * baseline, so the percentile sees only the new values (bucket 10),
	 * not the 5 old ones in bucket 3 */
	h[10] = 4;
	idle_periods(&r, h, 1);
	CHECK(r.win != NULL);
	CHECK(pct(&r, 50, &v) && v >= 1024 && v <= 2047);
	CHECK(pct(&r, 99, &v) && v >= 1024 && v <= 2047);
	virt_row_expose(&r, false);
	CHECK(r.exposed == ((1u << 3) | (1u << 10)));

	/* a re-attach: the new BPF object counts from 0, the row goes on */
	CHECK(r.hbase == NULL);
	virt_row_rebase(&r);
	CHECK(r.hbase != NULL);
	memset(h, 0, sizeof(h));
	h[10] = 1;
	cnt[0] = 1;
	fake_now += 1000;
	virt_row_set(&r, cnt, 1, h);
	CHECK(r.hist[3] == 5 && r.hist[10] == 5 && r.v[0] == 6);

	/* retired: instances gone, counts kept (the row may come back, and
	 * then under the same instance ids: one instance in an archive) */
	int was = r.inst, hwas = -1, hnow = -2;
	CHECK(pmdaCacheLookupName(hindom, "vm1::8-15", &hwas, NULL) == PMDA_CACHE_ACTIVE);
	virt_row_retire(&r);
	CHECK(r.inst < 0 && r.exposed == 0 && r.win == NULL);
	CHECK(pmdaCacheLookupName(hindom, "vm1::8-15", NULL, NULL) != PMDA_CACHE_ACTIVE);
	CHECK(pmdaCacheOp(indom, PMDA_CACHE_SIZE_ACTIVE) == 0);
	CHECK(r.hist[3] == 5);
	virt_row_expose(&r, false);
	CHECK(pmdaCacheLookupName(hindom, "vm1::1024-2047", NULL, NULL) == PMDA_CACHE_ACTIVE);
	CHECK(r.inst == was);
	CHECK(pmdaCacheLookupName(hindom, "vm1::8-15", &hnow, NULL) == PMDA_CACHE_ACTIVE && hnow == hwas);
	virt_row_release(&r);
	CHECK(r.hbase == NULL && r.exposed == 0);
	/* gone for good: its names are culled, not kept hidden */
	CHECK(pmdaCacheLookupName(indom, "vm1", NULL, NULL) < 0);
	CHECK(pmdaCacheLookupName(hindom, "vm1::8-15", NULL, NULL) < 0);

	/* a row without percentiles never has a window */
	virt_row_init(&r, indom, hindom, "vm2");
	r.no_percentiles = true;
	virt_row_set(&r, cnt, 1, h);
	CHECK(r.win == NULL);
	check_table();
	check_answers();
	check_sums();
	check_table_sums();
	check_sanitize();
	check_grow();
	return UNIT_DONE();
}
