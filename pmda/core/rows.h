/*
 * Rows: one instance of a family's main instance domain (an exit reason, a
 * queue, a VM), its summed values and, optionally, a log2 histogram exposed
 * as "<name>::<lo>-<hi>" instances of a second domain. Shared by families.
 * This header also declares what is built on rows: sums (sums.c), answers
 * (answers.c) and keyed tables (keyed.c); rows themselves are rows.c.
 *
 * Rows never move once created (fetch finds them through pmdaCache private
 * pointers); a row is exposed once its count is non-zero, and histogram
 * buckets once they are non-zero (counters only grow, so instances only
 * appear, until the row is retired).
 */
#ifndef VIRT_ROWS_H
#define VIRT_ROWS_H

#include "array.h"
#include "hist.h"
#include "ids.h"

#include <pcp/pmapi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct virt_family;		/* virt.h */

#define VIRT_ROW_WORDS 4
#define VIRT_NAME_MAX 128
_Static_assert(VIRT_HIST_BUCKETS <= 64, "virt_row.exposed has a bit per bucket");

/*
 * Memory per row matters: the kvm family can hold 10 000 hypercall rows.
 * Bucket instances point at their count in hist[] (rows never move), the
 * base of a re-attach is allocated only when one happens, and a window is
 * kept only while the row's histogram changes (see virt_row_set).
 */
struct virt_row {
	char name[VIRT_NAME_MAX];
	pmInDom indom, hindom;		/* hindom PM_INDOM_NULL: no histogram */
	int inst;			/* -1 until exposed */
	uint64_t exposed;		/* bit b: bucket b has its instance */
	uint64_t v[VIRT_ROW_WORDS];	/* family-defined: count, time, ... */
	uint64_t hist[VIRT_HIST_BUCKETS];
	/* what earlier BPF objects counted (before a re-attach), so counters
	 * stay monotonic when kernel modules come and go: v and hist are the
	 * sums (struct virt_sums, below) of these bases and this attach's
	 * words; hbase is NULL until the first re-attach */
	uint64_t base[VIRT_ROW_WORDS];
	uint64_t *hbase;
	uint64_t changed_ms;		/* when hist last changed */
	bool live;			/* seen in the latest refresh */
	bool no_percentiles;		/* the family exports none for this row */
	struct virt_hist_window *win;	/* for percentiles; NULL while idle */
};

/* Percentile window length (agent option percentile_window_s). */
void virt_rows_set_window(uint64_t ms);
uint64_t virt_rows_window(void);
/* The clock behind windows, in ms (CLOCK_MONOTONIC; unit tests set their
 * own). */
void virt_rows_set_clock(uint64_t (*now_ms)(void));
/* Bytes of percentile windows freed since the last call (idle rows): the
 * caller may give the heap back to the system. */
size_t virt_rows_freed(void);

/* Copy src into dst (len bytes incl. NUL) keeping [A-Za-z0-9_.:/] and
 * mapping everything else ('-', space, control and non-ASCII bytes) to '_'.
 * Kernel-provided names (device, queue, process) pass through this before
 * they become instance names. */
void virt_sanitize(char *dst, size_t len, const char *src);

/* Initialise a row named name (callers sanitize kernel-provided parts). */
void virt_row_init(struct virt_row *r, pmInDom indom, pmInDom hindom,
		   const char *name);
/* Set the row's values from a fresh read of the BPF maps (values since
 * the current attach) plus the base. hist may be NULL. */
void virt_row_set(struct virt_row *r, const uint64_t *v, unsigned int nv,
		  const uint64_t *hist);
/* The BPF object is going away: fold current values into the base. */
void virt_row_rebase(struct virt_row *r);

/* Make the row's instance (if always or v[0] != 0) and its non-zero
 * buckets visible. A row with indom PM_INDOM_NULL has only histogram
 * instances (e.g. a second histogram of another row's instance). */
void virt_row_expose(struct virt_row *r, bool always);
/* Remove the row's instances from the instance domains (hidden: a row that
 * comes back under its name gets its ids back). The row keeps its counts:
 * it may come back (a queue seen again). */
void virt_row_retire(struct virt_row *r);
/* Retire the row for good and free what it allocated, before the memory
 * holding it is freed. Its instance names are culled, not kept hidden. */
