/*
 * KVM's binary statistics of a vCPU. kvm_vcpu_ioctl_get_stats_fd()
 * (virt/kvm/kvm_main.c) gives an fd whose file is, from offset 0, a struct
 * kvm_stats_header, the id string (name_size bytes) at id_offset
 * ("kvm-<pid>/vcpu-<id>": kvm_vcpu_init()'s stats_id), num_desc
 * descriptors of sizeof(struct kvm_stats_desc) + name_size bytes each at
 * desc_offset, and the data block at data_offset: each statistic's size u64
 * at its offset (kvm_stats_read(), virt/kvm/binary_stats.c, copies what a
 * read or pread asks for). Only the data changes while the fd lives.
 */
#include "kvm_vstats.h"

#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The kind of each KVM_STATS_TYPE_* x KVM_STATS_UNIT_* KVM declares
 * (STATS_DESC_COUNTER, _ICOUNTER, _PCOUNTER, _IBOOLEAN, _PBOOLEAN,
 * _TIME_NSEC, _LOGHIST_TIME_NSEC in include/linux/kvm_host.h); any other
 * pair is not served. A boolean is a count of 0 or 1 (vCPUs, in debugfs's
 * sum over them). */
static const struct {
	uint32_t type, unit;
	enum kvm_stat_kind kind;
} kinds[] = {
	{ KVM_STATS_TYPE_CUMULATIVE, KVM_STATS_UNIT_NONE, KVM_STAT_COUNT },
	{ KVM_STATS_TYPE_CUMULATIVE, KVM_STATS_UNIT_SECONDS, KVM_STAT_TIME },
	{ KVM_STATS_TYPE_INSTANT, KVM_STATS_UNIT_NONE, KVM_STAT_INSTANT },
	{ KVM_STATS_TYPE_INSTANT, KVM_STATS_UNIT_BOOLEAN, KVM_STAT_INSTANT },
	{ KVM_STATS_TYPE_PEAK, KVM_STATS_UNIT_NONE, KVM_STAT_PEAK },
	{ KVM_STATS_TYPE_PEAK, KVM_STATS_UNIT_BOOLEAN, KVM_STAT_PEAK },
	{ KVM_STATS_TYPE_LOG_HIST, KVM_STATS_UNIT_NONE, KVM_STAT_LOG_HIST },
	{ KVM_STATS_TYPE_LOG_HIST, KVM_STATS_UNIT_SECONDS, KVM_STAT_LOG_HIST },
};

/* 10^n, n <= 19 */
static uint64_t pow10_u64(unsigned int n)
{
	uint64_t p = 1;

	while (n--)
		p *= 10;
	return p;
}

enum kvm_stat_kind kvm_vstat_kind(uint32_t flags, int16_t exponent)
{
	uint32_t type = flags & KVM_STATS_TYPE_MASK, unit = flags & KVM_STATS_UNIT_MASK;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (kinds[i].type != type || kinds[i].unit != unit)
			continue;
		if (kinds[i].kind == KVM_STAT_TIME &&
		    ((flags & KVM_STATS_BASE_MASK) != KVM_STATS_BASE_POW10 || exponent < -18 ||
		     exponent > 0))
			return KVM_STAT_OTHER;
		return kinds[i].kind;
	}
	return KVM_STAT_OTHER;
}

uint64_t kvm_vstat_value(const struct kvm_vstat_desc *d, uint64_t raw)
{
	if (d->kind != KVM_STAT_TIME || d->exponent == -9)
		return raw;
	if (d->exponent > -9)
		return raw * pow10_u64((unsigned int)(d->exponent + 9));
	return raw / pow10_u64((unsigned int)(-9 - d->exponent));
}

static bool header_ok(const struct kvm_stats_header *h)
{
	return h->name_size > 0 && h->name_size <= 4096 && h->num_desc <= KVM_VSTATS_MAX_DESC;
}

/* One descriptor at raw (its name NUL-terminated within name_size, its
 * data u64-aligned and within KVM_VSTATS_MAX_WORDS), or false. */
static bool take_desc(const char *raw, size_t name_size, struct kvm_vstat_desc *d)
{
	const char *name = raw + sizeof(struct kvm_stats_desc);
	size_t n = strnlen(name, name_size);
	struct kvm_stats_desc k;

	memcpy(&k, raw, sizeof(k));
	if (n == name_size || n == 0 || k.size == 0 || k.offset % 8 ||
	    (uint64_t)k.offset / 8 + k.size > KVM_VSTATS_MAX_WORDS)
		return false;
	if (n >= sizeof(d->name))
		n = sizeof(d->name) - 1;
	memcpy(d->name, name, n);
	d->name[n] = '\0';
	d->flags = k.flags;
	d->kind = kvm_vstat_kind(k.flags, k.exponent);
	d->exponent = k.exponent;
	d->size = k.size;
	d->offset = k.offset;
	d->bucket_size = k.bucket_size;
	return true;
}

