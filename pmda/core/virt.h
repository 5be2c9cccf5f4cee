/*
 * pmdavirt module ABI: what the agent (pmdavirt) and a family module
 * (modules/virt_<family>.so) share.
 *
 * The agent owns the metric and instance-domain tables (metrics/<family>.def),
 * the config file, the status metrics, the PCP protocol, every fetch (from
 * a module's answers table), the module's state, the attach of its BPF
 * skeleton (as its attach ops say) and the sum of its drops. A module
 * describes its BPF object (methods, sizes, program switches), reads its
 * maps in bulk on refresh and keeps its rows and instance domains.
 */
#ifndef VIRT_H
#define VIRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pcp/pmapi.h>
#include <pcp/pmda.h>
#include "config.h"
#include "domain.h"

#define VIRT_DOMAIN VIRT
/* A module answers for metrics by their VIRT_M_ ids, so it must be built
 * with the agent's metric tables: the ABI is the struct's version in the
 * high word and a checksum of metrics/<*>.def (build/tables.h, made by the
 * GNUmakefile) in the low one. And it shares structs with the agent (this
 * header, rows.h, hist.h, config.h, vmid.h), so it must be built with their
 * layout: VIRT_MODULE_LAYOUT (pmda/core/layout.h), a hash of the size and
 * offset of every member of each, computed by the compiler that builds the
 * module, with its flags (a -DVIRT_HIST_BUCKETS=20 changes it). The agent
 * loads a module only if both match its own. */
#include "tables.h"
#define VIRT_MODULE_VERSION 8u
#define VIRT_MODULE_ABI ((uint64_t)VIRT_MODULE_VERSION << 32 | VIRT_TABLES_CRC)

#include "ids.h"

enum virt_state {
	VIRT_DISABLED,		/* enabled = false, or its config section is broken */
	VIRT_UNAVAILABLE,	/* enabled, but cannot attach now (reason says why) */
	VIRT_ACTIVE,		/* attached and counting */
};

#define VIRT_REASON_MAX 256

/* Agent-side state of one family; the module reads opts and sets reason,
 * method, programs and dropped_now. */
struct virt_family {
	const struct virt_module *mod;
	const char *name;
	int cluster;
	enum virt_state state;
	char reason[VIRT_REASON_MAX];	/* why disabled/unavailable */
	char method[32];		/* attach method in use: tp_btf, fentry, ... */
	char want_method[32];		/* config "method =": "" = first that works */
	unsigned int programs;		/* BPF programs attached */
	uint64_t attach_attempts;
	uint64_t attach_ns;		/* duration of the last successful attach */
	uint64_t refresh_ns;		/* wall time in refresh(), cumulative */
	uint64_t refresh_cpu_ns;	/* the agent's CPU time in refresh() */
	uint64_t dropped_now;		/* events lost to full maps since this
					 * attach (the module's, in refresh()) */
	uint64_t dropped_high;		/* the agent's: dropped_now's highest */
	uint64_t dropped_base;		/* the agent's: earlier attaches' drops */
	union virt_optval *opts;	/* indexed as mod->options */
	struct bpf_object *obj;		/* what the agent attached, for its
					 * programs' run-time statistics */
	struct virt_skel *skel;		/* the attached skeleton (the agent's) */
	void *priv;			/* the module's own state (the agent
					 * allocates mod->priv_size zeroed bytes) */
};

struct bpf_object;

/* Return codes of an attach. */
#define VIRT_ATTACHED		0
#define VIRT_NOT_YET		1	/* unavailable now, retry at the next poll */

struct virt_answer;
struct virt_attach_ops;

/* The layout of the shared structs as one module or the agent was built
 * with (pmda/core/layout.h): a hash over all of them, and one per struct,
 * union or enum, so that a mismatch can be named. */
struct virt_layout_record {
	const char *name;		/* "struct virt_row" */
	uint64_t size;			/* its sizeof */
	uint64_t hash;			/* its size, alignment, members' offsets and sizes */
};
struct virt_layout {
	uint64_t hash;			/* of every record */
	unsigned int nrecords;
	const struct virt_layout_record *records;
};

struct virt_module {
	/* abi, name and layout keep their places in every version: the agent
	 * reads them before it trusts anything else in the struct */
	uint64_t abi;			/* VIRT_MODULE_ABI */
	const char *name;		/* family name: "kvm", "virtio", ... */
	const struct virt_layout *layout;	/* VIRT_MODULE_LAYOUT */
	const struct virt_option *options;
	unsigned int noptions;

