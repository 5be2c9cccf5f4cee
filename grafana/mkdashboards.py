#!/usr/bin/python3
"""Write the grafana-pcp dashboards of pmdavirt (Vector: live from pmproxy,
Redis: history from pmseries) from one panel list, so both stay alike.

    grafana/mkdashboards.py [outdir]     (default: this directory)

qa/404 checks that the committed JSON is what this prints and that every
expression names a metric of ours and every histogram has a heatmap."""
import json
import os
import sys

DATASOURCES = {
    "vector": ("performancecopilot-vector-datasource", "PCP Vector",
               "pmdavirt: live (PCP Vector)", "now-5m", "5s"),
    "redis": ("performancecopilot-redis-datasource", "PCP Redis",
              "pmdavirt: history (PCP Redis)", "now-6h", "1m"),
}

# (title, kind, expressions, unit); kind: heatmap | graph | table
ROWS = [
    ("KVM exits (host)", [
        ("exit latency per reason (ns)", "heatmap", ["virt.kvm.exit.latency"], "ns"),
        ("exits/s per reason", "graph", ["virt.kvm.exit.count"], "ops"),
        ("exit latency p99 per reason", "graph", ["virt.kvm.exit.latency_p99"], "ns"),
        ("exits/s per VM", "graph", ["virt.kvm.vm.exits"], "ops"),
        ("hypercall latency (ns)", "heatmap", ["virt.kvm.hypercall.latency"], "ns"),
        ("VMM (userspace exit) handling time (ns)", "heatmap", ["virt.kvm.userspace.latency"], "ns"),
        ("VMM exits/s per KVM_EXIT reason", "graph", ["virt.kvm.userspace.count"], "ops"),
    ]),
    ("virtio queues (guest)", [
        ("virtqueues", "table", ["virt.virtio.queue.driver", "virt.virtio.queue.device",
                                 "virt.virtio.sgs.in", "virt.virtio.sgs.out",
                                 "virt.virtio.bytes.in", "virt.virtio.bytes.out",
                                 "virt.virtio.inflight"], "short"),
        ("add to completion latency (ns)", "heatmap", ["virt.virtio.latency"], "ns"),
        ("bytes/s out per queue", "graph", ["virt.virtio.bytes.out"], "Bps"),
        ("bytes/s in per queue", "graph", ["virt.virtio.bytes.in"], "Bps"),
        ("buffers in flight", "graph", ["virt.virtio.inflight"], "short"),
        ("ring full/s", "graph", ["virt.virtio.ring_full"], "ops"),
        ("latency p99 per queue", "graph", ["virt.virtio.latency_p99"], "ns"),
    ]),
    ("vhost queues (host)", [
        ("wakeup to handler latency (ns)", "heatmap", ["virt.vhost.latency"], "ns"),
        ("packets per handler run", "heatmap", ["virt.vhost.batch.packets"], "short"),
        ("bytes per handler run", "heatmap", ["virt.vhost.batch.bytes"], "bytes"),
        ("kicks/s and wakeups/s", "graph", ["virt.vhost.kicks", "virt.vhost.wakeups"], "ops"),
        ("stalls/s", "graph", ["virt.vhost.stalls"], "ops"),
        ("runs over budget/s", "graph", ["virt.vhost.weight_exceeded"], "ops"),
        ("latency p99 per queue", "graph", ["virt.vhost.latency_p99"], "ns"),
    ]),
    ("QEMU processes (host, device side without vhost)", [
        ("received packet size (bytes)", "heatmap", ["virt.qemu.net.rx.bytes"], "bytes"),
        ("sent packet size (bytes)", "heatmap", ["virt.qemu.net.tx.sizes"], "bytes"),
        ("packets per TX flush", "heatmap", ["virt.qemu.net.tx.packets"], "short"),
        ("bytes per TX flush", "heatmap", ["virt.qemu.net.tx.bytes"], "bytes"),
        ("packets/s delivered and sent", "graph",
         ["virt.qemu.net.rx.delivered", "virt.qemu.net.tx.sent"], "pps"),
        ("RX deferred/s (guest out of buffers)", "graph", ["virt.qemu.net.rx.deferred"], "ops"),
        ("virtqueue kicks/s and interrupts/s (USDT)", "graph",
         ["virt.qemu.vq.kicks", "virt.qemu.vq.notifies"], "ops"),
    ]),
    ("agent", [
        ("family modules", "table", ["virt.control.module.status", "virt.control.module.method",
                                     "virt.control.module.programs", "virt.control.module.dropped"],
         "short"),
    ]),
]


def panel(pid, title, kind, exprs, unit, x, y, w, h):
    p = {
        "id": pid,
        "title": title,
        "datasource": "$datasource",
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "targets": [],
    }
    for i, e in enumerate(exprs):
        fmt = {"heatmap": "heatmap", "table": "metrics_table"}.get(kind, "time_series")
        p["targets"].append({"refId": chr(ord("A") + i), "expr": e, "format": fmt})
    if kind == "heatmap":
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
    elif kind == "table":
        p.update({"type": "table", "transformations": [
            {"id": "merge", "options": {}}]})
    else:
        p.update({"type": "timeseries",
                  "fieldConfig": {"defaults": {"unit": unit}, "overrides": []}})
    return p


def dashboard(kind):
    dstype, dsname, title, span, refresh = DATASOURCES[kind]
    panels, pid, y = [], 1, 0
    for row_title, items in ROWS:
        panels.append({"id": pid, "type": "row", "title": row_title, "collapsed": False,
                       "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": []})
        pid, y = pid + 1, y + 1
        for i, (t, k, e, u) in enumerate(items):
            w = 24 if k == "table" else 12
            x = 0 if w == 24 else 12 * (i % 2)
            panels.append(panel(pid, t, k, e, u, x, y, w, 8))
            pid += 1
            if w == 24 or x == 12 or i == len(items) - 1:
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
        "templating": {"list": [{
            "name": "datasource", "type": "datasource", "query": dstype,
            "label": dsname, "hide": 0, "current": {}, "options": [], "refresh": 1,
        }]},
        "annotations": {"list": []},
        "panels": panels,
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for kind in DATASOURCES:
        with open(os.path.join(out, "pmdavirt-%s.json" % kind), "w") as f:
            json.dump(dashboard(kind), f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
