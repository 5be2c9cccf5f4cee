/* kvm's reader of its maps keyed by (process, kind) (pmda/kvm_keyed.c)
 * with the real users' descriptions (kvm_subs.c, kvm_npf.c, kvm_irqs.c)
 * on fake "subs", "sub_used", "npfs" and "irqs" maps and fake VM rows:
 * rows named and summed per VM, a read is one dump per map, an exited
 * process's entries fold into its rows and leave the maps, a named VM's
 * rows are retired with it and continue when it restarts under its name
 * (a new pid) and are shown again with it, an unnamed VM's go, a detach
 * keeps the counts. The counts are the test's own: what it put into the
 * maps. */
#include "kvm_int.h"
#include "unit.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------ the agent around it */

uint64_t virt_mono_ns(void)
{
	return 0;
}

pmInDom virt_indom(enum virt_indom_id id)
{
	return pmInDom_build(511, (unsigned int)id);
}

void virt_log(int priority, const char *fmt, ...)
{
	(void)priority, (void)fmt;
}

bool virt_tracepoint_exists(const char *system, const char *event)
{
	(void)system, (void)event;
	return true;
}

bool virt_ksym_exists(const char *name)
{
	(void)name;
	return true;
}

int bpf_map__set_max_entries(struct bpf_map *map, __u32 max_entries)
{
	(void)map, (void)max_entries;
	return 0;
}

__u32 bpf_map__max_entries(const struct bpf_map *map)
{
	(void)map;
	return 16;
}

/* VMM processes alive */
static uint32_t alive[8];

static bool pid_alive(uint32_t pid)
{
	for (size_t i = 0; i < VIRT_ARRAY_SIZE(alive); i++)
		if (alive[i] == pid)
			return true;
	return false;
}

static void proc_set(uint32_t pid, bool up)
{
	for (size_t i = 0; i < VIRT_ARRAY_SIZE(alive); i++)
		if (up ? !alive[i] : alive[i] == pid) {
			alive[i] = up ? pid : 0;
			return;
		}
}

bool virt_pid_alive(uint32_t pid)
{
	return pid_alive(pid);
}

/* kvm_vms.c's VM rows, as kvm_vms_read leaves them: live ones keyed by
 * pid, retired ones by name */
struct vm_entry *kvm_vm_at(struct kvm_state *st, size_t i)
{
	return (struct vm_entry *)st->vms.v[i];
}

struct vm_entry *kvm_vm_of(struct kvm_state *st, uint32_t tgid)
{
	for (size_t i = 0; i < st->vms.n; i++)
		if (!kvm_vm_at(st, i)->retired && kvm_vm_at(st, i)->k.key == tgid)
			return kvm_vm_at(st, i);
	return NULL;
}

bool kvm_vm_alive(const struct vm_entry *vm)
{
	return !vm->retired && pid_alive((uint32_t)vm->k.key);
}

/* The maps: fd 1 + their index in map_tags */
enum { M_SUBS, M_SUB_USED, M_NPFS, M_IRQS, NMAPS };
#define MAXE 32
struct entry {
	bool used;
	unsigned char key[16];
	struct kvm_stats v;
};
static struct entry maps[NMAPS][MAXE];
static size_t key_sizes[NMAPS] = { sizeof(struct kvm_sub_key), sizeof(uint32_t), sizeof(uint64_t),
				   sizeof(struct kvm_irq_key) };
static unsigned int dumps[NMAPS], deletes[NMAPS];
static char map_tags[NMAPS];

int bpf_map__fd(const struct bpf_map *map)
{
	return 1 + (int)((const char *)(const void *)map - map_tags);
}

static struct entry *map_entry(unsigned int m, const void *key, bool add)
{
	struct entry *free_one = NULL;

	for (size_t i = 0; i < MAXE; i++) {
		struct entry *e = &maps[m][i];

		if (e->used && !memcmp(e->key, key, key_sizes[m]))
			return e;
		if (!e->used && !free_one)
			free_one = e;
	}
	if (add && free_one) {
		*free_one = (struct entry){ .used = true };
		memcpy(free_one->key, key, key_sizes[m]);
	}
	return add ? free_one : NULL;
}

int virt_map_dump(int fd, void *keys, size_t key_size, void *values, size_t value_size,
		  unsigned int max)
{
	unsigned int m = (unsigned int)fd - 1, n = 0;

	dumps[m]++;
	for (size_t i = 0; i < MAXE && n < max; i++) {
		if (!maps[m][i].used)
			continue;
		memcpy((char *)keys + n * key_size, maps[m][i].key, key_size);
		memcpy((char *)values + n * value_size, &maps[m][i].v, value_size);
		n++;
	}
	return (int)n;
}

