/*
 * KVM exit family (module "kvm"): exits, hypercalls and exits to the VMM, by
 * reason, with exit->entry latency histograms, and per VMM process.
 *
 * Attach order: tp_btf, raw_tp, classic tracepoint (bpf/kvm.bpf.c). The
 * family needs the kvm module and a vendor module whose exit reasons it can
 * name (kvm_amd: SVM table, kvm_intel: VMX table); it attaches by itself when
 * they are loaded after the agent started.
 */
#include "virt.h"
#include "rows.h"
#include "kvm.h"
#include "kvm_names.h"
#include "kvm.skel.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum kvm_opt { OPT_LATENCY, OPT_MAX_VCPUS, OPT_MAX_VMS, OPT_MAX_HCALLS, NOPTS };

static const struct virt_option kvm_options[NOPTS] = {
	[OPT_LATENCY] = { "latency", VIRT_OPT_BOOL, 0, 0, "true",
		"exit->entry latency histograms; false = counts only (cheaper)" },
	[OPT_MAX_VCPUS] = { "max_vcpus", VIRT_OPT_UINT, 16, 1u << 20, "4096",
		"vCPU threads tracked (exit->entry pairing, per-VM counts); exits of more are counted as dropped" },
	[OPT_MAX_VMS] = { "max_vms", VIRT_OPT_UINT, 1, 65536, "1024",
		"VMM processes with per-VM rows; threads of more are counted as dropped" },
	[OPT_MAX_HCALLS] = { "max_hypercalls", VIRT_OPT_UINT, 1, 65536, "256",
		"distinct hypercall numbers; more are counted as dropped" },
};

/* Row words: VM rows use all four; reason rows count and time. */
enum { W_COUNT, W_TIME, W_UEXITS, W_UTIME };
#define STATS_WORDS (sizeof(struct kvm_stats) / sizeof(__u64))
#define VM_WORDS (sizeof(struct kvm_vm_stats) / sizeof(__u64))

/* Rows created on demand, found by a 64-bit key (hypercall nr, pid, ...). */
struct keyed_rows {
	struct keyed {
		uint64_t key;
		struct virt_row row;
		uint64_t gone[VM_WORDS];	/* VM rows: counts of its threads that are gone */
	} **v;
	size_t n, cap;
	uint32_t *slot;			/* open-addressing index: v[] position + 1, 0 empty */
	size_t nslot;			/* a power of two, > 2 * n */
};

/* A vCPU thread seen in the vcpus map: its share of its VM's counters. */
struct vcpu_thread {
	uint32_t tid, tgid;
	uint64_t last[VM_WORDS];
	bool live;			/* in this refresh's dump */
	bool dropped;			/* counted once in vm_drops (max_vms) */
};

struct kvm_state {
	struct kvm_bpf *skel;
	struct virt_row slots[KVM_SLOTS];
	struct virt_row uexit[KVM_UEXIT_REASONS];
	struct keyed_rows other, hcalls, vms;
	struct vcpu_thread *threads;
	size_t nthreads, capthreads;
	uint32_t *dead;			/* thread ids to delete from vcpus, max_vcpus */
	uint64_t vm_drops;
	struct virt_bulk bulk;		/* bulk-read buffers, sized for the largest map */
	time_t last_sweep;
};

/* ------------------------------------------------------------- names */

