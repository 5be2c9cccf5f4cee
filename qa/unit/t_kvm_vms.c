/* kvm's per-VM and per-vCPU rows (pmda/kvm_vms.c) on a fake "vcpus"
 * array, fake vms_gone/vcpus_gone maps and fake VMM processes: a slot's
 * counts taken, folded when the BPF side retires it or its VMM exits,
 * forgotten when the kernel freed it (its counts then come from the gone
 * maps); a destroyed vCPU's thread running a new vCPU (its run delay not
 * counted twice); a VM re-created in one process; a named VM restarted
 * under a new pid; a detach and re-attach. Every counter stays monotonic.
 * The BPF side's moves are done here by hand, as kvm.bpf.c does them. */
#include "kvm_int.h"
#include "vmid.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

#define NSLOTS 16
#define MAXG 8

/* ------------------------------------------------ the agent around it */

uint64_t virt_mono_ns(void)
{
	return 0;
}

pmInDom virt_indom(enum virt_indom_id id)
{
	return pmInDom_build(511, (unsigned int)id);
}

static void vm_going(struct kvm_state *st, struct vm_entry *vm, bool forever)
{
	(void)st, (void)vm, (void)forever;
}

/* VMM processes: a pid, its start time, its VM's name (NULL: unnamed) */
struct proc {
	uint32_t pid;
	uint64_t start;
	const char *name;
	bool alive;
};
static struct proc procs[8];
static struct vmid ids[8];

static struct proc *proc_of(uint32_t pid)
{
	for (size_t i = 0; i < VIRT_ARRAY_SIZE(procs); i++)
		if (procs[i].pid == pid && procs[i].alive)
			return &procs[i];
	return NULL;
}

static void proc_start(uint32_t pid, uint64_t start, const char *name)
{
	for (size_t i = 0; i < VIRT_ARRAY_SIZE(procs); i++)
		if (!procs[i].alive) {
			procs[i] = (struct proc){ pid, start, name, true };
			return;
		}
}

static void proc_exit(uint32_t pid)
{
	proc_of(pid)->alive = false;
}

const struct vmid *virt_vm_of(uint32_t pid)
{
	struct proc *p = proc_of(pid);
	struct vmid *id = p ? &ids[p - procs] : NULL;

	if (!id)
		return NULL;
	*id = (struct vmid){ .pid = pid, .start = p->start, .named = p->name != NULL };
	if (p->name)
		snprintf(id->name, sizeof(id->name), "%s", p->name);
	else
		snprintf(id->name, sizeof(id->name), "%u", pid);
	return id;
}

uint64_t vmid_starttime(uint32_t pid)
{
	struct proc *p = proc_of(pid);

	return p ? p->start : 0;
}

bool virt_pid_alive(uint32_t pid)
{
	return proc_of(pid) != NULL;
}

/* threads' run delay (schedstat) */
struct rd {
	uint32_t tgid, tid;
	uint64_t ns;
};
static struct rd rds[8];

static void rd_set(uint32_t tgid, uint32_t tid, uint64_t ns)
{
	size_t i = 0;

	while (i < VIRT_ARRAY_SIZE(rds) - 1 && rds[i].tid && rds[i].tid != tid)
		i++;
	rds[i] = (struct rd){ tgid, tid, ns };
}

static unsigned int rd_reads;

static bool fake_run_delay(uint32_t tgid, uint32_t tid, uint64_t *ns)
{
	rd_reads++;
	for (size_t i = 0; i < VIRT_ARRAY_SIZE(rds); i++)
		if (rds[i].tid == tid && rds[i].tgid == tgid && proc_of(tgid)) {
			*ns = rds[i].ns;
			return true;
		}
	return false;
}

/* The gone maps: vms_gone by tgid (fd 1), vcpus_gone by KVM_VCPU_KEY (fd 2) */
struct gone {
	uint64_t key;			/* 0: empty */
	struct kvm_vm_stats s;
};
static struct gone gone_maps[2][MAXG];
static char map_tags[2];

int bpf_map__fd(const struct bpf_map *map)
{
	return (const char *)(const void *)map == &map_tags[0] ? 1 : 2;
}

static bool key_is(int fd, const struct gone *g, const void *key)
{
	return fd == 1 ? g->key == *(const uint32_t *)key : g->key == *(const uint64_t *)key;
}

