#!/usr/bin/python3
"""bench/fleetquery.py URL DASHBOARD HOST VM START FINISH INTERVAL [REPEAT]

Every query of the Valkey dashboard (grafana/pmdavirt-valkey.json), its
$host set to HOST and its VM picker to VM (".*": "All"), sent to pmproxy
at URL as grafana-pcp's Valkey datasource sends it (its query.go):
/series/query of the expression; for the series found /series/metrics,
/series/descs, /series/labels, /series/values (START, FINISH, INTERVAL:
what the datasource asks for a time range), and for a metric with
instances /series/instances and /series/labels of them. "cold" is all of
those (a panel's first load), "warm" the query and the values alone (a
refresh: the datasource caches the rest). Also the two variables'
requests (label_values(hostname), label_values(vm_name)).

Each target is asked REPEAT times (default 1) and its median times kept
(on a shared machine one request now and then waits for a CPU). Prints
one line per target: panel id, cold ms, warm ms, series, instances,
values (-1: pmproxy cut the reply short three times), the expression;
then "variable" lines (the variables' requests; each request path's
count and times over all targets). Exit 1 when pmproxy answers with an error.
"""
import http.client
import json
import statistics
import sys
import time
import urllib.parse


BROKEN = []
CONN = {}
PATHS = {}      # path: [requests, total ms, max ms]


def get(base, path, **params):
    """a request on one kept-alive connection, as grafana-pcp's Go client
    keeps its connections (urllib's "Connection: close" got replies cut
    short by pmproxy 6.3.8 on a loaded machine); a reply cut short is
    asked again on a new connection, up to 3 times, and counted; 60 s
    at most, as grafana-pcp's client"""
    host = urllib.parse.urlsplit(base).netloc
    query = urllib.parse.urlencode(params)
    t0 = time.monotonic()
    try:
        return request(host, path, query)
    finally:
        ms = (time.monotonic() - t0) * 1000
        st = PATHS.setdefault(path, [0, 0.0, 0.0])
        st[0] += 1
        st[1] += ms
        st[2] = max(st[2], ms)


def request(host, path, query):
    """get()'s request, asked again on a reply cut short"""
    for attempt in range(3):
        if host not in CONN:
            CONN[host] = http.client.HTTPConnection(host, timeout=60)
        try:
            CONN[host].request("GET", path + "?" + query)
            r = CONN[host].getresponse()
            return json.loads(r.read())
        except (http.client.HTTPException, ConnectionError, ValueError, TimeoutError) as e:
            BROKEN.append("%s: %s" % (path, type(e).__name__))
            CONN.pop(host).close()
            if attempt == 2:
                raise http.client.IncompleteRead(b"") from e
    return None


def timed(fn, *args, **kw):
    t0 = time.monotonic()
    out = fn(*args, **kw)
    return out, (time.monotonic() - t0) * 1000


def target(base, expr, start, finish, interval):
    """(cold ms, warm ms, series, instances, values) of one target"""
    try:
        sids, t_query = timed(get, base, "/series/query", expr=expr)
    except http.client.IncompleteRead:
        # no answer in 60 s, 3 times: grafana-pcp gives up after one
        return float("inf"), float("inf"), -1, 0, 0
    if not sids:
        return t_query, t_query, 0, 0, 0
    s = ",".join(sids)
    t_meta = 0
    for path in ("/series/metrics", "/series/descs", "/series/labels"):
        _, t = timed(get, base, path, series=s)
        t_meta += t
    try:
        values, t_values = timed(get, base, "/series/values", series=s, start=start, finish=finish,
                                 interval=interval)
    except http.client.IncompleteRead:
        # cut short three times: the target's values are reported as -1
        values, t_values = None, float("nan")
    try:
        insts, t = timed(get, base, "/series/instances", series=s)
        t_meta += t
    except http.client.IncompleteRead:
        insts, t_meta = [], float("nan")
    ids = ",".join(i["instance"] for i in insts)
    if ids:
        # grafana-pcp POSTs a list this long (a URL of 8192 bytes or more);
        # pmproxy 6.3.8 here left such a POST unanswered: GETs of up to
        # 150 ids (41 bytes each) instead, one after another
        idl = ids.split(",")
        for k in range(0, len(idl), 150):
            try:
                _, t = timed(get, base, "/series/labels", series=",".join(idl[k:k + 150]))
                t_meta += t
            except (http.client.IncompleteRead, TimeoutError):
                t_meta = float("nan")
    return (t_query + t_meta + t_values, t_query + t_values, len(sids), len(insts),
            -1 if values is None else len(values))


def main():
    base, dash, host, vm, start, finish, interval = sys.argv[1:8]
    repeat = int(sys.argv[8]) if len(sys.argv) > 8 else 1
    for p in json.load(open(dash))["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"].replace("$host", host).replace("${vm:regex}", vm)
            runs = [target(base, expr, start, finish, interval) for _ in range(repeat)]
            cold = statistics.median(r[0] for r in runs)
            warm = statistics.median(r[1] for r in runs)
            _, _, n, ninst, nval = runs[-1]
            print("%d %.1f %.1f %d %d %d %s" % (p["id"], cold, warm, n, ninst, nval, expr))
    print("variable broken_replies %d %s" % (len(BROKEN), " ".join(sorted(set(BROKEN)))))
    for path, (n, total, top) in sorted(PATHS.items()):
        print("variable requests %s: %d, %.0f ms in all, mean %.1f ms, max %.0f ms" % (path, n, total, total / n, top))
    for name in ("hostname", "vm_name"):
        vals, t = timed(get, base, "/series/labels", names=name)
        print("variable label_values(%s) %.1f ms, %d values" % (name, t, len(vals.get(name, []))))


if __name__ == "__main__":
    main()
