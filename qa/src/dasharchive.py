"""qa/404: write a PCP archive (LOGIMPORT, pcp.pmi) of every metric in
metrics/*.def with its descriptor, host "qahost", 3 records; instances of
each family's instance domains are two prefixes (with the characters a
regex must escape: '/' and '.'; "7" beside "77"; VMs "web" and "web-01",
a hyphenated name, as users name VMs), histogram instances
"<prefix>::lo-hi" for each prefix and two buckets, the prefix with '_' for
each '-' as the agent writes it ("web_01::1024-2047", "web_01/net0/tx::...");
a string metric's value is the instance name (a bucket_prefix metric's: the
prefix, "web_01"), a number's at record t (0, 1, 2) 10 t + the length
of the instance name, times 10^7 for a nanosecond counter (10^8 ns/s:
10% of a CPU; a mean time per event of 10^7 ns) and 1000 for nanosecond
values (the percentiles: io's p99 2, 12, 22 us). Instances of kvm.vm.*
metrics are named by VM: "<vm>", "<vm>::lo-hi", "<vm>/<class>"; a VM's
instance has the labels the agent puts there (pmda/core/labels.c), vm_name
and vmm. Sub-reasons (kvm.pio.*, .msr.*, .cpuid.*, .mmio.*) and KVM's
statistics (kvm.vm.kvm_stat.*) have instances as the agent names them
("web/0x70/out", "web/other", "web/exits"). Two series differ, each equal
to the rule above at the last record (qa/407 reads that one), for qa/406's
pmie rules: port "web/0x3f8/out" counts 1 in the first second and 10 in
the next (a jump), and VM web-01's exits_unseen stays 26 (web's grows by
10 a record). A VM's vCPUs (kvm.vm.vcpus) are a VM's size, not the rule:
web has 2, web-01 1 (the per-vCPU share of their equal run delay: 5% and
10%).
    dasharchive.py TOP ARCHIVE"""
import glob
import re
import sys

import cpmapi as c
from pcp import pmi

top, out = sys.argv[1], sys.argv[2]
TYPES = {"PM_TYPE_U64": c.PM_TYPE_U64, "PM_TYPE_U32": c.PM_TYPE_U32, "PM_TYPE_64": c.PM_TYPE_64,
         "PM_TYPE_STRING": c.PM_TYPE_STRING}
SEMS = {"PM_SEM_COUNTER": c.PM_SEM_COUNTER, "PM_SEM_INSTANT": c.PM_SEM_INSTANT, "PM_SEM_DISCRETE": c.PM_SEM_DISCRETE}
log = pmi.pmiLogImport(out)
log.pmiSetHostname("qahost")
clusters, indoms, metrics = {}, {}, []
for f in sorted(glob.glob(top + "/metrics/*.def")):
    for l in open(f):
        m = re.match(r'VIRT_FAMILY\((\w+), "(\w+)", (\d+)\)', l)
        if m:
            clusters[m.group(1)] = int(m.group(3))
        m = re.match(r'VIRT_INDOM\((\w+), (\w+), (\d+),', l)
        if m:
            indoms[m.group(2)] = int(m.group(3))
        m = re.match(r'VIRT_METRIC\((\w+), (\w+), "([\w.]+)", (\d+), (\w+), (\w+), (\w+), (\w+)\)', l)
        if m:
            metrics.append(m.groups())
PREFIX = {"CONTROL": ["kvm", "virtio"], "KVM": ["io", "npf"], "VIRTIO": ["virtio0/req.0", "virtio1/requests"],
          "VHOST": ["web/net0/tx", "web-01/net0/tx"], "QEMU": ["77", "7"]}
# instance domains named by VM ("web" beside "web-01": the VM picker's
# anchoring, and a '-' that buckets write as '_')
INDOM_PREFIX = {"KVM_VM": ["web", "web-01"], "KVM_VCPU": ["web/vcpu0", "web-01/vcpu0"],
                "KVM_PIO": ["web/0x70/out", "web/0x3f8/out", "web-01/0x70/out", "web/other"],
                "KVM_MSR": ["web/0x10/rd", "web/0x6e0/wr", "web-01/0x10/rd"],
                "KVM_CPUID": ["web/0x0", "web/0x40000001", "web-01/0x0"],
                "KVM_MMIO": ["web/0xfee00300/wr", "web-01/0xfebf0000/rd"],
                "KVM_VM_STAT": ["web/exits", "web/io_exits", "web-01/exits"],
                "KVM_NPF": ["web/major", "web/minor", "web-01/major"],
                "KVM_IRQ": ["web/device", "web/timer", "web-01/device"], "KVM_IRQ_VM": ["web", "web-01"],
                "KVM_TIMER": ["web/late", "web/early", "web-01/late"]}
