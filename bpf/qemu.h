/* qemu family: types shared by bpf/qemu.bpf.c and pmda/qemu.c. */
#ifndef VIRT_QEMU_H
#define VIRT_QEMU_H

#include "hist_buckets.h"

/* iovec entries summed per sent packet (QEMU's VIRTQUEUE_MAX_SIZE) */
#define QEMU_IOV_MAX		1024

/* Per QEMU process (key: tgid), per CPU; all u64 words. From uprobes on
 * hw/net/virtio-net.c: virtio_net_receive_rcu() (a packet for the guest)
 * and virtio_net_flush_tx() (packets from the guest), with
 * qemu_sendv_packet_async() inside a flush for the bytes. */
struct qemu_net_stats {
	__u64 rx_packets;	/* packets delivered to the guest (receive returned > 0) */
	__u64 rx_bytes;		/* their sizes */
	__u64 rx_dropped;	/* receive returned <= 0: no room, not ready */
	__u64 tx_flushes;	/* flush_tx runs that returned >= 0 */
	__u64 tx_packets;	/* the sum of their return values */
	__u64 tx_bytes;		/* bytes handed to the backend inside flushes */
	__u64 tx_busy;		/* flush_tx returned -EBUSY (backend queued a packet) */
	__u64 rx_hist[VIRT_HIST_BUCKETS];	/* receive size, log2 bytes */
	__u64 txp_hist[VIRT_HIST_BUCKETS];	/* packets per flush */
	__u64 txb_hist[VIRT_HIST_BUCKETS];	/* bytes per flush */
	__u64 txs_hist[VIRT_HIST_BUCKETS];	/* size of each packet sent */
};

/* Per virtqueue of a QEMU process, from QEMU's own trace events (USDT
 * probes of the dtrace backend, hw/virtio/trace-events). */
struct qemu_vq_key {
	__u64 tgid;
	__u64 vq;		/* VirtQueue * in that process */
};

struct qemu_vq_stats {
	__u64 pops;		/* virtqueue_pop: buffers taken from the guest */
	__u64 fills;		/* virtqueue_fill: buffers returned */
	__u64 fill_bytes;	/* their len: bytes written for the guest */
	__u64 flushes;		/* virtqueue_flush: used-ring publications */
	__u64 kicks;		/* virtio_queue_notify: the guest notified the device */
	__u64 notifies;		/* virtio_notify: the device interrupted the guest */
};

/* What virtio_queue_notify(vdev, n, vq) tells about a queue. */
struct qemu_vq_info {
	__u64 vdev;		/* VirtIODevice * */
	__s64 index;		/* queue index n; -1 until a kick was seen */
};

enum qemu_drop {
	QEMU_DROP_PROC,		/* procs map full (max_processes) */
	QEMU_DROP_VQ,		/* vqs map full (max_queues) */
	QEMU_DROPS
};

#endif
