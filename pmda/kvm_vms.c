/*
 * The kvm family's per-VM and per-vCPU rows, summed from the vcpus slots
 * the BPF side shares (mmap'ed), what the kernel folded from destroyed
 * vCPUs (vms_gone, vcpus_gone) and what slots the agent freed left; the
 * run delay of the vCPU threads (schedstat).
 */
#include "kvm_int.h"
#include "vmid.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

const char *const kvm_wait_class_names[KVM_WAIT_CLASSES] = {
	[KVM_WAIT_SAME_VM] = "same_vm", [KVM_WAIT_OTHER_VM] = "other_vm",
	[KVM_WAIT_VHOST] = "vhost", [KVM_WAIT_HOST] = "host",
	[KVM_WAIT_THROTTLED] = "throttled",
};

/* ------------------------------------------------- per-VM from slots */

static bool not_retired(const void *e, const void *arg)
{
	(void)arg;
	return !((const struct vm_entry *)e)->retired;
}

/* The row of VMM process tgid (alive or found gone in this refresh). */
struct vm_entry *kvm_vm_of(struct kvm_state *st, uint32_t tgid)
{
	return virt_table_find_if(&st->vms, tgid, not_retired, NULL);
}

struct vm_entry *kvm_vm_at(struct kvm_state *st, size_t i)
{
	return (struct vm_entry *)st->vms.v[i];
}

/* Is VMM process tgid alive? Its row (vm, kvm_vm_of()'s) says, else /proc. */
static bool process_alive(const struct vm_entry *vm, uint32_t tgid)
{
	return vm ? vm->k.row.live : virt_pid_alive(tgid);
}

static bool vmm_alive(struct kvm_state *st, uint32_t tgid)
{
	return process_alive(kvm_vm_of(st, tgid), tgid);
}

/* ------------------------------------------------------------ per vCPU */

/* First attach: the vCPU rows' table and the buffers for reads of the
 * gone maps (max_vms, max_vcpus entries); 0, or -1 with nothing kept. */
int kvm_vms_init(struct kvm_state *st, const struct virt_family *fam)
{
	st->vc.vcpu_rows = VIRT_TABLE_OF_SUMS(struct vcpu_entry, sums, KVM_SUM_WORDS);
	st->vc.gone_tgid = calloc(fam->opts[OPT_MAX_VMS].u, sizeof(*st->vc.gone_tgid));
	st->vc.gone = calloc(fam->opts[OPT_MAX_VMS].u, sizeof(*st->vc.gone));
	st->vc.max_vcpus = (uint32_t)fam->opts[OPT_MAX_VCPUS].u;
	st->vc.vgone_key = calloc(fam->opts[OPT_MAX_VCPUS].u, sizeof(*st->vc.vgone_key));
	st->vc.vgone = calloc(fam->opts[OPT_MAX_VCPUS].u, sizeof(*st->vc.vgone));
	if (st->vc.gone_tgid && st->vc.gone && st->vc.vgone_key && st->vc.vgone)
		return 0;
	kvm_vms_free(st);
	return -1;
}

void kvm_vms_free(struct kvm_state *st)
{
	free(st->vc.gone_tgid);
	free(st->vc.gone);
	free(st->vc.vgone_key);
	free(st->vc.vgone);
}

/* An attach's slots and threads arrays, nvcpus entries each, as kvm.c
 * mapped them in (NULL: not mapped), kept until kvm_vms_unmap, and a rec
 * and occupancy index per slot: 0, or -1 for kvm.c to unmap. A new
 * attach's drops count from 0. */
int kvm_vms_attach(struct kvm_state *st, struct kvm_vcpu_slot *vcpus, uint64_t *threads,
		   size_t nvcpus)
{
	st->vc.nvcpus = nvcpus;
	st->vc.vcpus = vcpus;
	st->vc.threads = threads;
	st->vc.recs = calloc(nvcpus, sizeof(*st->vc.recs));
	st->vc.occ = calloc(nvcpus, sizeof(*st->vc.occ));
	st->vc.occ_prev = calloc(nvcpus, sizeof(*st->vc.occ_prev));
	st->vc.nocc = st->vc.nocc_prev = 0;
	if (!st->vc.vcpus || !st->vc.threads || !st->vc.recs || !st->vc.occ || !st->vc.occ_prev)
		return -1;
	st->vc.vm_drops = 0;
	return 0;
}