int virt_map_delete(int fd, const void *key)
{
	struct entry *e = map_entry((unsigned int)fd - 1, key, false);

	deletes[fd - 1]++;
	if (!e)
		return -2;
	e->used = false;
	return 0;
}

/* --------------------------------------------------- the BPF side's moves */

static void bpf_sub(uint32_t tgid, unsigned int kind, unsigned int dir, uint64_t code, uint64_t n,
		    uint64_t ns)
{
	struct kvm_sub_key k = { .tgid = tgid, .kind = (__u16)kind, .dir = (__u16)dir, .code = code };
	uint32_t used_key = tgid;
	struct entry *e = map_entry(M_SUBS, &k, true);

	e->v.count += n;	/* struct kvm_sub_stats: count, time */
	e->v.time_ns += ns;
	map_entry(M_SUB_USED, &used_key, true);
}

/* a timed record: n events in bucket b (kvm.h: the histogram's mass
 * counts, the count word holds what no bucket took) */
static void bpf_timed(unsigned int m, const void *key, uint64_t n, uint64_t ns, unsigned int b)
{
	struct entry *e = map_entry(m, key, true);

	e->v.hist[b] += n;
	e->v.time_ns += ns;
}

static void bpf_npf(uint32_t tgid, unsigned int kind, uint64_t n, uint64_t ns)
{
	uint64_t k = KVM_NPF_KEY(tgid, kind);

	bpf_timed(M_NPFS, &k, n, ns, 3);
}

static void bpf_irq(uint32_t tgid, unsigned int rec, uint64_t n, uint64_t ns)
{
	struct kvm_irq_key k = { .tgid = tgid, .rec = rec };

	if (ns)
		bpf_timed(M_IRQS, &k, n, ns, 5);
	else
		map_entry(M_IRQS, &k, true)->v.count += n;
}

/* ----------------------------------------------------------- the checks */

static struct kvm_bpf skel;
static struct kvm_bpf__rodata rodata;
static struct virt_family fam;

/* kvm_vms_read's part: a VM row per live process, retired (named) or
 * removed when its process is gone */
static void vms_read(struct kvm_state *st, uint32_t pid, const char *name, bool named)
{
	struct vm_entry *vm = kvm_vm_of(st, pid);

	if (!vm && pid_alive(pid)) {
		vm = named ? virt_table_find_name(&st->vms, name) : NULL;
		if (vm) {
			vm->retired = false;
			virt_table_rekey(&st->vms, vm, pid);
		} else {
			vm = virt_table_add(&st->vms, pid, virt_indom(VIRT_I_KVM_VM), PM_INDOM_NULL, name);
			vm->named = named;
		}
	} else if (vm && !pid_alive(pid)) {
		if (vm->named) {
			vm->retired = true;
			virt_table_rekey(&st->vms, vm, virt_name_key(name));
		} else {
			virt_table_remove(&st->vms, vm);
		}
	}
}

/* kvm_refresh's order: read the maps, the VM rows, set the rows */
static void refresh(struct kvm_state *st, uint32_t pid, const char *name, bool named)
{
	CHECK(kvm_keyed_read(st) == 0);
	vms_read(st, pid, name, named);
	kvm_keyed_set(st);
}

static struct kvm_keyed_row *row(struct kvm_state *st, unsigned int m, unsigned int t,
				 const char *name)
{
	return virt_table_find_name(&st->keyed[m].rows[t], name);
}

static uint64_t word(struct kvm_state *st, unsigned int m, unsigned int t, const char *name,
		     unsigned int w)
{
	struct kvm_keyed_row *e = row(st, m, t, name);

	return e ? e->sums.sum[w] : ~0ull;
}

static bool shown(struct kvm_state *st, unsigned int m, unsigned int t, const char *name)
{
	struct kvm_keyed_row *e = row(st, m, t, name);

	return e && e->k.row.inst >= 0 &&
	       pmdaCacheLookup(e->k.row.indom, e->k.row.inst, NULL, NULL) == PMDA_CACHE_ACTIVE;
}

#define PIO(st, name) word(st, KVM_KEYED_SUBS, KVM_SUB_PIO, name, W_COUNT)
#define NPF(st, name, w) word(st, KVM_KEYED_NPF, 0, name, w)
#define EVENTS(st, name, w) word(st, KVM_KEYED_IRQS, KVM_IRQ_T_EVENTS, name, w)

