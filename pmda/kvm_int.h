/*
 * The kvm family's module, its parts' shared state (internal): kvm.c
 * (attach, options, answers, labels), kvm_vms.c (per-VM and per-vCPU rows
 * from the vcpus slots), kvm_keyed.c (the maps keyed by process and kind,
 * read for kvm_subs.c: sub-reasons, kvm_npf.c: nested-paging faults,
 * kvm_irqs.c: interrupts), kvm_debugfs.c (KVM's own books in debugfs),
 * kvm_statfds.c (KVM's per-vCPU statistics fds). Each part keeps its
 * state in its own member of struct kvm_state (vc, keyed, dfs, vs) and
 * has an init that kvm_init calls; kvm.c states the refresh order (above
 * kvm_refresh). The VM rows (st->vms) are every part's.
 */
#ifndef VIRT_KVM_INT_H
#define VIRT_KVM_INT_H

#include "virt.h"
#include "rows.h"
#include "slots.h"
#include "kvm.h"
#include "kvm_books.h"
#include "kvm_keyed.h"
#include "kvm_vstats.h"
#include "kvm.skel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kvm_opt { OPT_LATENCY, OPT_MAX_VCPUS, OPT_MAX_VMS, OPT_MAX_HCALLS, OPT_SCHED, OPT_SUBREASONS,
	       OPT_SUB_TOP, OPT_VCPU_STATS, OPT_NPF, OPT_INTERRUPTS, OPT_TIMER_LATENESS, NOPTS };

/* Row words of reason rows: count and time. A VM's and a vCPU's sums are
 * struct kvm_vm_stats as words, then the agent's own (W_RUN_DELAY): every
 * counter of theirs is answered from the sums (W_*). */
enum { W_COUNT, W_TIME, W_UEXITS, W_UTIME };
#define STATS_WORDS (sizeof(struct kvm_stats) / sizeof(__u64))
#define VM_WORDS (sizeof(struct kvm_vm_stats) / sizeof(__u64))
#define VM_WORD(field) (offsetof(struct kvm_vm_stats, field) / sizeof(__u64))
#define W_WAIT_BY VM_WORD(wait_by)
#define W_HALT_POLLED VM_WORD(halt_polled)
#define W_HALT_NS VM_WORD(halt_ns)
#define W_HALT_POLL_NS VM_WORD(halt_poll_ns)
#define W_HALT_SLEPT VM_WORD(halt_slept)
#define W_WAIT_HIST VM_WORD(wait_hist)
#define W_HALT_HIST VM_WORD(halt_hist)
#define W_UNSEEN VM_WORD(exits_unseen)
/* the run delay of the vCPU threads (schedstat): the kernel's gone
 * entries have no such word */
#define W_RUN_DELAY VM_WORDS
#define KVM_SUM_WORDS (VM_WORDS + 1)

extern const char *const kvm_wait_class_names[KVM_WAIT_CLASSES];

/* What a VM's row answers beyond its sums: the counts its histograms
 * hold, its vCPUs. */
struct vm_derived {
	uint64_t waits, halts;
	uint64_t vcpus;			/* its vCPUs the agent tracks (vcpus_seen) */
};

/* A VM's row (st->vms), named by its VMM process's VM identity (vmid.h):
 * its sums of KVM_SUM_WORDS (base: vCPU slots and threads that are gone). A row
 * of an exited named VM is kept (retired, keyed by its name) so that the
 * VM restarted under its name (a new pid) carries its counters on. */