void virt_row_release(struct virt_row *r);

/* Resolve a fetch: the row behind inst of indom (NULL if none). */
struct virt_row *virt_row_of(pmInDom indom, unsigned int inst);
/* The count behind a histogram instance (NULL if none). */
const uint64_t *virt_bucket_of_inst(pmInDom hindom, unsigned int inst);

/* Answer a fetch of the p-th percentile of the row's histogram over the
 * last window (PMDA_FETCH_NOVALUES when nothing was counted in it). */
int virt_row_percentile(const struct virt_row *r, unsigned int p, pmAtomValue *atom);


/*
 * Sums: the one way a counter is kept monotonic. Counter words of a row
 * that outlive what counts them (queues, processes, BPF objects), n words
 * of any number: sum = base + each live object's latest words, base =
 * what objects gone and earlier attaches counted. Counters stay monotonic
 * as objects come and go. A row's own words (virt_row_set) are sums too.
 */
struct virt_sums {
	uint64_t *base, *sum;		/* n words each; NULL before init */
	unsigned int n;
	unsigned int live;		/* objects added since virt_sums_begin */
};

/* Sums in the caller's zeroed array of 2 nw words (nothing to release). */
#define VIRT_SUMS_IN(words, nw) \
	((struct virt_sums){ .base = (words), .sum = (words) + (nw), .n = (nw) })
/* Zeroed sums of n words; -1 when out of memory. */
int virt_sums_init(struct virt_sums *s, unsigned int n);
void virt_sums_release(struct virt_sums *s);
/* An object is gone: its last words w[0...n-1] go into the base. */
void virt_sums_fold(struct virt_sums *s, const uint64_t *w);
/* Start a refresh's sum: sum = base, no live object. */
void virt_sums_begin(struct virt_sums *s);
/* A live object's latest words: sum += w, one more live. */
void virt_sums_add(struct virt_sums *s, const uint64_t *w);
/* The same for an object that has only the first nw words (a kernel
 * struct; the sums' words after it are the agent's own). */
void virt_sums_fold_n(struct virt_sums *s, const uint64_t *w, unsigned int nw);
void virt_sums_add_n(struct virt_sums *s, const uint64_t *w, unsigned int nw);
/* Word i of an object that goes on: what of it is done, v, into the base
 * (its next words count from 0). */
void virt_sums_fold_word(struct virt_sums *s, unsigned int i, uint64_t v);
/* Every object is going (a detach that forgets them): base = sum. */
void virt_sums_rebase(struct virt_sums *s);


/*
 * Answers: how a metric's value is found, as data. A family gives a table
 * indexed by metric id (the module's answers) and the agent answers every
 * metric of the family from it (virt_answer); a module has no fetch
 * callback. Offsets are from the instance's row (what pmdaCache holds) to
 * a field of the family's entry that holds it (VIRT_ANSWER_OFF), or, for a
 * metric without instances, into the family's private state (fam->priv).
 * VIRT_ANSWER_* build them.
 */
