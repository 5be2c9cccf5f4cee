/*
 * KVM's own books of each VM (/sys/kernel/debug/kvm, read by kvm_books.c),
 * and the rows of KVM's values, a VM's or a vCPU's (kvm_statfds.c's too).
 */
#include "kvm_int.h"
#include "vmid.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


struct books_ctx {
	struct kvm_state *st;
	struct vm_entry *vm;
	const char *dir;		/* "<pid>-<fd>" */
};

static bool book_skip(const char *name, void *arg)
{
	const struct kvm_state *st = ((struct books_ctx *)arg)->st;

	for (unsigned int i = 0; i < st->dfs.nbad; i++)
		if (strncmp(st->dfs.bad[i].name, name, sizeof(st->dfs.bad[i].name) - 1) == 0)
			return true;	/* a name too long matches as far as it was kept */
	return false;
}

/* Room for one more bad file; false (logged once) when out of memory. */
static bool book_bad_room(struct kvm_state *st)
{
	unsigned int cap = st->dfs.bad_cap ? 2 * st->dfs.bad_cap : 32;
	struct books_bad *b;

	if (st->dfs.nbad < st->dfs.bad_cap)
		return true;
	if ((b = realloc(st->dfs.bad, cap * sizeof(*b)))) {
		st->dfs.bad = b;
		st->dfs.bad_cap = cap;
		return true;
	}
	if (!st->dfs.bad_nomem)
		virt_log(LOG_WARNING, "kvm: out of memory: files of %s that are no statistic "
			 "are read at every fetch", KVM_BOOKS_ROOT);
	st->dfs.bad_nomem = true;
	return false;
}

/* A file that is no number is logged and never opened again; one that
 * could not be read (its VM going away) is skipped in this refresh. */
static void book_bad(const char *name, int err, void *arg)
{
	struct books_ctx *c = arg;
	struct kvm_state *st = c->st;

	if ((err != -EINVAL && err != -ENAMETOOLONG) || !book_bad_room(st))
		return;
	snprintf(st->dfs.bad[st->dfs.nbad].name, sizeof(st->dfs.bad[0].name), "%s", name);
	st->dfs.nbad++;
	virt_log(LOG_INFO, "kvm: %s/%s/%.*s is no statistic (%s), skipped from now on",
		 KVM_BOOKS_ROOT, c->dir, 2 * KVM_BOOK_NAME_MAX, name,
		 err == -EINVAL ? "not a number" : "name too long");
}

/* The entry of KVM's statistic raw of vm ("<vm>/<stat>") or of its vCPU
 * vcpu ("<vm>/vcpu<N>/<stat>") in t, made on first sight; NULL when out
 * of memory. */
struct book_entry *kvm_book_row(struct virt_table *t, pmInDom indom, pmInDom hindom,
				struct vm_entry *vm, int vcpu, const char *raw)
{
	char stat[KVM_BOOK_NAME_MAX], name[VIRT_NAME_MAX];
	struct book_entry *b;

	virt_sanitize(stat, sizeof(stat), raw);
	if (vcpu < 0)
		snprintf(name, sizeof(name), "%.*s/%.*s", VMID_NAME_MAX, vm->k.row.name,
			 KVM_BOOK_NAME_MAX - 1, stat);
	else
		snprintf(name, sizeof(name), "%.*s/vcpu%hu/%.*s", VMID_NAME_MAX, vm->k.row.name,
			 (unsigned short)vcpu, KVM_BOOK_NAME_MAX - 1, stat);
	if (!(b = virt_table_get_name(t, indom, hindom, name)))
		return NULL;
	b->vm = vm;
	b->vcpu = vcpu;
	snprintf(b->stat, sizeof(b->stat), "%s", stat);
	return b;
}

/* The one metric of kind that has the row's value; none when the row was
 * not read (kind KVM_STAT_OTHER). */
static void book_kind(struct book_entry *b, enum kvm_stat_kind kind)
{
	b->count = kind == KVM_STAT_COUNT;
	b->time = kind == KVM_STAT_TIME;
	b->instant = kind == KVM_STAT_INSTANT;
	b->peak = kind == KVM_STAT_PEAK;
}

/* One value of KVM's: the sum over the VM's sources (a VMM with two VMs
 * has two directories, two vCPUs of one id) read in this refresh. */
void kvm_book_add(struct book_entry *b, uint64_t value, enum kvm_stat_kind kind)
{
	b->value = b->seen ? b->value + value : value;
	b->seen = true;
	book_kind(b, kind);
}

static void book_stat(const struct kvm_book *k, void *arg)
{
	struct books_ctx *c = arg;
	struct vm_entry *vm = c->vm;
	struct book_entry *b = kvm_book_row(&c->st->dfs.vm_books, virt_indom(VIRT_I_KVM_VM_STAT), PM_INDOM_NULL,
					vm, -1, k->name);

	if (!b)
		return;
	kvm_book_add(b, k->value, k->kind);
}

static const struct kvm_books_ops books_ops = {
	.skip = book_skip, .stat = book_stat, .bad = book_bad,
};

