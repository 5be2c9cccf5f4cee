/* KVM's binary statistics of a vCPU (Linux >= 5.14, KVM_GET_STATS_FD on a
 * vCPU fd): the header, id and descriptors read once per stats fd, the
 * data block with one pread per refresh (pmda/kvm_vstats.c), split out of
 * pmda/kvm.c so that qa/unit/t_kvm_vstats.c can run it on a buffer of its
 * own. */
#ifndef VIRT_KVM_VSTATS_H
#define VIRT_KVM_VSTATS_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kvm_books.h"

struct kvm_vstat_desc {
	char name[KVM_BOOK_NAME_MAX];
	enum kvm_stat_kind kind;	/* kvm_vstat_kind() */
	uint32_t flags;
	int16_t exponent;
	uint16_t size;			/* u64 words */
	uint32_t offset;		/* in the data block */
	uint32_t bucket_size;
};

struct kvm_vstats {
	int vcpu;			/* the id's "vcpu-<N>"; -1: a VM's */
	struct kvm_vstat_desc *d;
	unsigned int n;
	uint32_t data_offset;		/* of the data block in the fd */
	size_t words;			/* u64 words of the data block we read */
};

/* Descriptors larger than this, or a data block of more words, are
 * refused (-E2BIG): x86 has ~40 per vCPU on 6.12. */
#define KVM_VSTATS_MAX_DESC 4096
#define KVM_VSTATS_MAX_WORDS 65536

/* Parse the header, id and descriptor block of a stats fd, held whole in
 * buf (len bytes from offset 0). 0 or -errno (-EINVAL: malformed). Names
 * longer than KVM_BOOK_NAME_MAX - 1 are cut. */
int kvm_vstats_parse(const void *buf, size_t len, struct kvm_vstats *s);
/* The vCPU of a stats fd's id, "kvm-<pid>/vcpu-<N>" (N < 65536); -1 for
 * any other (a VM's: "kvm-<pid>"). */
int kvm_vstats_id_vcpu(const char *id, size_t len);
/* The same from the fd: its header, its id, then its descriptor block. */
int kvm_vstats_load(int fd, struct kvm_vstats *s);
/* The data block (s->words u64) into data: one pread. 0 or -errno. */
int kvm_vstats_read(int fd, const struct kvm_vstats *s, uint64_t *data);
void kvm_vstats_free(struct kvm_vstats *s);

/* The kind of a statistic of descriptor flags and exponent: KVM_STAT_TIME
 * only for SECONDS in base 10 with an exponent of -18 to 0 (KVM's are -9),
 * so that kvm_vstat_value() is exact or, below ns, truncated. */
enum kvm_stat_kind kvm_vstat_kind(uint32_t flags, int16_t exponent);
/* A value of d in the unit of its metric: a time in ns, others as KVM's. */
uint64_t kvm_vstat_value(const struct kvm_vstat_desc *d, uint64_t raw);

/* KVM's bounds of bucket b of a LOG_HIST statistic, in its own unit:
 * bucket 0 holds 0, bucket b >= 1 [2^(b-1), 2^b - 1]
 * (kvm_stats_log_hist_update(): fls64), the last also everything larger. */
void kvm_vstat_log_bounds(unsigned int b, uint64_t *lo, uint64_t *hi);
/* The agent's log2 bucket (pmda/core/hist.h) that KVM's bucket b falls in:
 * KVM's 0 and 1 are its 0 (0-1), KVM's b >= 2 its b - 1, exactly. */
unsigned int kvm_vstat_log2_slot(unsigned int b);

#endif