struct vm_entry {
	struct virt_keyed k;		/* key: the tgid; retired: virt_name_key() */
	uint64_t start;			/* the process's start time (pid reuse) */
	bool named;			/* the VM has a name, not "<pid>" */
	bool retired;			/* its VMM exited */
	bool sched;			/* the scheduler hooks count its waits */
	bool poll;			/* its halts' poll time is counted */
	bool keyed_alive;		/* kvm_vm_alive() at keyed map read keyed_read */
	uint64_t keyed_read;
	struct virt_sums sums;
	unsigned int vcpus_seen;	/* its vCPU rows counted in this refresh */
	struct vm_derived d;
	/* "<vm>/<class>": sums word W_WAIT_BY + class in v[0]; the halt histogram
	 * (histogram instances only) */
	struct virt_row by[KVM_WAIT_CLASSES];
	struct virt_row halt;
	bool unseen_known;		/* its slots read KVM's exits (W_UNSEEN): not tracepoint */
	/* KVM's per-vCPU statistics fds of the VMM's vCPUs (vcpu_stats) */
	struct vcpu_stats_fd *vsfd;
	unsigned int nvsfd;
	int vs_err;			/* acquiring them failed: not tried again */
	/* kvm_npf.c's: its "<vm>/major" row's time, while npf is on */
	uint64_t npf_major_ns;
	bool npf_on;
};

/* A vCPU's statistics fd, a duplicate of the VMM's fd vmm_fd
 * ("anon_inode:kvm-vcpu-stats"); its descriptors, and a data buffer. */
struct vcpu_stats_fd {
	int fd, vmm_fd;
	uint32_t id;
	struct kvm_vstats s;
	uint64_t *data;
};


/* What the agent last took from a slot of the vcpus array: its share of
 * its VM's counters, and in last[W_RUN_DELAY] the run delay of its thread
 * (schedstat) beyond rd_base. */
struct vcpu_rec {
	uint32_t tgid;			/* 0: nothing taken */
	uint32_t id;			/* the vCPU's KVM vcpu_id */
	uint32_t tid;			/* the thread rd was read from */
	bool dropped;			/* counted once in vm_drops (max_vms) */
	uint64_t last[KVM_SUM_WORDS];
	uint64_t rd_base;		/* what of it its VM counted before (struct rd_counted) */
	uint64_t timer_advance;		/* the slot's: ns + 1, 0 none yet */
};

/* A VMM process marked in the BPF side's vmm_tgids (adopt()) that has no
 * live row (beyond max_vms), with its start time: its bit goes when it
 * exits or its pid is another process's. */
struct vmm_mark {
	uint32_t tgid;
	uint64_t start;
};

/* A thread whose run delay up to rd its VM counted already (in its sums'
 * base: a slot the thread ran went), so that a vCPU it runs next (its VMM
 * re-created its VM) counts from there, not from the thread's start. */
struct rd_counted {
	uint32_t tgid, tid;
	uint64_t rd;
};

/* A vCPU's row (st->vcpu_rows), "<vm>/vcpu<N>", N KVM's vcpu_id: summed
 * as its VM's row is, from the slots holding vCPU N of the VM, what the
 * kernel folded from its destroyed slots (vcpus_gone) and what slots the
 * agent freed left (base); sums.live: counted in this refresh. A row
 * lives as long as its VM's row (a vCPU created again with its id
 * continues it; a VM restarted under its name finds its vCPUs' rows), so
 * its counters never step back. */
struct vcpu_entry {
	struct virt_keyed k;		/* key: virt_name_key() */
	struct vm_entry *vm;
	uint32_t id;
	struct virt_sums sums;
	uint64_t timer_advance;		/* ns, of its last TSC-deadline timer (timer_lateness) */
	bool advance_known;		/* a live slot of it saw one */
};

/* One of KVM's own values (debugfs) of a VM, "<vm>/<stat>", or of a
 * vCPU, "<vm>/vcpu<N>/<stat>": the sum over the VM's directories (a VMM
 * with two VMs has two) in this refresh. */
struct book_entry {
	struct virt_keyed k;		/* key: virt_name_key() */
	struct vm_entry *vm;
	int vcpu;			/* -1: the VM's */
	char stat[KVM_BOOK_NAME_MAX];
	uint64_t value;
	bool seen;			/* read in this refresh */
	/* which metric has its value: kvm_stat.count, .time, .instant, .peak */
	bool count, time, instant, peak;
	uint64_t hist[VIRT_HIST_BUCKETS];	/* a histogram's (vcpu_hists) */
};