#define N(x) [KVM_EXIT_##x] = "KVM_EXIT_" #x
static const char *const uexit_names[KVM_UEXIT_REASONS] = {
	N(UNKNOWN), N(EXCEPTION), N(IO), N(HYPERCALL), N(DEBUG), N(HLT), N(MMIO),
	N(IRQ_WINDOW_OPEN), N(SHUTDOWN), N(FAIL_ENTRY), N(INTR), N(SET_TPR),
	N(TPR_ACCESS), N(S390_SIEIC), N(S390_RESET), N(DCR), N(NMI),
	N(INTERNAL_ERROR), N(OSI), N(PAPR_HCALL), N(S390_UCONTROL), N(WATCHDOG),
	N(S390_TSCH), N(EPR), N(SYSTEM_EVENT), N(S390_STSI), N(IOAPIC_EOI),
	N(HYPERV), N(ARM_NISV), N(X86_RDMSR), N(X86_WRMSR), N(DIRTY_RING_FULL),
	N(AP_RESET_HOLD), N(X86_BUS_LOCK), N(XEN), N(RISCV_SBI), N(RISCV_CSR),
	N(NOTIFY),
};
#undef N

/* --------------------------------------------------------- keyed rows */

static size_t keyed_hash(uint64_t key, size_t nslot)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;	/* murmur3's fmix64 */
	key ^= key >> 33;
	return (size_t)key & (nslot - 1);
}

static struct keyed *keyed_lookup(const struct keyed_rows *t, uint64_t key)
{
	if (!t->nslot)
		return NULL;
	for (size_t h = keyed_hash(key, t->nslot); t->slot[h]; h = (h + 1) & (t->nslot - 1))
		if (t->v[t->slot[h] - 1]->key == key)
			return t->v[t->slot[h] - 1];
	return NULL;
}

static struct virt_row *keyed_find(struct keyed_rows *t, uint64_t key)
{
	struct keyed *k = keyed_lookup(t, key);

	return k ? &k->row : NULL;
}

/* (Re)build the index for n entries, growing it to keep the load <= 1/2. */
static int keyed_reindex(struct keyed_rows *t)
{
	size_t nslot = t->nslot ? t->nslot : 64;

	while (nslot <= 2 * t->n)
		nslot *= 2;
	if (nslot != t->nslot) {
		uint32_t *slot = calloc(nslot, sizeof(*slot));

		if (!slot)
			return -1;
		free(t->slot);
		t->slot = slot;
		t->nslot = nslot;
	} else {
		memset(t->slot, 0, nslot * sizeof(*t->slot));
	}
	for (size_t i = 0; i < t->n; i++) {
		size_t h = keyed_hash(t->v[i]->key, nslot);

		while (t->slot[h])
			h = (h + 1) & (nslot - 1);
		t->slot[h] = (uint32_t)i + 1;
	}
	return 0;
}

static struct virt_row *keyed_add(struct keyed_rows *t, uint64_t key, pmInDom indom,
				  pmInDom hindom, const char *name)
{
	struct keyed *k;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct keyed **v = realloc(t->v, cap * sizeof(struct keyed *));

		if (!v)
			return NULL;
		t->v = v;
		t->cap = cap;
	}
	k = malloc(sizeof(*k));
	if (!k)
		return NULL;
	memset(k, 0, sizeof(*k));
	k->key = key;
	virt_row_init(&k->row, indom, hindom, name);
	t->v[t->n++] = k;
	if (t->nslot <= 2 * t->n) {
		if (keyed_reindex(t) < 0) {
			free(t->v[--t->n]);
			return NULL;
		}
	} else {
		size_t h = keyed_hash(key, t->nslot);

		while (t->slot[h])
			h = (h + 1) & (t->nslot - 1);
		t->slot[h] = (uint32_t)t->n;
	}
	return &k->row;
}

/* Rare (a VMM process gone): remove and rebuild the index. */
static void keyed_remove(struct keyed_rows *t, size_t i)
{
	virt_row_release(&t->v[i]->row);
	free(t->v[i]);
	t->v[i] = t->v[--t->n];
	keyed_reindex(t);		/* same size: cannot fail */
}

/* ------------------------------------------------------------- attach */

