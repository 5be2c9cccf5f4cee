// SPDX-License-Identifier: GPL-2.0
/*
 * virtio virtqueues (guest side): scatterlists and bytes handed to the
 * virtqueue_add_* API (bcc virtiostat's semantics), adds, completions,
 * kicks, interrupts, ring-full failures and add->completion latency, per
 * struct virtqueue *.
 *
 * Two attach variants of the same handlers, picked at run time by
 * pmda/virtio.c: fentry (fexit: arguments and return value in one program)
 * and kprobe (a kprobe stashes the arguments per CPU, the kretprobe pairs
 * them with the return value). Hooks (all exported by virtio_ring):
 *
 *   virtqueue_add_sgs/_outbuf/_inbuf/_inbuf_ctx   sgs, bytes, adds, ring_full
 *   virtqueue_get_buf_ctx, virtqueue_get_buf       completions, latency
 *   virtqueue_kick_prepare, _kick, _notify         kicks
 *   vring_interrupt                                interrupts
 *   virtqueue_detach_unused_buf                    reclaimed buffers (untimed)
 *   vring_del_virtqueue                            queue gone: purge its records
 *
 * Callers serialise operations on one virtqueue (virtio_ring's API
 * contract), and the exit hook of an add runs before the caller regains
 * control, so a buffer's completion can never be seen before its add.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "virtio.h"
#include "virt_bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* false: no add->completion timing (no inflight records, no clock reads) */
const volatile bool latency = true;

#define SG_CHAIN_BIT	0x01UL	/* include/linux/scatterlist.h SG_CHAIN */
#define SG_END_BIT	0x02UL	/* SG_END */
#define ENOSPC_ERR	28
#define IRQ_HANDLED_RET	1
/* a bool return lives in %al only: the rest of the register is junk */
#define RET_BOOL(rax)	(((rax) & 0xff) != 0)
/* A typed struct virtqueue * argument as a number: the verifier refuses
 * arithmetic (the slot hash) on a BTF pointer loaded from the context;
 * bpf_get_func_arg() is inlined and hands over a scalar. */
#define VQ_ARG(ctx)	({ __u64 __vq = 0; bpf_get_func_arg(ctx, 0, &__vq); __vq; })

_Static_assert(VIRTIO_SLOT_FREED == VIRT_SLOT_FREED, "the agent frees slots as virt_bpf.h reads them");

/* log2 of the number of slots in "queues" (set by the agent) */
const volatile __u32 slot_bits = 10;

/* One slot per virtqueue, shared by all CPUs: the operations that count
 * into it (add, get_buf, kick_prepare/kick, detach) are serialised per
 * queue by the driver (virtio_ring's API contract); those that are not
 * (virtqueue_notify: virtio-blk calls it outside its lock; vring_interrupt)
 * add atomically. An array lookup is inlined by the verifier
 * (array_map_gen_lookup): no helper call per event. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << 10);
	__type(key, __u32);
	__type(value, struct virtio_slot);
} queues SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct virtio_vq_info);
} info SEC(".maps");

/* Add time of every buffer in flight, keyed by (queue, driver token).
 * A plain hash, not LRU: a full map refuses the insert, which is counted
 * (untracked, drops) instead of silently evicting another record. Records
 * cannot leak: completion and detach_unused_buf remove them, and
 * vring_del_virtqueue purges every record of a queue that goes away. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct virtio_token);
	__type(value, __u64);
} inflight SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VIRTIO_DROPS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/* --------------------------------------------------------------- queues */

/* Names, read once per queue when it takes a slot. Overwrites: a new
 * queue may get the address of one that died. */
