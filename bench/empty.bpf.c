// SPDX-License-Identifier: GPL-2.0
/* The floor: empty programs on the hooks the kvm family uses, per attach
 * method, selected at load time by bench/emptyload. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "virt_bpf.h"

char LICENSE[] SEC("license") = "GPL";

SEC("tp_btf/kvm_exit")
int BPF_PROG(empty_btf_exit) { return 0; }
SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_btf_entry) { return 0; }
SEC("raw_tp/kvm_exit")
int BPF_PROG(empty_raw_exit) { return 0; }
SEC("raw_tp/kvm_entry")
int BPF_PROG(empty_raw_entry) { return 0; }
SEC("tracepoint/kvm/kvm_exit")
int empty_tp_exit(void *ctx) { return 0; }
SEC("tracepoint/kvm/kvm_entry")
int empty_tp_entry(void *ctx) { return 0; }

/* The floor of nested-paging faults by kind ([kvm] npf, bench/npf.sh,
 * emptyload npf): the tp_btf pair and kvm_page_fault, empty. */
SEC("tp_btf/kvm_exit")
int BPF_PROG(empty_npf_exit) { return 0; }
SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_npf_entry) { return 0; }
SEC("tp_btf/kvm_page_fault")
int BPF_PROG(empty_npf_page_fault) { return 0; }

/* The floor of interrupt delivery latency ([kvm] interrupts = true,
 * bench/irq.sh, emptyload irq): the tp_btf pair, the seven hooks the
 * option attaches (pmda/kvm.c "irq_*", bpf/kvm.bpf.c) and timer_lateness's,
 * empty, each of the program type the family uses; the names end as the
 * family's do (virt_kvm_tp_btf_irq_*, *_timer_lateness), so one pattern
 * picks the hooks of both. */
SEC("tp_btf/kvm_exit")
int BPF_PROG(empty_irq_exit) { return 0; }
SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_irq_entry) { return 0; }
SEC("fentry/__apic_accept_irq")
int BPF_PROG(empty_irq_accept) { return 0; }
SEC("fentry/apic_timer_expired")
int BPF_PROG(empty_irq_timer_expired) { return 0; }
SEC("tp_btf/kvm_inj_virq")
int BPF_PROG(empty_irq_inject) { return 0; }
SEC("tp_btf/kvm_apic_ipi")
int BPF_PROG(empty_irq_ipi) { return 0; }
SEC("fentry/kvm_pv_send_ipi")
int BPF_PROG(empty_irq_pv_ipi) { return 0; }
SEC("tp_btf/kvm_msi_set_irq")
int BPF_PROG(empty_irq_msi) { return 0; }
SEC("fentry/kvm_apic_local_deliver")
int BPF_PROG(empty_irq_lvt) { return 0; }
/* and timer_lateness's one hook (virt_kvm_tp_btf_timer_lateness) */
SEC("tp_btf/kvm_wait_lapic_expire")
int BPF_PROG(empty_irq_timer_lateness) { return 0; }

/* The floor of the kvm family's scheduler hooks (sched = true): the same
 * three tp_btf tracepoints, empty (bench/sched.sh, emptyload sched). */
SEC("tp_btf/sched_switch")
int BPF_PROG(empty_sched_switch) { return 0; }
SEC("tp_btf/sched_wakeup")
int BPF_PROG(empty_sched_wakeup) { return 0; }
SEC("tp_btf/sched_migrate_task")
int BPF_PROG(empty_sched_migrate) { return 0; }

/* Building blocks of a per-exit program, each alone on kvm_entry (tp_btf),
 * so bench/blocks.sh can price them with kernel.bpf_stats_enabled. */
struct blk_val {
	__u64 a, b;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 512);
	__type(key, __u32);
	__type(value, struct blk_val);
} blk_array SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct blk_val);
} blk_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct blk_val);
} blk_lru SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct blk_val);
} blk_task SEC(".maps");

