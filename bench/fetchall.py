#!/usr/bin/python3
"""Fetch every metric under virt (or every metric named in FILE, one a
line) in ONE pmFetch, M times (what pmlogger and pmrep do; pminfo/pmprobe
fetch metric by metric). Prints the values in one fetch and the client's
wall time per fetch. Usage: fetchall.py [M [FILE]]"""
import sys
import time

import cpmapi as c_api
from pcp import pmapi

m = int(sys.argv[1]) if len(sys.argv) > 1 else 20
ctx = pmapi.pmContext(c_api.PM_CONTEXT_HOST, "local:")
names = []
if len(sys.argv) > 2:
    with open(sys.argv[2], encoding="ascii") as f:
        names = [line.strip() for line in f if line.strip()]
else:
    ctx.pmTraversePMNS("virt", names.append)
pmids = ctx.pmLookupName(names)
values = 0
t0 = time.monotonic()
for _ in range(m):
    r = ctx.pmFetch(pmids)
    values = sum(max(r.contents.get_numval(i), 0) for i in range(r.contents.numpmid))
    ctx.pmFreeResult(r)
t1 = time.monotonic()
print("metrics %d values %d wall_ms_per_fetch %.1f" % (len(names), values, (t1 - t0) * 1000 / m))