	/* Cheap check (stat of /sys paths, no bpf()) whether an attach attempt
	 * could succeed now; polled while unavailable, and while active to
	 * notice that a kernel module went away. NULL: always ready. */
	bool (*ready)(struct virt_family *fam);
	/* The module's state: fam->priv, priv_size zeroed bytes the agent
	 * allocates before the first attach and keeps until exit (rows
	 * outlive a detach); init() fills it in then (tables, buffers): 0 or
	 * -errno, having freed what it allocated. init may be NULL. */
	size_t priv_size;
	int (*init)(struct virt_family *fam);
	/* How the agent loads and attaches the family's BPF skeleton
	 * (fam->skel): struct virt_attach_ops below. */
	const struct virt_attach_ops *attach;
	/* The BPF object's per-CPU array "drops" of ndrops u64 counters: the
	 * agent adds its total to fam->dropped_now after each refresh. */
	unsigned int ndrops;
	/* Undo what attach's callbacks and refresh() set up (the agent then
	 * destroys the skeleton). */
	void (*detach)(struct virt_family *fam);
	/* Read the maps in bulk, update instance domains. Once per fetch.
	 * fam->dropped_now starts at 0: the module adds what it lost itself. */
	int (*refresh)(struct virt_family *fam);
	/* VIRT_NMETRICS answers by metric id (pmda/core/rows.h): where the
	 * agent finds each value of the family's metrics (a metric left out
	 * has no values). */
	const struct virt_answer *answers;
	/* PCP instance labels (pmdaLabel(3)) of instance inst of the family's
	 * instance domain indom, added to *lp with virt_label_add() or
	 * virt_label_vm(): 0 or -errno. NULL: the family has none. */
	int (*labels)(struct virt_family *fam, enum virt_indom_id indom,
		      unsigned int inst, pmLabelSet **lp);
	/* Capabilities (bit 1 << CAP_*) the module needs beyond the agent's
	 * set with its configuration (fam->opts), asked once before the agent
	 * drops the others. NULL: none. */
	uint64_t (*caps)(const struct virt_family *fam);
};

/* A module's struct virt_module (what the agent dlsym()s: "virt_module"),
 * abi, name and layout filled in, then the other members as designated
 * initializers. */
#define VIRT_MODULE(fname, ...)							\
	const struct virt_module virt_module = { .abi = VIRT_MODULE_ABI, .name = fname,	\
						 .layout = VIRT_MODULE_LAYOUT, __VA_ARGS__ }

/*
 * Services the agent exports to modules (pmdavirt links with -rdynamic).
 */