static __always_inline void read_info(__u64 vq)
{
	struct virtqueue *q = (struct virtqueue *)vq;
	struct virtio_vq_info vi = {};
	struct device_driver *drv;
	const char *p;

	p = BPF_CORE_READ(q, name);
	if (p)
		bpf_probe_read_kernel_str(vi.name, sizeof(vi.name), p);
	p = BPF_CORE_READ(q, vdev, dev.kobj.name);
	if (p)
		bpf_probe_read_kernel_str(vi.dev, sizeof(vi.dev), p);
	drv = BPF_CORE_READ(q, vdev, dev.driver);
	if (drv) {
		p = BPF_CORE_READ(drv, name);
		if (p)
			bpf_probe_read_kernel_str(vi.driver, sizeof(vi.driver), p);
	}
	bpf_map_update_elem(&info, &vq, &vi, BPF_ANY);
}

/* The i-th slot of a queue's probe window. */
static __always_inline struct virtio_slot *probe_slot(__u64 vq, __u32 i)
{
	return virt_slot_probe(&queues, slot_bits, vq, i);
}

/* The queue's slot (virt_slot_get); a slot just claimed gets its names. */
static __always_inline struct virtio_slot *lookup_queue(__u64 vq, bool create)
{
	bool fresh;
	struct virtio_slot *s = virt_slot_get(&queues, slot_bits, VIRTIO_PROBE, vq,
					      offsetof(struct virtio_slot, s.dead), create, &fresh);

	if (!s) {
		if (create)
			VIRT_DROP(drops, VIRTIO_DROP_QUEUE);
		return NULL;
	}
	if (fresh) {
		read_info(vq);
		s->ready = 1;
	}
	return s;
}

/* A queue that counts something takes a slot; one that only polls (an
 * empty get_buf, a kick_prepare saying "no notify") is not an instance. */
static __always_inline struct virtio_slot *queue(__u64 vq)
{
	return lookup_queue(vq, true);
}

/* ----------------------------------------------------- scatterlist walk */

/* Walk every list exactly as virtqueue_add() does: for each of the
 * nlists lists, sg_next() until the entry marked last, following chain
 * entries (which carry no data). Lists [0, out) are out, the rest in. */
struct walk {
	__u64 sgs;		/* struct scatterlist ** (0: single list in sg) */
	__u64 sg;		/* current entry, 0 = this list is done */
	__u64 bytes_out;
	__u64 bytes_in;
	__u32 list;
	__u32 nlists;
	__u32 out;
	__u32 stepped;		/* sg reached through sg++ (chain link possible) */
	__u32 done;
};

struct sg_head {
	__u64 page_link;
	__u32 offset;
	__u32 length;
};

static long walk_step(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	__u64 page_link;
	__u32 length;

	if (!w->sg) {
		if (++w->list >= w->nlists || !w->sgs) {
			w->done = 1;
			return 1;
		}
		if (bpf_probe_read_kernel(&w->sg, sizeof(w->sg),
					  (void *)(w->sgs + (__u64)w->list * sizeof(__u64)))) {
			w->done = 1;
			return 1;
		}
		w->stepped = 0;
		return 0;
	}
	if (bpf_core_field_offset(struct scatterlist, page_link) == 0 &&
	    bpf_core_field_offset(struct scatterlist, length) == 12) {
		struct sg_head h;

		if (bpf_probe_read_kernel(&h, sizeof(h), (void *)w->sg)) {
			w->done = 1;
			return 1;
		}
		page_link = h.page_link;
		length = h.length;
	} else {
		struct scatterlist *sg = (struct scatterlist *)w->sg;

		page_link = BPF_CORE_READ(sg, page_link);
		length = BPF_CORE_READ(sg, length);
	}
	if (w->stepped && (page_link & SG_CHAIN_BIT)) {	/* sg_chain_ptr() */
		w->sg = page_link & ~(SG_CHAIN_BIT | SG_END_BIT);
		w->stepped = 0;
		return 0;
	}
	if (w->list < w->out)
		w->bytes_out += length;
	else
		w->bytes_in += length;
	if (page_link & SG_END_BIT) {				/* sg_is_last() */
		w->sg = 0;
	} else {
		w->sg += bpf_core_type_size(struct scatterlist);
		w->stepped = 1;
	}
	return 0;
}