# histograms whose prefixes are not the family's: KVM's per-vCPU statistics
# (two of web's vCPU 0, one of web-01's)
HIST_PREFIX = {"KVM_VCPU_STAT_HIST": ["web/vcpu0/halt_wait_hist", "web/vcpu0/halt_poll_fail_hist",
                                      "web-01/vcpu0/halt_wait_hist"],
               "KVM_NPF_HIST": ["web/major", "web/minor", "web-01/major"],
               "KVM_IRQ_HIST": ["web/device", "web/timer", "web-01/device"],
               "KVM_TIMER_HIST": ["web/late", "web/early", "web-01/late"]}
# (metric, instance): its values at records 0, 1, 2
SERIES = {("virt.kvm.pio.count", "web/0x3f8/out"): (13, 14, 24),
          ("virt.kvm.vm.exits_unseen", "web-01"): (26, 26, 26),
          ("virt.kvm.vm.vcpus", "web"): (2, 2, 2), ("virt.kvm.vm.vcpus", "web-01"): (1, 1, 1)}
VM_CLASS = ["web/same_vm", "web/host", "web-01/other_vm"]


def bucket_prefix(name):
    """a histogram's prefix as the agent writes it (pmda/core/hist.h)"""
    return name.replace("-", "_")


plan = []
for fam, mid, name, item, typ, indom, sem, units in metrics:
    if typ not in TYPES:
        continue    # the event metric
    u = log.pmiUnits(0, 1, 0, 0, c.PM_TIME_NSEC, 0) if units == "NSEC" else \
        log.pmiUnits(1, 0, 0, c.PM_SPACE_BYTE, 0, 0) if units == "BYTE" else \
        log.pmiUnits(0, 0, 1, 0, 0, c.PM_COUNT_ONE) if units == "COUNT" else log.pmiUnits(0, 0, 0, 0, 0, 0)
    ind = c.PM_INDOM_NULL if indom in ("NOINDOM", "EVENT_PARAM") else log.pmiInDom(498, indoms[indom])
    log.pmiAddMetric("virt." + name, log.pmiID(498, clusters[fam], int(item)), TYPES[typ], ind, SEMS[sem], u)
    insts = [""]
    if indom not in ("NOINDOM", "EVENT_PARAM"):
        vm = name.startswith("kvm.vm.")
        if indom.endswith("_HIST"):
            pre = HIST_PREFIX.get(indom) or (INDOM_PREFIX["KVM_VM"] if vm else PREFIX[fam])
            insts = ["%s::%d-%d" % (bucket_prefix(p), lo, 2 * lo - 1) for p in pre for lo in (1024, 2048)]
        else:
            insts = INDOM_PREFIX.get(indom, VM_CLASS if vm else PREFIX[fam])
        for i, n in enumerate(insts):
            try:
                log.pmiAddInstance(ind, n, i)
            except pmi.pmiErr:
                pass    # another metric of the instance domain added it
    # time counters grow by 10^8 ns per second (10% of a CPU), percentiles
    # in microseconds' range (1000 ns steps)
    scale = 1 if units != "NSEC" else 10 ** 7 if sem == "PM_SEM_COUNTER" else 1000
    plan.append(("virt." + name, typ == "PM_TYPE_STRING", insts, scale))
vm_indom = log.pmiInDom(498, indoms["KVM_VM"])
for t in range(3):
    for name, string, insts, scale in plan:
        for i in insts:
            v = SERIES[name, i][t] if (name, i) in SERIES else 10 * t + len(i)
            text = bucket_prefix(i) if name.endswith(".bucket_prefix") else i or "x"
            log.pmiPutValue(name, i, text if string else str(scale * v))
    if t == 0:
        for n, vm in enumerate(INDOM_PREFIX["KVM_VM"]):
            log.pmiPutLabel(c.PM_LABEL_INSTANCES, vm_indom, n, "vm_name", vm)
            log.pmiPutLabel(c.PM_LABEL_INSTANCES, vm_indom, n, "vmm", "qemu")
    log.pmiWrite(1700000000 + t, 0)
del log