__u64 blk_sink;
static const struct blk_val blk_zero;

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_blk_none_entry) { return 0; }

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_blk_ktime_entry)
{
	blk_sink += bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_blk_pidtgid_entry)
{
	blk_sink += bpf_get_current_pid_tgid();
	return 0;
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_blk_array_entry)
{
	__u32 k = 7;
	struct blk_val *v = bpf_map_lookup_elem(&blk_array, &k);

	if (v)
		v->a++;
	return 0;
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_blk_hash_entry)
{
	__u32 k = bpf_get_current_pid_tgid() >> 32;
	struct blk_val *v = bpf_map_lookup_elem(&blk_hash, &k);

	if (!v) {
		bpf_map_update_elem(&blk_hash, &k, &blk_zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&blk_hash, &k);
	}
	if (v)
		v->a++;
	return 0;
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_blk_lru_entry)
{
	__u32 k = (__u32)bpf_get_current_pid_tgid();
	struct blk_val *v = bpf_map_lookup_elem(&blk_lru, &k);

	if (!v) {
		bpf_map_update_elem(&blk_lru, &k, &blk_zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&blk_lru, &k);
	}
	if (v)
		v->a++;
	return 0;
}

/* three counters of one row, as the kvm family's exit updates them:
 * plain adds (one CPU owns the row) and atomic adds (rows shared) */
__u64 blk_row[3];

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_blk_add3_entry)
{
	blk_row[0]++;
	blk_row[1] += 2;
	blk_row[2]++;
	return 0;
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_blk_atomic3_entry)
{
	__sync_fetch_and_add(&blk_row[0], 1);
	__sync_fetch_and_add(&blk_row[1], 2);
	__sync_fetch_and_add(&blk_row[2], 1);
	return 0;
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_blk_task_entry)
{
	struct blk_val *v = bpf_task_storage_get(&blk_task, bpf_get_current_task_btf(), 0,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (v)
		v->a++;
	return 0;
}

/* The virtio family's hooks (virtio_ring, a module: module BTF), empty:
 * "vadd" = the four virtqueue_add_* (what bcc virtiostat probes), "vall" =
 * every hook the family uses, with the program types it uses. */
SEC("fexit/virtqueue_add_sgs")
int BPF_PROG(empty_vadd_sgs) { return 0; }
SEC("fexit/virtqueue_add_outbuf")
int BPF_PROG(empty_vadd_outbuf) { return 0; }
SEC("fexit/virtqueue_add_inbuf")
int BPF_PROG(empty_vadd_inbuf) { return 0; }
SEC("fexit/virtqueue_add_inbuf_ctx")
int BPF_PROG(empty_vadd_inbuf_ctx) { return 0; }

SEC("fexit/virtqueue_add_sgs")
int BPF_PROG(empty_vall_add_sgs) { return 0; }
SEC("fexit/virtqueue_add_outbuf")
int BPF_PROG(empty_vall_add_outbuf) { return 0; }
SEC("fexit/virtqueue_add_inbuf")
int BPF_PROG(empty_vall_add_inbuf) { return 0; }
SEC("fexit/virtqueue_add_inbuf_ctx")
int BPF_PROG(empty_vall_add_inbuf_ctx) { return 0; }
SEC("fexit/virtqueue_get_buf_ctx")
int BPF_PROG(empty_vall_get_buf_ctx) { return 0; }
SEC("fexit/virtqueue_get_buf")
int BPF_PROG(empty_vall_get_buf) { return 0; }
SEC("fexit/virtqueue_kick_prepare")
int BPF_PROG(empty_vall_kick_prepare) { return 0; }
SEC("fexit/virtqueue_notify")
int BPF_PROG(empty_vall_notify) { return 0; }
SEC("fexit/virtqueue_kick")
int BPF_PROG(empty_vall_kick) { return 0; }
SEC("fexit/vring_interrupt")
int BPF_PROG(empty_vall_interrupt) { return 0; }
SEC("fexit/virtqueue_detach_unused_buf")
int BPF_PROG(empty_vall_detach) { return 0; }
SEC("fentry/vring_del_virtqueue")
int BPF_PROG(empty_vall_del) { return 0; }

/* The vhost family's hooks for vhost-net (modules vhost, vhost_net),
 * empty, with the program types the family uses. */
SEC("fentry/vhost_poll_wakeup")
int BPF_PROG(empty_vhost_wakeup) { return 0; }
SEC("fexit/vhost_exceeds_weight")
int BPF_PROG(empty_vhost_weight) { return 0; }
SEC("fentry/vhost_dev_cleanup")
int BPF_PROG(empty_vhost_cleanup) { return 0; }
SEC("fentry/handle_tx_kick")
int BPF_PROG(empty_vhost_tx) { return 0; }
SEC("fexit/handle_tx_kick")
int BPF_PROG(empty_vhost_tx_end) { return 0; }
SEC("fentry/handle_rx_kick")
int BPF_PROG(empty_vhost_rx) { return 0; }
SEC("fexit/handle_rx_kick")
int BPF_PROG(empty_vhost_rx_end) { return 0; }

/* ------------------------------------------------------------------ *
 * Limits (bench "limit" configurations): per family, the least a tool
 * must do for that family's latency histogram on the same hooks: read
 * the clock at both ends, one slot store and load, one bucket increment.
 * ------------------------------------------------------------------ */

/* limit: kvm */

/* kvm_exit -> kvm_entry latency histogram at its least (bench config
 * "limit", emptyload kvmlimit): the vCPU's slot is its struct kvm_vcpu *
 * hashed into a plain array (the verifier inlines the lookup); exit stores
 * the clock there, entry loads it and adds one to a log2 bucket. The low
 * 32 bits of the pointer feed the hash: a 32-bit move is the one ALU
 * operation the verifier lets a privileged program apply to a BTF pointer
 * (it yields a scalar; shifts and multiplies of the pointer are refused). */
#include "virt_bpf.h"

#define KVM_LIMIT_BITS 12

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << KVM_LIMIT_BITS);
	__type(key, __u32);
	__type(value, __u64);
} kvm_limit_ts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, VIRT_HIST_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} kvm_limit_hist SEC(".maps");

