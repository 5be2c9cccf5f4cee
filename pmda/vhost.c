/*
 * vhost family (module "vhost", host side): per vhost virtqueue, guest
 * kicks handled, eventfd wakeups, wakeup->handler latency, stalls (counted,
 * and as PCP event records), packets and bytes per handler run and runs cut
 * short by the weight budget (bpf/vhost.bpf.c).
 *
 * Attach order: fentry (fentry/fexit programs), kprobe. The family needs
 * one of vhost_net, vhost_vsock, vhost_scsi (modules on Debian kernels) and
 * attaches by itself when one is loaded after the agent started; the
 * handler programs of drivers that are not loaded are not loaded either, so
 * when the set of loaded drivers changes, ready() says so and the agent
 * re-attaches (counters stay monotonic: rows keep their bases).
 *
 * Instances "<vm>/<device><n>/<queue>": vm = the VM name of the owner
 * (vmid.h), else its pid, the tgid of dev->mm->owner (the VMM process that
 * did VHOST_SET_OWNER); device = net,
 * vsock or scsi (from the queue's handle_kick function, by address:
 * virt_ksym_lookup), n = 0, 1, ... per owner and kind in order of first sight
 * (lowest free number), queue = rx/tx for net and vsock, the vq index for
 * scsi. A queue is in the instance domain from its first wakeup or handler
 * run after the family attached until the refresh after vhost_dev_cleanup()
 * ran for its device (or its owner process is gone).
 *
 * Stall events: the BPF ring buffer is drained on every refresh (each fetch
 * of a vhost metric) into a bounded agent-side queue (option max_events);
 * every client context reads the records that arrived after its first fetch
 * of virt.vhost.stall.events. Lost records are counted in
 * virt.control.module.dropped (ring buffer full, or pushed out of the agent
 * queue before a client that was reading fetched them).
 */
#include "virt.h"
#include "rows.h"
#include "slots.h"
#include "vhost.h"
#include "vhost.skel.h"
#include "vmid.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

enum vhost_opt { OPT_STALL_US, OPT_MAX_QUEUES, OPT_MAX_EVENTS, NOPTS };

static const struct virt_option vhost_options[NOPTS] = {
	[OPT_STALL_US] = { "stall_threshold_us", VIRT_OPT_UINT, 1, 60000000, "1000",
		"a kick whose wakeup->handler latency exceeds this many microseconds is a stall" },
	[OPT_MAX_QUEUES] = { "max_queues", VIRT_OPT_UINT, 4, 65536, "1024",
		"vhost virtqueues tracked (slots: twice this, rounded up to a power of two, for "
		"the queues and vhost-net's socket polls); a queue finding none free is counted "
		"as dropped" },
	[OPT_MAX_EVENTS] = { "max_events", VIRT_OPT_UINT, 16, 1u << 20, "1024",
		"stall event records the agent keeps for clients; older ones are dropped" },
};

#define SW (sizeof(struct vhost_queue) / sizeof(__u64))
#define W(field) (offsetof(struct vhost_queue, field) / sizeof(__u64))
#define FIRST_COUNTER W(kicks)
/* a counter's word in the sums */
#define C(field) (W(field) - FIRST_COUNTER)

_Static_assert(VHOST_SLOT_FREED == VIRT_SLOT_FREED, "the agent frees slots as the BPF side reads them");

/* A queue's slot: its struct vhost_queue is read, the words from kicks on
 * are counters. */
static const struct virt_slot_layout vhost_slot_layout = {
	.size = sizeof(struct vhost_slot),
	.owner = offsetof(struct vhost_slot, vq),
	.filled = offsetof(struct vhost_slot, q.dev),
	.words = offsetof(struct vhost_slot, q),
	.nwords = SW,
	.first = FIRST_COUNTER,
	.dead = W(dead),
};

/* ------------------------------------------------------------- state */

/* A queue by instance name: three rows sharing the name (the main row
 * carries the instance and the latency histogram, the others only their
 * histogram instances). */