/* The BPF object goes: its arrays, and the reads of its gone maps. */
void kvm_vms_unmap(struct kvm_state *st)
{
	if (st->vc.vcpus)
		munmap(st->vc.vcpus, st->vc.nvcpus * sizeof(*st->vc.vcpus));
	if (st->vc.threads)
		munmap(st->vc.threads, st->vc.nvcpus * sizeof(*st->vc.threads));
	free(st->vc.recs);
	free(st->vc.occ);
	free(st->vc.occ_prev);
	st->vc.vcpus = NULL;
	st->vc.threads = NULL;
	st->vc.recs = NULL;
	st->vc.occ = st->vc.occ_prev = NULL;
	st->vc.nocc = st->vc.nocc_prev = 0;
	st->vc.vgone_valid = false;
}

/* The row of vCPU id of vm, "<vm>/vcpu<id>", made on first sight (found
 * again by name: a vCPU created again, a VM restarted under its name). */
static struct vcpu_entry *vcpu_row(struct kvm_state *st, struct vm_entry *vm, uint32_t id)
{
	char name[VIRT_NAME_MAX];
	struct vcpu_entry *c;

	snprintf(name, sizeof(name), "%.*s/vcpu%u", VMID_NAME_MAX, vm->k.row.name, id);
	c = virt_table_get_name(&st->vc.vcpu_rows, virt_indom(VIRT_I_KVM_VCPU), PM_INDOM_NULL, name);
	if (!c)
		return NULL;
	c->vm = vm;
	c->id = id;
	return c;
}

/* The vCPU row of process tgid's vCPU id, if its VM has a row. */
static struct vcpu_entry *vcpu_of(struct kvm_state *st, uint32_t tgid, uint32_t id)
{
	struct vm_entry *vm = kvm_vm_of(st, tgid);

	return vm ? vcpu_row(st, vm, id) : NULL;
}

/* The vCPU row of process tgid's vCPU id, if its VM has a live row. */
static struct vcpu_entry *live_vcpu_of(struct kvm_state *st, uint32_t tgid, uint32_t id)
{
	struct vm_entry *vm = kvm_vm_of(st, tgid);

	return vm && vm->k.row.live ? vcpu_row(st, vm, id) : NULL;
}

/* A vcpus_gone key's process and vCPU (kvm.h) */
static uint32_t vgone_tgid(uint64_t key)
{
	return (uint32_t)(key >> 32);
}

static uint32_t vgone_vcpu(uint64_t key)
{
	return (uint32_t)key;
}

/* The VM's row goes: its vCPUs' rows too. */
static void vcpu_rows_remove(struct kvm_state *st, const struct vm_entry *vm)
{
	for (size_t i = 0; i < st->vc.vcpu_rows.n;) {
		struct vcpu_entry *c = (struct vcpu_entry *)st->vc.vcpu_rows.v[i];

		if (c->vm != vm) {
			i++;
			continue;
		}
		virt_table_remove(&st->vc.vcpu_rows, c);	/* the last entry takes its place */
	}
}

/* The kernel's vcpus_gone: counts of destroyed vCPUs per process and
 * vcpu_id. Entries read, or -errno. */
static int read_vcpus_gone(struct kvm_state *st)
{
	return virt_map_dump(bpf_map__fd(st->skel->maps.vcpus_gone), st->vc.vgone_key,
			     sizeof(*st->vc.vgone_key), st->vc.vgone, sizeof(*st->vc.vgone), st->vc.max_vcpus);
}

/* vcpus_gone as of now: read again only when a fold (the one writer, a
 * vCPU destroyed) completed since the last read, so a steady refresh makes
 * no bpf() call for it. The caller sums only while no fold runs. */
static int vcpus_gone_now(struct kvm_state *st)
{
	uint64_t done = __atomic_load_n(&st->skel->bss->folds_done, __ATOMIC_ACQUIRE);
	int n;

	if (st->vc.vgone_valid && done == st->vc.vgone_folds)
		return st->vc.nvgone;
	n = read_vcpus_gone(st);
	st->vc.nvgone = n < 0 ? 0 : n;
	st->vc.vgone_folds = done;
	st->vc.vgone_valid = n >= 0;
	return st->vc.nvgone;
}

/* Thread tid of process tgid's entry of rd_counted, or NULL. */
static struct rd_counted *rd_counted_find(struct kvm_state *st, uint32_t tgid, uint32_t tid)
{
	for (size_t i = 0; i < st->vc.nrd_counted; i++)
		if (st->vc.rd_counted[i].tgid == tgid && st->vc.rd_counted[i].tid == tid)
			return &st->vc.rd_counted[i];
	return NULL;
}