enum virt_answer_kind {
	VIRT_ANS_NONE = 0,		/* not in the table: no value */
	VIRT_ANS_WORD,			/* the uint64_t at off */
	VIRT_ANS_SUM,			/* word .word of the struct virt_sums at off */
	VIRT_ANS_BUCKET,		/* a histogram instance's count (indom: its domain) */
	VIRT_ANS_PERCENTILE,		/* pct-th percentile of the struct virt_row at off */
	VIRT_ANS_NOVALUES,		/* never a value (event parameters) */
	VIRT_ANS_NAME,			/* the instance's own name */
	VIRT_ANS_BUCKET_PREFIX,		/* its name as its buckets' prefix (hist.h) */
	VIRT_ANS_STRING,		/* the char array at off, or at at in what the
					 * pointer at off points to (VIA) */
	VIRT_ANS_STRING_VIA,
	VIRT_ANS_STATE,			/* no instances: the uint64_t at off in fam->priv */
	VIRT_ANS_EVENTS,		/* event records, packed by events() */
};
struct virt_answer {
	enum virt_answer_kind kind;
	enum virt_indom_id indom;
	ptrdiff_t off;
	unsigned int pct;
	unsigned int word;		/* SUM: which word */
	/* a word's, sum's or string's condition: the offset of a bool of the entry
	 * while which the instance has a value (no value: not measured, not
	 * zero); 0 for none (offset 0 is the row's name, never a condition) */
	ptrdiff_t when;
	/* VIA: the string's offset in the struct the pointer at off points to */
	ptrdiff_t at;
	/* a string's value when it is empty, or the pointer NULL */
	const char *empty;
	/* EVENTS: PMDA_FETCH_STATIC with atom->vbp, or PMDA_FETCH_NOVALUES */
	int (*events)(struct virt_family *fam, pmAtomValue *atom);
	/* the entry type T the offsets are in ("struct q_row"), NULL for
	 * answers without one: the agent refuses a module whose answers on
	 * one instance domain name two (settings.c) */
	const char *entry;
};
/* offset of field from row in an entry of type T */
#define VIRT_ANSWER_OFF(T, row, field) ((ptrdiff_t)offsetof(T, field) - (ptrdiff_t)offsetof(T, row))
#define VIRT_ANSWER_WORD(dom, T, row, field) \
	{ .kind = VIRT_ANS_WORD, .indom = VIRT_I_##dom, .off = VIRT_ANSWER_OFF(T, row, field), \
	  .entry = #T }
/* the word, while the entry's bool flag is true */
#define VIRT_ANSWER_WORD_WHEN(dom, T, row, field, flag) \
	{ .kind = VIRT_ANS_WORD, .indom = VIRT_I_##dom, .off = VIRT_ANSWER_OFF(T, row, field), \
	  .when = VIRT_ANSWER_OFF(T, row, flag), .entry = #T }
/* word w of the entry's struct virt_sums field sums (no value while
 * the sums have fewer words) */
#define VIRT_ANSWER_SUM(dom, T, row, sums, w) \
	{ .kind = VIRT_ANS_SUM, .indom = VIRT_I_##dom, .off = VIRT_ANSWER_OFF(T, row, sums), \
	  .word = (w), .entry = #T }
/* the sum's word, while the entry's bool flag is true */
#define VIRT_ANSWER_SUM_WHEN(dom, T, row, sums, w, flag) \
	{ .kind = VIRT_ANS_SUM, .indom = VIRT_I_##dom, .off = VIRT_ANSWER_OFF(T, row, sums), \
	  .word = (w), .when = VIRT_ANSWER_OFF(T, row, flag), .entry = #T }
#define VIRT_ANSWER_BUCKET(hdom) { .kind = VIRT_ANS_BUCKET, .indom = VIRT_I_##hdom }
#define VIRT_ANSWER_PERCENTILE(dom, T, row, hrow, p) \
	{ .kind = VIRT_ANS_PERCENTILE, .indom = VIRT_I_##dom, \
	  .off = VIRT_ANSWER_OFF(T, row, hrow), .pct = p, .entry = #T }
/* the p50, p90 and p99 metrics of one histogram: <id>_P50 ... */
#define VIRT_ANSWER_PERCENTILES(id, dom, T, row, hrow) \
	[id##_P50] = VIRT_ANSWER_PERCENTILE(dom, T, row, hrow, 50), \
	[id##_P90] = VIRT_ANSWER_PERCENTILE(dom, T, row, hrow, 90), \
	[id##_P99] = VIRT_ANSWER_PERCENTILE(dom, T, row, hrow, 99)
#define VIRT_ANSWER_NOVALUES { .kind = VIRT_ANS_NOVALUES }
/* the instance's name as the value: a dashboard variable's list
 * (grafana-pcp's Vector datasource lists a metric's values) */
#define VIRT_ANSWER_NAME(dom) { .kind = VIRT_ANS_NAME, .indom = VIRT_I_##dom }
#define VIRT_ANSWER_BUCKET_PREFIX(dom) { .kind = VIRT_ANS_BUCKET_PREFIX, .indom = VIRT_I_##dom }
/* the NUL-terminated char array field; empty_value when it is empty */
#define VIRT_ANSWER_STRING(dom, T, row, field, empty_value) \
	{ .kind = VIRT_ANS_STRING, .indom = VIRT_I_##dom, .off = VIRT_ANSWER_OFF(T, row, field), \
	  .empty = empty_value, .entry = #T }
/* the char array field of struct P that the entry's pointer ptr points to */
#define VIRT_ANSWER_STRING_VIA(dom, T, row, ptr, P, field, empty_value) \
	{ .kind = VIRT_ANS_STRING_VIA, .indom = VIRT_I_##dom, \
	  .off = VIRT_ANSWER_OFF(T, row, ptr), .at = (ptrdiff_t)offsetof(P, field), \
	  .empty = empty_value, .entry = #T }
/* a metric without instances: the uint64_t field of the state T (fam->priv) */
#define VIRT_ANSWER_STATE(T, field) { .kind = VIRT_ANS_STATE, .off = (ptrdiff_t)offsetof(T, field) }
#define VIRT_ANSWER_EVENTS(fn) { .kind = VIRT_ANS_EVENTS, .events = fn }

/* Answer a fetch of inst of one of fam's metrics as a says. */
int virt_answer(const struct virt_answer *a, struct virt_family *fam, unsigned int inst,
		pmAtomValue *atom);

/*
 * A family's rows, found by a 64-bit key (a hypercall number, a pid, a
 * queue pointer) or by name, created on demand. An entry is a family
 * struct of entry_size bytes whose first member is struct virt_keyed (its
 * key and main row); the family's other fields follow. Entries never move
 * (fetch finds rows through pmdaCache private pointers); the index is
 * open addressing with linear probing, kept at most half full.
 */
struct virt_keyed {
	uint64_t key;			/* for named entries: virt_name_key() */
	struct virt_row row;		/* the main row: row.name is the name */
};

struct virt_table {
	size_t entry_size;		/* >= sizeof(struct virt_keyed) */
	size_t sums_off;		/* the entries' struct virt_sums, of nsums words */
	unsigned int nsums;		/* 0: the entries have none */
	struct virt_keyed **v;		/* the entries, in no order */
	size_t n, cap;
	uint32_t *slot;			/* index: position in v + 1, 0 = empty */
	size_t nslot;			/* a power of two, > 2 n */
};

/* An empty table of entries of type T (T starts with struct virt_keyed). */
#define VIRT_TABLE_OF(T) ((struct virt_table){ .entry_size = sizeof(T) })
/* The same, T's struct virt_sums field sums of n words made with each
 * entry and released with it. */
#define VIRT_TABLE_OF_SUMS(T, sums, n) \
	((struct virt_table){ .entry_size = sizeof(T), .sums_off = offsetof(T, sums), .nsums = (n) })
/* The entry of type T whose main row is row (a pmdaCache private pointer). */
#define VIRT_ENTRY_OF(row, T) ((T *)(void *)((char *)(row) - offsetof(struct virt_keyed, row)))

uint64_t virt_name_key(const char *name);
/* The entry with this key (the first one added, if several), or NULL. */
void *virt_table_find(const struct virt_table *t, uint64_t key);
/* The entry with this key for which match(entry, arg) holds (keys that are
 * hashes of a longer identity), or NULL. */
void *virt_table_find_if(const struct virt_table *t, uint64_t key,
			 bool (*match)(const void *entry, const void *arg), const void *arg);
/* The entry whose main row is named name, or NULL. */
void *virt_table_find_name(const struct virt_table *t, const char *name);
/* Add a zeroed entry whose main row is initialised as virt_row_init() does
 * (and its sums made: VIRT_TABLE_OF_SUMS); NULL when out of memory. */
void *virt_table_add(struct virt_table *t, uint64_t key, pmInDom indom,
		     pmInDom hindom, const char *name);
/* The entry named name, added (keyed by virt_name_key()) if not there. */
void *virt_table_get_name(struct virt_table *t, pmInDom indom, pmInDom hindom,
			  const char *name);
/* Give the entry another key (rare: a VM that exited or restarted keeps
 * its row under its name); rebuilds the index. */
void virt_table_rekey(struct virt_table *t, void *entry, uint64_t key);
/* Release the entry's main row and free it (the family releases its other
 * rows first). Entries after it may change position in v, none moves. */
void virt_table_remove(struct virt_table *t, void *entry);
/* Remove every entry and free the table's arrays. */
void virt_table_clear(struct virt_table *t);

#endif