static bool kvm_ready(struct virt_family *fam)
{
	if (!virt_kmod_present("kvm")) {
		virt_set_reason(fam, "kernel module kvm not loaded");
		return false;
	}
	if (!virt_kmod_present("kvm_amd") && !virt_kmod_present("kvm_intel")) {
		virt_set_reason(fam, "no supported KVM vendor module (kvm_amd or kvm_intel) loaded%s",
				virt_kmod_present("kvm_pvm") ? "; kvm_pvm exit reasons are not decoded" : "");
		return false;
	}
	if (!virt_tracepoint_exists("kvm", "kvm_exit")) {
		virt_set_reason(fam, "tracepoint kvm:kvm_exit not found");
		return false;
	}
	return true;
}

enum variant { V_BTF, V_RAW, V_TP };

static void set_variant(struct kvm_bpf *skel, enum variant v, bool latency)
{
	struct bpf_program *progs[3][4] = {
		{ skel->progs.virt_kvm_btf_exit, skel->progs.virt_kvm_btf_entry,
		  skel->progs.virt_kvm_btf_hypercall, skel->progs.virt_kvm_btf_userspace_exit },
		{ skel->progs.virt_kvm_raw_exit, skel->progs.virt_kvm_raw_entry,
		  skel->progs.virt_kvm_raw_hypercall, skel->progs.virt_kvm_raw_userspace_exit },
		{ skel->progs.virt_kvm_tp_exit, skel->progs.virt_kvm_tp_entry,
		  skel->progs.virt_kvm_tp_hypercall, skel->progs.virt_kvm_tp_userspace_exit },
	};

	for (int i = 0; i < 3; i++)
		for (int p = 0; p < 4; p++)
			bpf_program__set_autoload(progs[i][p], i == (int)v && (latency || p != 1));
}

static int try_variant(struct virt_family *fam, enum variant v, char *why, size_t len)
{
	struct kvm_state *st = fam->priv;
	bool latency = fam->opts[OPT_LATENCY].b;
	struct kvm_bpf *skel = kvm_bpf__open();
	int err;

	if (!skel) {
		snprintf(why, len, "open: %s", strerror(errno));
		return -1;
	}
	skel->rodata->latency = latency;
	bpf_map__set_max_entries(skel->maps.vcpus, (__u32)fam->opts[OPT_MAX_VCPUS].u);
	bpf_map__set_max_entries(skel->maps.hcalls, (__u32)fam->opts[OPT_MAX_HCALLS].u);
	set_variant(skel, v, latency);
	err = kvm_bpf__load(skel);
	if (err) {
		snprintf(why, len, "load: %s", strerror(-err));
		kvm_bpf__destroy(skel);
		return -1;
	}
	err = kvm_bpf__attach(skel);
	if (err) {
		snprintf(why, len, "attach: %s", strerror(-err));
		kvm_bpf__destroy(skel);
		return -1;
	}
	st->skel = skel;
	fam->programs = latency ? 4 : 3;
	return 0;
}

static int try_btf(struct virt_family *fam, char *why, size_t len)
{
	return try_variant(fam, V_BTF, why, len);
}

static int try_raw(struct virt_family *fam, char *why, size_t len)
{
	return try_variant(fam, V_RAW, why, len);
}

static int try_tp(struct virt_family *fam, char *why, size_t len)
{
	return try_variant(fam, V_TP, why, len);
}

static const struct virt_method kvm_methods[] = {
	{ "tp_btf", try_btf },
	{ "raw_tp", try_raw },
	{ "tracepoint", try_tp },
};

static int alloc_buffers(struct kvm_state *st, struct virt_family *fam)
{
	size_t max = KVM_SLOTS;

	for (int o = OPT_MAX_VCPUS; o <= OPT_MAX_HCALLS; o++)
		if (fam->opts[o].u > max)
			max = fam->opts[o].u;
	return virt_bulk_alloc(&st->bulk, max, sizeof(uint64_t), sizeof(struct kvm_stats));
}