int virt_map_dump(int fd, void *keys, size_t key_size, void *values, size_t value_size,
		  unsigned int max)
{
	unsigned int n = 0;

	for (size_t i = 0; i < MAXG && n < max; i++) {
		const struct gone *g = &gone_maps[fd - 1][i];
		uint32_t k32 = (uint32_t)g->key;

		if (!g->key)
			continue;
		memcpy((char *)keys + n * key_size, fd == 1 ? (const void *)&k32 : &g->key, key_size);
		memcpy((char *)values + n * value_size, &g->s, value_size);
		n++;
	}
	return (int)n;
}

int virt_map_delete(int fd, const void *key)
{
	for (size_t i = 0; i < MAXG; i++)
		if (gone_maps[fd - 1][i].key && key_is(fd, &gone_maps[fd - 1][i], key))
			gone_maps[fd - 1][i].key = 0;
	return 0;
}

static struct kvm_vm_stats *gone_entry(int fd, uint64_t key)
{
	struct gone *free_one = NULL;

	for (size_t i = 0; i < MAXG; i++) {
		struct gone *g = &gone_maps[fd - 1][i];

		if (g->key == key)
			return &g->s;
		if (!g->key && !free_one)
			free_one = g;
	}
	*free_one = (struct gone){ .key = key };
	return &free_one->s;
}

/* --------------------------------------------------- the BPF side's moves */

static struct kvm_bpf skel;
static struct kvm_bpf__bss bss;
static struct kvm_vcpu_slot *slots;

/* claim_vcpu() and adopt(): slot k for a vCPU of process tgid on thread
 * tid, its thread indexed in "threads" at k */
static void bpf_claim(struct kvm_state *st, size_t k, uint64_t ident, uint32_t tgid,
		      uint32_t tid, uint32_t vcpu_id)
{
	memset(&slots[k], 0, sizeof(slots[k]));
	slots[k].ident = ident;
	slots[k].vcpu_id = vcpu_id;
	slots[k].tgid = tgid;
	slots[k].tid = tid;
	st->vc.threads[k] = KVM_THREAD(tid, k);
	bss.vcpu_tids[KVM_TID_WORD(tid)] |= KVM_TID_BIT(tid);
	bss.vmm_tgids[KVM_TID_WORD(tgid)] |= KVM_TID_BIT(tgid);
}

static void bpf_exits(size_t k, uint64_t n, uint64_t ns)
{
	slots[k].vm.exits += n;
	slots[k].vm.exit_ns += ns;
}

static void fold_stats(struct kvm_vm_stats *to, const struct kvm_vm_stats *from)
{
	uint64_t *t = (uint64_t *)to;
	const uint64_t *f = (const uint64_t *)from;

	for (size_t w = 0; w < VM_WORDS; w++)
		t[w] += f[w];
}

/* on_vcpu_destroy(): the slot's counts into the gone maps, the slot freed */
static void bpf_destroy(struct kvm_state *st, size_t k)
{
	struct kvm_vcpu_slot *s = &slots[k];

	bss.folds_begun++;
	fold_stats(gone_entry(1, s->tgid), &s->vm);
	fold_stats(gone_entry(2, KVM_VCPU_KEY(s->tgid, s->vcpu_id)), &s->vm);
	st->vc.threads[k] = 0;
	memset(s, 0, sizeof(*s));
	bss.folds_done++;
}

/* ----------------------------------------------------------- the checks */

static struct virt_family fam;

static void refresh(struct kvm_state *st)
{
	kvm_vms_read(st, &fam);
}

static struct vcpu_entry *vcpu_named(struct kvm_state *st, const char *name)
{
	return virt_table_find_name(&st->vc.vcpu_rows, name);
}

/* a VM's row by name (live rows are keyed by pid, retired ones by name) */
static struct vm_entry *vm_named(struct kvm_state *st, const char *name)
{
	for (size_t i = 0; i < st->vms.n; i++)
		if (!strcmp(kvm_vm_at(st, i)->k.row.name, name))
			return kvm_vm_at(st, i);
	return NULL;
}

/* word w of what a VM's and a vCPU's rows answer (their sums) */
static uint64_t vm_word(struct kvm_state *st, const char *vm, unsigned int w)
{
	struct vm_entry *e = vm_named(st, vm);

	return e ? e->sums.sum[w] : 0;
}

static uint64_t vcpu_word(struct kvm_state *st, const char *name, unsigned int w)
{
	struct vcpu_entry *c = vcpu_named(st, name);

	return c ? c->sums.sum[w] : 0;
}