static __always_inline __u64 *kvm_limit_slot(const void *vcpu)
{
	__u32 lo;

	asm volatile("%[lo] = %[p]" : [lo] "=w"(lo) : [p] "w"(vcpu));
	lo = (lo * 0x9E3779B1u) >> (32 - KVM_LIMIT_BITS);
	return bpf_map_lookup_elem(&kvm_limit_ts, &lo);
}

SEC("tp_btf/kvm_exit")
int BPF_PROG(empty_kvmlimit_exit, struct kvm_vcpu *vcpu)
{
	__u64 *ts;

	if (vcpu && (ts = kvm_limit_slot(vcpu)))
		*ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_kvmlimit_entry, struct kvm_vcpu *vcpu)
{
	__u64 *ts, *n;
	__u32 b;

	if (!vcpu || !(ts = kvm_limit_slot(vcpu)) || !*ts)
		return 0;
	b = virt_log2_bucket(bpf_ktime_get_ns() - *ts);
	n = bpf_map_lookup_elem(&kvm_limit_hist, &b);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}



/* The same with the exit reason, as a per-reason histogram needs it
 * (bench config "limit_reason", emptyload kvmreason): the vendor's exit
 * code read at exit (what trace_kvm_exit() records: svm->vmcb->control.
 * exit_code, vmx->exit_reason.full; beyond struct kvm_vcpu, so probe
 * reads), stored with the clock; entry adds one to that reason's bucket. */
#include <bpf/bpf_core_read.h>

struct kvm_limit_vmcb_control___virt {
	__u32 exit_code;
} __attribute__((preserve_access_index));

