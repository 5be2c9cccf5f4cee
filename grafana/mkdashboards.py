#!/usr/bin/python3
"""Write the grafana-pcp dashboards of pmdavirt (Vector: live from pmproxy,
Valkey: history from pmseries, many hosts) from one panel list, so both
stay alike. (grafana-pcp 5.2 renamed its Redis datasource Valkey, with no
alias for the old id: a Redis dashboard has no datasource there.) And
Grafana's provisioning files for them, in provisioning/: the grafana-pcp
app enabled, a datasource of each kind (fixed uids, the dashboards'
default choice) and a file provider of the installed dashboards.

    grafana/mkdashboards.py [outdir]     (default: this directory)

qa/404 checks that the committed files are what this prints, that every
expression names a metric of ours and every histogram has a heatmap, and
that the provisioning finds what `make install` installs."""
import json
import os
import re
import sys

DATASOURCES = {
    "vector": ("performancecopilot-vector-datasource", "PCP Vector",
               "pmdavirt: live (PCP Vector)", "now-5m", "5s"),
    "valkey": ("performancecopilot-valkey-datasource", "PCP Valkey",
               "pmdavirt: history (PCP Valkey)", "now-6h", "1m"),
}
# Provisioning (Grafana reads /etc/grafana/provisioning/*/ at start): the
# app that holds grafana-pcp's datasources, and a datasource of each kind
# under a name and uid of its own (a datasource "PCP Vector" of grafana-pcp's
# provisioning or the user's stays as it is) on pmproxy of this host.
# PROVISIONED is the datasource each dashboard's $datasource starts at.
APP = "performancecopilot-pcp-app"
PMPROXY = "http://localhost:44322"
PROVISIONED = {kind: ("%s (pmdavirt)" % DATASOURCES[kind][1], "pmdavirt-pcp-" + kind)
               for kind in DATASOURCES}
# where `make install` puts the dashboards (install-files writes its
# $PCP_PMDAS_DIR/virt/grafana in place of this default)
DASHBOARD_DIR = "/var/lib/pcp/pmdas/virt/grafana"

# A heatmap shows one prefix of its histogram's instances ("<prefix>::lo-hi":
# grafana-pcp reads the part after the first '-' as the bucket bound, so
# two prefixes in one panel would share buckets, and a prefix has '_' for
# each '-' of its instance's name: VM web-01's buckets are "web_01::lo-hi").
# Each selector is a dashboard variable of prefixes, starting at the first
# (not "All": a heatmap per prefix at once); a heatmap repeats over it.
# (On Valkey a selector is a text box: VALKEY_HEATMAP_NOTE.)
#   name: (label, metric whose values are the prefixes)
SELECTORS = {
    "reason": ("exit reason", "virt.kvm.exit.reason"),
    "hypercall": ("hypercall", "virt.kvm.hypercall.number"),
    "vmmreason": ("VMM exit reason", "virt.kvm.userspace.reason"),
    "vqueue": ("virtqueue", "virt.virtio.queue.name"),
    "hqueue": ("vhost queue", "virt.vhost.queue.bucket_prefix"),
    "qemu": ("QEMU process", "virt.qemu.process.bucket_prefix"),
    "vmbuckets": ("VM (heatmaps: '-' as '_')", "virt.kvm.vm.bucket_prefix"),
}

# The VM picker (Vector): a variable of VM names; the panels of per-VM,
# per-vCPU and vhost queue rows show the VMs picked. Their instances start
# with the VM's name: "<vm>" (the pattern's tail "$"), "<vm>/vcpu<N>",
# "<vm>/<class>", "<vm>/<device>/<queue>" and the sub-reasons' "<vm>/<key>"
# (tail "/"); of KVM's statistics "<vm>/<stat>" only "<vm>/exits", KVM's
# count beside the agent's (tail "/exits$"). It starts at the first VM;
# "All" matches every instance (also a vhost queue whose owner has made no
# KVM exit yet). The first group a metric starts with is its filter. The
# per-VM heatmaps ("<vm with '_' for '-'>::lo-hi") repeat over the selector
# vmbuckets instead: Grafana cannot turn the picked web-01 into web_01.
VM = ("vm", "VM", "virt.kvm.vm.name")
VM_FILTER = {"virt.kvm.vm.run_delay_by": "/", "virt.kvm.vm.npf.": "/",
             "virt.kvm.vm.irq.": "/", "virt.kvm.vm.timer.": "/", "virt.kvm.vm.kvm_stat.count": "/exits$", "virt.kvm.vm.": "$",
             "virt.kvm.vcpu.": "/", "virt.kvm.pio.": "/", "virt.kvm.msr.": "/", "virt.kvm.cpuid.": "/",
             "virt.kvm.mmio.": "/", "virt.vhost.": "/"}