struct q_row {
	struct virt_keyed k;		/* key: the name's; k.row: latency */
	struct virt_row pkts, bytes;
	struct virt_sums sums;		/* from kicks on: dead pointers', earlier attaches', live ones' */
	uint32_t owner;
	bool named;			/* the owner's VM has a name (vmid.h) */
};


/* A vhost device seen in the queues map. */
struct v_dev {
	struct virt_keyed k;		/* key: struct vhost_dev * */
	uint32_t owner;
	const char *kind;
	unsigned int id;
	unsigned int refs;		/* queue pointers on it */
};

/* A queue seen in a slot of the queues array (the slot's record's entry). */
struct q_ptr {
	struct virt_keyed k;		/* key: struct vhost_virtqueue * */
	size_t slot;
	struct q_row *row;
	struct v_dev *dev;
};

/* handle_kick functions by address (virt_ksym_lookup). */
struct kick_fn {
	uint64_t addr;
	const char *kind;		/* net, vsock, scsi; NULL: not a known handler */
	const char *queue;		/* rx, tx; NULL: use the vq index */
};

struct stall_rec {
	uint64_t seq;
	struct timeval tv;
	char queue[VIRT_NAME_MAX];
	uint64_t latency;
	uint32_t cpu;
};

#define MAX_CONTEXTS 64
struct ctx_cursor {
	int ctx;			/* -1: free */
	uint64_t next;			/* first seq not yet returned */
	time_t used;
};

struct vhost_state {
	struct vhost_bpf *skel;
	struct ring_buffer *rb;
	bool had_net, had_vsock, had_scsi;	/* drivers loaded at attach */
	struct virt_table rows, ptrs, devs;	/* of q_row, q_ptr, v_dev */
	struct kick_fn fns[64];
	unsigned int nfns;
	struct virt_slots slots;	/* the queues array, mmap'ed: a record per slot */
	/* stall events */
	struct stall_rec *ev;		/* ring of max_events */
	size_t evcap;
	uint64_t evnext;		/* seq of the next record */
	uint64_t evlost;		/* pushed out before a reader saw them, this attach */
	struct ctx_cursor ctx[MAX_CONTEXTS];
	int evarray;			/* pmdaEventNewArray handle */
};

/* ------------------------------------------------------------- ready */

static bool vhost_ready(struct virt_family *fam)
{
	struct vhost_state *st = fam->priv;
	bool net = virt_kmod_present("vhost_net");
	bool vsock = virt_kmod_present("vhost_vsock");
	bool scsi = virt_kmod_present("vhost_scsi");

	if (!net && !vsock && !scsi) {
		virt_set_reason(fam, "vhost_net not loaded (nor vhost_vsock, vhost_scsi)");
		return false;
	}
	if (st && st->skel && (net != st->had_net || vsock != st->had_vsock ||
			       scsi != st->had_scsi)) {
		virt_set_reason(fam, "vhost drivers changed (vhost_net %s, vhost_vsock %s, vhost_scsi %s): re-attaching",
				net ? "loaded" : "gone", vsock ? "loaded" : "gone",
				scsi ? "loaded" : "gone");
		return false;
	}
	return true;
}

/* ------------------------------------------------------------ attach */

static int on_record(void *ctx, void *data, size_t size);
static void find_handlers(struct vhost_state *st);

/* Slots: twice max_queues (queues and vhost-net's socket polls), a power
 * of two. The drivers loaded now: their handler programs load. */
static int vhost_configure(struct virt_family *fam, struct virt_skel *obj, const char *method,
			   char *why, size_t len)
{
	struct vhost_state *st = fam->priv;
	struct vhost_bpf *skel = (struct vhost_bpf *)obj;
	unsigned int bits = virt_slots_bits(2 * fam->opts[OPT_MAX_QUEUES].u);

	(void)method, (void)why, (void)len;
	skel->rodata->stall_ns = fam->opts[OPT_STALL_US].u * 1000ull;
	skel->rodata->slot_bits = bits;
	bpf_map__set_max_entries(skel->maps.queues, 1U << bits);
	st->had_net = virt_kmod_present("vhost_net");
	st->had_vsock = virt_kmod_present("vhost_vsock");
	st->had_scsi = virt_kmod_present("vhost_scsi");
	return 0;
}

