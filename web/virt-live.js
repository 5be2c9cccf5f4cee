/*
 * pmdavirt live page: polls pmproxy's REST API (/pmapi) and draws heatmaps
 * of the agent's log2 histograms, tables of per-queue rates and, per VM,
 * run delay, what held the CPU meanwhile and halts, with the kvm family's
 * opt-in hooks its major-fault time, slowest interrupt kind's p99 and late
 * timers, its busiest ports, MSRs, CPUID leaves and MMIO addresses and the
 * exits KVM counted that the agent did not. A histogram without instances
 * (its module or option off) has no heatmap shown. Plain JS,
 * no build step. Parameters (query string): pmproxy=<url> (default: this
 * host, port 44322), host=<pmcd host> (the host pmproxy asks; default
 * pmproxy's own), interval=<seconds> (default 2), span=<polls> (60),
 * prefix=<metric>:<prefix> (repeatable: the heatmap of that histogram
 * starts on that reason, queue, VM or process; default the busiest),
 * snapshot (each heatmap's pixels as a PNG data URL in its canvas's
 * data-png attribute: for tests that read the DOM, not a screenshot).
 *
 * Histogram instances are "<prefix>::<lo>-<hi>"; like grafana-pcp, the
 * bucket is read from what follows the first '-' (its upper bound), and
 * each prefix gets a heatmap of its own (one at a time, chosen in a list
 * under the name the user gave: a VM web-01, whose buckets' prefix is
 * web_01, is listed as web-01, its per-kind buckets' web_01/major as
 * web-01/major; prefix= takes either). A fetch's time
 * and the rates: virt-time.js.
 */
'use strict';

const params = new URLSearchParams(location.search);
const PMPROXY = (params.get('pmproxy') || `${location.protocol}//${location.hostname || 'localhost'}:44322`).replace(/\/$/, '');
const INTERVAL = Math.max(0.5, Number(params.get('interval')) || 2);
const SPAN = Math.max(5, Number(params.get('span')) || 60);
const SNAPSHOT = params.has('snapshot');
const HOST = params.get('host') || '';
const chosen = {};       // histogram metric -> prefix the user picked
for (const p of params.getAll('prefix')) {
  const colon = p.indexOf(':');
  if (colon > 0)
    chosen[p.slice(0, colon)] = p.slice(colon + 1);
}

// [metric, title, the metric whose instances name its prefixes]: a
// prefix made from a VM's name has '_' for each '-' (web-01's buckets are
// "web_01::lo-hi"), so the list shows the name that metric's instance has
// where its value is the prefix
const VM_PREFIX = 'virt.kvm.vm.bucket_prefix';
const QUEUE_PREFIX = 'virt.vhost.queue.bucket_prefix';
const QEMU_PREFIX = 'virt.qemu.process.bucket_prefix';
const HISTOGRAMS = [
  ['virt.kvm.exit.latency', 'KVM exit to entry (ns)'],
  ['virt.kvm.hypercall.latency', 'KVM hypercall (ns)'],
  ['virt.kvm.userspace.latency', 'VMM handling of exits (ns)'],
  ['virt.virtio.latency', 'virtio add to completion (ns)'],
  ['virt.vhost.latency', 'vhost wakeup to handler (ns)', QUEUE_PREFIX],
  ['virt.vhost.batch.packets', 'vhost packets per run', QUEUE_PREFIX],
  ['virt.vhost.batch.bytes', 'vhost bytes per run', QUEUE_PREFIX],
  ['virt.qemu.net.rx.bytes', 'QEMU received packet size (bytes)', QEMU_PREFIX],
  ['virt.qemu.net.tx.packets', 'QEMU packets per TX flush', QEMU_PREFIX],
  ['virt.qemu.net.tx.bytes', 'QEMU bytes per TX flush', QEMU_PREFIX],
  ['virt.qemu.net.tx.sizes', 'QEMU sent packet size (bytes)', QEMU_PREFIX],
  ['virt.kvm.vm.run_delay_hist', 'VM vCPU wait for a host CPU (ns)', VM_PREFIX],
  ['virt.kvm.vm.halt_hist', 'VM halt duration (ns)', VM_PREFIX],
  ['virt.kvm.vm.npf.latency', 'VM nested-paging fault (ns)', VM_PREFIX],
  ['virt.kvm.vm.irq.latency', 'VM interrupt delivery (ns)', VM_PREFIX],
  ['virt.kvm.vm.timer.lateness', 'VM timer late or early (ns)', VM_PREFIX],
];
const PREFIX_METRIC = Object.fromEntries(HISTOGRAMS.filter(h => h[2]).map(h => [h[0], h[2]]));

