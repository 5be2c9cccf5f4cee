/* KVM's binary statistics parser (pmda/kvm_vstats.c) on a synthetic stats
 * file laid out as kvm_vcpu_ioctl_get_stats_fd() lays it out (Linux 6.1,
 * x86): header, id string ("kvm-<pid>/vcpu-<N>"), descriptors of 16 + name_size bytes, data;
 * from a buffer and from a file through pread, as from a stats fd. */
#include "kvm_vstats.h"
#include "hist.h"
#include "unit.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME_SIZE 48
#define DSIZE (sizeof(struct kvm_stats_desc) + NAME_SIZE)
#define NDESC 5
#define ID_OFF sizeof(struct kvm_stats_header)
#define DESC_OFF (ID_OFF + NAME_SIZE)
#define DATA_OFF (DESC_OFF + NDESC * DSIZE)
#define WORDS (3 + 2 * 32)
#define LEN (DATA_OFF + WORDS * 8)

static unsigned char file[LEN];

static void put_desc(unsigned int i, const char *name, uint32_t flags, int16_t exp, uint16_t size,
		     uint32_t offset)
{
	struct kvm_stats_desc d = { .flags = flags, .exponent = exp, .size = size, .offset = offset };

	memcpy(file + DESC_OFF + i * DSIZE, &d, sizeof(d));
	strcpy((char *)file + DESC_OFF + i * DSIZE + sizeof(d), name);
}

/* x86's first stats: exits (cumulative), guest_mode (instant boolean),
 * a peak, halt_poll_success_hist (log2, 32 buckets of ns) and a linear
 * histogram; data words exits=7, guest_mode=1, peak=5 */
static void make_file(void)
{
	struct kvm_stats_header h = { 0, NAME_SIZE, NDESC, ID_OFF, DESC_OFF, DATA_OFF };
	uint64_t data[WORDS] = { 7, 1, 5 };

	memcpy(file, &h, sizeof(h));
	strcpy((char *)file + ID_OFF, "kvm-139/vcpu-3");
	put_desc(0, "exits", KVM_STATS_TYPE_CUMULATIVE | KVM_STATS_UNIT_NONE, 0, 1, 0);
	put_desc(1, "guest_mode", KVM_STATS_TYPE_INSTANT | KVM_STATS_UNIT_BOOLEAN, 0, 1, 8);
	put_desc(2, "max_something", KVM_STATS_TYPE_PEAK, 0, 1, 16);
	put_desc(3, "halt_poll_success_hist",
		 KVM_STATS_TYPE_LOG_HIST | KVM_STATS_UNIT_SECONDS | KVM_STATS_BASE_POW10, -9, 32, 24);
	put_desc(4, "a_linear_hist", KVM_STATS_TYPE_LINEAR_HIST, 0, 32, 24 + 32 * 8);
	data[3 + 0] = 2;	/* two polls of 0 ns, three of 2-3 ns */
	data[3 + 2] = 3;
	memcpy(file + DATA_OFF, data, sizeof(data));
}

static void check_descs(const struct kvm_vstats *s)
{
	CHECK(s->vcpu == 3);
	CHECK(s->n == NDESC);
	CHECK(s->data_offset == DATA_OFF);
	CHECK(s->words == WORDS);
	CHECK(strcmp(s->d[0].name, "exits") == 0 && s->d[0].kind == KVM_STAT_COUNT);
	CHECK(strcmp(s->d[1].name, "guest_mode") == 0 && s->d[1].kind == KVM_STAT_INSTANT);
	CHECK(s->d[2].kind == KVM_STAT_PEAK);	/* a peak: its value, not a rate */
	CHECK(strcmp(s->d[3].name, "halt_poll_success_hist") == 0);
	CHECK(s->d[3].kind == KVM_STAT_LOG_HIST && s->d[3].size == 32 && s->d[3].offset == 24);
	CHECK(s->d[3].exponent == -9);
	CHECK(s->d[4].kind == KVM_STAT_OTHER);
}

/* Each type x unit KVM declares in its kind; times in ns exactly from
 * KVM's exponent; units the agent has no metric for not served. */