/* Thread tid of process tgid: its run delay up to rd is counted in its
 * VM's base (no room: a vCPU it runs next counts it again). */
static void rd_counted_note(struct kvm_state *st, uint32_t tgid, uint32_t tid, uint64_t rd)
{
	struct rd_counted *c = rd_counted_find(st, tgid, tid);

	if (c)
		c->rd = rd;
	else if (VIRT_GROW(st->vc.rd_counted, st->vc.rd_counted_cap, st->vc.nrd_counted + 1) == 0)
		st->vc.rd_counted[st->vc.nrd_counted++] = (struct rd_counted){ tgid, tid, rd };
}

/* What of thread tid's run delay its VM counted already (0: none), no
 * longer kept: a rec follows the thread from there. */
static uint64_t rd_counted_take(struct kvm_state *st, uint32_t tgid, uint32_t tid)
{
	struct rd_counted *c = rd_counted_find(st, tgid, tid);
	uint64_t rd = c ? c->rd : 0;

	if (c)
		*c = st->vc.rd_counted[--st->vc.nrd_counted];
	return rd;
}

/* Threads of exited VMMs run no vCPU again. */
static void rd_counted_purge(struct kvm_state *st)
{
	for (size_t i = 0; i < st->vc.nrd_counted;)
		if (vmm_alive(st, st->vc.rd_counted[i].tgid))
			i++;
		else
			st->vc.rd_counted[i] = st->vc.rd_counted[--st->vc.nrd_counted];
}

/* The run delay read from a thread the rec no longer follows stays with
 * its VM and vCPU (the kernel folds exit counts of destroyed vCPUs, not
 * this), and is noted as counted: the thread may run another vCPU. */
static void rec_forget_thread(struct kvm_state *st, struct vcpu_rec *r)
{
	uint64_t rd = r->last[W_RUN_DELAY];
	struct vm_entry *vm = r->tgid ? kvm_vm_of(st, r->tgid) : NULL;
	struct vcpu_entry *c = vm && rd ? vcpu_row(st, vm, r->id) : NULL;

	if (vm)
		virt_sums_fold_word(&vm->sums, W_RUN_DELAY, rd);
	if (c)
		virt_sums_fold_word(&c->sums, W_RUN_DELAY, rd);
	if (vm && r->tid && r->rd_base + rd)
		rd_counted_note(st, r->tgid, r->tid, r->rd_base + rd);
	r->last[W_RUN_DELAY] = 0;
	r->rd_base = 0;
	r->tid = 0;
}

/* A slot's counts stay with its VM when the slot goes. */
static void rec_fold(struct kvm_state *st, struct vcpu_rec *r)
{
	struct vm_entry *vm = kvm_vm_of(st, r->tgid);
	struct vcpu_entry *c = vm ? vcpu_row(st, vm, r->id) : NULL;

	rec_forget_thread(st, r);
	if (vm)
		virt_sums_fold_n(&vm->sums, r->last, VM_WORDS);
	if (c)
		virt_sums_fold_n(&c->sums, r->last, VM_WORDS);
	memset(r, 0, sizeof(*r));
}

/* A kernel struct kvm_vm_stats (a gone entry) into sums: it has no run delay. */
static void gone_fold(struct virt_sums *s, const struct kvm_vm_stats *g)
{
	virt_sums_fold_n(s, (const uint64_t *)g, VM_WORDS);
}

static void gone_add(struct virt_sums *s, const struct kvm_vm_stats *g)
{
	virt_sums_add_n(s, (const uint64_t *)g, VM_WORDS);
}

/* The kernel's vms_gone: counts of destroyed vCPUs per process. Entries
 * read, or -errno. */
static int read_gone(struct kvm_state *st, uint32_t max_vms)
{
	return virt_map_dump(bpf_map__fd(st->skel->maps.vms_gone), st->vc.gone_tgid,
			     sizeof(*st->vc.gone_tgid), st->vc.gone, sizeof(*st->vc.gone), max_vms);
}

