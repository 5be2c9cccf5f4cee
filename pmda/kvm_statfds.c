/*
 * KVM's per-vCPU statistics (vcpu_stats = true), from the statistics fds
 * the VMM keeps, shared with pidfd_getfd() and read by kvm_vstats.c.
 */
#include "kvm_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>


/* The VM's statistics fds closed: each holds a reference on its struct
 * kvm (kvm_vcpu_ioctl_get_stats_fd() -> kvm_get_kvm()), and so on the
 * vendor module; a VM whose VMM is gone must not be kept alive. */
static void vstats_fd_release(struct vcpu_stats_fd *v)
{
	close(v->fd);
	kvm_vstats_free(&v->s);
	free(v->data);
}

void kvm_statfds_init(struct kvm_state *st, const struct virt_family *fam)
{
	st->vs.on = fam->opts[OPT_VCPU_STATS].b;
}

void kvm_statfds_close(struct vm_entry *vm)
{
	for (unsigned int i = 0; i < vm->nvsfd; i++)
		vstats_fd_release(&vm->vsfd[i]);
	free(vm->vsfd);
	vm->vsfd = NULL;
	vm->nvsfd = 0;
}

void kvm_statfds_close_all(struct kvm_state *st)
{
	for (size_t i = 0; i < st->vms.n; i++)
		kvm_statfds_close(kvm_vm_at(st, i));
}

static const char *vstats_hint(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return " (ptrace attach rights over the VMM: CAP_SYS_PTRACE, Yama ptrace_scope)";
	case ENOSYS:
		return " (pidfd_getfd: Linux 5.6 and later)";
	default:
		return "";
	}
}

/* Why the per-vCPU statistics failed, logged once per reason. */
static void vstats_log(struct kvm_state *st, const char *what, int err)
{
	if (err == st->vs.err)
		return;
	st->vs.err = err;
	virt_log(LOG_INFO, "kvm: KVM's per-vCPU statistics unavailable: %s: %s%s", what,
		 strerror(err), vstats_hint(err));
}

/* Is fd name of the VMM's fd directory a vCPU's statistics fd? Its anon
 * inode is "kvm-vcpu-stats" (kvm_vcpu_ioctl_get_stats_fd(),
 * virt/kvm/kvm_main.c; newer kernels add ":<vcpu_id>").
 * KVM_GET_STATS_FD itself is no use to another process: kvm_vcpu_ioctl()
 * refuses callers whose mm is not the VM's (-EIO), so the agent can only
 * share the statistics fds the VMM opened (newer QEMUs keep one per
 * vCPU: kvm_init_vcpu(); QEMU 7.2 none). */
static bool vcpu_stats_link(int dirfd, const char *name)
{
	static const char want[] = "anon_inode:kvm-vcpu-stats";
	char link[sizeof(want) + 8];
	ssize_t n = readlinkat(dirfd, name, link, sizeof(link) - 1);
	size_t w = sizeof(want) - 1;

	if (n < (ssize_t)w || memcmp(link, want, w) != 0)
		return false;
	link[n] = '\0';
	return link[w] == '\0' || (link[w] == ':' && strspn(link + w + 1, "0123456789") == (size_t)n - w - 1);
}

/* Take the VMM's statistics fd vmm_fd into vm->vsfd, its vCPU from its id
 * string; -errno and what failed. */
static int vstats_take(struct vm_entry *vm, int pidfd, int vmm_fd, const char **what)
{
	struct vcpu_stats_fd *t, v = { .vmm_fd = vmm_fd };
	int err;

	*what = "pidfd_getfd";
	if ((v.fd = (int)syscall(SYS_pidfd_getfd, pidfd, vmm_fd, 0)) < 0)
		return -errno;
	*what = "reading its descriptors";
	if ((err = kvm_vstats_load(v.fd, &v.s)) == 0 && v.s.vcpu < 0)
		err = -EINVAL;		/* no vCPU in its id string */
	if (!err && (!(v.data = calloc(v.s.words ? v.s.words : 1, sizeof(*v.data))) ||
		     !(t = realloc(vm->vsfd, (vm->nvsfd + 1) * sizeof(*t)))))
		err = -ENOMEM;
	if (err) {
		vstats_fd_release(&v);
		return err;
	}
	v.id = (uint32_t)v.s.vcpu;
	vm->vsfd = t;
	vm->vsfd[vm->nvsfd++] = v;
	return 0;
}