# The VM picker (Valkey): the values of the label vm_name the agent puts on
# a VM's instances (grafana-pcp's label_values()). The query selects the
# host's series alone: an instance-name qualifier ("instance.name =~")
# would select the same series (one per metric and host, its values every
# instance's: PCP 6.0.3, qa/404) after a regex over every instance name
# of the fleet, 12-22 s a panel at 10 hosts of 50 VMs and over grafana-pcp's
# 60 s at 100 (bench/run fleet, doc/scale.md). So the panel keeps the VM's
# rows by a Grafana transformation (filterFieldsByName) on the names
# grafana-pcp gives them, "<metric>[<instance>]", the picked VMs in the
# pattern (Grafana 11 interpolates variables in a transformation's options). PCP 6.0.3's
# pmseries also loads no instance labels (PCP issue 2418): the list is
# empty there, a VM's name is typed in (allowCustomValue) or "All".
VALKEY_VM = ("vm", "VM", "label_values(vm_name)")
# Valkey heatmaps: the query returns every prefix's buckets, and
# grafana-pcp's heatmap format names each by its bound alone, so a panel
# asks in its time series format ("<metric>[<prefix>::lo-hi]"), keeps one
# prefix's buckets (filterFieldsByName, the heatmap's selector in the
# pattern) and names them by their bound (renameByRegex). pmseries lists
# no instance names as a variable's options (label_values() lists labels,
# and instances have none on PCP 6.0.3), so a selector is a text box: the
# prefix typed, one heatmap.
VALKEY_HEATMAP_NOTE = ("One %s's buckets: type its bucket prefix in the %s box at the top "
                       "(pminfo -f %s lists them; a VM's name with '_' for '-'). pmseries "
                       "returns every prefix's buckets; the panel keeps the typed one's.")

