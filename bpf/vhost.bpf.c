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
 * other polls (vhost-net's socket polls) are remembered in "notvq".
 *
 * The state of the current handler run (queue, last vhost_exceeds_weight
 * arguments) lives in task local storage of the worker thread: a thread
 * runs one handler at a time, wherever it migrates or is preempted.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "vhost.h"
#include "virt_bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* wakeup -> handler latency above this is a stall (ns) */
const volatile __u64 stall_ns = 1000000;

/* drivers/vhost/vhost.h, just what we read; CO-RE finds the layout in the
 * vhost module's BTF. */
struct vhost_work___virt {
	void *fn;
} __attribute__((preserve_access_index));

struct vhost_dev___virt;

struct vhost_poll___virt {
	struct wait_queue_entry wait;
	struct vhost_work___virt work;
	unsigned int mask;
	struct vhost_dev___virt *dev;
} __attribute__((preserve_access_index));

struct mm_struct___virt {
	struct task_struct *owner;
} __attribute__((preserve_access_index));

struct vhost_dev___virt {
	struct mm_struct___virt *mm;
	void **vqs;
	int nvqs;
	int weight;
	int byte_weight;
} __attribute__((preserve_access_index));

struct vhost_virtqueue___virt {
	struct vhost_dev___virt *dev;
	struct vhost_poll___virt poll;
	void *handle_kick;
} __attribute__((preserve_access_index));

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct vhost_queue);
} queues SEC(".maps");

/* polls that are not a queue's (vhost-net's socket polls): poll -> dev */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} notvq SEC(".maps");

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

/* The worker's current handler run. */
struct run {
	__u64 vq;		/* 0: not inside a handler */
	__u64 pkts;		/* last vhost_exceeds_weight(vq, pkts, total_len) */
	__u64 bytes;
	__u32 exceeded;
	int weight;		/* kprobe variant: dev->weight, dev->byte_weight */
	int byte_weight;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct run);
} runs SEC(".maps");

static const struct vhost_queue zero_queue;

#define POLL_OFF	bpf_core_field_offset(struct vhost_virtqueue___virt, poll)
#define WAIT_OFF	bpf_core_field_offset(struct vhost_poll___virt, wait)
#define WORK_OFF	bpf_core_field_offset(struct vhost_poll___virt, work)

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

/* First sight of a queue: who owns it, which handler, which index. */
static __always_inline struct vhost_queue *queue_new(__u64 vq)
{
	struct vhost_virtqueue___virt *q = (void *)vq;
	struct vhost_dev___virt *dev = BPF_CORE_READ(q, dev);
	struct find_index f = { .vq = vq, .index = ~0u };
	struct vhost_queue *s;
	int nvqs;

	bpf_map_update_elem(&queues, &vq, &zero_queue, BPF_NOEXIST);
	s = bpf_map_lookup_elem(&queues, &vq);
	if (!s) {
		VIRT_DROP(drops, VHOST_DROP_QUEUE);
		return NULL;
	}
	if (s->dev)
		return s;	/* raced with another CPU: it filled it in */
	s->fn = (__u64)BPF_CORE_READ(q, handle_kick);
	if (dev) {
		struct mm_struct___virt *mm = BPF_CORE_READ(dev, mm);

		if (mm && bpf_core_field_exists(mm->owner)) {
			struct task_struct *t = BPF_CORE_READ(mm, owner);

			if (t)
				s->owner = BPF_CORE_READ(t, tgid);
		}
		f.vqs = (__u64)BPF_CORE_READ(dev, vqs);
		nvqs = BPF_CORE_READ(dev, nvqs);
		if (f.vqs && nvqs > 0)
			bpf_loop(nvqs < 1024 ? nvqs : 1024, find_index_step, &f, 0);
	}
	s->index = f.index;
	s->born = bpf_ktime_get_ns();
	s->dev = (__u64)dev;
	return s;
}

static __always_inline struct vhost_queue *queue(__u64 vq)
{
	struct vhost_queue *s = bpf_map_lookup_elem(&queues, &vq);

	return s ? s : queue_new(vq);
}

/* -------------------------------------------------------------- hooks */

/* vhost_poll_wakeup(wait, mode, sync, key): vhost queues the poll's work
 * only if key_to_poll(key) & poll->mask. */