struct kvm_limit_vmcb___virt {
	struct kvm_limit_vmcb_control___virt control;
} __attribute__((preserve_access_index));

struct kvm_limit_svm___virt {
	struct kvm_limit_vmcb___virt *vmcb;
} __attribute__((preserve_access_index));

struct kvm_limit_vmx_reason___virt {
	__u32 full;
} __attribute__((preserve_access_index));

struct kvm_limit_vmx___virt {
	struct kvm_limit_vmx_reason___virt exit_reason;
} __attribute__((preserve_access_index));

#define KVM_LIMIT_REASONS 512

struct kvm_limit_exit {
	__u64 ts;
	__u32 reason;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << KVM_LIMIT_BITS);
	__type(key, __u32);
	__type(value, struct kvm_limit_exit);
} kvm_limit_exits SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, KVM_LIMIT_REASONS * VIRT_HIST_BUCKETS);
	__type(key, __u32);
	__type(value, __u64);
} kvm_limit_rhist SEC(".maps");

static __always_inline struct kvm_limit_exit *kvm_limit_exit_slot(const void *vcpu)
{
	__u32 lo;

	asm volatile("%[lo] = %[p]" : [lo] "=w"(lo) : [p] "w"(vcpu));
	lo = (lo * 0x9E3779B1u) >> (32 - KVM_LIMIT_BITS);
	return bpf_map_lookup_elem(&kvm_limit_exits, &lo);
}