ROWS = [
    ("agent: why a family shows nothing", [
        ("family modules (virt.control.module.status first)", "table",
         ["virt.control.module.status", "virt.control.module.method",
          "virt.control.module.programs", "virt.control.module.dropped"], "short"),
    ]),
    # a nanosecond counter's panel in "percentunit" is a share of one CPU:
    # the datasources rate a counter and divide a time counter's rate by
    # its unit (grafana-pcp's time utilization conversion), so the queries
    # are the metrics themselves, not "/ 1e9"
    ("Why is my VM slow (host scheduler, halt polling, exits)", [
        ("run delay: each wait for a host CPU (ns)", "heatmap", ["virt.kvm.vm.run_delay_hist"], "ns", "vmbuckets"),
        ("halt duration (ns)", "heatmap", ["virt.kvm.vm.halt_hist"], "ns", "vmbuckets"),
        # KVM's own per-vCPU histogram ([kvm] vcpu_stats = true), the
        # VM's vCPUs' buckets side by side: "<vm>/vcpu<N>/halt_wait_hist::lo-hi"
        ("KVM's halt waits, its vCPUs' buckets side by side (vcpu_stats = true; ns)", "heatmap",
         ["virt.kvm.vcpu.kvm_hist"], "ns", "vmbuckets", "/vcpu[0-9]+/halt_wait_hist"),
        ("run delay per VM (vCPUs runnable, not running), share of one CPU", "graph",
         ["virt.kvm.vm.run_delay"], "percentunit"),
        ("run delay by what held the CPU (<vm>/<class>), share of one CPU", "stack",
         ["virt.kvm.vm.run_delay_by"], "percentunit"),
        # guest memory the host had to fault in ([kvm] npf = true):
        # "<vm>/<kind>", the latency's buckets "<vm>/<kind>::lo-hi"
        ("nested-paging faults/s by kind (<vm>/<kind>; npf = true)", "stack",
         ["virt.kvm.vm.npf.count"], "ops"),
        ("time in major nested-paging faults (host swap-in, file read), share of one CPU", "graph",
         ["virt.kvm.vm.npf_major_time"], "percentunit"),
        ("major nested-paging fault latency (npf = true; ns)", "heatmap",
         ["virt.kvm.vm.npf.latency"], "ns", "vmbuckets", "/major"),
        # interrupts into the guest and its TSC-deadline timers ([kvm]
        # interrupts, timer_lateness): "<vm>/<kind>", "<vm>/late|early"
        ("interrupts/s by kind (<vm>/<kind>; interrupts = true)", "stack",
         ["virt.kvm.vm.irq.count"], "ops"),
        ("interrupt delivery latency p99 by kind (interrupts = true)", "graph",
         ["virt.kvm.vm.irq.latency_p99"], "ns"),
        ("device interrupt (MSI) delivery latency (interrupts = true; ns)", "heatmap",
         ["virt.kvm.vm.irq.latency"], "ns", "vmbuckets", "/device"),
        ("guest timers fired late: how late (timer_lateness = true; ns)", "heatmap",
         ["virt.kvm.vm.timer.lateness"], "ns", "vmbuckets", "/late"),
        ("run delay p99 per VM (one wait)", "graph", ["virt.kvm.vm.run_delay_p99"], "ns"),
        ("time in exits per VM, share of one CPU", "graph", ["virt.kvm.vm.exit_time"], "percentunit"),
        ("halts/s per VM: all, ended by polling, slept", "graph",
         ["virt.kvm.vm.halts", "virt.kvm.vm.halt_polled", "virt.kvm.vm.halt_slept"], "ops"),
        ("halt polling per VM (host CPU burnt), share of one CPU", "graph",
         ["virt.kvm.vm.halt_poll_time"], "percentunit"),
    ]),
    ("KVM exits (host)", [
        ("exit latency per reason (ns)", "heatmap", ["virt.kvm.exit.latency"], "ns", "reason"),
        ("exits/s per reason", "graph", ["virt.kvm.exit.count"], "ops"),
        ("exit latency p99 per reason", "graph", ["virt.kvm.exit.latency_p99"], "ns"),
        ("exits/s per VM", "graph", ["virt.kvm.vm.exits"], "ops"),
        ("exits/s per vCPU", "graph", ["virt.kvm.vcpu.exits"], "ops"),
        ("hypercall latency (ns)", "heatmap", ["virt.kvm.hypercall.latency"], "ns", "hypercall"),
        ("VMM (userspace exit) handling time (ns)", "heatmap", ["virt.kvm.userspace.latency"], "ns", "vmmreason"),
        ("VMM exits/s per KVM_EXIT reason", "graph", ["virt.kvm.userspace.count"], "ops"),
        ("VMM handling time p99 per KVM_EXIT reason", "graph", ["virt.kvm.userspace.latency_p99"],
         "ns"),
        ("hypercall latency p99 per hypercall", "graph", ["virt.kvm.hypercall.latency_p99"], "ns"),
    ]),
    # per VM and key ([kvm] subreasons = true), the busiest first in the
    # legend; KVM's own count of a VM's exits beside the agent's
    ("What the exits are about (sub-reasons) and KVM's own books (host)", [
        ("port I/O exits/s (<vm>/<port>/<in|out>), busiest first", "top", ["virt.kvm.pio.count"], "ops"),
        ("time in port I/O exits, share of one CPU", "top", ["virt.kvm.pio.time"], "percentunit"),
        ("MSR exits/s (<vm>/<msr>/<rd|wr>), busiest first", "top", ["virt.kvm.msr.count"], "ops"),
        ("time in MSR exits, share of one CPU", "top", ["virt.kvm.msr.time"], "percentunit"),
        ("CPUID exits/s (<vm>/<leaf>), busiest first", "top", ["virt.kvm.cpuid.count"], "ops"),
        ("time in CPUID exits, share of one CPU", "top", ["virt.kvm.cpuid.time"], "percentunit"),
        ("MMIO exits/s (<vm>/<gpa>/<rd|wr>), busiest first", "top", ["virt.kvm.mmio.count"], "ops"),
        ("time in MMIO exits, share of one CPU", "top", ["virt.kvm.mmio.time"], "percentunit"),
        ("exits/s per VM: the agent's (<vm>) and KVM's own count (<vm>/exits)", "graph",
         ["virt.kvm.vm.exits", "virt.kvm.vm.kvm_stat.count"], "ops"),
        ("exits KVM counted and the agent did not (exits_unseen) per VM", "graph",
         ["virt.kvm.vm.exits_unseen"], "short"),
    ]),
    ("virtio queues (guest)", [
        ("virtqueues", "table", ["virt.virtio.queue.driver", "virt.virtio.queue.device",
                                 "virt.virtio.sgs.in", "virt.virtio.sgs.out",
                                 "virt.virtio.bytes.in", "virt.virtio.bytes.out",
                                 "virt.virtio.inflight"], "short"),
        ("add to completion latency (ns)", "heatmap", ["virt.virtio.latency"], "ns", "vqueue"),
        ("bytes/s out per queue", "graph", ["virt.virtio.bytes.out"], "Bps"),
        ("bytes/s in per queue", "graph", ["virt.virtio.bytes.in"], "Bps"),
        ("buffers in flight", "graph", ["virt.virtio.inflight"], "short"),
        ("ring full/s", "graph", ["virt.virtio.ring_full"], "ops"),
        ("latency p99 per queue", "graph", ["virt.virtio.latency_p99"], "ns"),
    ]),
    ("vhost queues (host)", [
        ("wakeup to handler latency (ns)", "heatmap", ["virt.vhost.latency"], "ns", "hqueue"),
        ("packets per handler run", "heatmap", ["virt.vhost.batch.packets"], "short", "hqueue"),
        ("bytes per handler run", "heatmap", ["virt.vhost.batch.bytes"], "bytes", "hqueue"),
        ("kicks/s and wakeups/s", "graph", ["virt.vhost.kicks", "virt.vhost.wakeups"], "ops"),
        ("stalls/s", "graph", ["virt.vhost.stalls"], "ops"),
        ("runs over budget/s", "graph", ["virt.vhost.weight_exceeded"], "ops"),
        ("latency p99 per queue", "graph", ["virt.vhost.latency_p99"], "ns"),
        ("packets and bytes per handler run, p99 per queue", "graph",
         ["virt.vhost.batch.packets_p99", "virt.vhost.batch.bytes_p99"], "short"),
    ]),
    ("QEMU processes (host, device side without vhost)", [
        ("received packet size (bytes)", "heatmap", ["virt.qemu.net.rx.bytes"], "bytes", "qemu"),
        ("sent packet size (bytes)", "heatmap", ["virt.qemu.net.tx.sizes"], "bytes", "qemu"),
        ("packets per TX flush", "heatmap", ["virt.qemu.net.tx.packets"], "short", "qemu"),
        ("bytes per TX flush", "heatmap", ["virt.qemu.net.tx.bytes"], "bytes", "qemu"),
        ("packets/s delivered and sent", "graph",
         ["virt.qemu.net.rx.delivered", "virt.qemu.net.tx.sent"], "pps"),
        ("RX deferred/s (guest out of buffers)", "graph", ["virt.qemu.net.rx.deferred"], "ops"),
        ("virtqueue kicks/s and interrupts/s (USDT)", "graph",
         ["virt.qemu.vq.kicks", "virt.qemu.vq.notifies"], "ops"),
    ]),
]


