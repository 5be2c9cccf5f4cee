/* vhost family: types shared by bpf/vhost.bpf.c and pmda/vhost.c. */
#ifndef VIRT_VHOST_H
#define VIRT_VHOST_H

#include "hist_buckets.h"

/* Per vhost virtqueue: the counters of a slot (struct vhost_slot). Plain
 * (not per-CPU) words: vhost serialises everything that writes one of
 * them (wakeups of one queue's poll under its eventfd's wait-queue lock,
 * handler runs under vq->mutex on the device's worker), so no atomics are
 * needed; the agent reads them in place (mmap). */
struct vhost_queue {
	__u64 dev;		/* struct vhost_dev * */
	__u64 fn;		/* vq->handle_kick: which driver and queue */
	__u32 owner;		/* tgid of dev->mm->owner, 0 if unknown */
	__u32 index;		/* index in dev->vqs, ~0 if not found */
	__u64 pending;		/* ktime of the first wakeup not yet handled, 0 none */
	__u64 dead;		/* vhost_dev_cleanup() ran: final values, for the agent */
	__u64 kicks;		/* handler runs with a wakeup pending */
	__u64 runs;		/* every handler run (kicks + requeues) */
	__u64 wakeups;		/* vhost_poll_wakeup() that queue the work */
	__u64 stalls;		/* kicks with latency > stall_ns */
	__u64 weight_exceeded;	/* runs ended by vhost_exceeds_weight() == true */
	__u64 batches;		/* runs that handled >= 1 packet (histogram mass) */
	__u64 lat[VIRT_HIST_BUCKETS];	/* wakeup -> handler start, ns, log2 */
	__u64 pkts[VIRT_HIST_BUCKETS];	/* packets per run, log2 */
	__u64 bytes[VIRT_HIST_BUCKETS];	/* total_len per run, log2 */
};

/* The queues array: a struct vhost_virtqueue * (or the would-be queue of
 * a poll that is not a queue's) hashes to a slot and looks at VHOST_PROBE
 * slots from there. vq: 0 = never used (a probe stops there),
 * VHOST_SLOT_FREED = given back by the agent after the queue died; the
 * BPF side claims a slot with a compare-and-swap, marks it dead in
 * vhost_dev_cleanup() and never frees it. */
#define VHOST_SLOT_FREED	1
#define VHOST_PROBE		8

struct vhost_slot {
	__u64 vq;
	__u32 notvq;		/* a poll that is not a queue's (vhost-net's socket polls) */
	__u32 mask;		/* poll->mask: wakeups with these bits queue the work */
	__s32 weight;		/* dev->weight, dev->byte_weight: the run's budget */
	__s32 byte_weight;
	/* the handler run in progress (one at a time, under vq->mutex) */
	__u32 in_run;		/* a kick handler's fentry ran and its fexit not yet */
	__u32 exceeded;		/* vhost_exceeds_weight() said true */
	__u64 run_pkts;		/* last vhost_exceeds_weight(vq, pkts, total_len) */
	__u64 run_bytes;
	struct vhost_queue q;
};

/* Ring buffer records: a stall. */
#define VHOST_REC_STALL	1

struct vhost_stall {
	__u32 kind;		/* VHOST_REC_STALL */
	__u32 pad;
	__u64 ts;		/* bpf_ktime_get_ns() at handler start */
	__u64 vq;
	__u64 latency;		/* ns */
	__u32 cpu;		/* CPU the worker ran the handler on */
	__u32 owner;
};

enum vhost_drop {
	VHOST_DROP_QUEUE,	/* queues map full (max_queues) */
	VHOST_DROP_EVENT,	/* stall ring buffer full */
	VHOST_DROPS
};

#endif
