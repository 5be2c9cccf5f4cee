// SPDX-License-Identifier: GPL-2.0
/*
 * QEMU's emulated virtio-net device (the VMM side, when the VM runs without
 * vhost) and QEMU's virtqueues, per QEMU process. User-space probes, attached
 * by pmda/qemu.c to each QEMU binary it finds (all processes of a binary at
 * once):
 *
 *   uprobes by symbol (hw/net/virtio-net.c, net/net.c):
 *     virtio_net_receive_rcu(nc, buf, size, no_rss)  entry + return: rx sizes
 *     virtio_net_flush_tx(q)                         entry + return: packets per flush
 *     qemu_sendv_packet_async(nc, iov, iovcnt, cb)   inside a flush: bytes
 *   USDT probes (QEMU built with --enable-trace-backends=dtrace; provider
 *   "qemu", hw/virtio/trace-events):
 *     virtqueue_pop, virtqueue_fill, virtqueue_flush, virtio_queue_notify,
 *     virtio_notify, virtio_notify_irqfd
 *
 * Every program is named virt_qemu_uprobe_* (USDT probes are uprobes too):
 * one variant, which the agent loads whole (pmda/core/kernel.c).
 *
 * A thread is in at most one flush at a time, and a receive nests only in
 * itself (software RSS re-enters it for the chosen subqueue), so a small
 * per-thread record pairs entries with returns.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "qemu.h"
#include "virt_bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, struct qemu_net_stats);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, struct qemu_vq_key);
	__type(value, struct qemu_vq_stats);
} vqs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct qemu_vq_key);
	__type(value, struct qemu_vq_info);
} vqinfo SEC(".maps");

/* Entry -> return pairing per thread. LRU: a thread killed inside a
 * probed call never returns, and its record must not pin a slot. */
struct thread_state {
	__u64 rx_size;
	__u32 rx_depth;
	__u32 flushing;
	__u64 flush_bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct thread_state);
} threads SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QEMU_DROPS);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

static const struct qemu_net_stats zero_net;
static const struct qemu_vq_stats zero_vq;
static const struct thread_state zero_thread;

static __always_inline struct qemu_net_stats *proc_stats(void)
{
	__u64 tgid = bpf_get_current_pid_tgid() >> 32;
	return VIRT_LOOKUP_OR_INIT(procs, &tgid, &zero_net, drops, QEMU_DROP_PROC);
}

static __always_inline struct thread_state *thread(bool create)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct thread_state *t = bpf_map_lookup_elem(&threads, &id);

	if (t || !create)
		return t;
	bpf_map_update_elem(&threads, &id, &zero_thread, BPF_ANY);
	return bpf_map_lookup_elem(&threads, &id);
}

static __always_inline void thread_done(struct thread_state *t)
{
	__u64 id;

	if (t->rx_depth || t->flushing)
		return;
	id = bpf_get_current_pid_tgid();
	bpf_map_delete_elem(&threads, &id);
}

static __always_inline void hist_add(__u64 *hist, __u64 v)
{
	__u32 b = virt_log2_bucket(v);

	if (b < VIRT_HIST_BUCKETS)
		hist[b]++;
}

/* ---------------------------------------------------------------- rx */

SEC("uprobe")
int BPF_KPROBE(virt_qemu_uprobe_rx, void *nc, const void *buf, __u64 size)
{
	struct thread_state *t = thread(true);

	if (!t)
		return 0;
	if (t->rx_depth++ == 0)
		t->rx_size = size;
	return 0;
}

/* > 0: delivered; 0: the guest had no buffers (the net layer queues the
 * packet and retries it); -1: the device cannot receive now. */
SEC("uretprobe")
int BPF_KRETPROBE(virt_qemu_uprobe_rx_ret, long ret)
{
	struct thread_state *t = thread(false);
	struct qemu_net_stats *s;

	if (!t || !t->rx_depth)
		return 0;
	if (--t->rx_depth == 0 && (s = proc_stats())) {
		if (ret > 0) {
			s->rx_packets++;
			s->rx_bytes += t->rx_size;
			hist_add(s->rx_hist, t->rx_size);
		} else {
			s->rx_dropped++;
		}
	}
	thread_done(t);
	return 0;
}

/* ---------------------------------------------------------------- tx */

SEC("uprobe")
int BPF_KPROBE(virt_qemu_uprobe_flush)
{
	struct thread_state *t = thread(true);

	if (!t)
		return 0;
	t->flushing = 1;
	t->flush_bytes = 0;
	return 0;
}

