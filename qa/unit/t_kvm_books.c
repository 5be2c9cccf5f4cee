/* KVM's debugfs statistics reader (pmda/kvm_books.c) on a tree laid out as
 * Linux 6.1 lays out /sys/kernel/debug/kvm/<pid>-<fd>/ (files as qa 117's
 * VM showed them): counters 0644 (times *_ns, peaks max_*), instant values 0444, x86's
 * mmu_rmaps_stat (empty with TDP), a histogram's file (its bucket 0: not
 * read), vcpu<N>/ with read-only state (not read). */
#include "kvm_books.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct seen {
	char got[1024];		/* "name=value:<kind letter>;" in readdir order */
	char bad[256];
	int nstat, nbad;
	bool skip_rmaps;
};

static void put(const char *dir, const char *name, const char *text, mode_t mode)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
	chmod(path, mode);
}

static bool skip(const char *name, void *arg)
{
	const struct seen *s = arg;

	return s->skip_rmaps && strcmp(name, "mmu_rmaps_stat") == 0;
}

static void stat_cb(const struct kvm_book *b, void *arg)
{
	struct seen *s = arg;
	char one[128];

	snprintf(one, sizeof(one), "%s=%lld:%c;", b->name, (long long)b->value,
		 "ctipho"[b->kind]);
	strncat(s->got, one, sizeof(s->got) - strlen(s->got) - 1);
	s->nstat++;
}

static void bad_cb(const char *name, int err, void *arg)
{
	struct seen *s = arg;
	char one[128];

	snprintf(one, sizeof(one), "%s:%d;", name, err);
	strncat(s->bad, one, sizeof(s->bad) - strlen(s->bad) - 1);
	s->nbad++;
}

static const struct kvm_books_ops ops = { skip, stat_cb, bad_cb };

static bool has(const char *list, const char *item)
{
	return strstr(list, item) != NULL;
}

int main(void)
{
	char root[] = "/tmp/t_kvm_books.XXXXXX", dir[600], vcpu[700], other[700];
	struct seen s;
	int rootfd;

	CHECK(kvm_books_dir_pid("139-4") == 139);
	CHECK(kvm_books_dir_pid("4242-17") == 4242);
	CHECK(kvm_books_dir_pid("exits") == 0);
	CHECK(kvm_books_dir_pid("139") == 0);
	CHECK(kvm_books_dir_pid("139-") == 0);
	CHECK(kvm_books_dir_pid("139-4x") == 0);
	CHECK(kvm_books_dir_pid("0-4") == 0);
	CHECK(kvm_books_dir_pid("-1-4") == 0);
	CHECK(kvm_books_dir_pid("99999999999-4") == 0);

	if (!mkdtemp(root))
		return 1;
	snprintf(dir, sizeof(dir), "%s/139-4", root);
	snprintf(vcpu, sizeof(vcpu), "%s/vcpu0", dir);
	mkdir(dir, 0755);
	mkdir(vcpu, 0755);
	put(dir, "exits", "1002\n", 0644);
	put(dir, "max_mmu_rmap_size", "0\n", 0644);
	put(dir, "pages_4k", "3\n", 0444);
	put(dir, "halt_wait_ns", "4000\n", 0644);
	put(dir, "blocking", "1\n", 0444);
	put(dir, "mmu_rmaps_stat", "", 0644);
	put(dir, "junk", "12 34\n", 0644);
	put(dir, "huge", "18446744073709551615\n", 0644);
	put(dir, "toolarge", "18446744073709551616\n", 0644);
	put(dir, "halt_poll_success_hist", "5\n", 0444);
	put(vcpu, "pid", "139\n", 0444);
	put(vcpu, "tsc-offset", "-45525224216\n", 0444);
	snprintf(other, sizeof(other), "%s/x", dir);
	mkdir(other, 0755);	/* no vcpu<N>: not read */
	rootfd = open(root, O_RDONLY | O_DIRECTORY);

	memset(&s, 0, sizeof(s));
	CHECK(kvm_books_read(rootfd, "139-4", &ops, &s) == 0);
	CHECK(s.nstat == 6);
	CHECK(has(s.got, "exits=1002:c;"));
	CHECK(has(s.got, "max_mmu_rmap_size=0:p;"));
	CHECK(has(s.got, "pages_4k=3:i;"));
	CHECK(has(s.got, "halt_wait_ns=4000:t;"));
	CHECK(has(s.got, "blocking=1:i;"));
	CHECK(has(s.got, "huge=-1:c;"));	/* 2^64 - 1, printed signed */
	CHECK(!has(s.got, "hist") && !has(s.got, "pid") && !has(s.got, "tsc"));
	CHECK(s.nbad == 3);
	CHECK(has(s.bad, "mmu_rmaps_stat:-22;"));
	CHECK(has(s.bad, "junk:-22;"));
	CHECK(has(s.bad, "toolarge:-22;"));

	memset(&s, 0, sizeof(s));
	s.skip_rmaps = true;
	CHECK(kvm_books_read(rootfd, "139-4", &ops, &s) == 0);
	CHECK(s.nbad == 2 && !has(s.bad, "mmu_rmaps_stat"));
	CHECK(kvm_books_read(rootfd, "140-4", &ops, &s) == -ENOENT);
	{
		char path[700];
		uint64_t v = 0;

		snprintf(path, sizeof(path), "%s/exits", dir);
		CHECK(kvm_books_value(path, &v) == 0 && v == 1002);
		snprintf(path, sizeof(path), "%s/mmu_rmaps_stat", dir);
		CHECK(kvm_books_value(path, &v) == -EINVAL);
		snprintf(path, sizeof(path), "%s/gone", dir);
		CHECK(kvm_books_value(path, &v) == -ENOENT);
	}

	close(rootfd);
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		CHECK(system(cmd) == 0);
	}
	return UNIT_DONE();
}
