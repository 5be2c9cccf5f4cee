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