#define WALK_INLINE	4

/* Count one add_* call: sgs as virtiostat counts them (the out/in list
 * counts: 1 for add_outbuf/add_inbuf), bytes over the whole lists. head:
 * the single list's first entry, loaded by the caller (fexit: a typed
 * argument, no probe read), or NULL. */
static __always_inline void record_sgs(struct virtio_stats *s, __u64 sgs, __u64 first,
				       __u32 out, __u32 in, const struct sg_head *head)
{
	struct walk w = {
		.sgs = sgs, .nlists = out + in, .out = out,
	};

	s->sgs_out += out;
	s->sgs_in += in;
	if (!w.nlists)
		return;
	if (head) {
		if (out)
			w.bytes_out = head->length;
		else
			w.bytes_in = head->length;
		if (head->page_link & SG_END_BIT) {	/* one entry: most adds */
			s->bytes_out += w.bytes_out;
			s->bytes_in += w.bytes_in;
			return;
		}
		w.sg = first + bpf_core_type_size(struct scatterlist);
		w.stepped = 1;
	} else if (sgs) {
		if (bpf_probe_read_kernel(&w.sg, sizeof(w.sg), (void *)sgs))
			return;
	} else {
		w.sg = first;
	}
	/* the first steps in line: most adds (a packet, a block request's
	 * header) end within them, without bpf_loop's helper call */
	for (__u32 i = 0; i < WALK_INLINE && !w.done; i++)
		walk_step(i, &w);
	if (!w.done)
		bpf_loop(VIRTIO_WALK_MAX - WALK_INLINE, walk_step, &w, 0);
	s->bytes_out += w.bytes_out;
	s->bytes_in += w.bytes_in;
	if (!w.done)
		s->truncated++;
}

/* The add returned ret: count it and remember when the token went in. */
static __always_inline void record_add(struct virtio_stats *s, __u64 vq, __u64 data, int ret)
{
	struct virtio_token key = { vq, data };
	__u64 now;

	if (ret) {
		if (ret == -ENOSPC_ERR)
			s->ring_full++;
		return;
	}
	s->adds++;
	if (!latency)
		return;
	now = bpf_ktime_get_ns();
	if (!bpf_map_update_elem(&inflight, &key, &now, BPF_NOEXIST))
		return;
	/* the token is still recorded: its completion was never seen, so
	 * retire the old record and time the new add */
	if (bpf_map_lookup_elem(&inflight, &key)) {
		s->settled++;
		bpf_map_update_elem(&inflight, &key, &now, BPF_EXIST);
		return;
	}
	s->untracked++;
	VIRT_DROP(drops, VIRTIO_DROP_INFLIGHT);
}

static __always_inline void add_call(__u64 vq, __u64 sgs, __u64 first, __u32 out, __u32 in,
				     const struct sg_head *head, __u64 data, int ret)
{
	struct virtio_slot *q = queue(vq);

	if (!q)
		return;
	record_sgs(&q->s, sgs, first, out, in, head);
	record_add(&q->s, vq, data, ret);
}

/* A buffer came back (completed = true) or was reclaimed unused. */
static __always_inline void settle(struct virtio_slot *q, __u64 vq, __u64 tok, bool completed)
{
	struct virtio_token key = { vq, tok };
	__u64 *ts;

	if (completed)
		q->s.completions++;
	if (!latency)
		return;
	ts = bpf_map_lookup_elem(&inflight, &key);
	if (!ts)
		return;		/* added before attach (or untracked) */
	if (completed) {
		__u32 b = virt_log2_bucket(bpf_ktime_get_ns() - *ts);

		if (b < VIRT_HIST_BUCKETS)
			q->s.hist[b]++;
	}
	q->s.settled++;
	bpf_map_delete_elem(&inflight, &key);
}