// first, so that an empty page says why
const MODULES = ['modules', [
  ['virt.control.module.status', 'status', 'value'],
  ['virt.control.module.method', 'method', 'value'],
  ['virt.control.module.programs', 'programs', 'value'],
  ['virt.control.module.dropped', 'dropped/s', 'rate'],
]];

// Per VM, after the modules: share = a nanosecond counter's rate as % of
// one CPU; most = of the "<vm>/<class>" rows of the metric, the class with
// the largest rate (what held the CPU while the VM waited); worst = of the
// "<vm>/<kind>" rows, the kind with the largest value; a fourth element
// names the "<vm>/<key>" row a column reads. The last three are opt-in
// ([kvm] npf, interrupts, timer_lateness): empty cells while off.
const SLOW = ['why is my VM slow', [
  ['virt.kvm.vm.run_delay', 'run delay, % of a CPU', 'share'],
  ['virt.kvm.vm.run_delay_by', 'CPU held most by', 'most'],
  ['virt.kvm.vm.halts', 'halts/s', 'rate'],
  ['virt.kvm.vm.npf_major_time', 'major faults, % of a CPU', 'share'],
  ['virt.kvm.vm.irq.latency_p99', 'interrupt p99, slowest kind', 'worst'],
  ['virt.kvm.vm.timer.count', 'late timers/s', 'rate', 'late'],
]];

// Per VM: what its exits are about ([kvm] subreasons = true); top = of the
// "<vm>/<key>" rows of the metric, the busiest keys (up to TOP) with their
// exits/s; and exits KVM counted that the agent did not
const TOP = 3;
const EXITS = ['what the exits are about', [
  ['virt.kvm.vm.exits', 'exits/s', 'rate'],
  ['virt.kvm.vm.exits_unseen', 'unseen by the agent', 'value'],
  ['virt.kvm.pio.count', 'busiest ports', 'top'],
  ['virt.kvm.msr.count', 'busiest MSRs', 'top'],
  ['virt.kvm.cpuid.count', 'busiest CPUID leaves', 'top'],
  ['virt.kvm.mmio.count', 'busiest MMIO addresses', 'top'],
]];

// [metric, column, kind]: rate = counter per second, value = as fetched
const TABLES = [
  ['virtio queues', [
    ['virt.virtio.queue.driver', 'driver', 'value'],
    ['virt.virtio.queue.device', 'device', 'value'],
    ['virt.virtio.sgs.in', 'in SGs/s', 'rate'],
    ['virt.virtio.sgs.out', 'out SGs/s', 'rate'],
    ['virt.virtio.bytes.in', 'in B/s', 'rate'],
    ['virt.virtio.bytes.out', 'out B/s', 'rate'],
    ['virt.virtio.inflight', 'in flight', 'value'],
    ['virt.virtio.ring_full', 'ring full/s', 'rate'],
    ['virt.virtio.latency_p99', 'p99 ns', 'value'],
  ]],
  ['vhost queues', [
    ['virt.vhost.kicks', 'kicks/s', 'rate'],
    ['virt.vhost.wakeups', 'wakeups/s', 'rate'],
    ['virt.vhost.stalls', 'stalls/s', 'rate'],
    ['virt.vhost.weight_exceeded', 'over budget/s', 'rate'],
    ['virt.vhost.latency_p99', 'p99 ns', 'value'],
  ]],
  ['KVM exit reasons', [
    ['virt.kvm.exit.count', 'exits/s', 'rate'],
    ['virt.kvm.exit.latency_p50', 'p50 ns', 'value'],
    ['virt.kvm.exit.latency_p99', 'p99 ns', 'value'],
  ]],
  ['VMs', [
    ['virt.kvm.vm.exits', 'exits/s', 'rate'],
    ['virt.kvm.vm.userspace_exits', 'VMM exits/s', 'rate'],
  ]],
];

const METRICS = [...new Set(HISTOGRAMS.map(h => h[0]).concat(Object.values(PREFIX_METRIC),
  ...[MODULES, SLOW, EXITS].concat(TABLES).map(t => t[1].map(c => c[0]))))];

