// SPDX-License-Identifier: GPL-2.0
/*
 * vhost virtqueues (host side): guest kicks handled, eventfd wakeups, the
 * wakeup -> handler-start latency of the vhost worker (and stalls above a
 * threshold, as ring-buffer events), packets and bytes per handler run and
 * runs cut short by the weight budget, per struct vhost_virtqueue *.
 *
 * Two attach variants of the same handlers, picked at run time by
 * pmda/vhost.c: fentry (fentry/fexit) and kprobe (kprobe/kretprobe). Hooks
 * (Linux 6.1; all in module BTF of vhost / vhost_net / vhost_vsock /
 * vhost_scsi, none inlined):
 *
 *   vhost_poll_wakeup (vhost)       a queue's kick eventfd fired: wakeups,
 *                                   the wakeup time (first since the
 *                                   last handler start)
 *   handle_{tx,rx}_kick (vhost_net), vhost_vsock_handle_{tx,rx}_kick,
 *   vhost_scsi_{,ctl_,evt_}handle_kick   handler start: kicks, latency,
 *                                   stalls; handler end: batch, weight
 *   vhost_exceeds_weight (vhost)    called by the net handlers after every
 *                                   packet with the run's running totals
 *   vhost_dev_cleanup (vhost)       device closed: its queues are marked dead
 *
 * The queue behind a wakeup: vhost_poll_wakeup gets &poll->wait; a queue's
 * poll is vq->poll, so the candidate vq is container_of(poll, vq, poll),
 * accepted only if candidate->dev == poll->dev and candidate->handle_kick
 * == poll->work.fn (vhost_poll_init(&vq->poll, vq->handle_kick, ...)); the
 * other polls (vhost-net's socket polls) take a slot marked notvq.
 *
 * Every hook knows its queue (the wakeup's and the handler's by
 * container_of, vhost_exceeds_weight's as its argument), and a queue's
 * handler runs one at a time (under vq->mutex, on its device's worker), so
 * the run in progress lives in the queue's slot: no thread or CPU state.
 * A slot is found by hashing the pointer into a plain array (the verifier
 * inlines the lookups: no helper call): virt_slot_get(), as in
 * bpf/virtio.bpf.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "vhost.h"
#include "virt_bpf.h"
#include "core_fixes.bpf.h"
#include "vhost_kernel.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* A typed pointer argument as a number: the verifier refuses arithmetic
 * (container_of, the slot hash) on a BTF pointer loaded from the context;
 * bpf_get_func_arg() is inlined and hands over a scalar. */
#define PTR_ARG(ctx, n)	({ __u64 __p = 0; bpf_get_func_arg(ctx, n, &__p); __p; })
/* a bool return lives in %al only: the rest of the register is junk */
#define RET_BOOL(rax)	(((rax) & 0xff) != 0)

/* wakeup -> handler latency above this is a stall (ns) */
const volatile __u64 stall_ns = 1000000;

/* vhost's structs (the vhost module's BTF), behind accessors:
 * bpf/vhost_kernel.bpf.h */

_Static_assert(VHOST_SLOT_FREED == VIRT_SLOT_FREED, "the agent frees slots as virt_bpf.h reads them");

/* log2 of the number of slots (the agent sets it from max_queues) */
const volatile __u32 slot_bits = 11;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 2048);
	__type(key, __u32);
	__type(value, struct vhost_slot);
} queues SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 65536);
} stalls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, VHOST_DROPS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

#define POLL_OFF	vhost_vq_poll_offset()
#define WAIT_OFF	vhost_poll_wait_offset()
#define WORK_OFF	vhost_poll_work_offset()

/* ------------------------------------------------------------ queues */

struct find_index {
	__u64 vqs;
	__u64 vq;
	__u32 index;
};