/* Only the handler programs of drivers that are loaded: fentry and kprobe
 * on a function of a module that is not there cannot load/attach. */
static const struct virt_prog_switch vhost_switches[] = {
	VIRT_PROG_SWITCH("net_*", struct vhost_state, had_net),
	VIRT_PROG_SWITCH("vsock_*", struct vhost_state, had_vsock),
	VIRT_PROG_SWITCH("scsi_*", struct vhost_state, had_scsi),
};

/* The queues array mapped in, the stall ring buffer opened, the kick
 * handlers looked up (now, not in the fetch that sees the first kick,
 * where pmcd's 5 s timeout runs). */
static int vhost_attached(struct virt_family *fam, struct virt_skel *obj, char *why, size_t len)
{
	struct vhost_state *st = fam->priv;
	struct vhost_bpf *skel = (struct vhost_bpf *)obj;

	if (virt_slots_map(&st->slots, &vhost_slot_layout, skel->maps.queues, why, len) < 0)
		return -1;
	st->rb = ring_buffer__new(bpf_map__fd(skel->maps.stalls), on_record, st, NULL);
	if (!st->rb) {
		snprintf(why, len, "ring buffer: %s", strerror(errno));
		virt_slots_unmap(&st->slots);
		return -1;
	}
	st->skel = skel;
	st->evlost = 0;
	find_handlers(st);
	return 0;
}

static const char *const vhost_methods[] = { "fentry", "kprobe" };

VIRT_ATTACH_OPS(vhost_ops, vhost_bpf, VIRT_METHODS(vhost_methods), VIRT_SWITCHES(vhost_switches),
	.configure = vhost_configure, .attached = vhost_attached);

/* First attach: rows and the stall event ring live until exit. */
static int vhost_init(struct virt_family *fam)
{
	struct vhost_state *st = fam->priv;

	st->evcap = fam->opts[OPT_MAX_EVENTS].u;
	st->ev = calloc(st->evcap, sizeof(*st->ev));
	st->evarray = pmdaEventNewArray();
	if (!st->ev || st->evarray < 0) {
		free(st->ev);
		return -ENOMEM;
	}
	for (int i = 0; i < MAX_CONTEXTS; i++)
		st->ctx[i].ctx = -1;
	st->rows = VIRT_TABLE_OF_SUMS(struct q_row, sums, SW - FIRST_COUNTER);
	st->ptrs = VIRT_TABLE_OF(struct q_ptr);
	st->devs = VIRT_TABLE_OF(struct v_dev);
	return 0;
}

/* ------------------------------------------------------------- names */

static const struct {
	const char *sym, *kind, *queue;
} kick_syms[] = {
	{ "handle_tx_kick", "net", "tx" },
	{ "handle_rx_kick", "net", "rx" },
	{ "vhost_vsock_handle_tx_kick", "vsock", "tx" },
	{ "vhost_vsock_handle_rx_kick", "vsock", "rx" },
	{ "vhost_scsi_handle_kick", "scsi", NULL },
	{ "vhost_scsi_ctl_handle_kick", "scsi", NULL },
	{ "vhost_scsi_evt_handle_kick", "scsi", NULL },
};

/* Addresses of the known handlers, looked up again when an unknown
 * address shows up (a driver module loaded since). */
static void find_handlers(struct vhost_state *st)
{
	const char *names[VIRT_ARRAY_SIZE(kick_syms)];
	uint64_t addrs[VIRT_ARRAY_SIZE(kick_syms)];
	bool present[VIRT_ARRAY_SIZE(kick_syms)];
	unsigned int keep = 0;

	/* forget the known handlers, keep the unknown addresses */
	for (unsigned int i = 0; i < st->nfns; i++)
		if (!st->fns[i].kind)
			st->fns[keep++] = st->fns[i];
	st->nfns = keep;
	for (size_t k = 0; k < VIRT_ARRAY_SIZE(kick_syms); k++)
		names[k] = kick_syms[k].sym;
	if (virt_ksym_lookup(names, addrs, present, VIRT_ARRAY_SIZE(kick_syms)) <= 0)
		return;
	for (size_t k = 0; k < VIRT_ARRAY_SIZE(kick_syms) && st->nfns < VIRT_ARRAY_SIZE(st->fns); k++)
		if (addrs[k])
			st->fns[st->nfns++] = (struct kick_fn){ addrs[k], kick_syms[k].kind,
								kick_syms[k].queue };
}

