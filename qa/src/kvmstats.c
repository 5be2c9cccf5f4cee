/*
 * kvmstats PID - print every statistic of the KVM statistics fds that
 * process PID holds (a VMM: anon_inode:kvm-vcpu-stats[:N] and
 * anon_inode:kvm-vm-stats), one line each:
 *
 *   <scope> <name> <type> <unit> <base> <exponent> <value>
 *
 * scope "vm" or "vcpu<N>" (from the fd's id string, "kvm-<pid>" or
 * "kvm-<pid>/vcpu-<N>"), type and unit as KVM's names (CUMULATIVE, NONE,
 * ...), base 10 or 2, value the statistic's first u64 (a histogram's:
 * the sum of its buckets). The qa tests' own reader of KVM's binary
 * statistics (Documentation/virt/kvm/api.rst, KVM_GET_STATS_FD), the
 * witness of what pmdavirt makes of them: it shares each fd with
 * pidfd_getfd() (only the VMM can open one) and reads it whole.
 *
 * Exit status: 0 ok (also with no stats fd); 1 usage; 2 error.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *const type_names[] = {
	"CUMULATIVE", "INSTANT", "PEAK", "LINEAR_HIST", "LOG_HIST",
};
static const char *const unit_names[] = {
	"NONE", "BYTES", "SECONDS", "CYCLES", "BOOLEAN",
};

static const char *name_of(const char *const *names, size_t n, uint32_t v)
{
	return v < n ? names[v] : "UNKNOWN";
}

/* The whole file of a stats fd: it has no size, so read to what the
 * header says (data_offset plus the largest statistic's end). */
static char *read_all(int fd, size_t len)
{
	char *buf = calloc(1, len);

	if (buf && pread(fd, buf, len, 0) != (ssize_t)len) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void scope_of(const char *id, char *out, size_t len)
{
	const char *v = strstr(id, "/vcpu-");

	if (v)
		snprintf(out, len, "vcpu%s", v + 6);
	else
		snprintf(out, len, "vm");
}

static uint64_t value_of(const char *data, const struct kvm_stats_desc *d)
{
	uint64_t sum = 0, w;
	uint32_t type = (d->flags & KVM_STATS_TYPE_MASK) >> KVM_STATS_TYPE_SHIFT;

	for (unsigned int i = 0; i < (type >= 3 ? d->size : 1u); i++) {
		memcpy(&w, data + d->offset + (size_t)8 * i, sizeof(w));
		sum += w;
	}
	return sum;
}

static int print_fd(int fd)
{
	struct kvm_stats_header h;
	size_t dsize, len;
	char scope[32], *buf;

	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -1;
	dsize = sizeof(struct kvm_stats_desc) + h.name_size;
	len = (size_t)h.desc_offset + h.num_desc * dsize;
	if (!(buf = read_all(fd, len)))
		return -1;
	scope_of(buf + h.id_offset, scope, sizeof(scope));
	for (uint32_t i = 0; i < h.num_desc; i++) {
		const struct kvm_stats_desc *d = (const void *)(buf + h.desc_offset + i * dsize);
		size_t need = (size_t)d->offset + (size_t)8 * d->size;
		char *data = calloc(1, need);
		uint32_t flags = d->flags;

		if (!data || pread(fd, data, need, h.data_offset) != (ssize_t)need) {
			free(data);
			free(buf);
			return -1;
		}
		printf("%s %s %s %s %d %d %llu\n", scope, d->name,
		       name_of(type_names, 5, (flags & KVM_STATS_TYPE_MASK) >> KVM_STATS_TYPE_SHIFT),
		       name_of(unit_names, 5, (flags & KVM_STATS_UNIT_MASK) >> KVM_STATS_UNIT_SHIFT),
		       (flags & KVM_STATS_BASE_MASK) == KVM_STATS_BASE_POW2 ? 2 : 10, d->exponent,
		       (unsigned long long)value_of(data, d));
		free(data);
	}
	free(buf);
	return 0;
}

static int is_stats_fd(const char *pid, const char *fd)
{
	char path[300], link[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s/fd/%s", pid, fd);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = '\0';
	return strncmp(link, "anon_inode:kvm-vcpu-stats", 25) == 0 ||
	       strcmp(link, "anon_inode:kvm-vm-stats") == 0;
}

int main(int argc, char **argv)
{
	char path[64];
	struct dirent *de;
	DIR *dir;
	int pidfd;

	if (argc != 2) {
		fprintf(stderr, "usage: kvmstats PID\n");
		return 1;
	}
	snprintf(path, sizeof(path), "/proc/%s/fd", argv[1]);
	pidfd = (int)syscall(SYS_pidfd_open, atoi(argv[1]), 0);
	if (pidfd < 0 || !(dir = opendir(path))) {
		fprintf(stderr, "kvmstats: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	while ((de = readdir(dir))) {
		int fd;

		if (!is_stats_fd(argv[1], de->d_name))
			continue;
		fd = (int)syscall(SYS_pidfd_getfd, pidfd, atoi(de->d_name), 0);
		if (fd < 0 || print_fd(fd) < 0) {
			fprintf(stderr, "kvmstats: fd %s of %s: %s\n", de->d_name, argv[1],
				strerror(errno));
			return 2;
		}
		close(fd);
	}
	closedir(dir);
	return 0;
}