/* The live VM whose VMM created the debugfs directory of pid: its
 * thread id, which is the process's for every VMM we know (the VM made
 * on the main thread), else /proc/<pid>/status names the process. */
static struct vm_entry *books_vm(struct kvm_state *st, uint32_t pid)
{
	struct vm_entry *vm = kvm_vm_of(st, pid);
	unsigned int tgid = 0;
	char path[64], line[128];
	FILE *f;

	if (vm || !virt_pid_alive(pid))
		return vm && vm->k.row.live ? vm : NULL;
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if (!(f = fopen(path, "re")))
		return NULL;
	while (fgets(line, sizeof(line), f) && sscanf(line, "Tgid: %u", &tgid) != 1)
		;
	fclose(f);
	vm = tgid && tgid != pid ? kvm_vm_of(st, tgid) : NULL;
	return vm && vm->k.row.live ? vm : NULL;
}

static void books_log_root(struct kvm_state *st, int err)
{
	if (err == st->dfs.root_errno)
		return;
	st->dfs.root_errno = err;
	if (err)
		virt_log(LOG_INFO, "kvm: KVM's own statistics unavailable: %s: %s%s", KVM_BOOKS_ROOT,
			 strerror(err), err == ENOENT ? " (debugfs not mounted?)" : "");
}

/* The root, open (*root) and listed; NULL when it cannot be (logged once
 * per reason). */
static DIR *books_root(struct kvm_state *st, int *root)
{
	DIR *d = NULL;
	int fd = -1, err;

	if ((*root = open(KVM_BOOKS_ROOT, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0 &&
	    (fd = dup(*root)) >= 0)
		d = fdopendir(fd);
	err = d ? 0 : errno;
	if (!d && fd >= 0)
		close(fd);
	if (!d && *root >= 0)
		close(*root);
	books_log_root(st, err);
	return d;
}

/* A row has its instance while KVM's directory of its VM has the file. */
void kvm_book_rows_expose(struct virt_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct book_entry *b = (struct book_entry *)t->v[i];

		if (b->seen) {
			virt_row_expose(&b->k.row, true);
		} else {
			virt_row_retire(&b->k.row);
			book_kind(b, KVM_STAT_OTHER);
		}
	}
}

void kvm_book_rows_unsee(struct virt_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		((struct book_entry *)t->v[i])->seen = false;
}

void kvm_debugfs_init(struct kvm_state *st)
{
	st->dfs.vm_books = st->dfs.vcpu_books = st->dfs.vcpu_hists = VIRT_TABLE_OF(struct book_entry);
}

/* Each live VM's directory of /sys/kernel/debug/kvm: one readdir of the
 * root, one of each VM directory and of each of its vcpu<N>/, a read of
 * each file. No debugfs: no values (logged once). */
static void kvm_debugfs_read(struct kvm_state *st)
{
	struct dirent *de;
	int root;
	DIR *d = books_root(st, &root);

	kvm_book_rows_unsee(&st->dfs.vm_books);
	while (d && (de = readdir(d))) {
		struct books_ctx c = { st, NULL, de->d_name };
		uint32_t pid = kvm_books_dir_pid(de->d_name);

		if (pid && (c.vm = books_vm(st, pid)))
			kvm_books_read(root, de->d_name, &books_ops, &c);
	}
	if (d) {
		closedir(d);
		close(root);
	}
	kvm_book_rows_expose(&st->dfs.vm_books);
}

/* KVM's books cost a directory walk and ~60 reads per VM: read only for a
 * fetch that names one of their metrics or an instance request for their
 * own domain. */
static bool kvm_debugfs_asked(void)
{
	return virt_asked(VIRT_M_KVM_VM_KVM_STAT_COUNT) || virt_asked(VIRT_M_KVM_VM_KVM_STAT_TIME) ||
	       virt_asked(VIRT_M_KVM_VM_KVM_STAT_INSTANT) || virt_asked(VIRT_M_KVM_VM_KVM_STAT_PEAK) ||
	       virt_asked_indom(VIRT_I_KVM_VM_STAT);
}

/* The VM's row goes: its rows of KVM's own values too. */
void kvm_book_rows_remove(struct kvm_state *st, const struct vm_entry *vm)
{
	struct virt_table *tables[] = { &st->dfs.vm_books, &st->dfs.vcpu_books, &st->dfs.vcpu_hists };

	for (size_t t = 0; t < VIRT_ARRAY_SIZE(tables); t++)
		for (size_t i = 0; i < tables[t]->n;) {
			struct book_entry *b = (struct book_entry *)tables[t]->v[i];

			if (b->vm == vm)
				virt_table_remove(tables[t], b);	/* the last takes its place */
			else
				i++;
		}
}

/* Once per refresh (after the VM rows: kvm_refresh says the order), while
 * the fetch asks for KVM's values of VMs. */
void kvm_debugfs_refresh(struct kvm_state *st)
{
	if (kvm_debugfs_asked())
		kvm_debugfs_read(st);
}