static const struct kick_fn *kick_fn_of(struct vhost_state *st, uint64_t addr)
{
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < st->nfns; i++)
			if (st->fns[i].addr == addr)
				return &st->fns[i];
		if (pass == 0)
			find_handlers(st);
	}
	if (st->nfns < VIRT_ARRAY_SIZE(st->fns))	/* unknown: do not scan again for it */
		st->fns[st->nfns++] = (struct kick_fn){ addr, NULL, NULL };
	return NULL;
}

static bool id_taken(const struct vhost_state *st, uint32_t owner, const char *kind,
		     unsigned int id)
{
	for (size_t i = 0; i < st->devs.n; i++) {
		const struct v_dev *d = (const struct v_dev *)st->devs.v[i];

		if (d->owner == owner && strcmp(d->kind, kind) == 0 && d->id == id)
			return true;
	}
	return false;
}

/* The device, numbered on first sight with the lowest number its owner
 * does not use for this kind. */
static struct v_dev *dev_get(struct vhost_state *st, uint64_t dev, uint32_t owner,
			     const char *kind)
{
	struct v_dev *d = virt_table_find(&st->devs, dev);
	unsigned int id = 0;

	if (d)
		return d;
	while (id_taken(st, owner, kind, id))
		id++;
	if (!(d = virt_table_add(&st->devs, dev, PM_INDOM_NULL, PM_INDOM_NULL, "")))
		return NULL;
	d->owner = owner;
	d->kind = kind;
	d->id = id;
	return d;
}

static void dev_put(struct vhost_state *st, struct v_dev *d)
{
	if (d && !--d->refs)
		virt_table_remove(&st->devs, d);
}

static struct q_row *vhost_row_get(struct vhost_state *st, const char *name, uint32_t owner,
				   bool named)
{
	struct q_row *r = virt_table_find_name(&st->rows, name);

	if (r) {
		/* names are unique among live VMs: another owner exited, this
		 * is its VM restarted under the name */
		r->owner = owner;
		return r;
	}
	if (!(r = virt_table_add(&st->rows, virt_name_key(name), virt_indom(VIRT_I_VHOST_QUEUE),
				      virt_indom(VIRT_I_VHOST_LATENCY_HIST), name)))
		return NULL;
	virt_row_init(&r->pkts, PM_INDOM_NULL, virt_indom(VIRT_I_VHOST_PACKETS_HIST), name);
	virt_row_init(&r->bytes, PM_INDOM_NULL, virt_indom(VIRT_I_VHOST_BYTES_HIST), name);
	r->owner = owner;
	r->named = named;
	return r;
}

/* First sight of a queue pointer: name it from its map value. */
static struct q_ptr *vhost_ptr_add(struct vhost_state *st, size_t slot, uint64_t vq,
				   const struct vhost_queue *v)
{
	const struct kick_fn *fn = kick_fn_of(st, v->fn);
	const char *kind = fn ? fn->kind : "vhost";
	char name[VIRT_NAME_MAX], qname[16];
	const struct vmid *vm = virt_vm_of(v->owner);
	struct v_dev *d;
	struct q_row *r;
	struct q_ptr *p;

	if (!(d = dev_get(st, v->dev, v->owner, kind)))
		return NULL;
	if (fn && fn->queue)
		snprintf(qname, sizeof(qname), "%s", fn->queue);
	else if (v->index != ~0u)
		snprintf(qname, sizeof(qname), "%u", v->index);
	else
		snprintf(qname, sizeof(qname), "unknown");
	/* "<vm>/<device>/<queue>": the VM's name (vmid.h) or its pid */
	if (vm)
		snprintf(name, sizeof(name), "%s/%s%u/%s", vm->name, kind, d->id, qname);
	else
		snprintf(name, sizeof(name), "%u/%s%u/%s", v->owner, kind, d->id, qname);
	d->refs++;
	if (!(r = vhost_row_get(st, name, v->owner, vm && vm->named)) ||
	    !(p = virt_table_add(&st->ptrs, vq, PM_INDOM_NULL, PM_INDOM_NULL, ""))) {
		dev_put(st, d);
		return NULL;
	}
	p->slot = slot;
	p->row = r;
	p->dev = d;
	return p;
}