static __always_inline void on_get_buf_ctx(__u64 vq, __u64 ret)
{
	struct virtio_slot *q;

	if (!ret || !(q = queue(vq)))
		return;
	q->last_tok = ret;
	settle(q, vq, ret, true);
}

/* virtqueue_get_buf: on kernels where it calls virtqueue_get_buf_ctx out
 * of line (Debian's 6.1 jumps to virtqueue_get_buf_ctx_split/_packed
 * instead), that call was counted already. */
static __always_inline void on_get_buf(__u64 vq, __u64 ret)
{
	struct virtio_slot *q;
	bool nested;

	if (!ret || !(q = queue(vq)))
		return;
	nested = q->last_tok == ret;
	q->last_tok = 0;
	if (!nested)
		settle(q, vq, ret, true);
}

static __always_inline void on_detach(__u64 vq, __u64 ret)
{
	struct virtio_slot *q;

	if (ret && (q = queue(vq)))
		settle(q, vq, ret, false);
}

/* prepared = the CPU (+ 1) whose kick_prepare said "notify": virtio-blk
 * calls virtqueue_notify outside its lock, so another CPU's notify may run
 * between this CPU's kick_prepare and kick, and must not take its kick. */
static __always_inline void on_kick_prepare(__u64 vq, bool ret)
{
	struct virtio_slot *q = lookup_queue(vq, ret);

	if (q)
		q->prepared = ret ? bpf_get_smp_processor_id() + 1 : 0;
}

/* virtqueue_notify: a notification went out if it returned true. */
static __always_inline void on_notify(__u64 vq, bool ret)
{
	struct virtio_slot *q = lookup_queue(vq, ret);
	__u64 me;

	if (!q)
		return;
	if (q->prepared) {
		me = bpf_get_smp_processor_id() + 1;
		__sync_val_compare_and_swap(&q->prepared, me, 0);
	}
	if (ret)
		__sync_fetch_and_add(&q->s.kicks, 1);
}

/* virtqueue_kick = kick_prepare + notify (inlined in Debian's 6.1): it
 * notified if kick_prepare said so and it returned true. Where the kernel
 * calls virtqueue_notify out of line, that hook counted the kick and
 * cleared prepared. */
static __always_inline void on_kick(__u64 vq, bool ret)
{
	struct virtio_slot *q = lookup_queue(vq, false);
	__u64 me;

	if (!q || !q->prepared)
		return;
	me = bpf_get_smp_processor_id() + 1;
	if (__sync_val_compare_and_swap(&q->prepared, me, 0) == me && ret)
		__sync_fetch_and_add(&q->s.kicks, 1);
}

/* vring_interrupt: one IRQ is never handled on two CPUs at once, but the
 * queue's other operations run meanwhile on other CPUs (other words of the
 * slot: no lost update). */
static __always_inline void on_interrupt(__u64 vq, int ret)
{
	struct virtio_slot *q;

	if (ret == IRQ_HANDLED_RET && (q = queue(vq)))
		q->s.interrupts++;
}

static long purge_one(struct bpf_map *map, struct virtio_token *key, __u64 *val, void *ctx)
{
	if (key->vq == *(__u64 *)ctx)
		bpf_map_delete_elem(map, key);
	return 0;
}

/* The queue is being freed: mark its slot (every slot it holds, were two
 * CPUs ever to claim two) for the agent, which folds and frees it, and
 * drop its in-flight records. */
static __always_inline void on_del(__u64 vq)
{
	for (__u32 i = 0; i < VIRTIO_PROBE; i++) {
		struct virtio_slot *s = probe_slot(vq, i);

		if (!s || s->vq == 0)
			break;
		if (s->vq == vq)
			s->s.dead = 1;
	}
	if (latency)
		bpf_for_each_map_elem(&inflight, purge_one, &vq, 0);
}

/* ---------------------------------------------------- fentry / fexit */

