"""qa/411: a stand-in for pmproxy's REST API (/pmapi/context, fetch,
indom) with metrics of known rates, that also serves web/ (one origin).
Each fetch is one second later than the one before, so a page's rates
are exact whatever the poll interval:
  run_delay        web 2e8 ns/s (20.0% of a CPU), web-01 5e7 (5.0%)
  run_delay_by     web: same_vm 2e7, other_vm 1.5e8, host 3e7 (other_vm
                   15.0%); web-01: vhost 5e7 (5.0%)
  halts            web 50/s, web-01 7/s
  run_delay_hist, halt_hist: web's buckets 100/s and 10/s, web-01's 3/s
                   (its buckets' prefix web_01, as the agent names them)
  bucket_prefix    web "web", web-01 "web_01" (the agent's)
  module status    kvm "active"
  exits            web 1000/s, web-01 20/s; exits_unseen web 0, web-01 12
  pio.count        web: 0x70/out 300/s, 0x80/out 40/s, 0x3f8/out 10/s,
                   0x60/in 5/s (4 ports: the page shows 3); web-01:
                   0xcf8/out 2/s
  msr.count        web: 0x10/rd 30/s (cpuid and mmio left out)
  npf_major_time   web 3e7 ns/s (3.0% of a CPU); web-01 none (no faults)
  npf.latency      web/major 200/s, web/minor 50/s, web_01/mmio 4/s
  irq.latency_p99  web: timer 12000, device 51200 (the worst); web-01:
                   ipi 900
  irq.latency      web/timer 100/s, web/device 30/s
  timer.count      web: late 25/s, early 400/s; web-01 none
  timer.lateness   web/late 25/s, web/early 400/s
Other metrics the page asks for are left out of the answer, as pmproxy
does with names the agent lacks.   fakepmproxy.py PORT WEBDIR"""
import functools
import http.server
import json
import sys
import urllib.parse

RATES = {
    "virt.kvm.vm.run_delay": {"web": 2e8, "web-01": 5e7},
    "virt.kvm.vm.run_delay_by": {"web/same_vm": 2e7, "web/other_vm": 1.5e8, "web/host": 3e7,
                                 "web-01/vhost": 5e7},
    "virt.kvm.vm.halts": {"web": 50, "web-01": 7},
    "virt.kvm.vm.run_delay_hist": {"web::1024-2047": 100, "web::2048-4095": 10, "web_01::1024-2047": 3},
    "virt.kvm.vm.halt_hist": {"web::65536-131071": 100, "web::131072-262143": 10, "web_01::65536-131071": 3},
    "virt.kvm.vm.exits": {"web": 1000, "web-01": 20},
    "virt.kvm.pio.count": {"web/0x70/out": 300, "web/0x3f8/out": 10, "web/0x80/out": 40, "web/0x60/in": 5,
                           "web-01/0xcf8/out": 2},
    "virt.kvm.msr.count": {"web/0x10/rd": 30},
    "virt.kvm.vm.npf_major_time": {"web": 3e7},
    "virt.kvm.vm.npf.latency": {"web/major::65536-131071": 200, "web/minor::1024-2047": 50,
                                "web_01/mmio::2048-4095": 4},
    "virt.kvm.vm.irq.latency": {"web/timer::8192-16383": 100, "web/device::32768-65535": 30},
    "virt.kvm.vm.timer.count": {"web/late": 25, "web/early": 400},
    "virt.kvm.vm.timer.lateness": {"web/late::4096-8191": 25, "web/early::512-1023": 400},
}
# values that stay as they are
FIXED = {"virt.control.module.status": {"kvm": "active"}, "virt.kvm.vm.exits_unseen": {"web": 0, "web-01": 12},
         "virt.kvm.vm.bucket_prefix": {"web": "web", "web-01": "web_01"},
         "virt.kvm.vm.irq.latency_p99": {"web/timer": 12000, "web/device": 51200, "web-01/ipi": 900}}
fetches = 0


def instances(metric):
    return list((RATES.get(metric) or FIXED[metric]).keys())


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        global fetches
        url = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(url.query)
        if url.path == "/pmapi/context":
            return self.answer({"context": 1})
        if url.path == "/pmapi/1/fetch":
            fetches += 1
            values = []
            for m in q["names"][0].split(","):
                if m in RATES or m in FIXED:
                    vals = [{"instance": i, "value": FIXED[m][n] if m in FIXED else RATES[m][n] * fetches}
                            for i, n in enumerate(instances(m))]
                    values.append({"pmid": 0, "name": m, "instances": vals})
            return self.answer({"context": 1, "timestamp": 1700000000.0 + fetches, "values": values})
        if url.path == "/pmapi/1/indom":
            m = q["name"][0]
            return self.answer({"instances": [{"instance": i, "name": n} for i, n in enumerate(instances(m))]})
        if url.path.startswith("/pmapi/"):
            self.send_error(400)
            return
        super().do_GET()


http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])),
                                functools.partial(Handler, directory=sys.argv[2])).serve_forever()
