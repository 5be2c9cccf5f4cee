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
#include "kvm.skel.h"

#include <asm/svm.h>
#include <asm/vmx.h>
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
		"vCPU threads tracked between exit and entry (LRU beyond that)" },
	[OPT_MAX_VMS] = { "max_vms", VIRT_OPT_UINT, 1, 65536, "1024",
		"VMM processes with per-VM counters; more are counted as dropped" },
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
	} **v;
	size_t n, cap;
};

struct kvm_state {
	struct kvm_bpf *skel;
	struct virt_row slots[KVM_SLOTS];
	struct virt_row uexit[KVM_UEXIT_REASONS];
	struct keyed_rows other, hcalls, vms;
	struct virt_bulk bulk;		/* bulk-read buffers, sized for the largest map */
	time_t last_sweep;
};

/* ------------------------------------------------------------- names */

static const struct { unsigned int code; const char *name; } svm_names[] = {
	SVM_EXIT_REASONS
}, vmx_names[] = {
	VMX_EXIT_REASONS
};

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

/* The reason as the kernel's kvm_exit tracepoint prints it; unknown codes
 * get stable names vmx_<n> / svm_0x<hex>. */
static void exit_name(char *buf, size_t len, unsigned int isa, unsigned int code)
{
	if (isa == KVM_ISA_VMX) {
		for (size_t i = 0; i < sizeof(vmx_names) / sizeof(vmx_names[0]); i++)
			if (vmx_names[i].code == (code & 0xffff)) {
				snprintf(buf, len, "%s", vmx_names[i].name);
				return;
			}
		snprintf(buf, len, "vmx_%u", code & 0xffff);
		return;
	}
	for (size_t i = 0; i < sizeof(svm_names) / sizeof(svm_names[0]); i++)
		if (svm_names[i].code == code) {
			snprintf(buf, len, "%s", svm_names[i].name);
			return;
		}
	snprintf(buf, len, "svm_0x%x", code);
}

static void slot_name(char *buf, size_t len, unsigned int slot)
{
	if (slot < KVM_SLOT_SVM_LO)
		exit_name(buf, len, KVM_ISA_VMX, slot - KVM_SLOT_VMX);
	else if (slot < KVM_SLOT_SVM_HI)
		exit_name(buf, len, KVM_ISA_SVM, slot - KVM_SLOT_SVM_LO);
	else
		exit_name(buf, len, KVM_ISA_SVM, 0x400 + slot - KVM_SLOT_SVM_HI);
}

/* --------------------------------------------------------- keyed rows */

static struct virt_row *keyed_find(struct keyed_rows *t, uint64_t key)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i]->key == key)
			return &t->v[i]->row;
	return NULL;
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
	k->key = key;
	virt_row_init(&k->row, indom, hindom, name);
	t->v[t->n++] = k;
	return &k->row;
}

static void keyed_remove(struct keyed_rows *t, size_t i)
{
	virt_row_retire(&t->v[i]->row);
	free(t->v[i]);
	t->v[i] = t->v[--t->n];
}

static void keyed_clear(struct keyed_rows *t)
{
	while (t->n)
		keyed_remove(t, t->n - 1);
	free(t->v);
	*t = (struct keyed_rows){ 0 };
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
	bpf_map__set_max_entries(skel->maps.vms, (__u32)fam->opts[OPT_MAX_VMS].u);
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
		slot_name(name, sizeof(name), s);
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

/* The BPF object goes; rows stay (instances keep their ids and counters
 * stay monotonic across e.g. rmmod/modprobe kvm_amd). VMs are per process:
 * their rows go with the object, and come back if the process lives on. */
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
	keyed_clear(&st->vms);
}