def vm_tail(metric, selector):
    """What follows the VM's name in the instances of a per-VM metric
    (a regex: "$" its end), or None for a metric not named by VM."""
    if selector in SELECTORS:
        return None
    for group, tail in VM_FILTER.items():
        if metric.startswith(group):
            return tail
    return None


def expression(kind, metric, selector, infix=""):
    """The query of one target: Vector takes a metric or a derived-metric
    expression (registered through pmproxy's /pmapi/derive), Valkey a
    pmseries query, filtered by host (the panel keeps the picked VM's rows:
    valkey_transformations). infix: what comes between a heatmap's selector
    and "::" in its instances (a regex)."""
    tail = None if selector else vm_tail(metric, selector)
    if kind == "vector":
        # PCP's matchinst(): /pattern/ is a POSIX ERE; Grafana's regex
        # format escapes '/' and the regex characters of the value
        if selector:
            return "matchinst(/^${%s:regex}%s::/, %s)" % (selector, infix.replace("/", "\\/"), metric)
        if tail:
            return "matchinst(/^${%s:regex}%s/, %s)" % (VM[0], tail.replace("/", "\\/"), metric)
        return metric
    return '%s{hostname == "$host"}' % metric


def js_escape(text):
    """text as a literal in a JavaScript regex"""
    return re.sub(r'([\\^$*+?.()|\[\]{}/])', r'\\\1', text)


def valkey_row_pattern(metric, selector, infix=""):
    """The filterFieldsByName pattern (a JavaScript regex, "/.../") of one
    target's rows on Valkey, which grafana-pcp names "<metric>[<instance>]"
    (Grafana may append the instance's labels): the rows of the picked VMs
    or, in a heatmap, of the typed prefix; None: every row."""
    if selector:
        inst = "(?:${%s:regex})%s::" % (selector, infix.replace("/", "\\/"))
    else:
        tail = vm_tail(metric, selector)
        if not tail:
            return None
        inst = "(?:${%s:regex})%s" % (VALKEY_VM[0], tail.replace("/", "\\/").replace("$", "\\]"))
    return "^%s\\[%s" % (js_escape(metric), inst)


