// The overview: the job counts, each GPU drawn to scale as its 7 compute
// and 8 memory slices with its instances as blocks, their memory (used
// and requested against the instance's) and their jobs' MPS shares as
// bars, each GPU's health (utilisation, power, temperature over the
// last minutes, ECC and XID errors), the jobs waiting for a place, and
// the kernel schedulers in brief.

import {h, s, $, setText, fmtMiB, fmtDuration, parseTime, jobLink, badge, timeTitle} from './dom.js';
import {request} from './api.js';
import {state, on, now} from './store.js';

// How often the devices' measured memory (GET api/v1/usage) and the
// GPUs' health (GET api/v1/gpus/health) are read while the overview
// shows.
const POLL_MS = 2000;

const COMPUTE_SLICES = 7;
const MEMORY_SLICES = 8;
const WAITING_SHOWN = 20;

let visible = false;
let dirty = true;
// Each GPU's card and the JSON it was drawn from: a card is drawn again
// only when its GPU changed.
const cards = new Map();
// usage is the last GET api/v1/usage (null: none yet, or the daemon
// samples no GPU use); polling says whether a poll loop runs.
let usage = null;
let polling = false;
// health is the GPUs' health as read so far: the view's at, every and
// window, and per GPU index its last readings and samples (oldest
// first, at most the window's); healthOff says the daemon reads none.
export const health = {at: '', every: 0, window: 0, gpus: new Map()};
let healthOff = false;
let usageOff = false;

export const overview = {
  show() {
    visible = true;
    if (dirty) render();
    pollUsage();
  },
  hide() {
    visible = false;
  },
};

