// The overview: the job counts, each GPU drawn to scale as its 7 compute
// and 8 memory slices with its instances as blocks and their jobs' MPS
// shares as bars, the jobs waiting for a place, and the kernel schedulers
// in brief.

import {h, $, setText, fmtMiB, fmtDuration, parseTime, jobLink, badge} from './dom.js';
import {state, on} from './store.js';

const COMPUTE_SLICES = 7;
const MEMORY_SLICES = 8;
const WAITING_SHOWN = 20;

let visible = false;
let dirty = true;
// Each GPU's card and the JSON it was drawn from: a card is drawn again
// only when its GPU changed.
const cards = new Map();

export const overview = {
  show() {
    visible = true;
    if (dirty) render();
  },
  hide() {
    visible = false;
  },
};

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
    h('a', {class: 'chip', href: '#/jobs?state=' + st}, badge(st), h('b', {text: c[st] || 0})));
  const p = state.plan;
  const facts = [];
  if (p) {
    facts.push(h('span', {class: 'fact'}, 'decisions ', h('b', {text: p.decisions})));
    facts.push(h('span', {class: 'fact', title: 'predicted system throughput: the sum of the placed jobs\u2019 speeds (1 = alone on a whole GPU)'},
      'throughput ', h('b', {text: (p.total || 0).toFixed(2)})));
  }
  $('summary').replaceChildren(...chips, ...facts);
}

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
  // Move only what is out of place.
  list.forEach((el, i) => {
    if (box.children[i] !== el) box.insertBefore(el, box.children[i] || null);
  });
  while (box.children.length > list.length) box.lastChild.remove();
  setText($('gpu-note'), p.gpus.length + ' on this node');
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
    h('b', {text: 'GPU ' + g.index}), ' ', h('span', {text: g.name || g.model}),
    h('span', {class: 'tag', text: g.mig ? 'MIG ' + (g.layout || '(no instance)') : 'no MIG'}),
    h('span', {class: 'muted', text: g.sms + ' SMs · ' + fmtMiB(g.memoryMiB)}));
  return h('article', {class: 'gpu', dataset: {gpu: g.index, layout: g.layout || 'whole'}},
    title,
    h('div', {class: 'axis'}, h('span', {class: 'axis-label', text: 'compute'}), strip(computeOwner, 'compute')),
    h('div', {class: 'axis'}, h('span', {class: 'axis-label', text: 'memory'}), strip(memOwner, 'memory')),
    h('div', {class: 'axis'}, h('span', {class: 'axis-label'}), blocks));
}

function instanceBlock(g, inst, k, sched) {
  // The instance's name, as everywhere; its profile and placement beside.
  const what = g.mig ? inst.profile + '@' + inst.start : 'whole GPU';
  const used = inst.jobs.reduce((a, j) => a + (j.mpsPercent || 0), 0);
  const head = h('div', {class: 'inst-head'},
    h('b', {text: inst.name}), ' ', h('span', {class: 'inst-what', text: what}),
    inst.mps ? h('span', {class: 'tag', title: 'an MPS daemon serves this instance', text: 'MPS'}) : null,
    sched ? h('span', {class: 'tag policy', title: 'kernel scheduler: ' + sched.policy, text: sched.policy}) : null,
    h('span', {class: 'inst-meta', text: inst.sms + ' SMs · ' + fmtMiB(inst.memoryMiB)}));
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
      'the whole GPU, without MIG') + (inst.mps ? '; MPS shares assigned: ' + used + ' %' : '')}, head, jobs);
  el.style.gridColumn = (g.mig ? inst.start + 1 : 1) + ' / span ' + (g.mig ? inst.size : MEMORY_SLICES);
  return el;
}

function renderWaiting() {
  const p = state.plan;
  const ul = $('waiting');
  if (!p) return;
  const ids = p.waiting || [];
  // The plan lists the first waiting jobs and counts them all.
  const total = Math.max(p.waitingTotal || 0, ids.length);
  setText($('waiting-count'), total ? total + ' pending without a place' : '');
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
      facts.length ? h('span', {class: 'muted', text: ' · ' + facts.join(' · ')}) : null,
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
      h('td', {class: 'num', text: tasks.length}),
      h('td', {text: online.length ? online.map((t) => t.name).join(', ') : '—'}),
      h('td', {class: 'num', text: held}),
      h('td', {class: 'num', text: sc.counters.filled}));
  });
  box.replaceChildren(h('table', {class: 'brief'},
    h('thead', null, h('tr', null, h('th', {text: 'Instance'}), h('th', {text: 'Policy'}), h('th', {class: 'num', text: 'Tasks'}),
      h('th', {text: 'Online tasks'}), h('th', {class: 'num', text: 'Held now'}), h('th', {class: 'num', text: 'Filled'}))),
    h('tbody', null, rows)));
}