/* A slot of the queues array first seen with owner vq: a queue named, a
 * socket poll's (notvq) given back once dead, else skipped. */
static bool vhost_claim(void *ctx, struct virt_slots *t, size_t k, struct virt_slot_rec *rec)
{
	const struct vhost_slot *s = virt_slot_at(t, k);
	struct vhost_queue v;
	struct q_ptr *p;

	if (__atomic_load_n(&s->notvq, __ATOMIC_RELAXED)) {
		if (rec->last[W(dead)])
			virt_slots_free(t, k);
		return false;
	}
	memcpy(&v, rec->last, sizeof(v));
	if (!(p = vhost_ptr_add(ctx, k, rec->owner, &v)))
		return false;
	rec->sums = &p->row->sums;
	rec->entry = p;
	return true;
}

static bool vhost_ptr_live(const void *p, const void *slots)
{
	return !((const struct virt_slots *)slots)->rec[((const struct q_ptr *)p)->slot].dead;
}

/* The queue at vq: the live one if a dead one had the address before. */
static struct q_ptr *vhost_ptr_find(struct vhost_state *st, uint64_t vq)
{
	struct q_ptr *p = virt_table_find_if(&st->ptrs, vq, vhost_ptr_live, &st->slots);

	return p ? p : virt_table_find(&st->ptrs, vq);
}

/* A dead or vanished pointer (slot k): its counts go into the row, its
 * slot (if read) and (last queue) device go. */
static void vhost_ptr_bury(struct vhost_state *st, size_t k)
{
	struct q_ptr *p = st->slots.rec[k].entry;

	dev_put(st, p->dev);
	virt_table_remove(&st->ptrs, p);
	virt_slots_bury(&st->slots, k, st->slots.rec[k].seen);
}

static void vhost_row_retire(struct q_row *r)
{
	virt_row_retire(&r->k.row);
	virt_row_retire(&r->pkts);
	virt_row_retire(&r->bytes);
}

/* Its VMM is gone: forget it. */
static void vhost_row_remove(struct vhost_state *st, struct q_row *r)
{
	virt_row_release(&r->pkts);
	virt_row_release(&r->bytes);
	virt_table_remove(&st->rows, r);
}

static void vhost_detach(struct virt_family *fam)
{
	struct vhost_state *st = fam->priv;

	if (!st)
		return;
	ring_buffer__free(st->rb);
	st->rb = NULL;
	virt_slots_unmap(&st->slots);
	st->skel = NULL;
	virt_table_clear(&st->ptrs);
	virt_table_clear(&st->devs);
	for (size_t i = 0; i < st->rows.n; i++) {
		struct q_row *r = (struct q_row *)st->rows.v[i];

		virt_sums_begin(&r->sums);
		vhost_row_retire(r);
	}
}