/* Files found to be no statistic, never opened again (x86's
 * mmu_rmaps_stat walks the VM's rmaps under its MMU lock to print). */
struct books_bad {
	char name[KVM_BOOK_NAME_MAX];
};

/* kvm_npf.c's part: which entry program classifies nested-paging faults */
struct kvm_npf {
	bool entry, entry_subs;
};

/* kvm_irqs.c's tables of rows: interrupt latency by kind, timer
 * lateness (late, early), the VM's interrupts not timed (its sums' words
 * KVM_IRQ_W_*) */
enum { KVM_IRQ_T_LATENCY, KVM_IRQ_T_TIMER, KVM_IRQ_T_EVENTS, KVM_IRQ_TABLES };
enum { KVM_IRQ_W_COALESCED, KVM_IRQ_W_POSTED, KVM_IRQ_W_UNMATCHED, KVM_IRQ_EVENT_WORDS };

/* kvm_irqs.c's part: which of its hooks are loaded */
struct kvm_irqs {
	bool on, timer;			/* interrupts, timer_lateness */
};

/* kvm_debugfs.c's part: the rows of KVM's values (kvm_statfds.c fills
 * the vCPUs' too, through kvm_book_row) and the files found no statistic */
struct kvm_debugfs {
	struct virt_table vm_books, vcpu_books, vcpu_hists;	/* of struct book_entry */
	struct books_bad *bad;		/* as many as found */
	unsigned int nbad, bad_cap;
	bool bad_nomem;			/* logged: one could not be kept */
	int root_errno;			/* of the last failed open of the root, logged */
};

/* kvm_statfds.c's part */
struct kvm_statfds {
	bool on;			/* vcpu_stats */
	int err;			/* why per-vCPU statistics failed, logged */
};

/* kvm_vms.c's part of the state: the vcpus slots and threads as mapped
 * in, what the agent took from them, the reads of the gone maps and the
 * vCPU rows (the VM rows, st->vms, are every part's) */
struct kvm_state;
struct kvm_vcpus {
	/* the BPF arrays, mmap'ed: read in place, no bpf() call */
	struct kvm_vcpu_slot *vcpus;
	uint64_t *threads;
	size_t nvcpus;			/* entries of vcpus and of threads */
	struct vcpu_rec *recs;		/* one per vcpus entry */
	struct rd_counted *rd_counted;	/* threads of live VMMs; kept across attaches */
	size_t nrd_counted, rd_counted_cap;
	struct vmm_mark *marks, *marks_next;	/* ascending tgid; the next pass's */
	size_t nmarks, marks_cap, marks_next_cap;
	/* Indexes of the slots in use at this sum and at the one before: one
	 * pass over the (mostly free) vcpus array, then only these. */
	uint32_t *occ, *occ_prev;
	size_t nocc, nocc_prev;
	struct virt_table vcpu_rows;	/* of struct vcpu_entry */
	/* a read of vcpus_gone (max_vcpus entries) */
	uint64_t *vgone_key;
	struct kvm_vm_stats *vgone;
	uint32_t max_vcpus;		/* their entries */
	int nvgone;			/* entries of the last read */
	uint64_t vgone_folds;		/* folds_done at that read */
	bool vgone_valid;		/* of this BPF object */
	/* a read of vms_gone (max_vms entries) */
	uint32_t *gone_tgid;
	struct kvm_vm_stats *gone;
	uint64_t vm_drops;		/* this attach's, with the drops map's */
	/* a thread's run delay in ns; NULL: its schedstat (unit tests give their own) */
	bool (*run_delay)(uint32_t tgid, uint32_t tid, uint64_t *ns);
	/* kvm.c's: a VM's row goes (forever: freed, else retired under its
	 * name), and what the other parts keep of the VM goes with it */
	void (*vm_going)(struct kvm_state *st, struct vm_entry *vm, bool forever);
};