static void check_kinds(void)
{
	const uint32_t secs = KVM_STATS_UNIT_SECONDS | KVM_STATS_BASE_POW10;
	struct kvm_vstat_desc d = { .kind = KVM_STAT_TIME, .exponent = -9 };

	CHECK(kvm_vstat_kind(KVM_STATS_TYPE_CUMULATIVE | secs, -9) == KVM_STAT_TIME);
	CHECK(kvm_vstat_kind(KVM_STATS_TYPE_CUMULATIVE | KVM_STATS_UNIT_SECONDS | KVM_STATS_BASE_POW2, -9) ==
	      KVM_STAT_OTHER);
	CHECK(kvm_vstat_kind(KVM_STATS_TYPE_CUMULATIVE | secs, -19) == KVM_STAT_OTHER);
	CHECK(kvm_vstat_kind(KVM_STATS_TYPE_CUMULATIVE | secs, 1) == KVM_STAT_OTHER);
	CHECK(kvm_vstat_kind(KVM_STATS_TYPE_PEAK | KVM_STATS_UNIT_BOOLEAN, 0) == KVM_STAT_PEAK);
	CHECK(kvm_vstat_kind(KVM_STATS_TYPE_INSTANT | KVM_STATS_UNIT_BYTES, 0) == KVM_STAT_OTHER);
	CHECK(kvm_vstat_kind(KVM_STATS_TYPE_CUMULATIVE | KVM_STATS_UNIT_CYCLES, 0) == KVM_STAT_OTHER);
	CHECK(kvm_vstat_value(&d, 123456789) == 123456789);
	d.exponent = -6;	/* us */
	CHECK(kvm_vstat_value(&d, 7) == 7000);
	d.exponent = 0;		/* s */
	CHECK(kvm_vstat_value(&d, 2) == 2000000000);
	d.exponent = -12;	/* ps, truncated */
	CHECK(kvm_vstat_value(&d, 2999) == 2);
	d.kind = KVM_STAT_COUNT;
	CHECK(kvm_vstat_value(&d, 2999) == 2999);
}

static void check_buckets(void)
{
	uint64_t lo, hi;

	kvm_vstat_log_bounds(0, &lo, &hi);
	CHECK(lo == 0 && hi == 0);
	kvm_vstat_log_bounds(1, &lo, &hi);
	CHECK(lo == 1 && hi == 1);
	kvm_vstat_log_bounds(2, &lo, &hi);
	CHECK(lo == 2 && hi == 3);
	kvm_vstat_log_bounds(31, &lo, &hi);
	CHECK(lo == 1u << 30 && hi == (1ull << 31) - 1);
	/* into the agent's buckets: 0-1, 2-3, ... (pmda/core/hist.h) */
	CHECK(kvm_vstat_log2_slot(0) == 0 && kvm_vstat_log2_slot(1) == 0);
	CHECK(kvm_vstat_log2_slot(2) == 1 && kvm_vstat_log2_slot(31) == 30);
	for (unsigned int b = 2; b < 32; b++) {
		kvm_vstat_log_bounds(b, &lo, &hi);
		CHECK(virt_bucket_lo(kvm_vstat_log2_slot(b)) == lo && virt_bucket_hi(kvm_vstat_log2_slot(b)) == hi);
	}
}

static void check_ids(void)
{
	CHECK(kvm_vstats_id_vcpu("kvm-139/vcpu-0", 48) == 0);
	CHECK(kvm_vstats_id_vcpu("kvm-139/vcpu-65535", 48) == 65535);
	CHECK(kvm_vstats_id_vcpu("kvm-139/vcpu-65536", 48) == -1);
	CHECK(kvm_vstats_id_vcpu("kvm-139", 48) == -1);		/* a VM's */
	CHECK(kvm_vstats_id_vcpu("kvm-139/vcpu-1x", 48) == -1);
	CHECK(kvm_vstats_id_vcpu("kvm-139/vcpu-12", 14) == 1);	/* cut at name_size */
}

static void check_bad(void)
{
	unsigned char bad[LEN];
	struct kvm_vstats s;
	struct kvm_stats_header h;

	CHECK(kvm_vstats_parse(file, sizeof(struct kvm_stats_header) - 1, &s) == -EINVAL);
	CHECK(kvm_vstats_parse(file, DATA_OFF - 1, &s) == -EINVAL);	/* descriptors cut */
	memcpy(bad, file, LEN);
	memset(bad + DESC_OFF + sizeof(struct kvm_stats_desc), 'x', NAME_SIZE);	/* no NUL */
	CHECK(kvm_vstats_parse(bad, LEN, &s) == -EINVAL);
	memcpy(bad, file, LEN);
	memcpy(&h, bad, sizeof(h));
	h.num_desc = KVM_VSTATS_MAX_DESC + 1;
	memcpy(bad, &h, sizeof(h));
	CHECK(kvm_vstats_parse(bad, LEN, &s) == -EINVAL);
}

int main(void)
{
	char path[] = "/tmp/t_kvm_vstats.XXXXXX";
	struct kvm_vstats s;
	uint64_t data[WORDS];
	int fd;

	make_file();
	CHECK(kvm_vstats_parse(file, LEN, &s) == 0);
	check_descs(&s);
	kvm_vstats_free(&s);
	check_buckets();
	check_ids();
	check_bad();
	check_kinds();

	fd = mkstemp(path);
	CHECK(fd >= 0 && write(fd, file, LEN) == (ssize_t)LEN);
	unlink(path);
	CHECK(kvm_vstats_load(fd, &s) == 0);
	check_descs(&s);
	CHECK(kvm_vstats_read(fd, &s, data) == 0);
	CHECK(data[0] == 7 && data[1] == 1 && data[2] == 5);
	CHECK(data[3] == 2 && data[4] == 0 && data[5] == 3);
	CHECK(ftruncate(fd, LEN - 8) == 0);
	CHECK(kvm_vstats_read(fd, &s, data) == -EIO);
	kvm_vstats_free(&s);
	close(fd);
	return UNIT_DONE();
}