/* ------------------------------------------------------ stall events */

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One record from the ring buffer: a stall into the agent queue. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct vhost_state *st = ctx;
	const struct vhost_stall *e = data;
	struct stall_rec *r;
	struct q_ptr *p;
	uint64_t wall, mono;

	if (size < sizeof(*e) || e->kind != VHOST_REC_STALL)
		return 0;
	r = &st->ev[st->evnext % st->evcap];
	if (st->evnext >= st->evcap) {
		/* pushing out evnext - evcap: lost if a reader has not seen it */
		for (int i = 0; i < MAX_CONTEXTS; i++)
			if (st->ctx[i].ctx >= 0 && st->ctx[i].next <= r->seq) {
				st->evlost++;
				break;
			}
	}
	wall = clock_ns(CLOCK_REALTIME);
	mono = clock_ns(CLOCK_MONOTONIC);
	wall -= mono > e->ts ? mono - e->ts : 0;
	r->seq = st->evnext++;
	r->tv.tv_sec = (time_t)(wall / 1000000000ull);
	r->tv.tv_usec = (suseconds_t)(wall % 1000000000ull / 1000);
	p = vhost_ptr_find(st, e->vq);
	snprintf(r->queue, sizeof(r->queue), "%s", p ? p->row->k.row.name : "unknown");
	r->latency = e->latency;
	r->cpu = e->cpu;
	return 0;
}

static struct ctx_cursor *cursor_of(struct vhost_state *st, int ctx)
{
	struct ctx_cursor *lru = &st->ctx[0];

	for (int i = 0; i < MAX_CONTEXTS; i++) {
		if (st->ctx[i].ctx == ctx)
			return &st->ctx[i];
		if (st->ctx[i].ctx < 0 || st->ctx[i].used < lru->used)
			lru = &st->ctx[i];
		if (st->ctx[i].ctx < 0)
			break;
	}
	/* a new client context sees the records that arrive from now on */
	*lru = (struct ctx_cursor){ ctx, st->evnext, 0 };
	return lru;
}

static int fetch_events(struct virt_family *fam, pmAtomValue *atom)
{
	struct vhost_state *st = fam->priv;
	struct ctx_cursor *c = cursor_of(st, pmdaGetContext());
	uint64_t first = st->evnext > st->evcap ? st->evnext - st->evcap : 0;
	int n = 0;

	c->used = time(NULL);
	if (c->next < first)
		c->next = first;
	if (c->next >= st->evnext)
		return PMDA_FETCH_NOVALUES;
	pmdaEventResetArray(st->evarray);
	for (uint64_t s = c->next; s < st->evnext; s++) {
		struct stall_rec *r = &st->ev[s % st->evcap];
		pmAtomValue a;

		if (pmdaEventAddRecord(st->evarray, &r->tv, PM_EVENT_FLAG_POINT) < 0)
			break;
		a.cp = r->queue;
		pmdaEventAddParam(st->evarray, virt_pmid(VIRT_M_VHOST_STALL_QUEUE), PM_TYPE_STRING, &a);
		a.ull = r->latency;
		pmdaEventAddParam(st->evarray, virt_pmid(VIRT_M_VHOST_STALL_LATENCY), PM_TYPE_U64, &a);
		a.ul = r->cpu;
		pmdaEventAddParam(st->evarray, virt_pmid(VIRT_M_VHOST_STALL_CPU), PM_TYPE_U32, &a);
		n++;
	}
	c->next = st->evnext;
	if (!n)
		return PMDA_FETCH_NOVALUES;
	atom->vbp = (pmValueBlock *)pmdaEventGetAddr(st->evarray);
	return PMDA_FETCH_STATIC;
}

/* ----------------------------------------------------------- refresh */

static bool owner_alive(uint32_t pid)
{
	return pid == 0 ||		/* owner unknown: rely on vhost_dev_cleanup */
	       virt_pid_alive(pid);
}

/* Dead queues, queues whose slot was not read and queues whose owner is
 * gone leave. */
static void vhost_bury_gone(struct vhost_state *st)
{
	for (size_t k = 0; k < st->slots.n; k++) {
		const struct virt_slot_rec *rec = &st->slots.rec[k];

		if (rec->owner && (!rec->seen || rec->dead ||
				   !owner_alive(((const struct q_ptr *)rec->entry)->row->owner)))
			vhost_ptr_bury(st, k);
	}
}

