/* vhost family: types shared by bpf/vhost.bpf.c and pmda/vhost.c. */
#ifndef VIRT_VHOST_H
#define VIRT_VHOST_H

#include "hist_buckets.h"

/* Per vhost virtqueue (key: struct vhost_virtqueue *). One plain (not
 * per-CPU) value: vhost serialises everything that writes it (wakeups of
 * one queue's poll under its eventfd's wait-queue lock, handler runs on the
 * device's single worker thread), so no atomics are needed; the agent reads
 * it with one batched lookup. */
struct vhost_queue {
	__u64 dev;		/* struct vhost_dev * */
	__u64 fn;		/* vq->handle_kick: which driver and queue */
	__u32 owner;		/* tgid of dev->mm->owner, 0 if unknown */
	__u32 index;		/* index in dev->vqs, ~0 if not found */
	__u64 pending;		/* ktime of the first wakeup not yet handled, 0 none */
	__u64 dead;		/* vhost_dev_cleanup() ran and its final record was lost */
	__u64 born;		/* ktime at creation: tells incarnations of a vq apart */
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

/* Ring buffer records: a stall, or the final values of a queue whose
 * device was cleaned up (its map entry is deleted right after, so a new
 * device at the same address starts afresh). */
#define VHOST_REC_STALL	1
#define VHOST_REC_FINAL	2

struct vhost_stall {
	__u32 kind;		/* VHOST_REC_STALL */
	__u32 pad;
	__u64 ts;		/* bpf_ktime_get_ns() at handler start */
	__u64 vq;
	__u64 latency;		/* ns */
	__u32 cpu;		/* CPU the worker ran the handler on */
	__u32 owner;
};

struct vhost_final {
	__u32 kind;		/* VHOST_REC_FINAL */
	__u32 pad;
	__u64 vq;
	struct vhost_queue q;
};

enum vhost_drop {
	VHOST_DROP_QUEUE,	/* queues map full (max_queues) */
	VHOST_DROP_EVENT,	/* stall ring buffer full */
	VHOST_DROP_RUN,		/* handler run's batch lost (worker migrated mid-run) */
	VHOST_DROPS
};

#endif