static int kvm_attach(struct virt_family *fam)
{
	struct kvm_state *st = fam->priv;

	if (!st) {			/* first attach: rows live until exit */
		st = calloc(1, sizeof(*st));
		if (!st)
			return -ENOMEM;
		if (alloc_buffers(st, fam) < 0) {
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

static void take_stats(struct virt_row *r, const void *percpu)
{
	uint64_t sum[STATS_WORDS];

	virt_percpu_sum(percpu, STATS_WORDS, sum);
	virt_row_set(r, sum, 2, &sum[2]);
	virt_row_expose(r, false);
}

static size_t percpu_stride(size_t value_size)
{
	return ((value_size + 7) & ~(size_t)7) * (size_t)virt_ncpus();
}

static int read_array(struct kvm_state *st, struct bpf_map *map, struct virt_row *rows,
		      unsigned int n)
{
	size_t stride = percpu_stride(sizeof(struct kvm_stats));
	int got = virt_map_dump(bpf_map__fd(map), st->bulk.keys, sizeof(__u32), st->bulk.vals,
				stride, n);

	for (int i = 0; i < got; i++) {
		__u32 k = ((__u32 *)st->bulk.keys)[i];

		if (k < n)
			take_stats(&rows[k], (char *)st->bulk.vals + (size_t)i * stride);
	}
	return got < 0 ? got : 0;
}

typedef void (*name_fn)(char *buf, size_t len, uint64_t key);

static void name_other(char *buf, size_t len, uint64_t key)
{
	exit_name(buf, len, (unsigned int)(key >> 32), (unsigned int)key);
}

static void name_decimal(char *buf, size_t len, uint64_t key)
{
	snprintf(buf, len, "%llu", (unsigned long long)key);
}

static int read_hash(struct kvm_state *st, struct bpf_map *map, struct keyed_rows *t,
		     enum virt_indom_id indom, enum virt_indom_id hindom, name_fn name)
{
	size_t stride = percpu_stride(sizeof(struct kvm_stats));
	int got = virt_map_dump(bpf_map__fd(map), st->bulk.keys, sizeof(__u64), st->bulk.vals,
				stride, bpf_map__max_entries(map));

	for (int i = 0; i < got; i++) {
		uint64_t k = ((uint64_t *)st->bulk.keys)[i];
		struct virt_row *r = keyed_find(t, k);

		if (!r) {
			char buf[VIRT_NAME_MAX];

			name(buf, sizeof(buf), k);
			r = keyed_add(t, k, virt_indom(indom), virt_indom(hindom), buf);
		}
		if (r)
			take_stats(r, (char *)st->bulk.vals + (size_t)i * stride);
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

/* Per-VM rows: exited VMMs leave the instance domain and the map. */
static int read_vms(struct kvm_state *st)
{
	struct bpf_map *map = st->skel->maps.vms;
	size_t stride = percpu_stride(sizeof(struct kvm_vm_stats));
	int got = virt_map_dump(bpf_map__fd(map), st->bulk.keys, sizeof(__u32), st->bulk.vals,
				stride, bpf_map__max_entries(map));

	for (size_t i = 0; i < st->vms.n; i++)
		st->vms.v[i]->row.live = false;
	for (int i = 0; i < got; i++) {
		uint32_t pid = ((uint32_t *)st->bulk.keys)[i];
		struct virt_row *r = keyed_find(&st->vms, pid);
		uint64_t sum[VM_WORDS];

		if (!pid_alive(pid)) {
			virt_bpf_syscalls++;
			bpf_map_delete_elem(bpf_map__fd(map), &pid);
			continue;
		}
		if (!r) {
			char name[VIRT_NAME_MAX];

			vm_name(name, sizeof(name), pid);
			r = keyed_add(&st->vms, pid, virt_indom(VIRT_I_KVM_VM), PM_INDOM_NULL, name);
			if (!r)
				continue;
		}
		virt_percpu_sum((char *)st->bulk.vals + (size_t)i * stride, VM_WORDS, sum);
		virt_row_set(r, sum, VM_WORDS, NULL);
		r->live = true;
		virt_row_expose(r, true);
	}
	for (size_t i = 0; i < st->vms.n;)
		if (!st->vms.v[i]->row.live)
			keyed_remove(&st->vms, i);
		else
			i++;
	return got < 0 ? got : 0;
}

/* vCPU threads that died mid-exit stay in the LRU map until evicted; sweep
 * them so the map returns to its baseline after VMs come and go. */
static void sweep_vcpus(struct kvm_state *st)
{
	struct bpf_map *map = st->skel->maps.vcpus;
	int fd = bpf_map__fd(map), got;
	time_t now = time(NULL);

	if (now - st->last_sweep < 10)
		return;
	st->last_sweep = now;
	got = virt_map_dump(fd, st->bulk.keys, sizeof(__u32), st->bulk.vals,
			    bpf_map__value_size(map), bpf_map__max_entries(map));
	for (int i = 0; i < got; i++) {
		__u32 tid = ((__u32 *)st->bulk.keys)[i];

		if (!pid_alive(tid)) {
			virt_bpf_syscalls++;
			bpf_map_delete_elem(fd, &tid);
		}
	}
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
	err |= read_vms(st);
	fam->dropped = virt_percpu_counters_total(bpf_map__fd(skel->maps.drops), &st->bulk, KVM_DROPS);
	sweep_vcpus(st);
	return err ? -EIO : 0;
}

/* -------------------------------------------------------------- fetch */

#define HIST VIRT_ROW_HIST
static const struct {
	enum virt_indom_id indom;
	int word;			/* row word, or HIST: the bucket count */
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
};

static int kvm_fetch(struct virt_family *fam, enum virt_metric_id m, unsigned int inst,
		     pmAtomValue *atom)
{
	(void)fam;
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