static long find_index_step(__u32 i, void *ctx)
{
	struct find_index *f = ctx;
	__u64 p = 0;

	if (bpf_probe_read_kernel(&p, sizeof(p), (void *)(f->vqs + (__u64)i * sizeof(__u64))))
		return 1;
	if (p == f->vq) {
		f->index = i;
		return 1;
	}
	return 0;
}

/* A queue's new slot: who owns it, which handler, which index, its poll's
 * mask and its device's budget (all fixed from vhost_dev_init() on); dev
 * last: the agent shows a slot once dev is set. */
static __always_inline void fill_queue(struct vhost_slot *s, __u64 vq)
{
	__u64 dev = vhost_vq_dev(vq);
	struct find_index f = { .vq = vq, .index = ~0u };
	int nvqs;

	s->q.fn = vhost_vq_handle_kick(vq);
	s->mask = vhost_vq_poll_mask(vq);
	if (dev) {
		struct task_struct *t = vhost_dev_owner(dev);

		if (t)
			s->q.owner = BPF_CORE_READ(t, tgid);
		s->weight = vhost_dev_weight(dev);
		s->byte_weight = vhost_dev_byte_weight(dev);
		f.vqs = vhost_dev_vqs(dev);
		nvqs = vhost_dev_nvqs(dev);
		if (f.vqs && nvqs > 0)
			bpf_loop(nvqs < 1024 ? nvqs : 1024, find_index_step, &f, 0);
	}
	s->q.index = f.index;
	s->q.dev = dev;
}

/* The queue's slot (virt_slot_get); a slot just claimed is filled in: a
 * queue's, or a poll's that is not a queue's (dev only). */
static __always_inline struct vhost_slot *lookup_queue(__u64 vq, bool create, __u64 notvq_dev)
{
	bool fresh;
	struct vhost_slot *s = virt_slot_get(&queues, slot_bits, VHOST_PROBE, vq,
					     offsetof(struct vhost_slot, q.dead), create, &fresh);

	if (!s) {
		if (create)
			VIRT_DROP(drops, VHOST_DROP_QUEUE);
		return NULL;
	}
	if (fresh) {
		if (notvq_dev) {
			s->notvq = 1;
			s->q.dev = notvq_dev;
		} else {
			fill_queue(s, vq);
		}
	}
	return s;
}

/* -------------------------------------------------------------- hooks */

/* First wakeup of a poll: a queue's (slot claimed and filled in) or not
 * (a notvq slot, so that its next wakeups cost one lookup). */
static __always_inline struct vhost_slot *first_wakeup(__u64 vq)
{
	__u64 poll = vq + POLL_OFF;
	__u64 dev = vhost_poll_dev(poll);

	if (!dev)
		return NULL;
	if (vhost_vq_dev(vq) != dev || vhost_vq_handle_kick(vq) != vhost_poll_work_fn(poll))
		return lookup_queue(vq, true, dev);
	return lookup_queue(vq, true, 0);
}

/* vhost_poll_wakeup(wait, mode, sync, key): vhost queues the poll's work
 * only if key_to_poll(key) & poll->mask. */
static __always_inline void on_wakeup(__u64 wait, __u64 key)
{
	__u64 vq = wait - WAIT_OFF - POLL_OFF;
	struct vhost_slot *s = lookup_queue(vq, false, 0);

	if (!s && !(s = first_wakeup(vq)))
		return;
	if (s->notvq || !((__u32)key & s->mask))
		return;
	s->q.wakeups++;
	if (!s->q.pending)
		s->q.pending = bpf_ktime_get_ns();
}

static __always_inline void stall(struct vhost_slot *s, __u64 vq, __u64 now, __u64 ns)
{
	struct vhost_stall *e;

	s->q.stalls++;
	e = bpf_ringbuf_reserve(&stalls, sizeof(*e), 0);
	if (!e) {
		VIRT_DROP(drops, VHOST_DROP_EVENT);
		return;
	}
	e->kind = VHOST_REC_STALL;
	e->pad = 0;
	e->ts = now;
	e->vq = vq;
	e->latency = ns;
	e->cpu = bpf_get_smp_processor_id();
	e->owner = s->q.owner;
	bpf_ringbuf_submit(e, 0);
}