/* sgs (struct scatterlist **) is fetched with bpf_get_func_arg(): older
 * verifiers (6.1) refuse direct context access to pointer-to-pointer
 * arguments ("arg1 type PTR is not a struct"). */
SEC("fexit/virtqueue_add_sgs")
int BPF_PROG(virt_virtio_fentry_add_sgs, struct virtqueue *vq, void *sgs_unused,
	     unsigned int out_sgs, unsigned int in_sgs, void *data, gfp_t gfp, int ret)
{
	__u64 sgs = 0;

	bpf_get_func_arg(ctx, 1, &sgs);
	add_call(VQ_ARG(ctx), sgs, 0, out_sgs, in_sgs, NULL, (__u64)data, ret);
	return 0;
}

/* A single list: its first entry through the typed argument (a plain
 * load), the rest (if any) walked from its address as a number. */
static __always_inline void add_one_list(unsigned long long *ctx, struct scatterlist *sg,
					 __u32 out, __u64 data, int ret)
{
	struct sg_head head = { .page_link = sg->page_link, .length = sg->length };
	__u64 first = 0;

	bpf_get_func_arg(ctx, 1, &first);
	add_call(VQ_ARG(ctx), 0, first, out, !out, &head, data, ret);
}

SEC("fexit/virtqueue_add_outbuf")
int BPF_PROG(virt_virtio_fentry_add_outbuf, struct virtqueue *vq, struct scatterlist *sg,
	     unsigned int num, void *data, gfp_t gfp, int ret)
{
	add_one_list(ctx, sg, 1, (__u64)data, ret);
	return 0;
}

SEC("fexit/virtqueue_add_inbuf")
int BPF_PROG(virt_virtio_fentry_add_inbuf, struct virtqueue *vq, struct scatterlist *sg,
	     unsigned int num, void *data, gfp_t gfp, int ret)
{
	add_one_list(ctx, sg, 0, (__u64)data, ret);
	return 0;
}

SEC("fexit/virtqueue_add_inbuf_ctx")
int BPF_PROG(virt_virtio_fentry_add_inbuf_ctx, struct virtqueue *vq, struct scatterlist *sg,
	     unsigned int num, void *data, void *ctx_, gfp_t gfp, int ret)
{
	add_one_list(ctx, sg, 0, (__u64)data, ret);
	return 0;
}

SEC("fexit/virtqueue_get_buf_ctx")
int BPF_PROG(virt_virtio_fentry_get_buf_ctx, struct virtqueue *vq, unsigned int *len,
	     void **ctx_, void *ret)
{
	on_get_buf_ctx(VQ_ARG(ctx), (__u64)ret);
	return 0;
}

SEC("fexit/virtqueue_get_buf")
int BPF_PROG(virt_virtio_fentry_get_buf, struct virtqueue *vq, unsigned int *len, void *ret)
{
	on_get_buf(VQ_ARG(ctx), (__u64)ret);
	return 0;
}

SEC("fexit/virtqueue_kick_prepare")
int BPF_PROG(virt_virtio_fentry_kick_prepare, struct virtqueue *vq, __u64 ret)
{
	on_kick_prepare(VQ_ARG(ctx), RET_BOOL(ret));
	return 0;
}

SEC("fexit/virtqueue_notify")
int BPF_PROG(virt_virtio_fentry_notify, struct virtqueue *vq, __u64 ret)
{
	on_notify(VQ_ARG(ctx), RET_BOOL(ret));
	return 0;
}

SEC("fexit/virtqueue_kick")
int BPF_PROG(virt_virtio_fentry_kick, struct virtqueue *vq, __u64 ret)
{
	on_kick(VQ_ARG(ctx), RET_BOOL(ret));
	return 0;
}

SEC("fexit/vring_interrupt")
int BPF_PROG(virt_virtio_fentry_interrupt, int irq, void *vq, int ret)
{
	on_interrupt((__u64)vq, ret);
	return 0;
}