/* Every vCPU statistics fd of the VM's VMM, shared. A failure leaves the
 * VM without them (logged, not tried again while the VM lives). */
static void vstats_open(struct kvm_state *st, struct vm_entry *vm, int dirfd)
{
	const char *what = "pidfd_open";
	int pidfd = (int)syscall(SYS_pidfd_open, (pid_t)vm->k.key, 0);
	DIR *d = pidfd < 0 ? NULL : fdopendir(dup(dirfd));
	struct dirent *de;
	int err = pidfd < 0 ? -errno : 0;

	if (pidfd >= 0 && !d) {
		err = -errno;
		what = "listing its fds";
	}
	while (!err && d && (de = readdir(d)))
		if (vcpu_stats_link(dirfd, de->d_name))
			err = vstats_take(vm, pidfd, atoi(de->d_name), &what);
	if (d)
		closedir(d);
	if (pidfd >= 0)
		close(pidfd);
	if (err) {
		kvm_statfds_close(vm);
		vm->vs_err = -err;
		vstats_log(st, what, -err);
	} else if (vm->nvsfd) {
		st->vs.err = 0;
	} else if (st->vs.err != -1) {
		st->vs.err = -1;
		virt_log(LOG_INFO, "kvm: VMM %u holds no vCPU statistics fd (anon_inode:kvm-vcpu-stats: QEMU 7.2 opens none), so its vCPUs' have no values; logged once",
			 (uint32_t)vm->k.key);
	}
}

/* Are the fds still the VMM's vCPUs' statistics fds (one readlink each)? */
static bool vstats_current(const struct vm_entry *vm)
{
	for (unsigned int i = 0; i < vm->nvsfd; i++) {
		char path[48];

		snprintf(path, sizeof(path), "/proc/%u/fd/%d", (uint32_t)vm->k.key, vm->vsfd[i].vmm_fd);
		if (!vcpu_stats_link(AT_FDCWD, path))
			return false;
	}
	return true;
}

/* Every refresh, asked or not: a VMM that closed a vCPU's statistics fd
 * (its VM destroyed, the VMM alive) gets the VM's duplicates closed, so
 * that the struct kvm goes. */
static void kvm_statfds_drop_stale(struct kvm_state *st)
{
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = kvm_vm_at(st, i);

		if (vm->nvsfd && !vstats_current(vm))
			kvm_statfds_close(vm);
	}
}

/* The VM's statistics fds, current: taken again when one of its vCPU fds
 * changed, or when it has more vCPUs than fds. */