def valkey_transformations(item):
    """A Valkey panel's transformations: its rows kept (the time field and
    each target's rows) and, in a heatmap, each bucket named by its upper
    bound, as grafana-pcp's heatmap format names it."""
    ptype, exprs = item[1:3]
    selector = item[4] if len(item) > 4 else None
    infix = item[5] if len(item) > 5 else ""
    pats = [valkey_row_pattern(e, selector, infix) for e in exprs]
    if not any(pats):
        return []
    out = [{"id": "filterFieldsByName",
            "options": {"include": {"pattern": "/^time$|%s/" % "|".join(
                p or "^%s\\[" % js_escape(e) for p, e in zip(pats, exprs))}}}]
    if ptype == "heatmap":
        out.append({"id": "renameByRegex",
                    "options": {"regex": "/^.*::[0-9]+-([0-9]+)\\].*$/", "renamePattern": "$1"}})
    return out


def panel(kind, pid, item, x, y, w, h):
    title, ptype, exprs, unit = item[:4]
    selector = item[4] if len(item) > 4 else None
    infix = item[5] if len(item) > 5 else ""
    p = {
        "id": pid,
        "title": title,
        "datasource": "$datasource",
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "targets": [],
    }
    for i, e in enumerate(exprs):
        # Valkey has no table format: tables take its time series' last values
        fmt = {"heatmap": "heatmap" if kind == "vector" else "time_series",
               "table": "metrics_table" if kind == "vector" else "time_series"}.get(ptype, "time_series")
        p["targets"].append({"refId": chr(ord("A") + i), "expr": expression(kind, e, selector, infix),
                             "format": fmt})
    if ptype == "heatmap":
        if kind == "vector":
            p.update({"title": "%s: $%s" % (title, selector), "repeat": selector,
                      "repeatDirection": "h", "maxPerRow": 2})
        else:
            label, metric = SELECTORS[selector]
            p.update({"title": "%s: $%s" % (title, selector),
                      "description": VALKEY_HEATMAP_NOTE % (label, label, metric)})
        p.update({
            "type": "heatmap",
            "dataFormat": "tsbuckets",
            "yBucketBound": "upper",
            "hideZeroBuckets": True,
            "yAxis": {"format": unit, "logBase": 1, "show": True},
            "cards": {"cardPadding": 0},
            "color": {"mode": "spectrum", "colorScheme": "interpolateOranges"},
            "legend": {"show": False},
            "tooltip": {"show": True},
        })
    elif ptype == "table":
        merge = {"id": "merge", "options": {}} if kind == "vector" else \
            {"id": "reduce", "options": {"reducers": ["lastNotNull"]}}
        p.update({"type": "table", "transformations": [merge]})
    else:
        p.update({"type": "timeseries",
                  "fieldConfig": {"defaults": {"unit": unit}, "overrides": []}})
        if ptype == "stack":
            p["fieldConfig"]["defaults"]["custom"] = {"stacking": {"mode": "normal", "group": "A"},
                                                      "fillOpacity": 50}
        elif ptype == "top":
            # the legend as a table, its rows by mean over the time range,
            # highest first: the busiest keys on top
            p["options"] = {"legend": {"displayMode": "table", "placement": "right",
                                       "calcs": ["mean", "max"], "sortBy": "Mean", "sortDesc": True},
                            "tooltip": {"mode": "multi", "sort": "desc"}}
    if kind == "valkey" and valkey_transformations(item):
        p["transformations"] = valkey_transformations(item) + p.get("transformations", [])
    return p