// pollUsage reads the devices' measured memory and the GPUs' health
// (only the samples it lacks) every POLL_MS while the overview shows; a
// daemon that samples either not (503) is not asked for it again.
async function pollUsage() {
  if (polling) return;
  polling = true;
  try {
    while (visible && !(usageOff && healthOff)) {
      await Promise.all([readUsage(), readHealth()]);
      renderMemory();
      renderHealth();
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  } finally {
    polling = false;
  }
}

async function readUsage() {
  if (usageOff) return;
  try {
    usage = await request('api/v1/usage');
  } catch (e) {
    usage = null;
    if (e.status === 503) usageOff = true;
  }
}

async function readHealth() {
  if (healthOff) return;
  let v;
  try {
    v = await request('api/v1/gpus/health' + (health.at ? '?since=' + encodeURIComponent(health.at) : ''));
  } catch (e) {
    if (e.status === 503) healthOff = true;
    return;
  }
  // A node that does not sample health (no reader, or sampling off)
  // answers with no interval: it is not asked again.
  if (!v.everyNs) {
    healthOff = true;
    return;
  }
  mergeHealth(v);
}

// mergeHealth adds a health view (its samples after what the page holds)
// to what the page holds, dropping samples older than the window.
export function mergeHealth(v) {
  if (!v.at || v.at.startsWith('0001-')) return;
  health.at = v.at;
  health.every = v.everyNs;
  health.window = v.windowNs;
  const seen = new Set();
  for (const g of v.gpus) {
    seen.add(g.gpu);
    const old = health.gpus.get(g.gpu);
    const hist = (old ? old.history : []).concat(g.history || []);
    const from = Date.parse(v.at) - v.windowNs / 1e6;
    let cut = 0;
    while (cut < hist.length && Date.parse(hist[cut].t) <= from) cut++;
    health.gpus.set(g.gpu, {last: g, history: hist.slice(cut)});
  }
  for (const k of health.gpus.keys()) if (!seen.has(k)) health.gpus.delete(k);
}

function changed() {
  if (visible) render();
  else dirty = true;
}
on('snapshot', changed);
on('plan', changed);
on('kernelsched', () => visible && renderSchedBrief());
on('jobs', () => {
  if (visible) {
    renderSummary();
    renderWaiting();
  } else dirty = true;
});

function render() {
  dirty = false;
  renderSummary();
  renderGPUs();
  renderWaiting();
  renderSchedBrief();
}

function renderSummary() {
  const c = state.counts || {};
  const chips = ['running', 'placed', 'pending', 'restarting', 'succeeded', 'failed', 'cancelled'].map((st) =>
    h('a', {class: 'chip', href: '#/jobs?state=' + st, title: (c[st] || 0) + ' jobs ' + st + ' (a click lists them)'}, badge(st), h('b', {text: c[st] || 0})));
  const p = state.plan;
  const facts = [];
  if (p) {
    facts.push(h('span', {class: 'fact', title: p.decisions + ' runs of the placement loop since mmkd started'}, 'decisions ', h('b', {text: p.decisions})));
    facts.push(h('span', {class: 'fact', title: STP_TITLE}, 'predicted throughput ', h('b', {text: (p.total || 0).toFixed(2)}), ' STP'));
  }
  $('summary').replaceChildren(...chips, ...facts);
}

// STP_TITLE says what the predicted throughput is, and its unit.
export const STP_TITLE = 'predicted system throughput (STP): the sum of the placed jobs\u2019 predicted speeds, each relative to the job alone on a whole GPU at 100 % ' +
  '(the throughput ratio of an offline job, the inverse latency ratio of an online one): 1 STP is as much work as one job alone on a GPU';

// schedKeys are the instance keys that have a kernel scheduler.
function schedByKey() {
  return new Map((state.schedulers || []).map((sc) => [sc.instance, sc]));
}

function renderGPUs() {
  const p = state.plan;
  const box = $('gpus');
  if (!p) return;
  const scheds = schedByKey();
  const seen = new Set();
  const list = [];
  for (const g of p.gpus) {
    const key = String(g.index);
    seen.add(key);
    const sig = JSON.stringify(g) + '|' + g.instances.map((i) => (scheds.has(i.key) ? scheds.get(i.key).policy : '')).join(',');
    let c = cards.get(key);
    if (!c || c.sig !== sig) {
      c = {sig, el: gpuCard(g, scheds)};
      cards.set(key, c);
    }
    list.push(c.el);
  }
  for (const k of cards.keys()) if (!seen.has(k)) cards.delete(k);
  renderMemory();
  renderHealth();
  // Move only what is out of place.
  list.forEach((el, i) => {
    if (box.children[i] !== el) box.insertBefore(el, box.children[i] || null);
  });
  while (box.children.length > list.length) box.lastChild.remove();
  setText($('gpu-note'), p.gpus.length + ' on this node');
  $('gpu-note').title = p.gpus.length + ' GPUs mmkd manages on this node (gpu.devices)';
  $('gpu-legend').hidden = false;
}

// computeStart is where an instance's compute slices begin: MIG places a
// GPU instance's compute with its memory, the seventh compute slice
// going with the eighth memory slice.
const computeStart = (inst) => Math.max(0, Math.min(inst.start, COMPUTE_SLICES - inst.computeSlices));

function gpuCard(g, scheds) {
  const insts = g.mig ? g.instances : g.instances.slice(0, 1);
  const computeOwner = new Array(COMPUTE_SLICES).fill(-1);
  const memOwner = new Array(MEMORY_SLICES).fill(-1);
  insts.forEach((inst, k) => {
    const cs = g.mig ? computeStart(inst) : 0;
    const cn = g.mig ? inst.computeSlices : COMPUTE_SLICES;
    for (let i = cs; i < cs + cn && i < COMPUTE_SLICES; i++) computeOwner[i] = k;
    const ms = g.mig ? inst.start : 0;
    const mn = g.mig ? inst.size : MEMORY_SLICES;
    for (let i = ms; i < ms + mn && i < MEMORY_SLICES; i++) memOwner[i] = k;
  });
  const strip = (owners, label) => h('div', {class: 'strip s' + owners.length, title: label + ' slices'},
    owners.map((k, i) => h('span', {class: 'slice ' + (k < 0 ? 'free' : 'c' + (k % 8)), title: label + ' slice ' + i + (k < 0 ? ': free' : '')})));

  const blocks = h('div', {class: 'blocks'});
  insts.forEach((inst, k) => blocks.append(instanceBlock(g, inst, k, scheds.get(inst.key))));
  // Memory no instance holds.
  for (let i = 0; i < MEMORY_SLICES;) {
    if (memOwner[i] >= 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < MEMORY_SLICES && memOwner[j] < 0) j++;
    const free = h('div', {class: 'inst free', text: 'free'});
    free.style.gridColumn = (i + 1) + ' / span ' + (j - i);
    blocks.append(free);
    i = j;
  }

  const title = h('div', {class: 'gpu-title'},
    h('b', {class: 'ident', text: 'GPU ' + g.index, title: 'GPU ' + g.index + ' (NVML\u2019s index) ' + (g.uuid || '')}), ' ', h('span', {class: 'ident', text: g.name || g.model}),
    h('span', {class: 'tag ident', text: g.mig ? 'MIG ' + (g.layout || '(no instance)') : 'no MIG', title: g.mig ? 'MIG on; its layout of GPU instances (profile@memory slice)' : 'MIG off: the GPU is one instance'}),
    h('span', {class: 'muted', text: g.sms + ' SMs · ' + fmtMiB(g.memoryMiB), title: 'the GPU\u2019s ' + g.sms + ' streaming multiprocessors (SMs) and ' + fmtMiB(g.memoryMiB) + ' of memory'}));
  return h('article', {class: 'gpu', dataset: {gpu: g.index, layout: g.layout || 'whole'}},
    title,
    h('div', {class: 'axis'}, h('span', {class: 'axis-label', text: 'compute'}), strip(computeOwner, 'compute')),
    h('div', {class: 'axis'}, h('span', {class: 'axis-label', text: 'memory'}), strip(memOwner, 'memory')),
    h('div', {class: 'axis'}, h('span', {class: 'axis-label'}), blocks),
    // Its health, filled in by renderHealth as samples come.
    h('div', {class: 'axis health-row', hidden: true}, h('span', {class: 'axis-label', text: 'health'}), h('div', {class: 'health', dataset: {gpu: g.index}})));
}

function instanceBlock(g, inst, k, sched) {
  // The instance's name, as everywhere; its profile and placement beside.
  const what = g.mig ? inst.profile + '@' + inst.start : 'whole GPU';
  const used = inst.jobs.reduce((a, j) => a + (j.mpsPercent || 0), 0);
  const head = h('div', {class: 'inst-head'},
    h('b', {class: 'ident', text: inst.name}), ' ', h('span', {class: 'inst-what ident', text: what}),
    inst.mps ? h('span', {class: 'tag', title: 'an MPS daemon serves this instance', text: 'MPS'}) : null,
    sched ? h('span', {class: 'tag policy', title: 'kernel scheduler: ' + sched.policy, text: sched.policy}) : null,
    h('span', {class: 'inst-meta', text: inst.sms + ' SMs · ' + fmtMiB(inst.memoryMiB), title: 'the instance\u2019s ' + inst.sms + ' SMs and ' + fmtMiB(inst.memoryMiB) + ' of GPU memory'}));
  // Its memory: used (solid) and requested (light) against its own;
  // renderMemory fills it in, as the plan and the samples change.
  const mem = h('div', {class: 'membar', dataset: {key: inst.key}},
    h('span', {class: 'track'}, h('span', {class: 'req'}), h('span', {class: 'used'})),
    h('span', {class: 'memtext'}));
  const jobs = h('div', {class: 'inst-jobs'});
  for (const j of inst.jobs) {
    const kind = j.type === 'online' ? 'online' : 'offline';
    // The share bar only under MPS: without it no share is set.
    let bar = null;
    if (j.mpsPercent) {
      const fill = h('span', {class: 'fill'});
      fill.style.width = Math.max(0, Math.min(100, j.mpsPercent)) + '%';
      bar = h('span', {class: 'bar ' + kind, title: j.name + ': ' + j.mpsPercent + ' % of the instance\u2019s SMs (MPS)'},
        fill, h('span', {class: 'pct', text: j.mpsPercent + ' %'}));
    }
    jobs.append(h('div', {class: 'job', dataset: {job: j.id, state: j.state}},
      h('span', {class: 'job-name'}, h('span', {class: 'dot ' + kind, title: kind}), jobLink(j.id, j.name),
        j.state !== 'running' ? badge(j.state) : null),
      bar));
  }
  if (!inst.jobs.length) jobs.append(h('div', {class: 'muted small', text: 'idle'}));
  const el = h('div', {class: 'inst c' + (k % 8), dataset: {key: inst.key},
    title: (g.mig ? inst.profile + ': ' + inst.computeSlices + ' of 7 compute slices, ' + inst.size + ' of 8 memory slices from slice ' + inst.start :
      'the whole GPU, without MIG') + (inst.mps ? '; MPS shares assigned: ' + used + ' %' : '')}, head, mem, jobs);
  el.style.gridColumn = (g.mig ? inst.start + 1 : 1) + ' / span ' + (g.mig ? inst.size : MEMORY_SLICES);
  return el;
}

// memoryOf is what an instance's memory bar shows: its capacity, the
// memory its placed jobs requested, and the memory used: what NVML
// measured on its device at the last sample where the daemon samples
// it, else what its running jobs requested.
export function memoryOf(inst, u) {
  const out = {capacity: inst.memoryMiB || 0, requested: inst.requestedMiB || 0, used: inst.runningMiB || 0, measured: false, processes: 0};
  const d = u && u.at && !u.at.startsWith('0001-') ? (u.devices || []).find((x) => x.device === inst.device) : null;
  if (d) {
    out.used = d.usedMemoryMiB;
    out.measured = true;
    out.processes = d.processes;
  }
  return out;
}

const pct = (part, whole) => (whole > 0 ? Math.max(0, Math.min(100, (100 * part) / whole)) : 0);

// renderMemory writes every instance's memory bar from the plan and the
// last usage sample.
function renderMemory() {
  const p = state.plan;
  if (!p) return;
  const byKey = new Map();
  for (const g of p.gpus) for (const inst of g.instances) byKey.set(inst.key, inst);
  for (const el of document.querySelectorAll('#gpus .membar')) {
    const inst = byKey.get(el.dataset.key);
    if (!inst) continue;
    const m = memoryOf(inst, usage);
    el.querySelector('.req').style.width = pct(m.requested, m.capacity) + '%';
    el.querySelector('.used').style.width = pct(m.used, m.capacity) + '%';
    el.dataset.usedMib = m.used;
    el.dataset.requestedMib = m.requested;
    el.dataset.capacityMib = m.capacity;
    el.dataset.measured = m.measured;
    el.classList.toggle('over', m.used > m.capacity || m.requested > m.capacity);
    setText(el.querySelector('.memtext'), fmtMiB(m.used) + (m.measured ? ' used' : ' running') + ' · ' + fmtMiB(m.requested) + ' requested of ' + fmtMiB(m.capacity));
    const jobs = inst.jobs.length;
    el.title = 'GPU memory of ' + inst.name + ': ' + fmtMiB(m.capacity) + ' in all.\n' +
      (m.measured ? 'Used (solid): ' + fmtMiB(m.used) + ' held by ' + m.processes + (m.processes === 1 ? ' process' : ' processes') + ' on it, as NVML measured at the last sample (' + fmtDuration(now() - Date.parse(usage.at)) + ' ago).\n' :
        'Running (solid): ' + fmtMiB(m.used) + ', what its running jobs asked for (this daemon measures no GPU memory).\n') +
      'Requested (light): ' + fmtMiB(m.requested) + ', what its ' + jobs + (jobs === 1 ? ' placed job' : ' placed jobs') + ' asked for.';
  }
}

// The health charts: each reading's samples over the window, on a scale
// that fits them (utilisation 0-100 %; power and temperature from below
// the least to above the most seen, at least `span` wide), written
// beside the chart.
const CHART_W = 200;
const CHART_H = 36;
const NVML_WHY = {
  NVML_ERROR_NOT_SUPPORTED: 'NVML does not give it for this GPU in its mode (GPU utilisation: not with MIG enabled)',
  NVML_ERROR_NO_PERMISSION: 'mmkd may not read it',
};

// unknownWhy says why a reading is unknown, from the GPU's unknown map.
function unknownWhy(g, field) {
  const code = (g.unknown || {})[field] || '';
  const known = Object.keys(NVML_WHY).find((k) => code.includes(k));
  return 'unknown: NVML did not give it (' + (code || 'no reading') + (known ? ': ' + NVML_WHY[known] : '') + ')';
}

const METRICS = [
  {key: 'utilPct', label: 'utilisation', unit: '%', fmt: (v) => v + ' %', fixed: [0, 100],
    what: 'percent of the last sample period (about a second) during which a kernel ran on the GPU (NVML utilisation.gpu)'},
  {key: 'powerW', label: 'power', unit: 'W', fmt: (v) => v.toFixed(0) + ' W', span: 20,
    what: 'the board\u2019s power draw, in watts'},
  {key: 'tempC', label: 'temperature', unit: '°C', fmt: (v) => v + ' °C', span: 10,
    what: 'the GPU die\u2019s temperature, in degrees Celsius'},
];

// scale is a chart's range: fixed, or around the values seen, at least
// the metric's span wide, on round numbers, not below 0.
function scale(m, vals) {
  if (m.fixed) return m.fixed;
  const lo = Math.min(...vals);
  const hi = Math.max(...vals);
  const mid = (lo + hi) / 2;
  const half = Math.max(m.span, (hi - lo) * 1.2) / 2;
  const step = m.span / 2;
  const a = Math.max(0, Math.floor((mid - half) / step) * step);
  return [a, Math.max(a + m.span, Math.ceil((mid + half) / step) * step)];
}

// renderHealth writes each GPU's health: its readings with their units,
// a chart of each over the samples held (the window, or less since mmkd
// started), and its error counts.
function renderHealth() {
  for (const el of document.querySelectorAll('#gpus .health')) {
    const hv = health.gpus.get(Number(el.dataset.gpu));
    el.parentElement.hidden = !hv;
    if (!hv) continue;
    const g = hv.last;
    const hist = hv.history;
    const ms = hist.length ? Date.parse(health.at) - Date.parse(hist[0].t) : 0;
    const span = ms >= 60e3 ? Math.round(ms / 60e3) + (Math.round(ms / 60e3) === 1 ? ' minute' : ' minutes') : fmtDuration(ms);
    const cells = METRICS.map((m) => {
      const v = g[m.key];
      const now = v === null || v === undefined ? h('span', {class: 'hv unknown', dataset: {metric: m.key}, text: '—', title: m.label + ' ' + unknownWhy(g, m.key)}) :
        h('span', {class: 'hv', dataset: {metric: m.key}, text: m.fmt(v), title: m.label + ': ' + m.fmt(v) + ', ' + m.what + ' at ' + fmtTimeOf(health.at)});
      const extra = m.key === 'powerW' && g.powerLimitW ? h('span', {class: 'muted', dataset: {metric: 'powerLimitW'}, text: ' of ' + g.powerLimitW.toFixed(0) + ' W',
        title: 'the power limit the driver enforces: ' + g.powerLimitW.toFixed(0) + ' W'}) : null;
      return h('div', {class: 'hcell'}, h('div', {class: 'hhead'}, h('span', {class: 'muted', text: m.label + ' '}), now, extra), ...chart(m, hist, span));
    });
    const ecc = g.eccUncorrected;
    const xids = g.xids;
    const counts = h('div', {class: 'hcounts'},
      ecc === null || ecc === undefined ? h('span', {class: 'hv unknown', dataset: {metric: 'eccUncorrected'}, text: 'ECC errors —', title: 'uncorrectable ECC errors ' + unknownWhy(g, 'eccUncorrected')}) :
        h('span', {class: 'hv' + (ecc > 0 ? ' bad' : ''), dataset: {metric: 'eccUncorrected'}, text: 'ECC errors ' + ecc,
          title: ecc + ' uncorrectable (double-bit) ECC errors of the GPU\u2019s memory since the driver loaded (NVML\u2019s volatile count)'}),
      xids === null || xids === undefined ? h('span', {class: 'hv unknown', dataset: {metric: 'xids'}, text: 'XID errors —', title: 'XID errors ' + unknownWhy(g, 'xids')}) :
        h('span', {class: 'hv' + (xids > 0 ? ' bad' : ''), dataset: {metric: 'xids'}, text: 'XID errors ' + xids + (g.lastXid ? ' (last: XID ' + g.lastXid + ')' : ''),
          title: xids + ' XID critical errors the driver reported for this GPU since mmkd started' + (g.lastXid ? '; the latest was XID ' + g.lastXid : '')}));
    el.replaceChildren(...cells, counts);
  }
}

const fmtTimeOf = (t) => {
  const d = parseTime(t);
  return d ? d.toLocaleTimeString() : '';
};

// chart is a reading's samples as a line from the oldest sample held to
// the last, on its scale, and the scale written beside it.
function chart(m, hist, span) {
  const pts = hist.filter((p) => p[m.key] !== null && p[m.key] !== undefined);
  const svg = s('svg', {class: 'hchart', viewBox: '0 0 ' + CHART_W + ' ' + CHART_H, preserveAspectRatio: 'none', role: 'img',
    dataset: {metric: m.key, points: pts.length}});
  const vals = pts.map((p) => p[m.key]);
  if (!vals.length) {
    svg.append(s('title', {text: m.label + ': no reading'}));
    return [svg];
  }
  const [lo, hi] = scale(m, vals);
  const range = m.fmt(Math.min(...vals)) + ' to ' + m.fmt(Math.max(...vals));
  svg.append(s('title', {text: m.label + ' over the last ' + span + ' (' + pts.length + ' samples, ' + range + '; the chart from ' + m.fmt(lo) + ' to ' + m.fmt(hi) + ')'}));
  const t1 = Date.parse(health.at);
  const t0 = Math.max(t1 - health.window / 1e6, Date.parse(hist[0].t));
  const x = (t) => ((Date.parse(t) - t0) / Math.max(1, t1 - t0)) * CHART_W;
  const y = (v) => CHART_H - 1 - ((Math.max(lo, Math.min(v, hi)) - lo) / (hi - lo)) * (CHART_H - 2);
  svg.append(s('polyline', {class: 'hline ' + m.key, points: pts.map((p) => x(p.t).toFixed(1) + ',' + y(p[m.key]).toFixed(1)).join(' ')}));
  const sc = h('span', {class: 'hscale', text: m.fmt(lo).replace(' ' + m.unit, '') + '–' + m.fmt(hi),
    title: 'the chart\u2019s scale: from ' + m.fmt(lo) + ' at its foot to ' + m.fmt(hi) + ' at its top'});
  return [svg, sc];
}

function renderWaiting() {
  const p = state.plan;
  const ul = $('waiting');
  if (!p) return;
  const ids = p.waiting || [];
  // The plan lists the first waiting jobs and counts them all.
  const total = Math.max(p.waitingTotal || 0, ids.length);
  setText($('waiting-count'), total ? total + ' pending without a place' : '');
  $('waiting-count').title = total + ' pending jobs found no place at the last decision';
  // What holds each job, as the placement loop's last decision found.
  const why = new Map((p.waitingJobs || []).map((w) => [w.id, w]));
  const now = Date.now();
  const items = ids.slice(0, WAITING_SHOWN).map((id) => {
    const j = state.jobs.get(id);
    const w = why.get(id);
    const since = w ? parseTime(w.wait.since) : null;
    const facts = [];
    if (w) facts.push('#' + w.wait.position);
    if (j) facts.push(j.spec.type, fmtMiB(j.memoryMiB));
    if (since) facts.push('waiting ' + fmtDuration(now - since.getTime()));
    const reason = w ? w.wait.reason : (j && j.reason) || '';
    return h('li', null, jobLink(id, w ? w.name : j ? j.spec.name : id),
      facts.length ? h('span', {class: 'muted', text: ' · ' + facts.join(' · '),
        title: (w ? 'its place in the queue (#' + w.wait.position + '), ' : '') + 'its type, the GPU memory it asked for' + (since ? ' and how long it has waited (since ' + timeTitle(since) + ')' : '')}) : null,
      reason ? h('div', {class: 'small wait-reason', text: reason}) : null);
  });
  if (total > WAITING_SHOWN) items.push(h('li', null, h('a', {href: '#/jobs?state=pending', text: 'and ' + (total - WAITING_SHOWN) + ' more'})));
  if (!ids.length) items.push(h('li', {class: 'muted', text: 'Nothing waits: every pending job found a place.'}));
  ul.replaceChildren(...items);
}

function renderSchedBrief() {
  const box = $('sched-brief');
  const list = state.schedulers || [];
  if (!list.length) {
    box.replaceChildren(h('p', {class: 'muted', text: 'No kernel scheduler runs: kernel scheduling is off on this node (kernelsched.enabled), or no instance runs a job yet.'}));
    return;
  }
  const rows = list.map((sc) => {
    const tasks = sc.tasks || [];
    const online = tasks.filter((t) => t.online);
    const held = (sc.queues || []).reduce((a, b) => a + b, 0);
    return h('tr', null,
      h('td', null, h('a', {href: '#/sched', text: sc.name || sc.instance})),
      h('td', {text: sc.policy}),
      h('td', {class: 'num', text: tasks.length, title: tasks.length + ' job processes connected to its kernel scheduler'}),
      h('td', {class: 'ident', text: online.length ? online.map((t) => t.name).join(', ') : '—', title: 'the online tasks, whose kernels go first'}),
      h('td', {class: 'num', text: held, title: held + ' kernel launches held now, waiting for their turn'}),
      h('td', {class: 'num', text: sc.counters.filled, title: sc.counters.filled + ' held launches let go into an online task\u2019s idle gap since the scheduler started'}));
  });
  box.replaceChildren(h('table', {class: 'brief'},
    h('thead', null, h('tr', null, h('th', {text: 'Instance'}), h('th', {text: 'Policy'}), h('th', {class: 'num', text: 'Tasks'}),
      h('th', {text: 'Online tasks'}), h('th', {class: 'num', text: 'Held now'}), h('th', {class: 'num', text: 'Filled'}))),
    h('tbody', null, rows)));
}
