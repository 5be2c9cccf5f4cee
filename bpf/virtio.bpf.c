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
 *   vring_del_virtqueue                            queue gone: free its records
 *   vring_map_one_sg, detach_buf_split/_packed     latency: descriptor heads
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
#include "core_fixes.bpf.h"
#include "virtio_kernel.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* false: no add->completion timing (no timed heads, no clock reads) */
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

/* Add time (0: none) of every timed buffer in flight, per descriptor head:
 * the head a buffer takes at add (vq->free_head, read where
 * vring_map_one_sg() maps its entries) is the one its completion detaches
 * (detach_buf_split/_packed), and a ring never has two buffers at one
 * head, so a queue's entries cannot collide or overflow. Blocks of
 * VIRTIO_BLOCK entries are taken by a queue as its heads first use them
 * (owner: the struct virtqueue *, by compare-and-swap) and given back when
 * the queue is deleted; no block free = the add is counted (untracked,
 * drops), nothing is evicted. Only the queue's own (serialised)
 * operations touch its entries, and array lookups are inlined. */
const volatile __u32 nblocks = 256;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256 * VIRTIO_BLOCK);
	__type(key, __u32);
	__type(value, __u64);
} timed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u64);
} blocks SEC(".maps");

__u32 block_hint;

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
	if (scatterlist_plain_head()) {
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

/* ------------------------------------------------------- timed heads */

struct block_claim {
	__u64 vq;
	__u32 start;
	__u32 got;		/* block + 1, 0 = none free */
};

static long claim_one(__u32 i, void *ctx)
{
	struct block_claim *c = ctx;
	__u32 b = (c->start + i) % nblocks;
	__u64 *owner = bpf_map_lookup_elem(&blocks, &b);

	if (owner && *owner == 0 && __sync_val_compare_and_swap(owner, 0, c->vq) == 0) {
		c->got = b + 1;
		return 1;
	}
	return 0;
}

/* A free block for vq's heads (a search only when a queue first uses a
 * range of 64 heads), or 0. */
static __always_inline __u32 claim_block(__u64 vq)
{
	struct block_claim c = { .vq = vq, .start = __sync_fetch_and_add(&block_hint, 1) };

	bpf_loop(nblocks, claim_one, &c, 0);
	return c.got;
}

/* The add time entry of head in q's blocks; create: take a block if the
 * head's range has none. */
static __always_inline __u64 *timed_entry(struct virtio_slot *q, __u64 vq, __u64 head,
					  bool create)
{
	__u64 k = head / VIRTIO_BLOCK;
	__u32 b, i;

	if (k >= VIRTIO_RING_BLOCKS)
		return NULL;
	b = q->block[k];
	if (!b) {
		if (!create || !(b = claim_block(vq)))
			return NULL;
		q->block[k] = b;
	}
	i = (b - 1) * VIRTIO_BLOCK + head % VIRTIO_BLOCK;
	return bpf_map_lookup_elem(&timed, &i);
}

/* The add returned ret: count it and time it at its head. */
static __always_inline void record_add(struct virtio_slot *q, __u64 vq, int ret)
{
	__u64 head = q->add_head;
	__u64 *ts;

	q->add_head = 0;
	if (ret) {
		if (ret == -ENOSPC_ERR)
			q->s.ring_full++;
		return;
	}
	q->s.adds++;
	if (!latency)
		return;
	if (!head || !(ts = timed_entry(q, vq, head - 1, true))) {
		q->s.untracked++;
		VIRT_DROP(drops, VIRTIO_DROP_INFLIGHT);
		return;
	}
	/* still timed: the driver reused the head, so that buffer came back
	 * but its completion was never seen (the kernel skipped a probe:
	 * trace_call_bpf() runs no kprobe program while another BPF program
	 * runs on that CPU); retire it, count it and time the new add */
	if (*ts) {
		q->s.settled++;
		q->s.unseen++;
	}
	*ts = bpf_ktime_get_ns();
}

static __always_inline void add_call(__u64 vq, __u64 sgs, __u64 first, __u32 out, __u32 in,
				     const struct sg_head *head, __u64 data, int ret)
{
	struct virtio_slot *q = queue(vq);

	if (!q)
		return;
	record_sgs(&q->s, sgs, first, out, in, head);
	record_add(q, vq, ret);
}

/* A buffer came back (completed = true) or was reclaimed unused: its head
 * is the one detach_buf_split/_packed was just handed. */
static __always_inline void settle(struct virtio_slot *q, __u64 vq, bool completed)
{
	__u64 head = q->done_head;
	__u64 *ts;

	if (completed)
		q->s.completions++;
	if (!latency || !head)
		return;
	q->done_head = 0;
	ts = timed_entry(q, vq, head - 1, false);
	if (!ts || !*ts)
		return;		/* added before attach (or untracked) */
	if (completed) {
		__u32 b = virt_log2_bucket(bpf_ktime_get_ns() - *ts);

		if (b < VIRT_HIST_BUCKETS)
			q->s.hist[b]++;
	}
	q->s.settled++;
	*ts = 0;
}

/* vring_map_one_sg(), called for each entry of an add before the ring's
 * free list moves on: vq->free_head is the head the add takes
 * (virtqueue_add_split/_packed). */
static __always_inline void on_map_sg(__u64 vq, __u64 free_head)
{
	struct virtio_slot *q = queue(vq);

	if (q)
		q->add_head = free_head + 1;
}

/* detach_buf_split/_packed(vq, head): the buffer at head is handed back
 * (to get_buf, or to detach_unused_buf), whose exit settles it. */
static __always_inline void on_detach_buf(__u64 vq, __u64 head)
{
	struct virtio_slot *q = lookup_queue(vq, false);

	if (q)
		q->done_head = head + 1;
}

static __always_inline void on_get_buf_ctx(__u64 vq, __u64 ret)
{
	struct virtio_slot *q;

	if (!ret || !(q = queue(vq)))
		return;
	q->last_tok = ret;
	settle(q, vq, true);
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
		settle(q, vq, true);
}

static __always_inline void on_detach(__u64 vq, __u64 ret)
{
	struct virtio_slot *q;

	if (ret && (q = queue(vq)))
		settle(q, vq, false);
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

/* The blocks of a dying queue's slot (bpf_loop's context must be on the
 * stack). */
struct dying {
	__u16 block[VIRTIO_RING_BLOCKS];
};

/* Give one block back, its entries cleared. */
static long free_block(__u32 k, void *ctx)
{
	struct dying *d = ctx;
	__u32 b, i;
	__u64 *e;

	if (k >= VIRTIO_RING_BLOCKS || !(b = d->block[k]))
		return 0;
	b--;
	for (__u32 j = 0; j < VIRTIO_BLOCK; j++) {
		i = b * VIRTIO_BLOCK + j;
		if ((e = bpf_map_lookup_elem(&timed, &i)))
			*e = 0;
	}
	if ((e = bpf_map_lookup_elem(&blocks, &b)))
		__sync_lock_test_and_set(e, 0);
	return 0;
}

/* The queue is being freed: mark its slot (every slot it holds, were two
 * CPUs ever to claim two) for the agent, which folds and frees it, and
 * give its timed blocks back. */
static __always_inline void on_del(__u64 vq)
{
	struct dying d;

	for (__u32 i = 0; i < VIRTIO_PROBE; i++) {
		struct virtio_slot *s = probe_slot(vq, i);

		if (!s || s->vq == 0)
			break;
		if (s->vq != vq)
			continue;
		s->s.dead = 1;
		if (!latency)
			continue;
		__builtin_memcpy(d.block, s->block, sizeof(d.block));
		__builtin_memset(s->block, 0, sizeof(s->block));
		bpf_loop(VIRTIO_RING_BLOCKS, free_block, &d, 0);
	}
}

/* ---------------------------------------------------- fentry / fexit */

/* Latency only (the agent loads them with latency on): descriptor heads.
 * First in the object, so attached before the add and get_buf hooks: an
 * add or completion seen at all is seen with its head: the head an add
 * takes is the ring's free list head, vring_free_head() (virtio_kernel.bpf.h). */
SEC("fentry/vring_map_one_sg")
int BPF_PROG(virt_virtio_fentry_map_sg, void *vq)
{
	on_map_sg(VQ_ARG(ctx), vring_free_head(vq));
	return 0;
}

SEC("fentry/detach_buf_split")
int BPF_PROG(virt_virtio_fentry_detach_buf_split, void *vq, unsigned int head)
{
	on_detach_buf(VQ_ARG(ctx), head);
	return 0;
}

SEC("fentry/detach_buf_packed")
int BPF_PROG(virt_virtio_fentry_detach_buf_packed, void *vq, unsigned int id)
{
	on_detach_buf(VQ_ARG(ctx), id);
	return 0;
}

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

SEC("kprobe/vring_map_one_sg")
int BPF_KPROBE(virt_virtio_kprobe_map_sg, void *vq)
{
	on_map_sg((__u64)vq, vring_free_head_probe(vq));
	return 0;
}

SEC("kprobe/detach_buf_split")
int BPF_KPROBE(virt_virtio_kprobe_detach_buf_split, void *vq, unsigned int head)
{
	on_detach_buf((__u64)vq, head);
	return 0;
}

SEC("kprobe/detach_buf_packed")
int BPF_KPROBE(virt_virtio_kprobe_detach_buf_packed, void *vq, unsigned int id)
{
	on_detach_buf((__u64)vq, id);
	return 0;
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
		record_add(q, vq, ret);
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
