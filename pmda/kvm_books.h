/* KVM's own statistics ("books") of a VM, read from debugfs
 * (pmda/kvm_books.c), split out of pmda/kvm.c so that
 * qa/unit/t_kvm_books.c can run it on a directory tree of its own. */
#ifndef VIRT_KVM_BOOKS_H
#define VIRT_KVM_BOOKS_H
#include <stdbool.h>
#include <stdint.h>

#define KVM_BOOKS_ROOT "/sys/kernel/debug/kvm"
/* bytes of a statistic name with its NUL: KVM_STATS_NAME_SIZE */
#define KVM_BOOK_NAME_MAX 48

/* What a statistic of KVM's is, and so the metric it is served in:
 * KVM_STATS_TYPE_* and KVM_STATS_UNIT_* of its descriptor (stats fd), or
 * its file's mode and name (debugfs, kvm_books_kind()). */
enum kvm_stat_kind {
	KVM_STAT_COUNT,		/* CUMULATIVE, unit NONE: kvm_stat.count */
	KVM_STAT_TIME,		/* CUMULATIVE, SECONDS: kvm_stat.time, in ns */
	KVM_STAT_INSTANT,	/* INSTANT, NONE or BOOLEAN: kvm_stat.instant */
	KVM_STAT_PEAK,		/* PEAK, NONE or BOOLEAN: kvm_stat.peak */
	KVM_STAT_LOG_HIST,	/* LOG_HIST: kvm_hist (vCPUs only) */
	KVM_STAT_OTHER,		/* not served: LINEAR_HIST, other units, newer types */
};

/* One statistic file of a VM directory. */
struct kvm_book {
	const char *name;
	uint64_t value;
	enum kvm_stat_kind kind;	/* kvm_books_kind() */
};

struct kvm_books_ops {
	/* a file not to open (one found bad before); may be NULL */
	bool (*skip)(const char *name, void *arg);
	void (*stat)(const struct kvm_book *b, void *arg);
	/* a file that is no number (err -EINVAL: e.g. x86's mmu_rmaps_stat
	 * table; -ENAMETOOLONG: a name of KVM_BOOK_NAME_MAX or more) or could
	 * not be read (-errno) */
	void (*bad)(const char *name, int err, void *arg);
};

/* Every file of the VM directory dir (below rootfd) but histograms'
 * (*_hist: their bucket 0 only), one readdir. 0, or -errno when the
 * directory cannot be read (the VM went away meanwhile). */
int kvm_books_read(int rootfd, const char *dir, const struct kvm_books_ops *ops, void *arg);

/* A debugfs file's kind, which debugfs does not declare:
 * kvm_stats_debugfs_mode() makes INSTANT files 0444, CUMULATIVE and PEAK
 * ones 0644; KVM names its peaks max_* and its times (SECONDS, 10^-9)
 * *_ns. */
enum kvm_stat_kind kvm_books_kind(const char *name, unsigned int mode);

/* One file's value: 0, -EINVAL when it is no number, or -errno. */
int kvm_books_value(const char *path, uint64_t *v);

/* The pid of a VM directory's name "<pid>-<fd>"; 0 for any other name. */
uint32_t kvm_books_dir_pid(const char *name);

#endif