SEC("tp_btf/kvm_exit")
int BPF_PROG(empty_kvmreason_exit, struct kvm_vcpu *vcpu, __u32 isa)
{
	struct kvm_limit_exit *e;
	__u32 code;

	if (!vcpu || !(e = kvm_limit_exit_slot(vcpu)))
		return 0;
	if (isa == 2 && bpf_core_type_exists(struct kvm_limit_svm___virt))
		code = BPF_CORE_READ((struct kvm_limit_svm___virt *)vcpu, vmcb, control.exit_code);
	else if (bpf_core_type_exists(struct kvm_limit_vmx___virt))
		code = BPF_CORE_READ((struct kvm_limit_vmx___virt *)vcpu, exit_reason.full);
	else
		code = 0;
	e->reason = code & (KVM_LIMIT_REASONS - 1);
	e->ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_kvmreason_entry, struct kvm_vcpu *vcpu)
{
	struct kvm_limit_exit *e;
	__u64 *n;
	__u32 k;

	if (!vcpu || !(e = kvm_limit_exit_slot(vcpu)) || !e->ts)
		return 0;
	k = (e->reason & (KVM_LIMIT_REASONS - 1)) * VIRT_HIST_BUCKETS +
	    virt_log2_bucket(bpf_ktime_get_ns() - e->ts);
	n = bpf_map_lookup_elem(&kvm_limit_rhist, &k);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

/* limit: virtio */
/* "vlimit": clock at add and one slot store (the slot a hash of the
 * token picks); clock at completion, that slot's load, one bucket
 * increment. No queue, no counts: what a latency histogram cannot avoid. */
#include "virt_bpf.h"

#define VLIMIT_SLOTS	4096
__u64 vlimit_ts[VLIMIT_SLOTS];
__u64 vlimit_hist[VIRT_HIST_BUCKETS];

static __always_inline __u32 vlimit_slot(void *tok)
{
	return (__u32)(((__u64)tok * 0x9E3779B97F4A7C15ULL) >> 52) & (VLIMIT_SLOTS - 1);
}

static __always_inline void vlimit_add(void *tok)
{
	vlimit_ts[vlimit_slot(tok)] = bpf_ktime_get_ns();
}

static __always_inline void vlimit_done(void *tok)
{
	__u64 now = bpf_ktime_get_ns();

	if (tok)
		vlimit_hist[virt_log2_bucket(now - vlimit_ts[vlimit_slot(tok)])]++;
}

SEC("fexit/virtqueue_add_sgs")
int BPF_PROG(empty_vlimit_add_sgs, void *vq, void *sgs, unsigned int o, unsigned int i,
	     void *data) { vlimit_add(data); return 0; }
SEC("fexit/virtqueue_add_outbuf")
int BPF_PROG(empty_vlimit_add_outbuf, void *vq, void *sg, unsigned int num, void *data)
{ vlimit_add(data); return 0; }
SEC("fexit/virtqueue_add_inbuf")
int BPF_PROG(empty_vlimit_add_inbuf, void *vq, void *sg, unsigned int num, void *data)
{ vlimit_add(data); return 0; }
SEC("fexit/virtqueue_add_inbuf_ctx")
int BPF_PROG(empty_vlimit_add_inbuf_ctx, void *vq, void *sg, unsigned int num, void *data)
{ vlimit_add(data); return 0; }
SEC("fexit/virtqueue_get_buf_ctx")
int BPF_PROG(empty_vlimit_get_buf_ctx, void *vq, void *len, void *c, void *ret)
{ vlimit_done(ret); return 0; }
SEC("fexit/virtqueue_get_buf")
int BPF_PROG(empty_vlimit_get_buf, void *vq, void *len, void *ret)
{ vlimit_done(ret); return 0; }



/* limit: vhost */

/* The least a wakeup -> handler latency histogram needs on the vhost
 * family's hooks: a clock read at the wakeup, stored in the queue's slot
 * of a plain array; a clock read at the handler's start, the slot's load
 * and one bucket's increment. The queue is found as the family finds it
 * (container_of of the wait entry / the work: CO-RE offsets), hashed to
 * its slot. */
struct vhost_poll___hlimit {
	struct wait_queue_entry wait;
	struct { void *fn; } work;
} __attribute__((preserve_access_index));

struct vhost_virtqueue___hlimit {
	struct vhost_poll___hlimit poll;
} __attribute__((preserve_access_index));

#define HLIMIT_POLL	bpf_core_field_offset(struct vhost_virtqueue___hlimit, poll)
#define HLIMIT_WAIT	bpf_core_field_offset(struct vhost_poll___hlimit, wait)
#define HLIMIT_WORK	bpf_core_field_offset(struct vhost_poll___hlimit, work)
#define HLIMIT_SLOTS	256

__u64 hlimit_ts[HLIMIT_SLOTS];
__u64 hlimit_hist[VIRT_HIST_BUCKETS];

/* the pointer argument as a number (the verifier refuses arithmetic on a
 * BTF pointer; bpf_get_func_arg() is inlined), as the family reads it */
#define HLIMIT_ARG0(ctx)	({ __u64 __p = 0; bpf_get_func_arg(ctx, 0, &__p); __p; })

static __always_inline __u32 hlimit_slot(__u64 vq)
{
	return (__u32)((vq * 0x9E3779B97F4A7C15ULL) >> 56) & (HLIMIT_SLOTS - 1);
}

SEC("fentry/vhost_poll_wakeup")
int BPF_PROG(empty_hlimit_wakeup)
{
	hlimit_ts[hlimit_slot(HLIMIT_ARG0(ctx) - HLIMIT_WAIT - HLIMIT_POLL)] = bpf_ktime_get_ns();
	return 0;
}

static __always_inline void hlimit_handler(__u64 work)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 ts = hlimit_ts[hlimit_slot(work - HLIMIT_WORK - HLIMIT_POLL)];

	hlimit_hist[virt_log2_bucket(now > ts ? now - ts : 0)]++;
}

SEC("fentry/handle_tx_kick")
int BPF_PROG(empty_hlimit_tx)
{
	hlimit_handler(HLIMIT_ARG0(ctx));
	return 0;
}

SEC("fentry/handle_rx_kick")
int BPF_PROG(empty_hlimit_rx)
{
	hlimit_handler(HLIMIT_ARG0(ctx));
	return 0;
}
