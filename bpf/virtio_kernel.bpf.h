#ifndef VIRT_VIRTIO_KERNEL_BPF_H
#define VIRT_VIRTIO_KERNEL_BPF_H

#include <bpf/bpf_core_read.h>

/* virtio's ring struct as bpf/virtio.bpf.c reads it: a mirror, not a
 * kernel-version flavour (those are bpf/core_fixes.bpf.h's).
 *
 * drivers/virtio/virtio_ring.c struct vring_virtqueue: private to that
 * file (the virtio_ring module's BTF, or vmlinux's when built in), its
 * first member the struct virtqueue (to_vvq() is a container_of: both
 * pointers are equal). free_head, the head of the free descriptor list
 * (the head the next add takes), has been a member since 0a8a69dd77dd
 * ("Virtio helper routines for a descriptor ringbuffer implementation",
 * v2.6.24) and stayed one, shared by both layouts, when 1ce9e6055fa0
 * ("virtio_ring: introduce packed ring support", v5.0) moved the split
 * ring's own fields into vq->split; vring_map_one_sg(vq, ...), the hook
 * that reads it, exists since 780bc7903a32 ("virtio_ring: Support DMA
 * APIs", v4.6). */
struct vring_virtqueue___virt {
	unsigned int free_head;
} __attribute__((preserve_access_index));

/* vq->free_head of a BTF-typed vq (fentry: a plain load) */
static __always_inline unsigned int vring_free_head(void *vq)
{
	return ((struct vring_virtqueue___virt *)vq)->free_head;
}

/* vq->free_head of an untyped vq (kprobe: a probe read) */
static __always_inline unsigned int vring_free_head_probe(void *vq)
{
	struct vring_virtqueue___virt *v = vq;

	return BPF_CORE_READ(v, free_head);
}

#endif