/* Handler start: the work is &vq->poll.work. */
static __always_inline void on_handler_start(__u64 work)
{
	__u64 vq = work - WORK_OFF - POLL_OFF;
	struct vhost_slot *s = lookup_queue(vq, true, 0);
	__u64 ts, now, ns;

	if (!s)
		return;
	s->in_run = 1;
	s->exceeded = 0;
	s->run_pkts = s->run_bytes = 0;
	s->q.runs++;
	ts = s->q.pending;
	if (!ts)
		return;		/* requeued (weight), or queued without a wakeup */
	s->q.pending = 0;
	now = bpf_ktime_get_ns();
	ns = now > ts ? now - ts : 0;
	s->q.kicks++;
	s->q.lat[virt_log2_bucket(ns)]++;
	if (ns > stall_ns)
		stall(s, vq, now, ns);
}

/* Handler end: the run's totals are the last vhost_exceeds_weight args. */
static __always_inline void on_handler_end(__u64 work)
{
	struct vhost_slot *s = lookup_queue(work - WORK_OFF - POLL_OFF, false, 0);

	if (!s || !s->in_run)
		return;
	s->in_run = 0;
	if (s->exceeded)
		s->q.weight_exceeded++;
	if (s->run_pkts) {
		s->q.batches++;
		s->q.pkts[virt_log2_bucket(s->run_pkts)]++;
		s->q.bytes[virt_log2_bucket(s->run_bytes)]++;
	}
}

/* vhost_exceeds_weight(vq, pkts, total_len): the running totals of the
 * queue's run (only a kick handler's run: vhost-net's socket handlers
 * call it too). */
static __always_inline void on_weight(__u64 vq, int pkts, int total_len, int ret)
{
	struct vhost_slot *s = lookup_queue(vq, false, 0);

	if (!s || !s->in_run)
		return;
	s->run_pkts = pkts > 0 ? pkts : 0;
	s->run_bytes = total_len > 0 ? total_len : 0;
	if (ret < 0)	/* kprobe: as vhost_exceeds_weight() computes it */
		ret = (s->byte_weight && total_len >= s->byte_weight) || pkts >= s->weight;
	if (ret)
		s->exceeded = 1;
}

/* The device is being torn down (its polls were stopped and flushed by
 * the driver's release before vhost_dev_cleanup()): its slots are marked
 * dead, with their final values, for the agent to fold and free; a new
 * device at the same address takes new slots. */
static long retire_slot(struct bpf_map *map, __u32 *key, struct vhost_slot *s, void *ctx)
{
	if (s->vq > VHOST_SLOT_FREED && s->q.dev == *(__u64 *)ctx)
		s->q.dead = 1;
	return 0;
}

static __always_inline void on_cleanup(__u64 dev)
{
	bpf_for_each_map_elem(&queues, retire_slot, &dev, 0);
}

/* ---------------------------------------------------- fentry / fexit */

SEC("fentry/vhost_poll_wakeup")
int BPF_PROG(virt_vhost_fentry_wakeup, struct wait_queue_entry *wait, unsigned int mode,
	     int sync, void *key)
{
	on_wakeup(PTR_ARG(ctx, 0), (__u64)key);
	return 0;
}

SEC("fexit/vhost_exceeds_weight")
int BPF_PROG(virt_vhost_fentry_weight, void *vq, int pkts, int total_len, __u64 ret)
{
	on_weight(PTR_ARG(ctx, 0), pkts, total_len, RET_BOOL(ret));
	return 0;
}

SEC("fentry/vhost_dev_cleanup")
int BPF_PROG(virt_vhost_fentry_cleanup, void *dev)
{
	on_cleanup(PTR_ARG(ctx, 0));
	return 0;
}