/* The arrays go (detach): keep the VM rows, their counts in their base. */
void kvm_vcpus_forget(struct kvm_state *st, uint32_t max_vms)
{
	int n = st->skel ? read_gone(st, max_vms) : 0;

	for (int i = 0; i < n; i++) {
		struct vm_entry *vm = kvm_vm_of(st, st->vc.gone_tgid[i]);

		if (vm)
			gone_fold(&vm->sums, &st->vc.gone[i]);
	}
	n = st->skel ? read_vcpus_gone(st) : 0;
	for (int i = 0; i < n; i++) {
		struct vcpu_entry *c = vcpu_of(st, vgone_tgid(st->vc.vgone_key[i]),
					       vgone_vcpu(st->vc.vgone_key[i]));

		if (c)
			gone_fold(&c->sums, &st->vc.vgone[i]);
	}
	for (size_t i = 0; st->vc.recs && i < st->vc.nvcpus; i++)
		if (st->vc.recs[i].tgid)
			rec_fold(st, &st->vc.recs[i]);
}

/* The thread's run_delay in ns: /proc/<tgid>/task/<tid>/schedstat, second
 * field (sched_info.run_delay: fs/proc/base.c proc_pid_schedstat()). */
static bool thread_run_delay(uint32_t tgid, uint32_t tid, uint64_t *ns)
{
	unsigned long long run, delay;
	char path[64], buf[96];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/task/%u/schedstat", tgid, tid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &delay) != 2)
		return false;
	*ns = delay;
	return true;
}

/* The rec's thread's run delay beyond what its VM counted before: the
 * value the scheduler hooks keep in its slot (sched_rd, + 1), the kernel's
 * as of the thread's last switch, wake-up or migration, so no file per
 * vCPU per refresh; without the hooks, or before they saw the thread, its
 * schedstat. A thread gone keeps its last. */
static void rec_read_delay(const struct kvm_state *st, struct vcpu_rec *r, uint64_t sched_rd)
{
	bool (*delay_of)(uint32_t tgid, uint32_t tid, uint64_t *ns) =
		st->vc.run_delay ? st->vc.run_delay : thread_run_delay;
	uint64_t ns = 0;

	if (sched_rd)
		ns = sched_rd - 1;
	else if (!delay_of(r->tgid, r->tid, &ns))
		return;
	r->last[W_RUN_DELAY] = ns > r->rd_base ? ns - r->rd_base : 0;
}

static void rec_take(struct kvm_state *st, struct vcpu_rec *r,
		     const volatile struct kvm_vcpu_slot *v)
{
	const volatile uint64_t *w = (const volatile uint64_t *)&v->vm;
	uint32_t tid = v->tid;
	uint64_t sched_rd = v->sched_rd;

	if (r->tgid != v->tgid) {
		rec_forget_thread(st, r);
		memset(r, 0, sizeof(*r));
	}
	r->tgid = v->tgid;
	r->id = v->vcpu_id;
	r->timer_advance = v->timer_advance;
	for (size_t i = 0; i < VM_WORDS; i++)
		r->last[i] = w[i];
	if (r->tid != tid) {
		rec_forget_thread(st, r);
		r->rd_base = rd_counted_take(st, r->tgid, tid);
	}
	r->tid = tid;
	rec_read_delay(st, r, sched_rd);
}

/* Clear id's bit of a BPF-side id set (kvm.h). */
static void id_unmark(__u64 *bits, uint32_t id)
{
	__atomic_fetch_and(&bits[KVM_TID_WORD(id)], ~KVM_TID_BIT(id), __ATOMIC_RELAXED);
}

/* A slot retired by the BPF side, or of a VMM that exited: its last counts
 * go to its VM, and the slot and the thread entries that point at it are
 * freed for other vCPUs (the slot's ident last: a claim finds the rest
 * zeroed). */