/* The descriptor block (desc bytes, num_desc entries) into s. */
static int take_descs(const struct kvm_stats_header *h, const char *desc, size_t len,
		      struct kvm_vstats *s)
{
	size_t dsize = sizeof(struct kvm_stats_desc) + h->name_size;

	if (len < (size_t)h->num_desc * dsize)
		return -EINVAL;
	s->d = calloc(h->num_desc ? h->num_desc : 1, sizeof(*s->d));
	if (!s->d)
		return -ENOMEM;
	s->n = h->num_desc;
	s->data_offset = h->data_offset;
	s->words = 0;
	for (unsigned int i = 0; i < h->num_desc; i++) {
		struct kvm_vstat_desc *d = &s->d[i];

		if (!take_desc(desc + i * dsize, h->name_size, d)) {
			kvm_vstats_free(s);
			return -EINVAL;
		}
		if (d->offset / 8 + d->size > s->words)
			s->words = d->offset / 8 + d->size;
	}
	return 0;
}

int kvm_vstats_id_vcpu(const char *id, size_t len)
{
	char buf[64];
	int end = 0;
	unsigned int vcpu;

	snprintf(buf, sizeof(buf), "%.*s", (int)strnlen(id, len), id);
	if (sscanf(buf, "kvm-%*u/vcpu-%u%n", &vcpu, &end) != 1 || buf[end] || vcpu > 65535)
		return -1;
	return (int)vcpu;
}

int kvm_vstats_parse(const void *buf, size_t len, struct kvm_vstats *s)
{
	struct kvm_stats_header h;
	int err;

	memset(s, 0, sizeof(*s));
	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, buf, sizeof(h));
	if (!header_ok(&h) || h.desc_offset > len || h.id_offset > len ||
	    len - h.id_offset < h.name_size)
		return -EINVAL;
	err = take_descs(&h, (const char *)buf + h.desc_offset, len - h.desc_offset, s);
	s->vcpu = kvm_vstats_id_vcpu((const char *)buf + h.id_offset, h.name_size);
	return err;
}

int kvm_vstats_load(int fd, struct kvm_vstats *s)
{
	struct kvm_stats_header h;
	size_t dlen;
	ssize_t n;
	char *desc;
	int err, vcpu;

	memset(s, 0, sizeof(*s));
	n = pread(fd, &h, sizeof(h), 0);
	if (n < 0)
		return -errno;
	if (n != (ssize_t)sizeof(h) || !header_ok(&h))
		return -EINVAL;
	dlen = (size_t)h.num_desc * (sizeof(struct kvm_stats_desc) + h.name_size);
	if (!(desc = malloc(dlen > h.name_size ? dlen : h.name_size)))
		return -ENOMEM;
	n = pread(fd, desc, h.name_size, h.id_offset);
	vcpu = n == (ssize_t)h.name_size ? kvm_vstats_id_vcpu(desc, h.name_size) : -1;
	n = pread(fd, desc, dlen, h.desc_offset);
	err = n < 0 ? -errno : n != (ssize_t)dlen ? -EINVAL : take_descs(&h, desc, dlen, s);
	s->vcpu = vcpu;
	free(desc);
	return err;
}

int kvm_vstats_read(int fd, const struct kvm_vstats *s, uint64_t *data)
{
	size_t len = s->words * sizeof(*data);
	ssize_t n = pread(fd, data, len, s->data_offset);

	if (n < 0)
		return -errno;
	return n == (ssize_t)len ? 0 : -EIO;
}

void kvm_vstats_free(struct kvm_vstats *s)
{
	free(s->d);
	s->d = NULL;
	s->n = 0;
	s->words = 0;
}

void kvm_vstat_log_bounds(unsigned int b, uint64_t *lo, uint64_t *hi)
{
	*lo = b == 0 ? 0 : (uint64_t)1 << (b - 1);
	*hi = b == 0 ? 0 : b >= 64 ? UINT64_MAX : ((uint64_t)1 << b) - 1;
}

unsigned int kvm_vstat_log2_slot(unsigned int b)
{
	return b < 2 ? 0 : b - 1;
}