let context = null;
let latest = {};         // the last sample's values (the prefixes' names)
const names = {};        // metric -> {instance id -> name}
let prev = null;         // metric -> {name -> value}, at prevTime
let prevTime = null;     // of fetchTime()
const columns = {};      // histogram metric -> {prefix -> [{bucket -> events/s}]} (oldest first)

// The answer's JSON and its text (virt-time.js reads a fetch's time from it)
async function getJSONText(path) {
  const r = await fetch(PMPROXY + path);
  const text = await r.text();
  if (!r.ok)
    throw pmproxyError(path, r.status, text);
  return { json: JSON.parse(text), text };
}

async function getJSON(path) {
  return (await getJSONText(path)).json;
}

async function ensureContext() {
  if (context === null)
    context = (await getJSON(`/pmapi/context?polltimeout=${Math.ceil(INTERVAL * 10)}` +
                             (HOST ? `&hostspec=${encodeURIComponent(HOST)}` : ''))).context;
  return context;
}

async function instanceNames(metric, ids) {
  const known = names[metric] || (names[metric] = {});
  if (ids.every(id => id in known))
    return known;
  const r = await getJSON(`/pmapi/${context}/indom?name=${encodeURIComponent(metric)}`);
  for (const i of r.instances || [])
    known[i.instance] = i.name;
  return known;
}

// One fetch of every metric: {metric -> {instance name -> value}}
async function sample() {
  await ensureContext();
  const { json: r, text } = await getJSONText(`/pmapi/${context}/fetch?names=${METRICS.join(',')}`);
  const out = {};
  for (const v of r.values || []) {
    const ids = v.instances.map(i => i.instance);
    const nm = await instanceNames(v.name, ids);
    out[v.name] = {};
    for (const i of v.instances)
      out[v.name][nm[i.instance] !== undefined ? nm[i.instance] : String(i.instance)] = i.value;
  }
  return { values: out, time: fetchTime(text) };
}

// grafana-pcp's rule: the bucket's upper bound follows the first '-'
function bucketOf(name) {
  const dash = name.indexOf('-');
  if (dash < 0)
    return null;
  const hi = Number(name.slice(dash + 1));
  if (!Number.isFinite(hi))
    return null;
  return { prefix: name.slice(0, name.lastIndexOf('::', dash)), hi };
}

function pushColumn(metric, now, then, dt) {
  const cols = {};
  for (const [inst, v] of Object.entries(now[metric] || {})) {
    const b = bucketOf(inst);
    const before = then && then[metric] ? then[metric][inst] || 0 : null;
    if (!b || before === null || v < before)
      continue;
    const col = cols[b.prefix] || (cols[b.prefix] = {});
    col[b.hi] = (col[b.hi] || 0) + (v - before) / dt;
  }
  const byPrefix = columns[metric] || (columns[metric] = {});
  for (const prefix of new Set(Object.keys(byPrefix).concat(Object.keys(cols)))) {
    const list = byPrefix[prefix] || (byPrefix[prefix] = []);
    list.push(cols[prefix] || {});
    while (list.length > SPAN)
      list.shift();
  }
}

function eventsOf(cols) {
  return cols.reduce((n, c) => n + Object.values(c).reduce((a, v) => a + v, 0), 0);
}

// The prefix to draw: the user's pick while it has data, else the busiest
function prefixToDraw(metric) {
  const byPrefix = columns[metric] || {};
  const pick = prefixOfName(metric, chosen[metric]);
  if (pick in byPrefix)
    return pick;
  let best = null, most = -1;
  for (const [prefix, cols] of Object.entries(byPrefix)) {
    const n = eventsOf(cols);
    if (n > most)
      [best, most] = [prefix, n];
  }
  return best;
}

// The name a prefix of metric's buckets stands for (web_01: the VM web-01;
// web_01/major, a per-kind histogram's: web-01/major)
function nameOfPrefix(metric, prefix) {
  return mapHead(prefix, p => nameWithPrefix(metric, p));
}

// The prefix of metric's buckets that a name (or a prefix) picks
function prefixOfName(metric, name) {
  return name === undefined ? name : mapHead(name, n => (latest[PREFIX_METRIC[metric]] || {})[n]);
}

function nameWithPrefix(metric, prefix) {
  for (const [name, p] of Object.entries(latest[PREFIX_METRIC[metric]] || {}))
    if (p === prefix)
      return name;
  return undefined;
}

// s mapped whole by map, else its part before the first '/' mapped and
// the rest kept ("<vm>/<kind>": VM names have no '/'), else s as it is
function mapHead(s, map) {
  const whole = map(s);
  if (whole !== undefined)
    return whole;
  const slash = s.indexOf('/');
  const head = slash > 0 ? map(s.slice(0, slash)) : undefined;
  return head === undefined ? s : head + s.slice(slash);
}