static void vcpu_free(struct kvm_state *st, size_t i)
{
	struct kvm_vcpu_slot *v = &st->vc.vcpus[i];

	rec_take(st, &st->vc.recs[i], v);
	rec_fold(st, &st->vc.recs[i]);
	for (size_t t = 0; t < st->vc.nvcpus; t++) {
		uint64_t cur = __atomic_load_n(&st->vc.threads[t], __ATOMIC_RELAXED);

		if (cur && KVM_THREAD_VCPU(cur) == i &&
		    __atomic_compare_exchange_n(&st->vc.threads[t], &cur, 0, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			id_unmark(st->skel->bss->vcpu_tids, KVM_THREAD_TID(cur));
	}
	memset((char *)v + sizeof(v->ident), 0, sizeof(*v) - sizeof(v->ident));
	__atomic_store_n(&v->ident, 0, __ATOMIC_RELEASE);
}

static void n_cap_swap(size_t *a, size_t *b)
{
	size_t t = *a;

	*a = *b;
	*b = t;
}

/* Append a mark to the next pass's list; false when out of memory. */
static bool mark_next(struct kvm_state *st, size_t n, uint32_t tgid, uint64_t start)
{
	if (VIRT_GROW(st->vc.marks_next, st->vc.marks_next_cap, n + 1) < 0)
		return false;
	st->vc.marks_next[n] = (struct vmm_mark){ tgid, start };
	return true;
}

/* The start time tgid was marked with (0: not marked before); *at walks
 * the ascending marks along with the ascending bits. */
static uint64_t mark_start(const struct kvm_state *st, size_t *at, uint32_t tgid)
{
	while (*at < st->vc.nmarks && st->vc.marks[*at].tgid < tgid)
		(*at)++;
	return *at < st->vc.nmarks && st->vc.marks[*at].tgid == tgid ? st->vc.marks[*at].start : 0;
}

/* Every VMM process set in vmm_tgids without a live row (beyond max_vms,
 * or its row not made yet) is kept with its start time, and its bit
 * cleared once it exited or its pid is another process's; a row's bit is
 * cleared when its process is found gone (sum_vms). One pass over the
 * bitmap (KVM_TID_MAX bits, 512 KiB) per refresh, in place (mmap'ed). */
static void unmark_exited_vmms(struct kvm_state *st)
{
	__u64 *bits = st->skel->bss->vmm_tgids;
	size_t at = 0, n = 0;
	struct vmm_mark *m;

	for (uint32_t w = 0; w < KVM_TID_MAX / 64; w++) {
		for (uint64_t word = __atomic_load_n(&bits[w], __ATOMIC_RELAXED); word; word &= word - 1) {
			uint32_t tgid = w * 64 + (uint32_t)__builtin_ctzll(word);
			struct vm_entry *vm = kvm_vm_of(st, tgid);
			uint64_t was = mark_start(st, &at, tgid), now;

			if (vm && vm->k.row.live)
				continue;
			now = vmid_starttime(tgid);
			if (!now || (was && now != was))
				id_unmark(bits, tgid);
			else if (mark_next(st, n, tgid, now))
				n++;
		}
	}
	m = st->vc.marks;
	st->vc.marks = st->vc.marks_next;
	st->vc.marks_next = m;
	n_cap_swap(&st->vc.marks_cap, &st->vc.marks_next_cap);
	st->vc.nmarks = n;
}

/* A new VM's rows beside its main one (which holds its wait histogram):
 * "<vm>/<class>" of its wait by what held the CPU, its halt histogram. */
static void vm_rows_init(struct vm_entry *vm)
{
	char name[VIRT_NAME_MAX];

	for (unsigned int c = 0; c < KVM_WAIT_CLASSES; c++) {
		snprintf(name, sizeof(name), "%.*s/%s", VMID_NAME_MAX, vm->k.row.name,
			 kvm_wait_class_names[c]);
		virt_row_init(&vm->by[c], virt_indom(VIRT_I_KVM_VM_WAIT_BY), PM_INDOM_NULL, name);
	}
	virt_row_init(&vm->halt, PM_INDOM_NULL, virt_indom(VIRT_I_KVM_VM_HALT_HIST),
		      vm->k.row.name);
}

/* Its rows beside the main one leave the instance domains (retire) or go
 * for good (release). */
static void vm_rows_retire(struct vm_entry *vm, void (*how)(struct virt_row *))
{
	for (unsigned int c = 0; c < KVM_WAIT_CLASSES; c++)
		how(&vm->by[c]);
	how(&vm->halt);
}

/* The retired row of a VM restarted under its name (rows of exited VMMs
 * are retired before live slots are summed). */
static struct vm_entry *vm_restarted(struct kvm_state *st, const char *name)
{
	struct vm_entry *vm = virt_table_find_name(&st->vms, name);

	return vm && vm->retired ? vm : NULL;
}

/* A VM row for a live VMM process (at most max_vms; slots of more are
 * counted once as dropped, through *dropped), named by its VM identity; a
 * VM restarted under its name takes its old row, counters and all. */
static struct vm_entry *vm_row(struct kvm_state *st, uint32_t tgid, bool *dropped, size_t max_vms)
{
	struct vm_entry *vm = kvm_vm_of(st, tgid);
	const struct vmid *id;

	if (vm || !(id = virt_vm_of(tgid)))
		return vm;
	if (st->nlive >= max_vms) {
		st->vc.vm_drops += !*dropped;
		*dropped = true;
		return NULL;
	}
	if ((vm = id->named ? vm_restarted(st, id->name) : NULL)) {
		st->nretired -= vm->retired;
		vm->retired = false;
		virt_table_rekey(&st->vms, vm, tgid);
		virt_sums_begin(&vm->sums);
	} else if ((vm = virt_table_add(&st->vms, tgid, virt_indom(VIRT_I_KVM_VM),
					virt_indom(VIRT_I_KVM_VM_WAIT_HIST), id->name))) {
		vm_rows_init(vm);
	} else {
		return NULL;
	}
	vm->start = id->start;
	vm->named = id->named;
	vm->k.row.live = true;
	st->nlive++;
	return vm;
}

/* Is the row's VMM process still the one it was made for (not exited,
 * its pid not reused)? */
bool kvm_vm_alive(const struct vm_entry *vm)
{
	const struct vmid *id;

	return !vm->retired && (id = virt_vm_of((uint32_t)vm->k.key)) && id->start == vm->start;
}

/* Rows whose VMM exited, after their counts were folded into their base: a
 * named VM's row is kept (retired: out of the instance domain, keyed by
 * its name) for the VM restarted under that name, others go. */
static void retire_exited(struct kvm_state *st)
{
	for (size_t i = 0; i < st->vms.n;) {
		struct vm_entry *vm = kvm_vm_at(st, i);

		if (vm->retired || vm->k.row.live) {
			i++;
		} else if (!vm->named || st->nretired >= VIRT_KEEP_EXITED) {
			st->vc.vm_going(st, vm, true);
			vcpu_rows_remove(st, vm);
			vm_rows_retire(vm, virt_row_release);
			virt_table_remove(&st->vms, vm);	/* the last entry takes its place */
		} else {
			st->vc.vm_going(st, vm, false);
			vm->vs_err = 0;
			virt_row_retire(&vm->k.row);
			vm_rows_retire(vm, virt_row_retire);
			vm->retired = true;
			st->nretired++;
			virt_table_rekey(&st->vms, vm, virt_name_key(vm->k.row.name));
			i++;
		}
	}
}

/* The slots in use now (claimed or retired), the last list kept: the
 * one pass over all of vcpus (4096 and more slots of ~750 bytes: four
 * passes of it were most of a refresh's CPU time). A slot claimed after
 * this pass is taken at the next refresh. */
static void scan_slots(struct kvm_state *st)
{
	uint32_t *t = st->vc.occ_prev;

	st->vc.occ_prev = st->vc.occ;
	st->vc.nocc_prev = st->vc.nocc;
	st->vc.occ = t;
	st->vc.nocc = 0;
	for (size_t i = 0; i < st->vc.nvcpus; i++)
		if (st->vc.vcpus[i].ident)
			st->vc.occ[st->vc.nocc++] = (uint32_t)i;
}

/* Slots retired by the BPF side or of exited VMMs: their counts into
 * their VM's base, the slots freed. */
static void free_exited_slots(struct kvm_state *st)
{
	for (size_t j = 0; j < st->vc.nocc; j++) {
		size_t i = st->vc.occ[j];
		const volatile struct kvm_vcpu_slot *v = &st->vc.vcpus[i];
		uint64_t ident = v->ident;
		uint32_t tgid = v->tgid;

		if (ident == KVM_VCPU_RETIRED || (ident && tgid && !vmm_alive(st, tgid)))
			vcpu_free(st, i);
	}
}

/* A slot claimed by a vCPU of a known process (not free, not retired). */
static bool slot_live(const volatile struct kvm_vcpu_slot *v)
{
	uint64_t ident = v->ident;

	return ident > KVM_VCPU_RETIRED && v->tgid;
}

/* Slots the kernel freed (a vCPU destroyed): it folded their counts, not
 * their threads' run delay; before exited VMs' rows retire. A rec is
 * taken only from a slot in use at a sum, so the slots of the last one
 * hold every rec there is. */
static void forget_free_slots(struct kvm_state *st)
{
	for (size_t j = 0; j < st->vc.nocc_prev; j++) {
		size_t i = st->vc.occ_prev[j];

		if (!slot_live(&st->vc.vcpus[i]) && st->vc.recs[i].tgid) {
			rec_forget_thread(st, &st->vc.recs[i]);
			st->vc.recs[i].tgid = 0;
		}
	}
}

/* The live slots' words into their recs, before any sum begins: a rec
 * whose slot another VMM claimed since leaves its thread's run delay
 * with its old VM (rec_take), which this refresh's sums then hold. */
static void take_live_slots(struct kvm_state *st)
{
	for (size_t j = 0; j < st->vc.nocc; j++) {
		size_t i = st->vc.occ[j];

		if (slot_live(&st->vc.vcpus[i]))
			rec_take(st, &st->vc.recs[i], &st->vc.vcpus[i]);
	}
}

/* vms_gone entries of exited VMMs: into their VM's base, then deleted. */
static void fold_exited_gone(struct kvm_state *st, int n)
{
	for (int i = 0; i < n; i++) {
		struct vm_entry *vm = kvm_vm_of(st, st->vc.gone_tgid[i]);

		if (process_alive(vm, st->vc.gone_tgid[i]))
			continue;
		if (vm)
			gone_fold(&vm->sums, &st->vc.gone[i]);
		virt_map_delete(bpf_map__fd(st->skel->maps.vms_gone), &st->vc.gone_tgid[i]);
		st->vc.gone_tgid[i] = 0;
	}
}

/* vcpus_gone entries of exited VMMs: into their vCPU rows' base, then
 * deleted (with fold_exited_gone, before the VM rows retire), and out of
 * the copy vcpus_gone_now() keeps, which goes on mirroring the map. */
static int fold_exited_vcpus_gone(struct kvm_state *st, int n)
{
	int kept = 0;

	for (int i = 0; i < n; i++) {
		uint32_t tgid = vgone_tgid(st->vc.vgone_key[i]);
		struct vm_entry *vm = kvm_vm_of(st, tgid);
		struct vcpu_entry *c;

		if (process_alive(vm, tgid)) {
			st->vc.vgone_key[kept] = st->vc.vgone_key[i];
			st->vc.vgone[kept++] = st->vc.vgone[i];
			continue;
		}
		if (vm && (c = vcpu_row(st, vm, vgone_vcpu(st->vc.vgone_key[i]))))
			gone_fold(&c->sums, &st->vc.vgone[i]);
		virt_map_delete(bpf_map__fd(st->skel->maps.vcpus_gone), &st->vc.vgone_key[i]);
	}
	st->vc.nvgone = kept;
	return kept;
}

/* Every VM's and vCPU's sums begin with what is gone. */
static void sums_begin(struct kvm_state *st)
{
	for (size_t i = 0; i < st->vms.n; i++)
		virt_sums_begin(&kvm_vm_at(st, i)->sums);
	for (size_t i = 0; i < st->vc.vcpu_rows.n; i++) {
		struct vcpu_entry *c = (struct vcpu_entry *)st->vc.vcpu_rows.v[i];

		virt_sums_begin(&c->sums);
		c->advance_known = false;
	}
}

/* A live slot's last timer advance, if it saw a timer, is its vCPU's. */
static void vcpu_take_advance(struct vcpu_entry *c, const struct vcpu_rec *r)
{
	if (!r->timer_advance)
		return;
	c->timer_advance = r->timer_advance - 1;
	c->advance_known = true;
}

/* Sum per VM and per vCPU of a live VM: what the slots the agent freed
 * left, what the kernel folded from destroyed vCPUs (vms_gone,
 * vcpus_gone), and the live slots'. Exited
 * VMMs' counts are folded first, so that a VM restarted under its name
 * in the same refresh finds them in its row. */
static void sum_vms(struct kvm_state *st, struct virt_family *fam)
{
	uint32_t max_vms = (uint32_t)fam->opts[OPT_MAX_VMS].u;
	int n, nv;

	st->nlive = 0;
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = kvm_vm_at(st, i);

		vm->k.row.live = kvm_vm_alive(vm);
		st->nlive += vm->k.row.live;
		if (!vm->k.row.live && !vm->retired)	/* its threads are other VMs' no more */
			id_unmark(st->skel->bss->vmm_tgids, (uint32_t)vm->k.key);
	}
	unmark_exited_vmms(st);
	scan_slots(st);
	free_exited_slots(st);
	forget_free_slots(st);
	n = read_gone(st, max_vms);
	fold_exited_gone(st, n);
	nv = fold_exited_vcpus_gone(st, vcpus_gone_now(st));
	rd_counted_purge(st);
	retire_exited(st);
	take_live_slots(st);
	sums_begin(st);
	for (size_t j = 0; j < st->vc.nocc; j++) {
		struct vcpu_rec *r = &st->vc.recs[st->vc.occ[j]];
		struct vcpu_entry *c;
		struct vm_entry *vm;

		if (!slot_live(&st->vc.vcpus[st->vc.occ[j]]) ||
		    !(vm = vm_row(st, r->tgid, &r->dropped, max_vms)))
			continue;
		virt_sums_add(&vm->sums, r->last);
		if ((c = vcpu_row(st, vm, r->id))) {
			virt_sums_add(&c->sums, r->last);
			vcpu_take_advance(c, r);
		}
	}
	for (int i = 0; i < n; i++) {
		bool dropped = true;	/* counted when its slots were live */
		struct vm_entry *vm;

		if (st->vc.gone_tgid[i] && (vm = vm_row(st, st->vc.gone_tgid[i], &dropped, max_vms)))
			gone_add(&vm->sums, &st->vc.gone[i]);
	}
	for (int i = 0; i < nv; i++) {
		struct vcpu_entry *c = live_vcpu_of(st, vgone_tgid(st->vc.vgone_key[i]),
						    vgone_vcpu(st->vc.vgone_key[i]));

		if (c)
			gone_add(&c->sums, &st->vc.vgone[i]);
	}
}

static uint64_t hist_mass(const uint64_t *h)
{
	uint64_t n = 0;

	for (unsigned int b = 0; b < VIRT_HIST_BUCKETS; b++)
		n += h[b];
	return n;
}

/* A live VM's counts of waits and halts, its rows beside the main one.
 * Without the scheduler hooks its split has no instances (not zeros). */
static void vm_rows_set(const struct kvm_state *st, struct vm_entry *vm)
{
	const uint64_t *sum = vm->sums.sum;

	vm->sched = st->sched_on;
	vm->poll = st->poll_on;
	vm->d.waits = hist_mass(&sum[W_WAIT_HIST]);
	vm->d.halts = hist_mass(&sum[W_HALT_HIST]);
	for (unsigned int c = 0; c < KVM_WAIT_CLASSES; c++) {
		virt_row_set(&vm->by[c], &sum[W_WAIT_BY + c], 1, NULL);
		if (vm->sched)
			virt_row_expose(&vm->by[c], true);
		else
			virt_row_retire(&vm->by[c]);
	}
	virt_row_set(&vm->halt, NULL, 0, &sum[W_HALT_HIST]);
	virt_row_expose(&vm->halt, false);
}

/* Per-VM rows: the sums, taken again while the kernel folded a slot
 * meanwhile (folds are rare and short: a vCPU destroyed). Slots are freed
 * as vCPUs and VMMs go, so the arrays return to their baseline after VMs
 * come and go; exited VMMs leave the instance domain. */
void kvm_vms_read(struct kvm_state *st, struct virt_family *fam)
{
	const __u64 *begun = &st->skel->bss->folds_begun, *done = &st->skel->bss->folds_done;

	for (int tries = 0; tries < 100; tries++) {
		uint64_t d = __atomic_load_n(done, __ATOMIC_ACQUIRE);
		uint64_t b = __atomic_load_n(begun, __ATOMIC_ACQUIRE);

		if (b == d) {
			sum_vms(st, fam);
			if (__atomic_load_n(begun, __ATOMIC_ACQUIRE) == b)
				break;
		}
		sched_yield();
	}
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = kvm_vm_at(st, i);

		vm->vcpus_seen = 0;
		if (!vm->k.row.live)
			continue;
		virt_row_set(&vm->k.row, NULL, 0, &vm->sums.sum[W_WAIT_HIST]);
		virt_row_expose(&vm->k.row, true);
		vm->unseen_known = st->poll_on;
		vm_rows_set(st, vm);
	}
	for (size_t i = 0; i < st->vc.vcpu_rows.n; i++) {
		struct vcpu_entry *c = (struct vcpu_entry *)st->vc.vcpu_rows.v[i];

		if (c->sums.live) {
			virt_row_expose(&c->k.row, true);
			c->vm->vcpus_seen++;
		} else {
			virt_row_retire(&c->k.row);
		}
	}
	for (size_t i = 0; i < st->vms.n; i++) {
		struct vm_entry *vm = kvm_vm_at(st, i);

		vm->d.vcpus = vm->vcpus_seen;
	}
}