static void vstats_refresh_fds(struct kvm_state *st, struct vm_entry *vm)
{
	char path[32];
	int dirfd;

	if (vm->vs_err || (vm->nvsfd && vstats_current(vm) && vm->nvsfd >= vm->vcpus_seen))
		return;
	kvm_statfds_close(vm);
	snprintf(path, sizeof(path), "/proc/%u/fd", (uint32_t)vm->k.key);
	if ((dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		if (errno != ENOENT)
			vstats_log(st, "opening the VMM's /proc/<pid>/fd", errno);
		return;
	}
	vstats_open(st, vm, dirfd);
	close(dirfd);
}

/* A histogram's buckets into the agent's log2 buckets (kvm_vstats.h). */
static void vstats_hist(struct book_entry *b, const uint64_t *w, unsigned int size)
{
	if (!b->seen)
		memset(b->hist, 0, sizeof(b->hist));
	for (unsigned int k = 0; k < size; k++) {
		unsigned int slot = kvm_vstat_log2_slot(k);

		b->hist[slot < VIRT_HIST_BUCKETS ? slot : VIRT_HIST_BUCKETS - 1] += w[k];
	}
	b->seen = true;
}

/* One vCPU's statistics: one pread, then each into its row. */
static void vstats_read_one(struct kvm_state *st, struct vm_entry *vm, struct vcpu_stats_fd *v)
{
	if (kvm_vstats_read(v->fd, &v->s, v->data) < 0)
		return;
	for (unsigned int i = 0; i < v->s.n; i++) {
		const struct kvm_vstat_desc *d = &v->s.d[i];
		const uint64_t *w = &v->data[d->offset / 8];
		struct book_entry *b;

		if (d->kind == KVM_STAT_LOG_HIST &&
		    (b = kvm_book_row(&st->dfs.vcpu_hists, PM_INDOM_NULL,
				  virt_indom(VIRT_I_KVM_VCPU_STAT_HIST), vm, (int)v->id, d->name)))
			vstats_hist(b, w, d->size);
		else if (d->kind < KVM_STAT_LOG_HIST &&	/* count, time, instant, peak */
			 (b = kvm_book_row(&st->dfs.vcpu_books, virt_indom(VIRT_I_KVM_VCPU_STAT),
				       PM_INDOM_NULL, vm, (int)v->id, d->name)))
			kvm_book_add(b, kvm_vstat_value(d, w[0]), d->kind);
	}
}

/* A histogram row has its bucket instances while its vCPU is read. */
static void vstats_expose_hists(struct virt_table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct book_entry *b = (struct book_entry *)t->v[i];

		virt_row_set(&b->k.row, NULL, 0, b->hist);
		if (b->seen)
			virt_row_expose(&b->k.row, false);
		else
			virt_row_retire(&b->k.row);
	}
}

/* Each live VM's vCPUs' statistics fds, one pread each. */
static void kvm_statfds_read(struct kvm_state *st)
{
	kvm_book_rows_unsee(&st->dfs.vcpu_books);
	kvm_book_rows_unsee(&st->dfs.vcpu_hists);
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = kvm_vm_at(st, i);

		if (!vm->k.row.live)
			continue;
		vstats_refresh_fds(st, vm);
		for (unsigned int k = 0; k < vm->nvsfd; k++)
			vstats_read_one(st, vm, &vm->vsfd[k]);
	}
	kvm_book_rows_expose(&st->dfs.vcpu_books);
	vstats_expose_hists(&st->dfs.vcpu_hists);
}

/* Read only for a fetch that names their metrics or an instance request
 * for their domains. */
static bool kvm_statfds_asked(void)
{
	return virt_asked(VIRT_M_KVM_VCPU_KVM_STAT_COUNT) || virt_asked(VIRT_M_KVM_VCPU_KVM_STAT_TIME) ||
	       virt_asked(VIRT_M_KVM_VCPU_KVM_STAT_INSTANT) ||
	       virt_asked(VIRT_M_KVM_VCPU_KVM_STAT_PEAK) || virt_asked(VIRT_M_KVM_VCPU_KVM_HIST) ||
	       virt_asked_indom(VIRT_I_KVM_VCPU_STAT) || virt_asked_indom(VIRT_I_KVM_VCPU_STAT_HIST);
}

/* Once per refresh (after the VM rows: kvm_refresh says the order), while
 * vcpu_stats is on: read while the fetch asks for them, else only the
 * fds of VMs gone closed. */
void kvm_statfds_refresh(struct kvm_state *st)
{
	if (!st->vs.on)
		return;
	if (kvm_statfds_asked())
		kvm_statfds_read(st);
	else
		kvm_statfds_drop_stale(st);
}