pmInDom virt_indom(enum virt_indom_id id);
pmID virt_pmid(enum virt_metric_id id);		/* e.g. an event record's parameter's */
void virt_set_reason(struct virt_family *fam, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The VM identity of VMM process pid (pmda/core/vmid.h: name, UUID, VMM kind),
 * one per process for the whole agent, so every family names a VM alike;
 * resolved from /proc on first sight and again when the pid is reused.
 * NULL when the process is gone. Valid until the next call. */
struct vmid;
const struct vmid *virt_vm_of(uint32_t pid);
/* Rows of exited named VMs a family keeps (retired, counts folded), so that
 * a VM restarted under its name carries its counters on: at most this many. */
#define VIRT_KEEP_EXITED 1024
/* Retired rows' instance names an instance domain keeps hidden (their ids
 * reserved for their return: pmda/core/rows.c), at most. */
#define VIRT_HIDDEN_MAX 16384
/* A line for the PMDA log (pmNotifyErr). During an attach it is held with
 * libbpf's messages and written only if the attach is logged: a success,
 * or a failure for a reason not logged before. */
void virt_log(int priority, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* During refresh(): whether the fetch being answered names metric id, and
 * whether the instance request being answered is for domain indom. What
 * only some metrics need, a module reads only when they are asked for. */
bool virt_asked(enum virt_metric_id id);
bool virt_asked_indom(enum virt_indom_id indom);
/* Add the label {"name":"value"} to *lp (value JSON-escaped); 0 or -errno. */
int virt_label_add(pmLabelSet **lp, const char *name, const char *value);
/* vm_name (when the VM has one), vm_uuid (when known), vmm and vmm_pid. */
int virt_label_vm(pmLabelSet **lp, const struct vmid *vm);
/* A queue's device, driver (NULL or "": none) and queue, from the
 * "<device>/<queue>" end of its instance name. */
int virt_label_queue(pmLabelSet **lp, const char *devq, const char *driver);

/* Kernel introspection: cheap checks, no bpf() calls. */
bool virt_kmod_present(const char *name);	/* /sys/module/<name> */
bool virt_pid_alive(uint32_t pid);		/* /proc/<pid> */
bool virt_tracepoint_exists(const char *system, const char *event);
bool virt_ksym_exists(const char *name);	/* virt_ksym_lookup: attach only */
/* Kernel (vmlinux or module) symbols by name: present[i], and addrs[i]
 * (0 when absent or hidden by kptr_restrict). A BPF lookup where the
 * kernel has one (5.16+), else one pass over /proc/kallsyms; returns how
 * many are present, or -errno. */
int virt_ksym_lookup(const char *const names[], uint64_t addrs[], bool present[], unsigned int n);
uint64_t virt_mono_ns(void);			/* CLOCK_MONOTONIC */

/*
 * One attach of a family's BPF skeleton, the same for every family, run by
 * the agent: for each of the family's methods in order (or only the one
 * virt.conf names): open -> enable that variant's programs -> configure ->
 * switch programs off -> load -> attach -> attached; the first that gets
 * through is kept (fam->skel), and any step's failure destroys the object
 * in one place and is recorded per method in fam->reason. Variants of a
 * family's programs live in one BPF object, named
 * virt_<family>_<variant>_<what> (e.g. virt_virtio_fentry_add_sgs and
 * virt_virtio_kprobe_add_sgs). A family describes its part in a table:
 */
struct virt_skel {			/* how every bpftool skeleton begins */
	struct bpf_object_skeleton *skeleton;
	struct bpf_object *obj;
};
/* Programs of the variant whose <what> is what (or begins with it, for a
 * what ending in '*') load only while a bool of the module's state
 * (fam->priv) is true, as configure left it: VIRT_PROG_SWITCH. */
struct virt_prog_switch {
	const char *what;
	size_t on;			/* offset of the bool in fam->priv */
};
#define VIRT_PROG_SWITCH(what, T, flag) { what, offsetof(T, flag) }
struct virt_attach_ops {
	const char *const *methods;	/* variant names, cheapest first */
	unsigned int nmethods;
	/* the skeleton's __open(), as a struct virt_skel *: VIRT_ATTACH_OPS */
	struct virt_skel *(*open)(void);
	/* before load: rodata, map sizes, the switches' bools (may be
	 * NULL). 0, VIRT_NOT_YET (nothing to attach to yet) or -1, with why */
	int (*configure)(struct virt_family *fam, struct virt_skel *skel,
			 const char *method, char *why, size_t len);
	const struct virt_prog_switch *switches;
	unsigned int nswitches;
	/* after attach: map memory, per-attach state, links the skeleton
	 * cannot make (per-binary uprobes: then it sets fam->programs, which
	 * holds the programs loaded). May be NULL. 0, VIRT_NOT_YET or -1,
	 * with why, having undone its own work */
	int (*attached)(struct virt_family *fam, struct virt_skel *skel,
			char *why, size_t len);
};
/* static const struct virt_attach_ops name for the bpftool skeleton
 * struct S (S__open()), with the other members as designated initializers;
 * VIRT_METHODS(array) and VIRT_SWITCHES(array) give an array and its size. */
#define VIRT_METHODS(m) .methods = (m), .nmethods = VIRT_ARRAY_SIZE(m)
#define VIRT_SWITCHES(s) .switches = (s), .nswitches = VIRT_ARRAY_SIZE(s)
#define VIRT_ATTACH_OPS(name, S, ...)						\
	static struct virt_skel *name##_open(void)				\
	{									\
		return (struct virt_skel *)(void *)S##__open();		\
	}									\
	static const struct virt_attach_ops name = { .open = name##_open, __VA_ARGS__ }
/* A BPF_F_MMAPABLE array mapped in read-write: all its entries, *bytes
 * long; NULL with why filled in on failure. */
struct bpf_map;
void *virt_map_mmap(const struct bpf_map *map, size_t *bytes, char *why, size_t len);

/* Bulk map reads: one BPF_MAP_LOOKUP_BATCH for the whole map (a few when
 * the kernel returns less). values holds max_entries values. Returns the
 * number of entries read or -errno; each bpf() call counts in
 * virt_bpf_syscalls. A per-CPU map: virt_map_dump_percpu. */
int virt_map_dump(int fd, void *keys, size_t key_size, void *values,
		  size_t value_size, unsigned int max_entries);
/* Delete one entry (an exited process's); counts in virt_bpf_syscalls. */
int virt_map_delete(int fd, const void *key);
extern uint64_t virt_bpf_syscalls;	/* bpf() calls made by refreshes */

/* Buffers for bulk reads of a family's maps, sized for the largest one:
 * keys and values of max_keys entries (key_size, value_size bytes; a
 * per-CPU value summed over the CPUs), and for per-CPU maps one chunk of
 * raw per-CPU values, at most VIRT_BULK_CHUNK_BYTES: the agent's memory
 * does not grow with the number of CPUs times the map size. 0 or -ENOMEM. */
#define VIRT_BULK_CHUNK_BYTES	(2u << 20)
#define VIRT_BULK_CHUNK_MIN	32u	/* a hash bucket is read whole */
struct virt_bulk {
	void *keys, *vals;
	void *ckeys, *cvals;		/* one chunk of a per-CPU read */
	size_t chunk;			/* its entries (tests may lower it) */
};
int virt_bulk_alloc(struct virt_bulk *b, size_t max_keys, size_t key_size,
		    size_t value_size);
void virt_bulk_free(struct virt_bulk *b);
/* Read a per-CPU map of values of nwords u64 into b: keys and per-entry
 * sums over the CPUs, a chunk per bpf() call. Entries read or -errno. */
int virt_map_dump_percpu(int fd, struct virt_bulk *b, size_t key_size, size_t nwords,
			 unsigned int max_entries);

/* VIRT_MODULE_LAYOUT (last: it includes the shared headers, which need
 * only ids.h of this one); scripts/layout.sh reads these headers without it */
#ifndef VIRT_LAYOUT_PROBE
#include "layout.h"
#endif

#endif /* VIRT_H */
