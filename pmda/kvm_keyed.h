/*
 * The kvm family's reader of its BPF hashes keyed by (VMM process, kind):
 * "subs" (kvm_subs.c), "npfs" (kvm_npf.c), "irqs" (kvm_irqs.c). Every
 * kind of a VM is a row "<vm><suffix>" whose sums hold what its VM's
 * exited processes counted (base, their entries deleted from the map)
 * and its live processes' entries at this refresh (sums.live). The rows
 * of an exited named VM are kept (retired) for the VM restarted under its
 * name. The reader owns the map's read buffers, the rows and their life
 * cycle (kvm_keyed.c); each map's user gives what differs, as a const
 * struct kvm_keyed_ops.
 */
#ifndef VIRT_KVM_KEYED_H
#define VIRT_KVM_KEYED_H

#include "rows.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kvm_state;
struct virt_family;
struct vm_entry;

/* The maps, read in this order (kvm_refresh) */
enum kvm_keyed_map { KVM_KEYED_SUBS, KVM_KEYED_NPF, KVM_KEYED_IRQS, KVM_KEYED_MAPS };
#define KVM_KEYED_TABLES 4		/* the most tables of rows of one map */

/* How a table's rows take an entry's value into their sums */
enum kvm_keyed_from {
	KVM_KEYED_AS_IS,		/* the value's first words, as they are */
	/* struct kvm_stats: count (count word + histogram mass, kvm.h), time,
	 * histogram; the row's own words and buckets are set from the sums */
	KVM_KEYED_STATS,
	KVM_KEYED_COUNT,		/* the value's first word, in its kind's word */
};

/* A table of rows: its instance domains, its rows' sums and when a row
 * is shown (one of its first shown_by words is not 0) */
struct kvm_keyed_table {
	enum virt_indom_id indom, hindom;	/* hindom VIRT_NINDOMS: no histogram */
	unsigned int words;
	enum kvm_keyed_from from;
	unsigned int shown_by;
};

/* A kind of key: its table, its row's name after "<vm>" (NULL: the ops'
 * name() says, from the key) and, KVM_KEYED_COUNT, the word it counts in */
struct kvm_keyed_kind {
	const char *suffix;
	unsigned int table;
	unsigned int word;
};

/* What a map's user gives */
struct kvm_keyed_ops {
	size_t map;			/* KVM_KEYED_MAP(name) */
	size_t used_map;		/* a map keyed by tgid emptied with the
					 * process's entries (KVM_KEYED_MAP), 0: none */
	size_t key_size, value_size;
	const struct kvm_keyed_table *tables;
	unsigned int ntables;
	const struct kvm_keyed_kind *kinds;
	unsigned int nkinds;
	/* the map's entries for these options; 0: not wanted */
	uint32_t (*max)(const struct virt_family *fam);
	/* the key's process and kind (a kind >= nkinds is skipped) */
	void (*decode)(const void *key, uint32_t *tgid, unsigned int *kind);
	/* the row's name after "<vm>" of a kind without suffix */
	void (*name)(const void *key, char *buf, size_t len);
	/* after its rows are set (optional) */
	void (*after_set)(struct kvm_state *st);
};
#define KVM_KEYED_MAP(name) offsetof(struct kvm_bpf, maps.name)

/* A row, "<vm><suffix>" */
struct kvm_keyed_row {
	struct virt_keyed k;		/* key: virt_name_key() */
	uint32_t tgid;			/* the process last seen counting it (labels) */
	int vmlen;			/* row.name's first vmlen bytes: its VM's name */
	unsigned int kind;
	bool timed;			/* its time is measured (the reader's timed) */
	struct virt_sums sums;
};

/* A map's reader */
struct kvm_keyed {
	const struct kvm_keyed_ops *ops;
	bool on;			/* its hooks are loaded: it is read */
	bool timed;			/* its rows' time is measured */
	struct virt_table rows[KVM_KEYED_TABLES];	/* of struct kvm_keyed_row */
	void *keys, *vals;		/* a read of the map (max entries) */
	uint32_t max;
};

/* Every map's reader, for kvm.c (in the order of enum kvm_keyed_map) */
int kvm_keyed_init(struct kvm_state *st, const struct virt_family *fam);
void kvm_keyed_free(struct kvm_state *st);
void kvm_keyed_forget(struct kvm_state *st);
int kvm_keyed_read(struct kvm_state *st);
void kvm_keyed_set(struct kvm_state *st);
/* Is indom one of a reader's tables' (their rows' labels)? */
bool kvm_keyed_indom(enum virt_indom_id indom);
/* A struct kvm_stats entry's count: its count word plus its histogram's mass */
uint64_t kvm_stats_count(const uint64_t *w);
/* The VM row of a row's VM, live or kept under its name (NULL: none) */
struct vm_entry *kvm_keyed_vm(struct kvm_state *st, struct kvm_keyed_row *e);

#endif