static int vhost_refresh(struct virt_family *fam)
{
	struct vhost_state *st = fam->priv;

	virt_slots_read(&st->slots, vhost_claim, st);
	/* stall records name their queue: before dead queues leave */
	if (st->rb) {
		virt_bpf_syscalls++;
		ring_buffer__consume(st->rb);
	}
	vhost_bury_gone(st);
	for (size_t i = 0; i < st->rows.n; i++)
		virt_sums_begin(&((struct q_row *)st->rows.v[i])->sums);
	virt_slots_sum(&st->slots);
	for (size_t i = 0, kept = 0; i < st->rows.n;) {
		struct q_row *r = (struct q_row *)st->rows.v[i];

		virt_row_set(&r->k.row, NULL, 0, &r->sums.sum[C(lat)]);
		virt_row_set(&r->pkts, NULL, 0, &r->sums.sum[C(pkts)]);
		virt_row_set(&r->bytes, NULL, 0, &r->sums.sum[C(bytes)]);
		if (r->sums.live) {
			virt_row_expose(&r->k.row, true);
			virt_row_expose(&r->pkts, true);
			virt_row_expose(&r->bytes, true);
			i++;
		} else {
			vhost_row_retire(r);
			if (!owner_alive(r->owner) && (!r->named || kept++ >= VIRT_KEEP_EXITED))
				vhost_row_remove(st, r);
			else
				i++;
		}
	}
	fam->dropped_now = st->evlost;
	return 0;
}

/* -------------------------------------------------------------- fetch */

#define WORD(id, field) \
	[VIRT_M_VHOST_##id] = VIRT_ANSWER_SUM(VHOST_QUEUE, struct q_row, k.row, sums, C(field))
#define PCTS(id, hrow) \
	VIRT_ANSWER_PERCENTILES(VIRT_M_VHOST_##id, VHOST_QUEUE, struct q_row, k.row, hrow)

static const struct virt_answer vhost_answers[VIRT_NMETRICS] = {
	WORD(KICKS, kicks),
	WORD(WAKEUPS, wakeups),
	WORD(STALLS, stalls),
	WORD(WEIGHT_EXCEEDED, weight_exceeded),
	[VIRT_M_VHOST_LATENCY] = VIRT_ANSWER_BUCKET(VHOST_LATENCY_HIST),
	[VIRT_M_VHOST_BATCH_PACKETS] = VIRT_ANSWER_BUCKET(VHOST_PACKETS_HIST),
	[VIRT_M_VHOST_BATCH_BYTES] = VIRT_ANSWER_BUCKET(VHOST_BYTES_HIST),
	PCTS(LAT, k.row),
	PCTS(PACKETS, pkts),
	PCTS(BYTES, bytes),
	[VIRT_M_VHOST_QUEUE_NAME] = VIRT_ANSWER_NAME(VHOST_QUEUE),
	[VIRT_M_VHOST_QUEUE_BUCKET_PREFIX] = VIRT_ANSWER_BUCKET_PREFIX(VHOST_QUEUE),
	[VIRT_M_VHOST_STALL_EVENTS] = VIRT_ANSWER_EVENTS(fetch_events),
};

/* A queue's labels: its VMM's (vm_name, vm_uuid, vmm, vmm_pid), device
 * and queue, from "<vm>/<device>/<queue>". */
static int vhost_labels(struct virt_family *fam, enum virt_indom_id indom, unsigned int inst,
			pmLabelSet **lp)
{
	struct virt_row *row;
	const char *d;
	int sts;

	if (!fam->priv || indom != VIRT_I_VHOST_QUEUE || !(row = virt_row_of(virt_indom(indom), inst)))
		return 0;
	if ((sts = virt_label_vm(lp, virt_vm_of(VIRT_ENTRY_OF(row, struct q_row)->owner))) < 0)
		return sts;
	if (!(d = strchr(row->name, '/')))
		return 0;
	return virt_label_queue(lp, d + 1, NULL);
}

VIRT_MODULE("vhost",
	.options = vhost_options, .noptions = NOPTS,
	.ready = vhost_ready, .priv_size = sizeof(struct vhost_state), .init = vhost_init,
	.attach = &vhost_ops, .ndrops = VHOST_DROPS, .detach = vhost_detach,
	.refresh = vhost_refresh, .answers = vhost_answers, .labels = vhost_labels);