function heatmapElement(metric, title) {
  let box = document.getElementById('hm-' + metric);
  if (box)
    return box;
  box = document.createElement('div');
  box.className = 'heatmap';
  box.id = 'hm-' + metric;
  box.innerHTML = `<h2></h2><select></select><canvas width="${SPAN * 6}" height="200"></canvas><span class="axis"></span>`;
  box.querySelector('h2').textContent = title;
  box.querySelector('canvas').dataset.metric = metric;
  const select = box.querySelector('select');
  select.dataset.metric = metric;
  select.addEventListener('change', () => { chosen[metric] = select.value; drawHeatmap(metric, title); });
  document.getElementById('heatmaps').appendChild(box);
  return box;
}

// A histogram with no instances yet (its module or option off, as the kvm
// family's npf, interrupts and timer_lateness are by default) is hidden
function drawHeatmap(metric, title) {
  const box = heatmapElement(metric, title);
  box.hidden = Object.keys(columns[metric] || {}).length === 0;
  const canvas = box.querySelector('canvas');
  const g = canvas.getContext('2d');
  const prefix = prefixToDraw(metric);
  const cols = prefix === null ? [] : columns[metric][prefix];
  fillSelect(box.querySelector('select'), metric, prefix);
  const his = new Set();
  let max = 0;
  for (const c of cols)
    for (const [hi, v] of Object.entries(c)) {
      if (v > 0)
        his.add(Number(hi));
      max = Math.max(max, v);
    }
  const rows = [...his].sort((a, b) => a - b);
  g.clearRect(0, 0, canvas.width, canvas.height);
  let cells = 0;
  if (rows.length) {
    const w = canvas.width / SPAN, h = canvas.height / rows.length;
    const x0 = canvas.width - cols.length * w;
    cols.forEach((c, x) => {
      rows.forEach((hi, y) => {
        const v = c[hi] || 0;
        if (v <= 0)
          return;
        const t = Math.log1p(v) / Math.log1p(max);       // 0..1
        g.fillStyle = `rgb(${255 - 40 * t}, ${230 - 180 * t}, ${200 - 200 * t})`;
        g.fillRect(x0 + x * w, canvas.height - (y + 1) * h, Math.ceil(w), Math.ceil(h));
        cells++;
      });
    });
  }
  canvas.dataset.cells = cells;
  canvas.dataset.prefix = prefix === null ? '' : prefix;
  canvas.dataset.name = prefix === null ? '' : nameOfPrefix(metric, prefix);
  if (SNAPSHOT)
    canvas.dataset.png = canvas.toDataURL('image/png');
  box.querySelector('.axis').textContent = rows.length
    ? `buckets up to ${rows[0]} … ${rows[rows.length - 1]}, peak ${max.toFixed(1)}/s`
    : 'no events yet';
}

// One option per prefix, busiest first, with its events over the span
function fillSelect(select, metric, prefix) {
  const byPrefix = columns[metric] || {};
  const order = Object.keys(byPrefix).map(p => [p, eventsOf(byPrefix[p])]).sort((a, b) => b[1] - a[1]);
  select.textContent = '';
  for (const [p, n] of order) {
    const o = document.createElement('option');
    o.value = p;
    o.textContent = `${nameOfPrefix(metric, p)} (${Math.round(n * INTERVAL)} events)`;
    if (p === prefix)
      o.setAttribute('selected', '');
    select.appendChild(o);
  }
  select.hidden = order.length === 0;
}