/* One fentry/fexit pair per handler; "drv" names the kernel module the
 * handler lives in (pmda/vhost.c loads only those of loaded modules). */
#define FENTRY_HANDLER(drv, what, func)						\
SEC("fentry/" #func)								\
int BPF_PROG(virt_vhost_fentry_##drv##_##what)				\
{										\
	on_handler_start(PTR_ARG(ctx, 0));					\
	return 0;								\
}										\
SEC("fexit/" #func)								\
int BPF_PROG(virt_vhost_fentry_##drv##_##what##_end)			\
{										\
	on_handler_end(PTR_ARG(ctx, 0));							\
	return 0;								\
}

FENTRY_HANDLER(net, tx, handle_tx_kick)
FENTRY_HANDLER(net, rx, handle_rx_kick)
FENTRY_HANDLER(vsock, tx, vhost_vsock_handle_tx_kick)
FENTRY_HANDLER(vsock, rx, vhost_vsock_handle_rx_kick)
FENTRY_HANDLER(scsi, io, vhost_scsi_handle_kick)
FENTRY_HANDLER(scsi, ctl, vhost_scsi_ctl_handle_kick)
FENTRY_HANDLER(scsi, evt, vhost_scsi_evt_handle_kick)

/* ------------------------------------------------ kprobe / kretprobe */

SEC("kprobe/vhost_poll_wakeup")
int BPF_KPROBE(virt_vhost_kprobe_wakeup, void *wait, unsigned int mode, int sync, void *key)
{
	on_wakeup((__u64)wait, (__u64)key);
	return 0;
}

/* No kretprobe: the return value is recomputed from the arguments and the
 * device's budget, as vhost_exceeds_weight() does. */
SEC("kprobe/vhost_exceeds_weight")
int BPF_KPROBE(virt_vhost_kprobe_weight, void *vq, int pkts, int total_len)
{
	on_weight((__u64)vq, pkts, total_len, -1);
	return 0;
}

SEC("kprobe/vhost_dev_cleanup")
int BPF_KPROBE(virt_vhost_kprobe_cleanup, void *dev)
{
	on_cleanup((__u64)dev);
	return 0;
}

/* A kretprobe does not see the handler's argument: the kprobe leaves the
 * queue in the worker's task storage (it may migrate meanwhile). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} kprobe_work SEC(".maps");

static __always_inline void kprobe_handler_start(__u64 work)
{
	__u64 *w = bpf_task_storage_get(&kprobe_work, bpf_get_current_task_btf(), 0,
					BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (w)
		*w = work;
	on_handler_start(work);
}

static __always_inline void kprobe_handler_end(void)
{
	__u64 *w = bpf_task_storage_get(&kprobe_work, bpf_get_current_task_btf(), 0, 0);

	if (w && *w) {
		on_handler_end(*w);
		*w = 0;
	}
}

#define KPROBE_HANDLER(drv, what, func)						\
SEC("kprobe/" #func)								\
int BPF_KPROBE(virt_vhost_kprobe_##drv##_##what, void *work)			\
{										\
	kprobe_handler_start((__u64)work);					\
	return 0;								\
}										\
SEC("kretprobe/" #func)								\
int BPF_KRETPROBE(virt_vhost_kprobe_##drv##_##what##_end)			\
{										\
	kprobe_handler_end();							\
	return 0;								\
}

KPROBE_HANDLER(net, tx, handle_tx_kick)
KPROBE_HANDLER(net, rx, handle_rx_kick)
KPROBE_HANDLER(vsock, tx, vhost_vsock_handle_tx_kick)
KPROBE_HANDLER(vsock, rx, vhost_vsock_handle_rx_kick)
KPROBE_HANDLER(scsi, io, vhost_scsi_handle_kick)
KPROBE_HANDLER(scsi, ctl, vhost_scsi_ctl_handle_kick)
KPROBE_HANDLER(scsi, evt, vhost_scsi_evt_handle_kick)