struct kvm_state {
	struct kvm_bpf *skel;
	struct virt_row slots[KVM_SLOTS];
	struct virt_row uexit[KVM_UEXIT_REASONS];
	struct virt_table other, hcalls;	/* of struct virt_keyed: exit, hypercall nr */
	struct virt_table vms;		/* of struct vm_entry */
	size_t nlive, nretired;		/* rows of live VMMs, of exited named VMs */
	struct kvm_stats *exits;	/* the BPF array, mmap'ed */
	struct kvm_vcpus vc;		/* kvm_vms.c's */
	bool sched_on;			/* scheduler hooks loaded (tp_btf, sched) */
	bool vmcb_cache;		/* svm_switch_vmcb's hook loaded */
	bool fast_mmio_on;		/* subreasons' kvm_fast_mmio hook loaded */
	bool entry_plain;		/* latency without subreasons or npf: plain entry */
	bool entry_subs;		/* subreasons' entry program without npf */
	bool poll_on;			/* halts carry KVM's poll time (not tracepoint) */
	struct kvm_keyed keyed[KVM_KEYED_MAPS];	/* kvm_keyed.c's: "subs", "npfs", "irqs" */
	uint64_t keyed_reads;		/* reads of them */
	struct kvm_npf npf;		/* kvm_npf.c's */
	struct kvm_irqs irq;		/* kvm_irqs.c's */
	struct kvm_debugfs dfs;		/* kvm_debugfs.c's */
	struct kvm_statfds vs;		/* kvm_statfds.c's */
	struct virt_bulk bulk;		/* bulk-read buffers, sized for the largest map */
};

/* kvm_vms.c: per-VM and per-vCPU rows from the vcpus slots */
struct vm_entry *kvm_vm_of(struct kvm_state *st, uint32_t tgid);
struct vm_entry *kvm_vm_at(struct kvm_state *st, size_t i);
bool kvm_vm_alive(const struct vm_entry *vm);
int kvm_vms_init(struct kvm_state *st, const struct virt_family *fam);
void kvm_vms_free(struct kvm_state *st);
int kvm_vms_attach(struct kvm_state *st, struct kvm_vcpu_slot *vcpus, uint64_t *threads,
		   size_t nvcpus);
void kvm_vms_unmap(struct kvm_state *st);
void kvm_vcpus_forget(struct kvm_state *st, uint32_t max_vms);
void kvm_vms_read(struct kvm_state *st, struct virt_family *fam);

/* The keyed maps' users (kvm_keyed.h): sub-reasons, nested-paging
 * faults by kind, interrupts and guest timers; their hooks' switches */
extern const struct kvm_keyed_ops kvm_subs_keyed, kvm_npf_keyed, kvm_irqs_keyed;
void kvm_subs_configure(struct virt_family *fam, struct kvm_bpf *skel);
void kvm_npf_configure(struct virt_family *fam, struct kvm_bpf *skel, const char *method);
void kvm_irqs_configure(struct virt_family *fam, struct kvm_bpf *skel, const char *method);

/* kvm_debugfs.c: KVM's own books (debugfs), and the rows of KVM's values */
struct book_entry *kvm_book_row(struct virt_table *t, pmInDom indom, pmInDom hindom,
				struct vm_entry *vm, int vcpu, const char *raw);
void kvm_book_add(struct book_entry *b, uint64_t value, enum kvm_stat_kind kind);
void kvm_book_rows_unsee(struct virt_table *t);
void kvm_book_rows_expose(struct virt_table *t);
void kvm_book_rows_remove(struct kvm_state *st, const struct vm_entry *vm);
void kvm_debugfs_init(struct kvm_state *st);
void kvm_debugfs_refresh(struct kvm_state *st);

/* kvm_statfds.c: KVM's per-vCPU statistics fds (vcpu_stats) */
void kvm_statfds_init(struct kvm_state *st, const struct virt_family *fam);
void kvm_statfds_close(struct vm_entry *vm);
void kvm_statfds_close_all(struct kvm_state *st);
void kvm_statfds_refresh(struct kvm_state *st);

#endif