static __always_inline void on_wakeup(__u64 wait, __u64 key)
{
	__u64 poll = wait - WAIT_OFF;
	__u64 vq = poll - POLL_OFF;
	struct vhost_queue *s = bpf_map_lookup_elem(&queues, &vq);
	struct vhost_poll___virt *p = (void *)poll;

	if (!s) {
		struct vhost_virtqueue___virt *q = (void *)vq;
		struct vhost_dev___virt *dev;

		if (bpf_map_lookup_elem(&notvq, &poll))
			return;
		dev = BPF_CORE_READ(p, dev);
		if (!dev || BPF_CORE_READ(q, dev) != dev ||
		    BPF_CORE_READ(q, handle_kick) != BPF_CORE_READ(p, work.fn)) {
			__u64 d = (__u64)dev;

			bpf_map_update_elem(&notvq, &poll, &d, BPF_ANY);
			return;
		}
		s = queue_new(vq);
		if (!s)
			return;
	}
	if (!((__u32)key & BPF_CORE_READ(p, mask)))
		return;
	s->wakeups++;
	if (!s->pending)
		s->pending = bpf_ktime_get_ns();
}

static __always_inline struct run *run_of_current(bool create)
{
	return bpf_task_storage_get(&runs, bpf_get_current_task_btf(), 0,
				    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* Handler start: the work is &vq->poll.work. */
static __always_inline void on_handler_start(__u64 work, bool weights)
{
	__u64 vq = work - WORK_OFF - POLL_OFF;
	struct vhost_queue *s = queue(vq);
	struct run *r = run_of_current(true);
	__u64 ts, now, ns;

	if (r) {
		r->vq = vq;
		r->pkts = r->bytes = 0;
		r->exceeded = 0;
		if (weights) {
			struct vhost_virtqueue___virt *q = (void *)vq;

			r->weight = BPF_CORE_READ(q, dev, weight);
			r->byte_weight = BPF_CORE_READ(q, dev, byte_weight);
		}
	}
	if (!s)
		return;
	s->runs++;
	ts = s->pending;
	if (!ts)
		return;		/* requeued (weight), or queued without a wakeup */
	s->pending = 0;
	now = bpf_ktime_get_ns();
	ns = now > ts ? now - ts : 0;
	s->kicks++;
	{
		__u32 b = virt_log2_bucket(ns);

		if (b < VIRT_HIST_BUCKETS)
			s->lat[b]++;
	}
	if (ns > stall_ns) {
		struct vhost_stall *e;

		s->stalls++;
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
		e->owner = s->owner;
		bpf_ringbuf_submit(e, 0);
	}
}

/* Handler end: the run's totals are the last vhost_exceeds_weight args. */
static __always_inline void on_handler_end(void)
{
	struct run *r = run_of_current(false);
	struct vhost_queue *s;
	__u64 vq;

	if (!r || !r->vq)
		return;
	vq = r->vq;
	r->vq = 0;
	s = bpf_map_lookup_elem(&queues, &vq);
	if (!s) {
		VIRT_DROP(drops, VHOST_DROP_RUN);
		return;
	}
	if (r->exceeded)
		s->weight_exceeded++;
	if (r->pkts) {
		__u32 b = virt_log2_bucket(r->pkts);

		s->batches++;
		if (b < VIRT_HIST_BUCKETS)
			s->pkts[b]++;
		b = virt_log2_bucket(r->bytes);
		if (b < VIRT_HIST_BUCKETS)
			s->bytes[b]++;
	}
}

static __always_inline void on_weight(struct run *r, __u64 vq, int pkts, int total_len,
				      bool ret)
{
	if (!r || r->vq != vq)
		return;
	r->pkts = pkts > 0 ? pkts : 0;
	r->bytes = total_len > 0 ? total_len : 0;
	if (ret)
		r->exceeded = 1;
}

/* The device is being torn down: each of its queues hands its final values
 * to the agent through the ring buffer and leaves the map (so a new device
 * allocated at the same address starts afresh); if the ring buffer is full
 * the entry stays, marked dead, for the agent to fold and delete. Its
 * remembered socket polls go too. */
static long retire_queue(struct bpf_map *map, __u64 *key, struct vhost_queue *v, void *ctx)
{
	struct vhost_final *f;

	if (v->dev != *(__u64 *)ctx)
		return 0;
	f = bpf_ringbuf_reserve(&stalls, sizeof(*f), 0);
	if (!f) {
		v->dead = 1;
		VIRT_DROP(drops, VHOST_DROP_EVENT);
		return 0;
	}
	f->kind = VHOST_REC_FINAL;
	f->pad = 0;
	f->vq = *key;
	bpf_probe_read_kernel(&f->q, sizeof(f->q), v);
	bpf_ringbuf_submit(f, 0);
	bpf_map_delete_elem(map, key);
	return 0;
}

static long forget_poll(struct bpf_map *map, __u64 *key, __u64 *dev, void *ctx)
{
	if (*dev == *(__u64 *)ctx)
		bpf_map_delete_elem(map, key);
	return 0;
}

static __always_inline void on_cleanup(__u64 dev)
{
	bpf_for_each_map_elem(&queues, retire_queue, &dev, 0);
	bpf_for_each_map_elem(&notvq, forget_poll, &dev, 0);
}

/* ---------------------------------------------------- fentry / fexit */

SEC("fentry/vhost_poll_wakeup")
int BPF_PROG(virt_vhost_fentry_wakeup, struct wait_queue_entry *wait, unsigned int mode,
	     int sync, void *key)
{
	on_wakeup((__u64)wait, (__u64)key);
	return 0;
}

SEC("fexit/vhost_exceeds_weight")
int BPF_PROG(virt_vhost_fentry_weight, void *vq, int pkts, int total_len, bool ret)
{
	on_weight(run_of_current(false), (__u64)vq, pkts, total_len, ret);
	return 0;
}

SEC("fentry/vhost_dev_cleanup")
int BPF_PROG(virt_vhost_fentry_cleanup, void *dev)
{
	on_cleanup((__u64)dev);
	return 0;
}

/* One fentry/fexit pair per handler; "drv" names the kernel module the
 * handler lives in (pmda/vhost.c loads only those of loaded modules). */
#define FENTRY_HANDLER(drv, what, func)						\
SEC("fentry/" #func)								\
int BPF_PROG(virt_vhost_fentry_##drv##_##what, void *work)			\
{										\
	on_handler_start((__u64)work, false);					\
	return 0;								\
}										\
SEC("fexit/" #func)								\
int BPF_PROG(virt_vhost_fentry_##drv##_##what##_end, void *work)		\
{										\
	on_handler_end();							\
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
 * device's budget read at handler start, as vhost_exceeds_weight() does. */
SEC("kprobe/vhost_exceeds_weight")
int BPF_KPROBE(virt_vhost_kprobe_weight, void *vq, int pkts, int total_len)
{
	struct run *r = run_of_current(false);

	if (!r || r->vq != (__u64)vq)
		return 0;
	on_weight(r, (__u64)vq, pkts, total_len,
		  (r->byte_weight && total_len >= r->byte_weight) || pkts >= r->weight);
	return 0;
}

SEC("kprobe/vhost_dev_cleanup")
int BPF_KPROBE(virt_vhost_kprobe_cleanup, void *dev)
{
	on_cleanup((__u64)dev);
	return 0;
}

#define KPROBE_HANDLER(drv, what, func)						\
SEC("kprobe/" #func)								\
int BPF_KPROBE(virt_vhost_kprobe_##drv##_##what, void *work)			\
{										\
	on_handler_start((__u64)work, true);					\
	return 0;								\
}										\
SEC("kretprobe/" #func)								\
int BPF_KRETPROBE(virt_vhost_kprobe_##drv##_##what##_end)			\
{										\
	on_handler_end();							\
	return 0;								\
}

KPROBE_HANDLER(net, tx, handle_tx_kick)
KPROBE_HANDLER(net, rx, handle_rx_kick)
KPROBE_HANDLER(vsock, tx, vhost_vsock_handle_tx_kick)
KPROBE_HANDLER(vsock, rx, vhost_vsock_handle_rx_kick)
KPROBE_HANDLER(scsi, io, vhost_scsi_handle_kick)
KPROBE_HANDLER(scsi, ctl, vhost_scsi_ctl_handle_kick)
KPROBE_HANDLER(scsi, evt, vhost_scsi_evt_handle_kick)