SEC("fexit/virtqueue_detach_unused_buf")
int BPF_PROG(virt_virtio_fentry_detach_unused, struct virtqueue *vq, void *ret)
{
	on_detach(VQ_ARG(ctx), (__u64)ret);
	return 0;
}

SEC("fentry/vring_del_virtqueue")
int BPF_PROG(virt_virtio_fentry_del, struct virtqueue *vq)
{
	on_del(VQ_ARG(ctx));
	return 0;
}

/* ------------------------------------------------ kprobe / kretprobe */

/* What a kprobe saw at entry, for its kretprobe. Calls nest only through
 * interrupts, so entries pair up LIFO per CPU; a return that does not
 * find its own function on top (a missed kretprobe, a task that migrated)
 * is dropped and counted. */
enum fn { FN_ADD = 1, FN_GET_BUF_CTX, FN_GET_BUF, FN_KICK_PREPARE, FN_NOTIFY, FN_KICK,
	  FN_INTERRUPT, FN_DETACH };

struct stash_ent {
	__u64 vq;
	__u64 data;
	__u32 fn;
	__u32 pad;
};

struct stash {
	__u32 depth;
	__u32 pad;
	struct stash_ent e[VIRTIO_STASH_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct stash);
} stash SEC(".maps");

static __always_inline void push(__u32 fn, __u64 vq, __u64 data)
{
	__u32 zero = 0;
	struct stash *st = bpf_map_lookup_elem(&stash, &zero);
	__u32 d;

	if (!st)
		return;
	d = st->depth;
	if (d >= VIRTIO_STASH_DEPTH) {
		VIRT_DROP(drops, VIRTIO_DROP_STASH);
		return;
	}
	st->e[d].vq = vq;
	st->e[d].data = data;
	st->e[d].fn = fn;
	st->depth = d + 1;
}

_Static_assert((VIRTIO_STASH_DEPTH & (VIRTIO_STASH_DEPTH - 1)) == 0,
	       "VIRTIO_STASH_DEPTH must be a power of two");

static __always_inline bool pop(__u32 fn, __u64 *vq, __u64 *data)
{
	__u32 zero = 0;
	struct stash *st = bpf_map_lookup_elem(&stash, &zero);
	__u32 d;

	if (!st)
		return false;
	d = st->depth;
	if (d == 0 || d > VIRTIO_STASH_DEPTH) {
		st->depth = 0;
		VIRT_DROP(drops, VIRTIO_DROP_STASH);
		return false;
	}
	/* the mask keeps the verifier's bounds through clang's 32-bit
	 * arithmetic (d - 1 alone left the index unbounded) */
	d = (d - 1) & (VIRTIO_STASH_DEPTH - 1);
	st->depth = d;
	if (st->e[d].fn != fn) {
		st->depth = 0;		/* out of step: start over */
		VIRT_DROP(drops, VIRTIO_DROP_STASH);
		return false;
	}
	*vq = st->e[d].vq;
	*data = st->e[d].data;
	return true;
}

/* Entry: count sgs and bytes (what virtiostat counts, at the same point). */
static __always_inline void add_entry(__u64 vq, __u64 sgs, __u64 first, __u32 out, __u32 in,
				      __u64 data)
{
	struct virtio_slot *q = queue(vq);

	if (q)
		record_sgs(&q->s, sgs, first, out, in, NULL);
	push(FN_ADD, vq, data);
}

static __always_inline void add_return(int ret)
{
	struct virtio_slot *q;
	__u64 vq, data;

	if (!pop(FN_ADD, &vq, &data))
		return;
	q = queue(vq);
	if (q)
		record_add(&q->s, vq, data, ret);
}

SEC("kprobe/virtqueue_add_sgs")
int BPF_KPROBE(virt_virtio_kprobe_add_sgs, struct virtqueue *vq, struct scatterlist **sgs,
	       unsigned int out_sgs, unsigned int in_sgs, void *data)
{
	add_entry((__u64)vq, (__u64)sgs, 0, out_sgs, in_sgs, (__u64)data);
	return 0;
}

