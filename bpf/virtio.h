/* virtio family: types shared by bpf/virtio.bpf.c and pmda/virtio.c. */
#ifndef VIRT_VIRTIO_H
#define VIRT_VIRTIO_H

#include "hist_buckets.h"

#define VIRTIO_NAME_LEN		32
/* Steps of one scatterlist walk (entries + chain links + list changes)
 * before it gives up and counts the call in "truncated". virtio-blk with a
 * 1024-entry queue hands at most ~1024 entries; bcc's virtiostat stops at 6
 * lists x 128 entries. */
#define VIRTIO_WALK_MAX		4096
/* Nesting depth of kprobe'd calls per CPU (kprobe variant only). */
#define VIRTIO_STASH_DEPTH	8

/* Per virtqueue; all u64 words (the user side folds them word by word). */
struct virtio_stats {
	__u64 sgs_out;		/* scatterlists handed to add_* as out (bcc virtiostat) */
	__u64 sgs_in;		/* ... as in */
	__u64 bytes_out;	/* bytes in the out scatterlists (sg_next walk) */
	__u64 bytes_in;
	__u64 adds;		/* add_* returned 0 */
	__u64 completions;	/* get_buf[_ctx] returned a token */
	__u64 kicks;		/* notifications sent (notify returned true) */
	__u64 interrupts;	/* vring_interrupt returned IRQ_HANDLED */
	__u64 ring_full;	/* add_* returned -ENOSPC */
	__u64 truncated;	/* add_* calls whose walk hit VIRTIO_WALK_MAX */
	__u64 untracked;	/* adds not timed: no block of "timed" free, head unknown */
	__u64 settled;		/* timed adds completed, detached or found stale */
	__u64 unseen;		/* timed heads added again before their completion was seen */
	__u64 dead;		/* vring_del_virtqueue seen for this queue */
	__u64 hist[VIRT_HIST_BUCKETS];	/* add->completion ns, log2 */
};

/* A queue's slot in the "queues" array: probing starts at the slot its
 * address hashes to and looks at VIRTIO_PROBE slots. vq: 0 = never used
 * (a probe stops there), VIRTIO_SLOT_FREED = given back by the agent after
 * the queue died (reusable, a probe goes on), else the owner's
 * struct virtqueue *. The agent reads the array in place (mmap). */
#define VIRTIO_SLOT_FREED	1
#define VIRTIO_PROBE		8
/* Add times are kept per descriptor head (the index of a buffer's state in
 * the ring, < the ring's size): head h of a queue is entry h % VIRTIO_BLOCK
 * of the block of "timed" its slot holds for heads h / VIRTIO_BLOCK. */
#define VIRTIO_BLOCK		64
#define VIRTIO_RING_BLOCKS	64	/* rings up to 4096 heads are timed */
struct virtio_slot {
	__u64 vq;
	__u64 ready;		/* the owner's names are in "info" */
	__u64 prepared;		/* the last kick_prepare said "notify" */
	__u64 last_tok;		/* the last get_buf_ctx's token: nested in get_buf? */
	__u64 add_head;		/* head + 1 of the add in progress (vring_map_one_sg) */
	__u64 done_head;	/* head + 1 being detached (detach_buf_split/_packed) */
	__u16 block[VIRTIO_RING_BLOCKS];	/* block + 1 of "timed" per 64 heads */
	struct virtio_stats s;
};

/* Names read once per queue (first sight) through CO-RE. */
struct virtio_vq_info {
	char driver[VIRTIO_NAME_LEN];	/* vq->vdev->dev.driver->name */
	char dev[VIRTIO_NAME_LEN];	/* dev_name(&vq->vdev->dev): virtioN */
	char name[VIRTIO_NAME_LEN];	/* vq->name */
};

enum virtio_drop {
	VIRTIO_DROP_QUEUE,	/* no free slot for a queue (max_queues) */
	VIRTIO_DROP_INFLIGHT,	/* no block of "timed" free (max_inflight), head >= 4096
				 * or not seen: add not timed */
	VIRTIO_DROP_STASH,	/* kprobe variant: entry/return pairing lost */
	VIRTIO_DROPS
};

#endif
