/* vhost's structs, private to the vhost modules (drivers/vhost/vhost.h, the
 * vhost module's BTF), as bpf/vhost.bpf.c reads them: just the fields read,
 * all probe reads, behind accessors. Mirrors, not kernel-version flavours
 * (those are bpf/core_fixes.bpf.h's); where a field came later, its
 * comment says since when. */
#ifndef VIRT_VHOST_KERNEL_BPF_H
#define VIRT_VHOST_KERNEL_BPF_H

#include <bpf/bpf_core_read.h>

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

/* include/linux/mm_types.h struct mm_struct: owner since cf475ad28ac3
 * (v2.6.26), and only with CONFIG_MEMCG (a configuration, not a version:
 * see vhost_dev_owner) */
struct mm_struct___virt {
	struct task_struct *owner;
} __attribute__((preserve_access_index));

/* weight and byte_weight since e82b9b0727ff ("vhost: introduce
 * vhost_exceeds_weight()", 2019, also in the stable kernels of then) */
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

/* Offsets that turn the pointers vhost's hooks get into the queue's:
 * vq->poll, poll->wait (vhost_poll_wakeup's), poll->work (vhost_work's) */
static __always_inline __u32 vhost_vq_poll_offset(void)
{
	return bpf_core_field_offset(struct vhost_virtqueue___virt, poll);
}

static __always_inline __u32 vhost_poll_wait_offset(void)
{
	return bpf_core_field_offset(struct vhost_poll___virt, wait);
}

static __always_inline __u32 vhost_poll_work_offset(void)
{
	return bpf_core_field_offset(struct vhost_poll___virt, work);
}

static __always_inline __u64 vhost_vq_dev(__u64 vq)
{
	struct vhost_virtqueue___virt *q = (void *)vq;

	return (__u64)BPF_CORE_READ(q, dev);
}

static __always_inline __u64 vhost_vq_handle_kick(__u64 vq)
{
	struct vhost_virtqueue___virt *q = (void *)vq;

	return (__u64)BPF_CORE_READ(q, handle_kick);
}

static __always_inline unsigned int vhost_vq_poll_mask(__u64 vq)
{
	struct vhost_virtqueue___virt *q = (void *)vq;

	return BPF_CORE_READ(q, poll.mask);
}

static __always_inline __u64 vhost_poll_dev(__u64 poll)
{
	struct vhost_poll___virt *p = (void *)poll;

	return (__u64)BPF_CORE_READ(p, dev);
}

static __always_inline __u64 vhost_poll_work_fn(__u64 poll)
{
	struct vhost_poll___virt *p = (void *)poll;

	return (__u64)BPF_CORE_READ(p, work.fn);
}

/* dev->mm->owner: the task that owns the device's memory (the VMM), NULL
 * when the device has no mm yet or the kernel has no mm->owner
 * (CONFIG_MEMCG unset) */
static __always_inline struct task_struct *vhost_dev_owner(__u64 dev)
{
	struct vhost_dev___virt *d = (void *)dev;
	struct mm_struct___virt *mm = BPF_CORE_READ(d, mm);

	if (mm && bpf_core_field_exists(mm->owner))
		return BPF_CORE_READ(mm, owner);
	return NULL;
}

static __always_inline int vhost_dev_weight(__u64 dev)
{
	struct vhost_dev___virt *d = (void *)dev;

	return BPF_CORE_READ(d, weight);
}

static __always_inline int vhost_dev_byte_weight(__u64 dev)
{
	struct vhost_dev___virt *d = (void *)dev;

	return BPF_CORE_READ(d, byte_weight);
}

static __always_inline __u64 vhost_dev_vqs(__u64 dev)
{
	struct vhost_dev___virt *d = (void *)dev;

	return (__u64)BPF_CORE_READ(d, vqs);
}

static __always_inline int vhost_dev_nvqs(__u64 dev)
{
	struct vhost_dev___virt *d = (void *)dev;

	return BPF_CORE_READ(d, nvqs);
}

#endif