/* a vCPU's timer advance (ns), -1 while it has no value */
static int64_t vcpu_advance(struct kvm_state *st, const char *name)
{
	struct vcpu_entry *c = vcpu_named(st, name);

	return c && c->advance_known ? (int64_t)c->timer_advance : -1;
}

#define vm_exits(st, vm) vm_word(st, vm, W_COUNT)
#define vm_rd(st, vm) vm_word(st, vm, W_RUN_DELAY)
#define vcpu_exits(st, name) vcpu_word(st, name, W_COUNT)
#define vcpu_rd(st, name) vcpu_word(st, name, W_RUN_DELAY)

static void arrays_open(struct kvm_state *st)
{
	st->vc.nvcpus = NSLOTS;
	st->vc.vcpus = slots = calloc(NSLOTS, sizeof(*st->vc.vcpus));
	st->vc.threads = calloc(NSLOTS, sizeof(*st->vc.threads));
	st->vc.recs = calloc(NSLOTS, sizeof(*st->vc.recs));
	st->vc.occ = calloc(NSLOTS, sizeof(*st->vc.occ));
	st->vc.occ_prev = calloc(NSLOTS, sizeof(*st->vc.occ_prev));
	st->vc.nocc = st->vc.nocc_prev = 0;
	st->skel = &skel;
	st->vc.vgone_valid = false;
	memset(gone_maps, 0, sizeof(gone_maps));
}

/* kvm_detach(): the arrays go, the rows stay */
static void arrays_close(struct kvm_state *st)
{
	kvm_vcpus_forget(st, (uint32_t)fam.opts[OPT_MAX_VMS].u);
	free(st->vc.vcpus);
	free(st->vc.threads);
	free(st->vc.recs);
	free(st->vc.occ);
	free(st->vc.occ_prev);
	st->vc.vcpus = slots = NULL;
	st->vc.threads = NULL;
	st->vc.recs = NULL;
	st->vc.occ = st->vc.occ_prev = NULL;
	st->skel = NULL;
}

static void state_init(struct kvm_state *st)
{
	static union virt_optval opts[NOPTS];

	opts[OPT_MAX_VMS].u = 4;
	opts[OPT_MAX_VCPUS].u = MAXG;
	fam.opts = opts;
	fam.priv = st;
	skel.bss = &bss;
	skel.maps.vms_gone = (struct bpf_map *)(void *)&map_tags[0];
	skel.maps.vcpus_gone = (struct bpf_map *)(void *)&map_tags[1];
	st->vms = VIRT_TABLE_OF_SUMS(struct vm_entry, sums, KVM_SUM_WORDS);
	st->vc.vcpu_rows = VIRT_TABLE_OF_SUMS(struct vcpu_entry, sums, KVM_SUM_WORDS);
	st->vc.max_vcpus = MAXG;
	st->vc.gone_tgid = calloc(MAXG, sizeof(*st->vc.gone_tgid));
	st->vc.gone = calloc(MAXG, sizeof(*st->vc.gone));
	st->vc.vgone_key = calloc(MAXG, sizeof(*st->vc.vgone_key));
	st->vc.vgone = calloc(MAXG, sizeof(*st->vc.vgone));
	st->vc.run_delay = fake_run_delay;
	st->vc.vm_going = vm_going;
	arrays_open(st);
}

/* A slot counts; its rec takes its counts and its thread's run delay. */
static void check_take(struct kvm_state *st)
{
	proc_start(100, 1, "web");
	bpf_claim(st, 3, 0xa000, 100, 101, 0);
	bpf_exits(3, 5, 50);
	rd_set(100, 101, 1000);
	refresh(st);
	CHECK(st->vc.nocc == 1 && st->vc.occ[0] == 3);
	CHECK(st->vc.recs[3].tgid == 100 && st->vc.recs[3].tid == 101 && st->vc.recs[3].last[W_RUN_DELAY] == 1000);
	CHECK(vm_exits(st, "web") == 5 && vm_rd(st, "web") == 1000);
	CHECK(vcpu_exits(st, "web/vcpu0") == 5 && vcpu_rd(st, "web/vcpu0") == 1000);
	CHECK(kvm_vm_of(st, 100)->d.vcpus == 1 && kvm_vm_of(st, 100)->k.row.live);
	CHECK(vcpu_advance(st, "web/vcpu0") == -1);
	bpf_exits(3, 2, 20);
	rd_set(100, 101, 1500);
	slots[3].timer_advance = 7000 + 1;	/* on_lapic_expire() */
	refresh(st);
	CHECK(vm_exits(st, "web") == 7 && vm_rd(st, "web") == 1500);
	CHECK(vcpu_exits(st, "web/vcpu0") == 7 && vcpu_rd(st, "web/vcpu0") == 1500);
	CHECK(vcpu_advance(st, "web/vcpu0") == 7000);
	slots[3].timer_advance = 0 + 1;
	refresh(st);
	CHECK(vcpu_advance(st, "web/vcpu0") == 0);
}

