// SPDX-License-Identifier: GPL-2.0
/* The floor: empty programs on the hooks the kvm family uses, per attach
 * method, selected at load time by bench/emptyload. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

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

SEC("tp_btf/kvm_entry")
int BPF_PROG(empty_blk_task_entry)
{
	struct blk_val *v = bpf_task_storage_get(&blk_task, bpf_get_current_task_btf(), 0,
						 BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (v)
		v->a++;
	return 0;
}