static void init_rows(struct kvm_state *st)
{
	char name[VIRT_NAME_MAX];

	for (unsigned int s = 0; s < KVM_SLOTS; s++) {
		kvm_slot_name(name, sizeof(name), s);
		virt_row_init(&st->slots[s], virt_indom(VIRT_I_KVM_REASON),
			      virt_indom(VIRT_I_KVM_REASON_HIST), name);
	}
	for (unsigned int r = 0; r < KVM_UEXIT_REASONS; r++) {
		if (uexit_names[r])
			snprintf(name, sizeof(name), "%s", uexit_names[r]);
		else
			snprintf(name, sizeof(name), "KVM_EXIT_%u", r);
		virt_row_init(&st->uexit[r], virt_indom(VIRT_I_KVM_UEXIT),
			      virt_indom(VIRT_I_KVM_UEXIT_HIST), name);
	}
}

static void rebase_keyed(struct keyed_rows *t)
{
	for (size_t i = 0; i < t->n; i++)
		virt_row_rebase(&t->v[i]->row);
}

static void threads_forget(struct kvm_state *st);

/* The BPF object goes; rows stay (instances keep their ids and counters
 * stay monotonic across e.g. rmmod/modprobe kvm_amd), VM rows too until
 * their process is found gone. */
static void kvm_detach(struct virt_family *fam)
{
	struct kvm_state *st = fam->priv;

	if (!st)
		return;
	kvm_bpf__destroy(st->skel);
	st->skel = NULL;
	for (unsigned int s = 0; s < KVM_SLOTS; s++)
		virt_row_rebase(&st->slots[s]);
	for (unsigned int r = 0; r < KVM_UEXIT_REASONS; r++)
		virt_row_rebase(&st->uexit[r]);
	rebase_keyed(&st->other);
	rebase_keyed(&st->hcalls);
	threads_forget(st);
}

static int kvm_attach(struct virt_family *fam)
{
	struct kvm_state *st = fam->priv;

	if (!st) {			/* first attach: rows live until exit */
		st = calloc(1, sizeof(*st));
		if (!st)
			return -ENOMEM;
		st->dead = calloc(fam->opts[OPT_MAX_VCPUS].u, sizeof(*st->dead));
		if (!st->dead || alloc_buffers(st, fam) < 0) {
			free(st->dead);
			free(st);
			return -ENOMEM;
		}
		fam->priv = st;
		init_rows(st);
	}
	if (virt_attach_chain(fam, kvm_methods, 3) < 0)
		return -ENOENT;
	return VIRT_ATTACHED;
}

/* ------------------------------------------------------------ refresh */

/* The i-th entry of the last per-CPU read, summed over the CPUs. */
static void take_stats(struct virt_row *r, const struct kvm_state *st, int i)
{
	const uint64_t *sum = (const uint64_t *)st->bulk.vals + (size_t)i * STATS_WORDS;

	virt_row_set(r, sum, 2, &sum[2]);
	virt_row_expose(r, false);
}

static int read_array(struct kvm_state *st, struct bpf_map *map, struct virt_row *rows,
		      unsigned int n)
{
	int got = virt_map_dump_percpu(bpf_map__fd(map), &st->bulk, sizeof(__u32), STATS_WORDS, n);

	for (int i = 0; i < got; i++) {
		__u32 k = ((__u32 *)st->bulk.keys)[i];

		if (k < n)
			take_stats(&rows[k], st, i);
	}
	return got < 0 ? got : 0;
}

typedef void (*name_fn)(char *buf, size_t len, uint64_t key);

static void name_other(char *buf, size_t len, uint64_t key)
{
	kvm_exit_name(buf, len, (unsigned int)(key >> 32), (unsigned int)key);
}

static void name_decimal(char *buf, size_t len, uint64_t key)
{
	snprintf(buf, len, "%llu", (unsigned long long)key);
}

static int read_hash(struct kvm_state *st, struct bpf_map *map, struct keyed_rows *t,
		     enum virt_indom_id indom, enum virt_indom_id hindom, name_fn name)
{
	int got = virt_map_dump_percpu(bpf_map__fd(map), &st->bulk, sizeof(__u64), STATS_WORDS,
				       bpf_map__max_entries(map));