SEC("kprobe/virtqueue_add_outbuf")
int BPF_KPROBE(virt_virtio_kprobe_add_outbuf, struct virtqueue *vq, struct scatterlist *sg,
	       unsigned int num, void *data)
{
	add_entry((__u64)vq, 0, (__u64)sg, 1, 0, (__u64)data);
	return 0;
}

SEC("kprobe/virtqueue_add_inbuf")
int BPF_KPROBE(virt_virtio_kprobe_add_inbuf, struct virtqueue *vq, struct scatterlist *sg,
	       unsigned int num, void *data)
{
	add_entry((__u64)vq, 0, (__u64)sg, 0, 1, (__u64)data);
	return 0;
}

SEC("kprobe/virtqueue_add_inbuf_ctx")
int BPF_KPROBE(virt_virtio_kprobe_add_inbuf_ctx, struct virtqueue *vq, struct scatterlist *sg,
	       unsigned int num, void *data)
{
	add_entry((__u64)vq, 0, (__u64)sg, 0, 1, (__u64)data);
	return 0;
}

#define ADD_RET(what)								\
SEC("kretprobe/virtqueue_" #what)						\
int BPF_KRETPROBE(virt_virtio_kprobe_##what##_ret, int ret)			\
{										\
	add_return(ret);							\
	return 0;								\
}
ADD_RET(add_sgs)
ADD_RET(add_outbuf)
ADD_RET(add_inbuf)
ADD_RET(add_inbuf_ctx)

/* Entry stashes the queue (argument vqarg); return hands it to handler. */
#define PAIR(what, func, fn, vqarg, handler)					\
SEC("kprobe/" #func)								\
int virt_virtio_kprobe_##what(struct pt_regs *ctx)				\
{										\
	push(fn, (__u64)vqarg(ctx), 0);						\
	return 0;								\
}										\
SEC("kretprobe/" #func)								\
int virt_virtio_kprobe_##what##_ret(struct pt_regs *ctx)			\
{										\
	__u64 vq, unused;							\
										\
	if (pop(fn, &vq, &unused))						\
		handler(vq, PT_REGS_RC(ctx));					\
	return 0;								\
}

static __always_inline void kick_prepare_handler(__u64 vq, __u64 ret)
{
	on_kick_prepare(vq, RET_BOOL(ret));
}

static __always_inline void notify_handler(__u64 vq, __u64 ret)
{
	on_notify(vq, RET_BOOL(ret));
}

static __always_inline void kick_handler(__u64 vq, __u64 ret)
{
	on_kick(vq, RET_BOOL(ret));
}

static __always_inline void interrupt_handler(__u64 vq, __u64 ret)
{
	on_interrupt(vq, (int)ret);
}

PAIR(get_buf_ctx, virtqueue_get_buf_ctx, FN_GET_BUF_CTX, PT_REGS_PARM1, on_get_buf_ctx)
PAIR(get_buf, virtqueue_get_buf, FN_GET_BUF, PT_REGS_PARM1, on_get_buf)
PAIR(kick_prepare, virtqueue_kick_prepare, FN_KICK_PREPARE, PT_REGS_PARM1, kick_prepare_handler)
PAIR(notify, virtqueue_notify, FN_NOTIFY, PT_REGS_PARM1, notify_handler)
PAIR(kick, virtqueue_kick, FN_KICK, PT_REGS_PARM1, kick_handler)
PAIR(interrupt, vring_interrupt, FN_INTERRUPT, PT_REGS_PARM2, interrupt_handler)
PAIR(detach_unused, virtqueue_detach_unused_buf, FN_DETACH, PT_REGS_PARM1, on_detach)

SEC("kprobe/vring_del_virtqueue")
int BPF_KPROBE(virt_virtio_kprobe_del, struct virtqueue *vq)
{
	on_del((__u64)vq);
	return 0;
}