function drawTable(title, cols, now, then, dt, where = 'tables') {
  const id = 'tb-' + title.replace(/\W/g, '_');
  let box = document.getElementById(id);
  if (!box) {
    box = document.createElement('div');
    box.id = id;
    box.innerHTML = '<h2></h2><table><thead><tr><th>instance</th></tr></thead><tbody></tbody></table>';
    box.querySelector('h2').textContent = title;
    const tr = box.querySelector('thead tr');
    for (const c of cols) {
      const th = document.createElement('th');
      th.textContent = c[1];
      tr.appendChild(th);
    }
    document.getElementById(where).appendChild(box);
  }
  const insts = new Set();
  for (const c of cols)
    if (namesRows(c))
      Object.keys(now[c[0]] || {}).forEach(i => insts.add(i));
  const body = box.querySelector('tbody');
  body.textContent = '';
  for (const inst of [...insts].sort()) {
    const tr = document.createElement('tr');
    tr.dataset.instance = inst;
    const td0 = document.createElement('td');
    td0.textContent = inst;
    tr.appendChild(td0);
    for (const c of cols) {
      const td = document.createElement('td');
      const text = cellText(c, inst, now, then, dt);
      td.textContent = text;
      if (text === '')
        td.className = 'none';
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}

// Whether a column's instances are the table's rows (not "<inst>/<key>")
function namesRows([, , kind, key]) {
  return key === undefined && kind !== 'most' && kind !== 'top' && kind !== 'worst';
}

function cellText([metric, , kind, key], inst, now, then, dt) {
  if (kind === 'most') {
    const [best] = ratesOf(metric, inst, now, then, dt);
    return best ? `${best[0]} (${(best[1] / 1e7).toFixed(1)}%)` : '';
  }
  if (kind === 'top')
    return ratesOf(metric, inst, now, then, dt).slice(0, TOP).map(([k, r]) => `${k} ${r.toFixed(1)}/s`).join(', ');
  if (kind === 'worst') {
    const [worst] = valuesOf(metric, inst, now);
    return worst ? `${worst[0]} (${worst[1]} ns)` : '';
  }
  const row = key === undefined ? inst : `${inst}/${key}`;
  const v = (now[metric] || {})[row];
  if (v === undefined)
    return '';
  if (kind === 'value')
    return String(v);
  const r = counterRate(v, then && then[metric] ? then[metric][row] : undefined, dt);
  return r === null ? '' : kind === 'share' ? (r / 1e7).toFixed(1) : r.toFixed(1);
}

// [key, value] of inst's "<inst>/<key>" rows, the largest first
function valuesOf(metric, inst, now) {
  return Object.entries(now[metric] || {})
    .filter(([name]) => name.startsWith(inst + '/'))
    .map(([name, v]) => [name.slice(inst.length + 1), v])
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

// [key, rate] of inst's "<inst>/<key>" rows that grew since the last poll
// (a class of run_delay_by, a port of pio.count, ...), the largest first;
// none before two polls
function ratesOf(metric, inst, now, then, dt) {
  const out = [];
  for (const [name, v] of Object.entries(now[metric] || {})) {
    if (!name.startsWith(inst + '/') || !then || !then[metric] || !(name in then[metric]))
      continue;
    const r = (v - then[metric][name]) / dt;
    if (r > 0)
      out.push([name.slice(inst.length + 1), r]);
  }
  return out.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

// A failed sample is tried once more on a new context: pmproxy drops a
// context unused for its polltimeout (a page stalled, a host busy) or
// forgets it when it restarts; only a second failure is an error.
async function sampleOrRetry() {
  try {
    return await sample();
  } catch (e) {
    context = null;
    return sample();
  }
}

async function poll() {
  const status = document.getElementById('status');
  try {
    const s = await sampleOrRetry();
    if (!s.time)
      throw new Error('pmproxy sent a fetch without a timestamp');
    const dt = prev ? Math.max(1e-3, elapsed(prevTime, s.time)) : 0;
    latest = s.values;
    drawTable(MODULES[0], MODULES[1], s.values, prev, dt, 'modules');
    drawTable(SLOW[0], SLOW[1], s.values, prev, dt, 'slow');
    drawTable(EXITS[0], EXITS[1], s.values, prev, dt, 'exits');
    for (const [metric, title] of HISTOGRAMS) {
      if (prev)
        pushColumn(metric, s.values, prev, dt);
      drawHeatmap(metric, title);
    }
    for (const [title, cols] of TABLES)
      drawTable(title, cols, s.values, prev, dt);
    prev = s.values;
    prevTime = s.time;
    status.dataset.state = 'ok';
    status.textContent = 'updated ' + new Date(s.time.sec * 1000 + s.time.ns / 1e6).toLocaleTimeString();
  } catch (e) {
    context = null;
    status.dataset.state = 'error';
    status.textContent = 'error: ' + e.message;
  }
  document.body.dataset.polls = String(Number(document.body.dataset.polls || 0) + 1);
  setTimeout(poll, INTERVAL * 1000);
}

document.getElementById('source').textContent = PMPROXY + (HOST ? ` (host ${HOST})` : '');
document.getElementById('interval').textContent = INTERVAL;
document.getElementById('span').textContent = SPAN;
poll();