	for (int i = 0; i < got; i++) {
		uint64_t k = ((uint64_t *)st->bulk.keys)[i];
		struct virt_row *r = keyed_find(t, k);

		if (!r) {
			char buf[VIRT_NAME_MAX];

			name(buf, sizeof(buf), k);
			r = keyed_add(t, k, virt_indom(indom), virt_indom(hindom), buf);
		}
		if (r)
			take_stats(r, st, i);
	}
	return got < 0 ? got : 0;
}

static bool pid_alive(unsigned long pid)
{
	char path[64];
	struct stat sb;

	snprintf(path, sizeof(path), "/proc/%lu", pid);
	return stat(path, &sb) == 0;
}

static void vm_name(char *buf, size_t len, uint32_t pid)
{
	char path[64], comm[64] = "", clean[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	if ((f = fopen(path, "r"))) {
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = '\0';
	virt_sanitize(clean, sizeof(clean), comm[0] ? comm : "unknown");
	snprintf(buf, len, "%u %s", pid, clean);
}

/* ------------------------------------------------ per-VM from threads */

static struct keyed *vm_of(struct kvm_state *st, uint32_t tgid)
{
	return keyed_lookup(&st->vms, tgid);
}

/* A thread's counts stay with its VM when the thread goes. */
static void thread_fold(struct kvm_state *st, struct vcpu_thread *t)
{
	struct keyed *vm = vm_of(st, t->tgid);

	for (size_t w = 0; vm && w < VM_WORDS; w++)
		vm->gone[w] += t->last[w];
	memset(t->last, 0, sizeof(t->last));
}

static void thread_remove(struct kvm_state *st, size_t i)
{
	st->threads[i] = st->threads[--st->nthreads];
}

/* The map goes (detach): keep the VM rows, their counts in gone. */
static void threads_forget(struct kvm_state *st)
{
	for (size_t i = 0; i < st->nthreads; i++)
		thread_fold(st, &st->threads[i]);
	st->nthreads = 0;
}

static struct vcpu_thread *thread_get(struct kvm_state *st, uint32_t tid, uint32_t tgid)
{
	for (size_t i = 0; i < st->nthreads; i++)
		if (st->threads[i].tid == tid) {
			if (st->threads[i].tgid != tgid) {	/* tid reused */
				thread_fold(st, &st->threads[i]);
				st->threads[i].tgid = tgid;
				st->threads[i].dropped = false;
			}
			return &st->threads[i];
		}
	if (st->nthreads == st->capthreads) {
		size_t cap = st->capthreads ? st->capthreads * 2 : 64;
		struct vcpu_thread *v = realloc(st->threads, cap * sizeof(*v));

		if (!v)
			return NULL;
		st->threads = v;
		st->capthreads = cap;
	}
	st->threads[st->nthreads] = (struct vcpu_thread){ .tid = tid, .tgid = tgid };
	return &st->threads[st->nthreads++];
}

/* Take this refresh's dump of the vcpus map into the thread records;
 * threads that vanished (our own deletes) fold into their VM. */
static int take_threads(struct kvm_state *st, int fd, unsigned int max)
{
	const size_t vsz = sizeof(struct kvm_vcpu_track);
	int got = virt_map_dump(fd, st->bulk.keys, sizeof(__u32), st->bulk.vals, vsz, max);

	for (size_t i = 0; i < st->nthreads; i++)
		st->threads[i].live = false;
	for (int i = 0; i < got; i++) {
		const struct kvm_vcpu_track *v =
			(const void *)((char *)st->bulk.vals + (size_t)i * vsz);
		struct vcpu_thread *t = thread_get(st, ((__u32 *)st->bulk.keys)[i], v->tgid);

		if (!t)
			continue;
		memcpy(t->last, &v->vm, sizeof(t->last));
		t->live = true;
	}
	for (size_t i = 0; i < st->nthreads;)
		if (!st->threads[i].live) {
			thread_fold(st, &st->threads[i]);
			thread_remove(st, i);
		} else {
			i++;
		}
	return got;
}

/* A VM row for every live VMM process (at most max_vms; threads of more
 * are counted once as dropped); rows of exited VMMs are marked not live. */
static void find_vms(struct kvm_state *st, size_t max_vms)
{
	for (size_t i = 0; i < st->vms.n; i++)
		st->vms.v[i]->row.live = pid_alive(st->vms.v[i]->key);
	for (size_t i = 0; i < st->nthreads; i++) {
		struct vcpu_thread *t = &st->threads[i];
		char name[VIRT_NAME_MAX];
		struct virt_row *r;

		if (vm_of(st, t->tgid) || !pid_alive(t->tgid))
			continue;
		if (st->vms.n >= max_vms) {
			st->vm_drops += !t->dropped;
			t->dropped = true;
			continue;
		}
		vm_name(name, sizeof(name), t->tgid);
		r = keyed_add(&st->vms, t->tgid, virt_indom(VIRT_I_KVM_VM), PM_INDOM_NULL, name);
		if (r)
			r->live = true;
	}
}

/* Per-VM rows: a VM's counts are those its gone threads left plus its live
 * threads'. Threads of exited VMMs, and (every 10 s) exited threads of live
 * ones, are deleted from the vcpus map in one batch: the map returns to its
 * baseline after VMs come and go. Exited VMMs leave the instance domain. */
static int read_vms(struct kvm_state *st, struct virt_family *fam)
{
	struct bpf_map *map = st->skel->maps.vcpus;
	int fd = bpf_map__fd(map), got;
	time_t now = time(NULL);
	bool sweep = now - st->last_sweep >= 10;
	__u32 ndead = 0, max = bpf_map__max_entries(map);

	got = take_threads(st, fd, max);
	if (got < 0)
		return got;
	if (sweep)
		st->last_sweep = now;
	find_vms(st, fam->opts[OPT_MAX_VMS].u);
	for (size_t i = 0; i < st->nthreads;) {
		struct vcpu_thread *t = &st->threads[i];
		struct keyed *vm = vm_of(st, t->tgid);
		bool gone = !vm ? !pid_alive(t->tgid) : !vm->row.live;

		if (!gone && vm && sweep && !pid_alive(t->tid)) {
			thread_fold(st, t);
			gone = true;
		}
		if (gone && ndead < max) {
			st->dead[ndead++] = t->tid;
			thread_remove(st, i);
		} else {
			i++;
		}
	}
	if (ndead) {
		virt_bpf_syscalls++;
		bpf_map_delete_batch(fd, st->dead, &ndead, NULL);
	}
	for (size_t i = 0; i < st->vms.n;) {
		struct keyed *vm = st->vms.v[i];
		uint64_t sum[VM_WORDS];

		if (!vm->row.live) {
			keyed_remove(&st->vms, i);
			continue;
		}
		memcpy(sum, vm->gone, sizeof(sum));
		for (size_t t = 0; t < st->nthreads; t++)
			for (size_t w = 0; st->threads[t].tgid == vm->key && w < VM_WORDS; w++)
				sum[w] += st->threads[t].last[w];
		virt_row_set(&vm->row, sum, VM_WORDS, NULL);
		virt_row_expose(&vm->row, true);
		i++;
	}
	return 0;
}

static int kvm_refresh(struct virt_family *fam)
{
	struct kvm_state *st = fam->priv;
	struct kvm_bpf *skel = st->skel;
	int err = 0;

	err |= read_array(st, skel->maps.exits, st->slots, KVM_SLOTS);
	err |= read_hash(st, skel->maps.exits_other, &st->other, VIRT_I_KVM_REASON,
			 VIRT_I_KVM_REASON_HIST, name_other);
	err |= read_hash(st, skel->maps.hcalls, &st->hcalls, VIRT_I_KVM_HCALL,
			 VIRT_I_KVM_HCALL_HIST, name_decimal);
	err |= read_array(st, skel->maps.uexits, st->uexit, KVM_UEXIT_REASONS);
	err |= read_vms(st, fam);
	fam->dropped = virt_percpu_counters_total(bpf_map__fd(skel->maps.drops), &st->bulk,
						  KVM_DROPS) + st->vm_drops;
	return err ? -EIO : 0;
}

/* -------------------------------------------------------------- fetch */

#define HIST VIRT_ROW_HIST
static const struct {
	enum virt_indom_id indom;
	int word;			/* row word, or HIST: the bucket count */
	unsigned int pct;		/* a percentile of the row's histogram */
} fetch_map[VIRT_NMETRICS] = {
	[VIRT_M_KVM_EXIT_COUNT] = { VIRT_I_KVM_REASON, W_COUNT },
	[VIRT_M_KVM_EXIT_TIME] = { VIRT_I_KVM_REASON, W_TIME },
	[VIRT_M_KVM_EXIT_LATENCY] = { VIRT_I_KVM_REASON_HIST, HIST },
	[VIRT_M_KVM_HCALL_COUNT] = { VIRT_I_KVM_HCALL, W_COUNT },
	[VIRT_M_KVM_HCALL_TIME] = { VIRT_I_KVM_HCALL, W_TIME },
	[VIRT_M_KVM_HCALL_LATENCY] = { VIRT_I_KVM_HCALL_HIST, HIST },
	[VIRT_M_KVM_UEXIT_COUNT] = { VIRT_I_KVM_UEXIT, W_COUNT },
	[VIRT_M_KVM_UEXIT_TIME] = { VIRT_I_KVM_UEXIT, W_TIME },
	[VIRT_M_KVM_UEXIT_LATENCY] = { VIRT_I_KVM_UEXIT_HIST, HIST },
	[VIRT_M_KVM_VM_EXITS] = { VIRT_I_KVM_VM, W_COUNT },
	[VIRT_M_KVM_VM_EXIT_TIME] = { VIRT_I_KVM_VM, W_TIME },
	[VIRT_M_KVM_VM_UEXITS] = { VIRT_I_KVM_VM, W_UEXITS },
	[VIRT_M_KVM_VM_UEXIT_TIME] = { VIRT_I_KVM_VM, W_UTIME },
#define PCT(id, indom) \
	[VIRT_M_##id##_LAT_P50] = { indom, 0, 50 }, \
	[VIRT_M_##id##_LAT_P90] = { indom, 0, 90 }, \
	[VIRT_M_##id##_LAT_P99] = { indom, 0, 99 }
	PCT(KVM_EXIT, VIRT_I_KVM_REASON),
	PCT(KVM_HCALL, VIRT_I_KVM_HCALL),
	PCT(KVM_UEXIT, VIRT_I_KVM_UEXIT),
#undef PCT
};

static int kvm_fetch(struct virt_family *fam, enum virt_metric_id m, unsigned int inst,
		     pmAtomValue *atom)
{
	(void)fam;
	if (fetch_map[m].pct) {
		const struct virt_row *r = virt_row_of(virt_indom(fetch_map[m].indom), inst);

		return r ? virt_row_percentile(r, fetch_map[m].pct, atom) : PM_ERR_INST;
	}
	return virt_row_fetch(fetch_map[m].indom, fetch_map[m].word, inst, atom);
}

const struct virt_module virt_module = {
	.abi = VIRT_MODULE_ABI,
	.name = "kvm",
	.options = kvm_options,
	.noptions = NOPTS,
	.ready = kvm_ready,
	.attach = kvm_attach,
	.detach = kvm_detach,
	.refresh = kvm_refresh,
	.fetch = kvm_fetch,
};