def variables(kind):
    dstype, dsname = DATASOURCES[kind][:2]
    # the provisioned datasource; where there is none, Grafana takes the
    # default datasource of the type or its first
    name, uid = PROVISIONED[kind]
    out = [{"name": "datasource", "type": "datasource", "query": dstype,
            "label": dsname, "hide": 0, "current": {"selected": True, "text": name, "value": uid},
            "options": [], "refresh": 1}]
    if kind == "valkey":
        out.append({"name": "host", "type": "query", "datasource": "$datasource",
                    "query": "label_values(hostname)", "label": "host", "hide": 0,
                    "current": {}, "options": [], "refresh": 1, "multi": False,
                    "includeAll": False, "regex": "", "sort": 1})
        out.append({"name": VALKEY_VM[0], "type": "query", "datasource": "$datasource",
                    "query": VALKEY_VM[2], "label": VALKEY_VM[1], "hide": 0,
                    "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
                    "options": [], "refresh": 2, "multi": True, "includeAll": True,
                    "allValue": ".*", "allowCustomValue": True, "regex": "", "sort": 1})
        for name, (label, metric) in SELECTORS.items():
            # a prefix typed (VALKEY_HEATMAP_NOTE): empty, no heatmap
            out.append({"name": name, "type": "textbox", "query": "", "label": label, "hide": 0,
                        "current": {"text": "", "value": ""}, "options": []})
    if kind == "vector":
        # Grafana starts a variable with no current value at its first
        # option, which "All" would be: no "All", so the picker starts at
        # the first VM (several can be picked, multi)
        out.append({"name": VM[0], "type": "query", "datasource": "$datasource",
                    "query": VM[2], "label": VM[1], "hide": 0, "current": {},
                    "options": [], "refresh": 2, "multi": True, "includeAll": False,
                    "allValue": ".*", "regex": "", "sort": 1})
        for name, (label, metric) in SELECTORS.items():
            # the values of the name metric: the prefixes the host has now
            out.append({"name": name, "type": "query", "datasource": "$datasource",
                        "query": metric, "label": label, "hide": 0, "current": {},
                        "options": [], "refresh": 2, "multi": True, "includeAll": False,
                        "regex": "", "sort": 1})
    return out


def dashboard(kind):
    title, span, refresh = DATASOURCES[kind][2:]
    panels, pid, y = [], 1, 0
    for row_title, items in ROWS:
        panels.append({"id": pid, "type": "row", "title": row_title, "collapsed": False,
                       "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": []})
        pid, y = pid + 1, y + 1
        # heatmaps first, one line each (a repeated panel fills its line)
        items = sorted(items, key=lambda it: it[1] != "heatmap")
        col = 0
        for item in items:
            if item[1] == "heatmap" or item[1] == "table":
                if col:
                    y, col = y + 8, 0
                panels.append(panel(kind, pid, item, 0, y, 24, 8))
                y += 8
            else:
                panels.append(panel(kind, pid, item, 12 * col, y, 12, 8))
                if col:
                    y += 8
                col = 1 - col
            pid += 1
        if col:
            y += 8
    return {
        "title": title,
        "uid": "pmdavirt-" + kind,
        "tags": ["pcp-" + kind, "pmdavirt", "virtualization"],
        "schemaVersion": 27,
        "version": 1,
        "editable": True,
        "time": {"from": span, "to": "now"},
        "refresh": refresh,
        "templating": {"list": variables(kind)},
        "annotations": {"list": []},
        "panels": panels,
    }


def provisioning():
    """Grafana's provisioning files (YAML, written as text: the values are
    plain words, URLs and paths), by directory."""
    head = ("# pmdavirt (written by grafana/mkdashboards.py): link or copy into\n"
            "# /etc/grafana/provisioning/%s/ (doc/tools.md)\napiVersion: 1\n")
    plugins = head % "plugins" + "apps:\n  - type: %s\n    disabled: false\n" % APP
    ds = head % "datasources" + "datasources:\n"
    for kind, (dstype, _, _, _, _) in DATASOURCES.items():
        name, uid = PROVISIONED[kind]
        ds += ("  - name: %s\n    type: %s\n    uid: %s\n    access: proxy\n    url: %s\n"
               "    isDefault: false\n    editable: true\n" % (name, dstype, uid, PMPROXY))
        if kind == "vector":
            ds += "    jsonData:\n      hostspec: ''\n      retentionTime: 5m\n"
    dash = head % "dashboards" + ("providers:\n  - name: pmdavirt\n    orgId: 1\n    folder: pmdavirt\n"
                                  "    type: file\n    disableDeletion: false\n"
                                  "    updateIntervalSeconds: 60\n    allowUiUpdates: false\n"
                                  "    options:\n      path: %s\n" % DASHBOARD_DIR)
    return {"plugins": plugins, "datasources": ds, "dashboards": dash}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for kind in DATASOURCES:
        with open(os.path.join(out, "pmdavirt-%s.json" % kind), "w") as f:
            json.dump(dashboard(kind), f, indent=2, sort_keys=True)
            f.write("\n")
    for d, text in provisioning().items():
        os.makedirs(os.path.join(out, "provisioning", d), exist_ok=True)
        with open(os.path.join(out, "provisioning", d, "pmdavirt.yaml"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