static void state_init(struct kvm_state *st)
{
	static union virt_optval opts[NOPTS];

	opts[OPT_MAX_VMS].u = 4;
	opts[OPT_SUB_TOP].u = 2;
	opts[OPT_LATENCY].b = opts[OPT_SUBREASONS].b = opts[OPT_NPF].b = true;
	opts[OPT_INTERRUPTS].b = opts[OPT_TIMER_LATENESS].b = true;
	fam.opts = opts;
	fam.priv = st;
	skel.rodata = &rodata;
	skel.maps.subs = (struct bpf_map *)(void *)&map_tags[M_SUBS];
	skel.maps.sub_used = (struct bpf_map *)(void *)&map_tags[M_SUB_USED];
	skel.maps.npfs = (struct bpf_map *)(void *)&map_tags[M_NPFS];
	skel.maps.irqs = (struct bpf_map *)(void *)&map_tags[M_IRQS];
	st->vms = VIRT_TABLE_OF_SUMS(struct vm_entry, sums, KVM_SUM_WORDS);
	CHECK(kvm_keyed_init(st, &fam) == 0);
	kvm_subs_configure(&fam, &skel);
	kvm_npf_configure(&fam, &skel, "tp_btf");
	kvm_irqs_configure(&fam, &skel, "tp_btf");
	CHECK(st->keyed[KVM_KEYED_SUBS].on && st->keyed[KVM_KEYED_SUBS].timed);
	CHECK(st->keyed[KVM_KEYED_NPF].on && st->keyed[KVM_KEYED_IRQS].on);
	CHECK(st->keyed[KVM_KEYED_SUBS].max == 4 * KVM_SUB_KINDS * 3);
	st->skel = &skel;
}

/* A live VM's entries: named rows, summed; one dump per map and read. */
static void check_live(struct kvm_state *st)
{
	proc_set(100, true);
	vms_read(st, 100, "web", true);
	bpf_sub(100, KVM_SUB_PIO, KVM_SUB_OUT, 0x70, 300, 3000);
	bpf_sub(100, KVM_SUB_PIO, KVM_SUB_IN, 0x70, 0, 0);
	bpf_sub(100, KVM_SUB_CPUID, 0, 0, 40, 400);
	bpf_sub(100, KVM_SUB_MSR, KVM_SUB_RD, KVM_SUB_OTHER, 2, 20);
	bpf_npf(100, KVM_NPF_MAJOR, 7, 700);
	bpf_irq(100, KVM_IRQ_DEVICE, 5, 50);
	bpf_irq(100, KVM_IRQ_POSTED, 3, 0);
	refresh(st, 100, "web", true);
	CHECK(dumps[M_SUBS] == 1 && dumps[M_NPFS] == 1 && dumps[M_IRQS] == 1 && dumps[M_SUB_USED] == 0);
	CHECK(PIO(st, "web/0x70/out") == 300 && word(st, 0, KVM_SUB_PIO, "web/0x70/out", W_TIME) == 3000);
	CHECK(word(st, KVM_KEYED_SUBS, KVM_SUB_CPUID, "web/0x0", W_COUNT) == 40);
	CHECK(word(st, KVM_KEYED_SUBS, KVM_SUB_MSR, "web/other", W_COUNT) == 2);
	CHECK(shown(st, KVM_KEYED_SUBS, KVM_SUB_PIO, "web/0x70/out"));
	CHECK(PIO(st, "web/0x70/in") == 0 && !shown(st, KVM_KEYED_SUBS, KVM_SUB_PIO, "web/0x70/in"));
	CHECK(row(st, KVM_KEYED_SUBS, KVM_SUB_PIO, "web/0x70/out")->timed);
	/* a timed record's count is its histogram's mass; the row's words too */
	CHECK(NPF(st, "web/major", W_COUNT) == 7 && NPF(st, "web/major", W_TIME) == 700);
	CHECK(row(st, KVM_KEYED_NPF, 0, "web/major")->k.row.v[W_COUNT] == 7);
	CHECK(row(st, KVM_KEYED_NPF, 0, "web/major")->k.row.hist[3] == 7);
	CHECK(shown(st, KVM_KEYED_NPF, 0, "web/major"));
	CHECK(kvm_vm_of(st, 100)->npf_on && kvm_vm_of(st, 100)->npf_major_ns == 700);
	CHECK(word(st, KVM_KEYED_IRQS, KVM_IRQ_T_LATENCY, "web/device", W_COUNT) == 5);
	CHECK(EVENTS(st, "web", KVM_IRQ_W_POSTED) == 3 && EVENTS(st, "web", KVM_IRQ_W_COALESCED) == 0);
	CHECK(shown(st, KVM_KEYED_IRQS, KVM_IRQ_T_EVENTS, "web"));
	CHECK(row(st, KVM_KEYED_IRQS, KVM_IRQ_T_EVENTS, "web")->tgid == 100);
	CHECK(kvm_keyed_indom(VIRT_I_KVM_MMIO) && kvm_keyed_indom(VIRT_I_KVM_NPF) &&
	      kvm_keyed_indom(VIRT_I_KVM_IRQ_VM) && !kvm_keyed_indom(VIRT_I_KVM_VM));

	bpf_sub(100, KVM_SUB_PIO, KVM_SUB_OUT, 0x70, 10, 100);
	bpf_npf(100, KVM_NPF_MAJOR, 1, 10);
	refresh(st, 100, "web", true);
	CHECK(PIO(st, "web/0x70/out") == 310 && NPF(st, "web/major", W_COUNT) == 8);
	CHECK(deletes[M_SUBS] == 0 && deletes[M_NPFS] == 0 && deletes[M_IRQS] == 0);
}