/* The kernel destroys vCPU 0 (its counts in the gone maps) and the VMM
 * re-creates its VM: vCPU 0 again, on the same thread, in another slot.
 * The thread's run delay counted up to the destroy is not counted again. */
static void check_recreated(struct kvm_state *st)
{
	bpf_destroy(st, 3);
	refresh(st);
	CHECK(st->vc.recs[3].tgid == 0 && st->vc.nocc == 0 && st->vc.nocc_prev == 1);
	CHECK(vm_exits(st, "web") == 7 && vm_rd(st, "web") == 1500);
	CHECK(vcpu_exits(st, "web/vcpu0") == 7 && vcpu_rd(st, "web/vcpu0") == 1500);
	CHECK(st->vc.nrd_counted == 1 && st->vc.rd_counted[0].tid == 101);

	bpf_claim(st, 5, 0xb000, 100, 101, 0);
	bpf_exits(5, 2, 20);
	rd_set(100, 101, 1800);
	refresh(st);
	CHECK(st->vc.recs[5].last[W_RUN_DELAY] == 300 && st->vc.recs[5].rd_base == 1500 && st->vc.nrd_counted == 0);
	CHECK(vm_exits(st, "web") == 9 && vm_rd(st, "web") == 1800);
	CHECK(vcpu_exits(st, "web/vcpu0") == 9 && vcpu_rd(st, "web/vcpu0") == 1800);
	CHECK(st->vc.vcpu_rows.n == 1);
	/* the vCPU created again has taken no timer yet */
	CHECK(vcpu_advance(st, "web/vcpu0") == -1);
}

/* The BPF side retires slot 5 (a new VMM's vCPU at its address): the
 * agent folds it, frees it (ident last) and its thread's entry. */
static void check_retired(struct kvm_state *st)
{
	slots[5].ident = KVM_VCPU_RETIRED;
	refresh(st);
	CHECK(slots[5].ident == 0 && slots[5].tgid == 0 && slots[5].vm.exits == 0);
	CHECK(st->vc.threads[5] == 0);
	CHECK(!(bss.vcpu_tids[KVM_TID_WORD(101)] & KVM_TID_BIT(101)));
	CHECK(st->vc.recs[5].tgid == 0);
	CHECK(vm_exits(st, "web") == 9 && vm_rd(st, "web") == 1800);
	CHECK(vcpu_exits(st, "web/vcpu0") == 9 && vcpu_rd(st, "web/vcpu0") == 1800);
	refresh(st);
	CHECK(vm_exits(st, "web") == 9 && vm_rd(st, "web") == 1800);
}

/* A freed slot claimed by another VMM before the agent looked: the old
 * rec's run delay stays with its VM, the new VM counts from zero. */
static void check_reclaimed(struct kvm_state *st)
{
	proc_start(300, 3, NULL);
	bpf_claim(st, 9, 0xc000, 300, 301, 1);
	bpf_exits(9, 4, 40);
	rd_set(300, 301, 100);
	refresh(st);
	CHECK(vm_exits(st, "300") == 4 && vm_rd(st, "300") == 100);
	bpf_destroy(st, 9);
	proc_start(400, 4, NULL);
	bpf_claim(st, 9, 0xd000, 400, 401, 1);
	bpf_exits(9, 1, 10);
	rd_set(400, 401, 30);
	refresh(st);
	CHECK(st->vc.recs[9].tgid == 400 && st->vc.recs[9].last[W_RUN_DELAY] == 30);
	CHECK(vm_exits(st, "300") == 4 && vm_rd(st, "300") == 100);
	CHECK(vcpu_exits(st, "300/vcpu1") == 4 && vcpu_rd(st, "300/vcpu1") == 100);
	CHECK(vm_exits(st, "400") == 1 && vm_rd(st, "400") == 30);
	/* unnamed VMs' rows go with their VMM, its gone entries deleted */
	proc_exit(300);
	proc_exit(400);
	refresh(st);
	CHECK(vm_named(st, "300") == NULL && vm_named(st, "400") == NULL);
	CHECK(vcpu_named(st, "300/vcpu1") == NULL && vcpu_named(st, "400/vcpu1") == NULL);
	CHECK(slots[9].ident == 0 && st->vc.recs[9].tgid == 0);
	CHECK(gone_maps[0][1].key == 0 && gone_maps[1][1].key == 0 && gone_maps[0][0].key == 100);
}

