/*
 * KVM's own statistics of a VM from debugfs. kvm_create_vm_debugfs()
 * (virt/kvm/kvm_main.c) makes /sys/kernel/debug/kvm/<pid>-<fd>/, <pid>
 * the creating thread's, with one file per VM statistic and one per vCPU
 * statistic (the sum over the VM's vCPUs: kvm_get_stat_per_vcpu()), each
 * printing "%llu\n" in KVM's own unit (times in ns); kvm_stats_debugfs_mode()
 * makes instant statistics 0444 and cumulative and peak ones 0644 (writing
 * 0 clears them). The
 * arch adds files of other formats (x86: mmu_rmaps_stat, a table). A
 * histogram's file (*_hist) prints its bucket 0 only. The vcpu<N>/
 * subdirectories (kvm_create_vcpu_debugfs(): the vCPU's thread and the
 * arch's state) are not read: per-vCPU statistics come from the vCPU's
 * stats fd (pmda/kvm_vstats.c).
 */
#include "kvm_books.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint32_t kvm_books_dir_pid(const char *name)
{
	char *end;
	unsigned long pid;

	if (name[0] < '1' || name[0] > '9')
		return 0;
	pid = strtoul(name, &end, 10);
	if (*end != '-' || end[1] < '0' || end[1] > '9' || pid > UINT32_MAX)
		return 0;
	strtoul(end + 1, &end, 10);
	return *end ? 0 : (uint32_t)pid;
}

/* "%llu\n" or, for signed state such as tsc-offset, "%lld\n" (kept as
 * its two's complement). */
static bool parse_value(const char *buf, uint64_t *v)
{
	char *end;

	errno = 0;
	if (buf[0] == '-')
		*v = (uint64_t)strtoll(buf, &end, 10);
	else if (buf[0] >= '0' && buf[0] <= '9')
		*v = strtoull(buf, &end, 10);
	else
		return false;
	return errno == 0 && end != buf && (*end == '\n' || *end == '\0') &&
	       (*end == '\0' || end[1] == '\0');
}

/* One file: 0, -EINVAL when it is no number, or -errno. */
static int read_value(int dirfd, const char *name, uint64_t *v)
{
	char buf[32];
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	if (n == (ssize_t)sizeof(buf) - 1 || !parse_value(buf, v))
		return -EINVAL;
	return 0;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n > t && strcmp(s + n - t, tail) == 0;
}

/* A histogram's file: its bucket 0 (kvm_stat_data_get() reads the
 * statistic's first u64), no count of anything. */
static bool is_hist(const char *name)
{
	return ends_with(name, "_hist");
}

enum kvm_stat_kind kvm_books_kind(const char *name, unsigned int mode)
{
	if (!(mode & 0222))
		return KVM_STAT_INSTANT;
	if (strncmp(name, "max_", 4) == 0)
		return KVM_STAT_PEAK;
	return ends_with(name, "_ns") ? KVM_STAT_TIME : KVM_STAT_COUNT;
}

static void read_file(int dirfd, const char *name, const struct stat *sb,
		      const struct kvm_books_ops *ops, void *arg)
{
	struct kvm_book b = { .name = name, .kind = kvm_books_kind(name, sb->st_mode) };
	int err = -ENAMETOOLONG;

	if (is_hist(name) || (ops->skip && ops->skip(name, arg)))
		return;
	if (strlen(name) < KVM_BOOK_NAME_MAX && !(err = read_value(dirfd, name, &b.value))) {
		ops->stat(&b, arg);
		return;
	}
	ops->bad(name, err, arg);
}

static void read_entry(int dirfd, const char *name, const struct kvm_books_ops *ops, void *arg)
{
	struct stat sb;

	if (name[0] != '.' && fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(sb.st_mode))
		read_file(dirfd, name, &sb, ops, arg);
}

/* Reads the directory and closes dirfd. */
static int read_dir(int dirfd, const struct kvm_books_ops *ops, void *arg)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *de;

	if (!d) {
		int err = errno;

		close(dirfd);
		return -err;
	}
	while ((de = readdir(d)))
		read_entry(dirfd, de->d_name, ops, arg);
	closedir(d);
	return 0;
}

int kvm_books_value(const char *path, uint64_t *v)
{
	return read_value(AT_FDCWD, path, v);
}

int kvm_books_read(int rootfd, const char *dir, const struct kvm_books_ops *ops, void *arg)
{
	int fd = openat(rootfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return read_dir(fd, ops, arg);
}