/* A process with no VM row: its entries wait while it lives, go when it
 * is gone. */
static void check_unknown(struct kvm_state *st)
{
	proc_set(200, true);
	bpf_npf(200, KVM_NPF_MINOR, 4, 40);
	refresh(st, 100, "web", true);
	CHECK(row(st, KVM_KEYED_NPF, 0, "200/minor") == NULL && map_entry(M_NPFS, &(uint64_t){ KVM_NPF_KEY(200, KVM_NPF_MINOR) }, false));
	proc_set(200, false);
	refresh(st, 100, "web", true);
	CHECK(!map_entry(M_NPFS, &(uint64_t){ KVM_NPF_KEY(200, KVM_NPF_MINOR) }, false));
}

/* The named VM's process exits: its entries fold into its rows and leave
 * the maps (sub_used too); the rows are retired with the VM. It restarts
 * under its name (pid 101) a refresh later: its rows continue, those its
 * new process has not counted yet too. */
static void check_restarted(struct kvm_state *st)
{
	bpf_sub(100, KVM_SUB_PIO, KVM_SUB_OUT, 0x70, 5, 50);
	proc_set(100, false);
	refresh(st, 100, "web", true);
	CHECK(PIO(st, "web/0x70/out") == 315 && NPF(st, "web/major", W_COUNT) == 8);
	CHECK(EVENTS(st, "web", KVM_IRQ_W_POSTED) == 3);
	CHECK(!shown(st, KVM_KEYED_SUBS, KVM_SUB_PIO, "web/0x70/out") && !shown(st, KVM_KEYED_NPF, 0, "web/major"));
	for (unsigned int m = 0; m < NMAPS; m++)
		for (size_t i = 0; i < MAXE; i++)
			CHECK(!maps[m][i].used);
	refresh(st, 100, "web", true);
	CHECK(PIO(st, "web/0x70/out") == 315);

	proc_set(101, true);
	refresh(st, 101, "web", true);
	CHECK(PIO(st, "web/0x70/out") == 315 && NPF(st, "web/major", W_COUNT) == 8);
	CHECK(shown(st, KVM_KEYED_SUBS, KVM_SUB_PIO, "web/0x70/out") && shown(st, KVM_KEYED_NPF, 0, "web/major"));
	bpf_sub(101, KVM_SUB_PIO, KVM_SUB_OUT, 0x70, 1, 10);
	refresh(st, 101, "web", true);
	CHECK(PIO(st, "web/0x70/out") == 316 && shown(st, KVM_KEYED_SUBS, KVM_SUB_PIO, "web/0x70/out"));
	CHECK(NPF(st, "web/major", W_COUNT) == 8 && kvm_vm_of(st, 101)->npf_major_ns == 710);
	CHECK(row(st, KVM_KEYED_SUBS, KVM_SUB_PIO, "web/0x70/out")->tgid == 101);
}

/* A detach: the counts stay in the bases; the next object counts on. */
static void check_detach(struct kvm_state *st)
{
	kvm_keyed_forget(st);
	memset(maps, 0, sizeof(maps));
	bpf_sub(101, KVM_SUB_PIO, KVM_SUB_OUT, 0x70, 4, 40);
	refresh(st, 101, "web", true);
	CHECK(PIO(st, "web/0x70/out") == 320 && NPF(st, "web/major", W_COUNT) == 8);
}

/* An unnamed VM's rows go with it. */
static void check_unnamed(struct kvm_state *st)
{
	proc_set(300, true);
	vms_read(st, 300, "300", false);
	bpf_irq(300, KVM_IRQ_UNMATCHED, 2, 0);
	refresh(st, 300, "300", false);
	CHECK(EVENTS(st, "300", KVM_IRQ_W_UNMATCHED) == 2);
	proc_set(300, false);
	refresh(st, 300, "300", false);
	CHECK(row(st, KVM_KEYED_IRQS, KVM_IRQ_T_EVENTS, "300") == NULL);
	CHECK(!map_entry(M_IRQS, &(struct kvm_irq_key){ 300, KVM_IRQ_UNMATCHED }, false));
	CHECK(EVENTS(st, "web", KVM_IRQ_W_POSTED) == 3);
}

int main(void)
{
	static struct kvm_state st;

	state_init(&st);
	check_live(&st);
	check_unknown(&st);
	check_restarted(&st);
	check_detach(&st);
	check_unnamed(&st);
	kvm_keyed_free(&st);
	return UNIT_DONE();
}