/* The named VM's VMM exits with a live slot and gone entries; the VM
 * restarted under its name (a new pid) carries its counters on. */
static void check_restarted(struct kvm_state *st)
{
	bpf_claim(st, 7, 0xe000, 100, 102, 1);
	bpf_exits(7, 3, 30);
	rd_set(100, 102, 200);
	refresh(st);
	CHECK(vm_exits(st, "web") == 12 && vm_rd(st, "web") == 2000);
	CHECK(kvm_vm_of(st, 100)->d.vcpus == 2);
	proc_exit(100);
	refresh(st);
	CHECK(slots[7].ident == 0 && st->nretired == 1 && kvm_vm_of(st, 100) == NULL);
	CHECK(vm_exits(st, "web") == 12 && vm_rd(st, "web") == 2000);
	CHECK(gone_maps[0][0].key == 0 && gone_maps[0][1].key == 0);
	proc_start(500, 5, "web");
	bpf_claim(st, 11, 0xf000, 500, 501, 0);
	bpf_exits(11, 1, 10);
	rd_set(500, 501, 5);
	refresh(st);
	CHECK(st->nretired == 0 && kvm_vm_of(st, 500) != NULL);
	CHECK(vm_exits(st, "web") == 13 && vm_rd(st, "web") == 2005);
	CHECK(vcpu_exits(st, "web/vcpu0") == 10 && vcpu_rd(st, "web/vcpu0") == 1805);
	CHECK(vcpu_exits(st, "web/vcpu1") == 3 && vcpu_rd(st, "web/vcpu1") == 200);
}

/* A detach with a live slot and a destroyed vCPU's gone entries, and a
 * re-attach: new arrays count from zero, the rows go on. */
static void check_reattach(struct kvm_state *st)
{
	bpf_claim(st, 12, 0xf100, 500, 502, 1);
	bpf_exits(12, 6, 60);
	refresh(st);
	bpf_destroy(st, 12);
	refresh(st);
	CHECK(vm_exits(st, "web") == 19 && vcpu_exits(st, "web/vcpu1") == 9);
	arrays_close(st);
	arrays_open(st);
	bpf_claim(st, 0, 0xf000, 500, 501, 0);
	bpf_exits(0, 2, 20);
	rd_set(500, 501, 8);
	refresh(st);
	CHECK(vm_exits(st, "web") == 21 && vcpu_exits(st, "web/vcpu0") == 12);
	CHECK(vcpu_exits(st, "web/vcpu1") == 9);
	/* the thread kept running vCPU 0: its run delay from where it was */
	CHECK(vm_rd(st, "web") == 2008 && vcpu_rd(st, "web/vcpu0") == 1808);
}

/* The scheduler hooks keep the thread's run delay in its slot (sched_rd,
 * + 1): taken from there, no schedstat read; without it, schedstat. */
static void check_sched_rd(struct kvm_state *st)
{
	slots[0].sched_rd = 20 + 1;
	rd_reads = 0;
	refresh(st);
	CHECK(rd_reads == 0 && vm_rd(st, "web") == 2020 && vcpu_rd(st, "web/vcpu0") == 1820);
	slots[0].sched_rd = 0;
	rd_set(500, 501, 30);
	refresh(st);
	CHECK(rd_reads == 1 && vm_rd(st, "web") == 2030 && vcpu_rd(st, "web/vcpu0") == 1830);
}

int main(void)
{
	static struct kvm_state st;

	state_init(&st);
	check_take(&st);
	check_recreated(&st);
	check_retired(&st);
	check_reclaimed(&st);
	check_restarted(&st);
	check_reattach(&st);
	check_sched_rd(&st);
	return UNIT_DONE();
}