struct iov_walk {
	const struct iovec *iov;
	__u64 bytes;
};

static long iov_step(__u32 i, struct iov_walk *w)
{
	struct iovec v;

	if (bpf_probe_read_user(&v, sizeof(v), &w->iov[i]))
		return 1;
	w->bytes += v.iov_len;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(virt_qemu_uprobe_sendv, void *nc, const struct iovec *iov, int iovcnt)
{
	struct thread_state *t = thread(false);
	struct iov_walk w = { .iov = iov };
	struct qemu_net_stats *s;

	if (!t || !t->flushing || iovcnt <= 0)
		return 0;
	bpf_loop(iovcnt < QEMU_IOV_MAX ? iovcnt : QEMU_IOV_MAX, iov_step, &w, 0);
	t->flush_bytes += w.bytes;
	if ((s = proc_stats()))
		hist_add(s->txs_hist, w.bytes);
	return 0;
}

/* int32_t: packets sent (0: nothing to do), or -EBUSY when the backend
 * queued a packet (the flush resumes from virtio_net_tx_complete()). */
SEC("uretprobe")
int BPF_KRETPROBE(virt_qemu_uprobe_flush_ret, long rax)
{
	struct thread_state *t = thread(false);
	int ret = (int)rax;
	struct qemu_net_stats *s;

	if (!t || !t->flushing)
		return 0;
	t->flushing = 0;
	if ((s = proc_stats())) {
		s->tx_bytes += t->flush_bytes;
		if (ret < 0) {
			s->tx_busy++;
		} else if (ret > 0) {
			s->tx_flushes++;
			s->tx_packets += ret;
			hist_add(s->txp_hist, ret);
			hist_add(s->txb_hist, t->flush_bytes);
		}
	}
	thread_done(t);
	return 0;
}

/* ------------------------------------------------------ USDT: queues */

static __always_inline struct qemu_vq_stats *vq_stats(__u64 vq)
{
	struct qemu_vq_key k = { bpf_get_current_pid_tgid() >> 32, vq };
	return VIRT_LOOKUP_OR_INIT(vqs, &k, &zero_vq, drops, QEMU_DROP_VQ);
}

static __always_inline void vq_device(__u64 vdev, __u64 vq, __s64 index)
{
	struct qemu_vq_key k = { bpf_get_current_pid_tgid() >> 32, vq };
	struct qemu_vq_info *i = bpf_map_lookup_elem(&vqinfo, &k);
	struct qemu_vq_info v = { vdev, index };

	if (i && (i->index >= 0 || index < 0))
		return;
	bpf_map_update_elem(&vqinfo, &k, &v, BPF_ANY);
}

SEC("usdt")
int BPF_USDT(virt_qemu_uprobe_usdt_pop, void *vq, void *elem, unsigned int in_num, unsigned int out_num)
{
	struct qemu_vq_stats *s = vq_stats((__u64)vq);

	if (s)
		s->pops++;
	return 0;
}

SEC("usdt")
int BPF_USDT(virt_qemu_uprobe_usdt_fill, void *vq, void *elem, unsigned int len, unsigned int idx)
{
	struct qemu_vq_stats *s = vq_stats((__u64)vq);

	if (s) {
		s->fills++;
		s->fill_bytes += len;
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(virt_qemu_uprobe_usdt_flush, void *vq, unsigned int count)
{
	struct qemu_vq_stats *s = vq_stats((__u64)vq);

	if (s)
		s->flushes++;
	return 0;
}

SEC("usdt")
int BPF_USDT(virt_qemu_uprobe_usdt_queue_notify, void *vdev, int n, void *vq)
{
	struct qemu_vq_stats *s = vq_stats((__u64)vq);

	if (s)
		s->kicks++;
	vq_device((__u64)vdev, (__u64)vq, n);
	return 0;
}

static __always_inline void notified(void *vdev, void *vq)
{
	struct qemu_vq_stats *s = vq_stats((__u64)vq);

	if (s)
		s->notifies++;
	vq_device((__u64)vdev, (__u64)vq, -1);
}

SEC("usdt")
int BPF_USDT(virt_qemu_uprobe_usdt_notify, void *vdev, void *vq)
{
	notified(vdev, vq);
	return 0;
}

SEC("usdt")
int BPF_USDT(virt_qemu_uprobe_usdt_notify_irqfd, void *vdev, void *vq)
{
	notified(vdev, vq);
	return 0;
}
