// The kernel schedulers: per instance its policy, counters, the launches
// held per priority, the connected tasks, and a Gantt strip per task of
// when its kernels ran over the last seconds (a <canvas>, drawn again
// with each update, once a second).

import {h, $, setText} from './dom.js';
import {state, on} from './store.js';

// windowMs is the timeline's span, ending at the daemon's time of the
// update: 5 s (what the scheduler keeps), 1 s or 200 ms to see single
// kernels.
let windowMs = 5000;
const ROW = 18;
const LABEL = 150;

// COUNTERS are the scheduler's counters shown: key, name, what it
// counts (since the scheduler started).
const COUNTERS = [
  ['kernels', 'kernels seen', 'kernel launches its tasks\u2019 hooks reported'],
  ['at_once', 'went at once', 'launches let go at once, without waiting'],
  ['held', 'held', 'launches held for a higher-priority task'],
  ['filled', 'filled into gaps', 'held launches let go into a higher-priority task\u2019s idle gap'],
  ['fail_opens', 'fail-opens', 'held launches the hook let go when the scheduler did not answer in time'],
  ['went', 'went unasked', 'launches of held tasks the hook let go without a decision'],
  ['unprofiled', 'unprofiled', 'launches whose kernel the task\u2019s profile lacks'],
  ['quiet', 'tasks quiet (launches not reported)', 'tasks whose launches the policy needs not now: their hooks report none'],
];

let visible = false;
const cards = new Map(); // instance key -> {el, parts}

export function initSched() {
  const sel = $('sched-window');
  sel.addEventListener('change', () => {
    windowMs = Number(sel.value) || 5000;
    render();
  });
}

export const schedView = {
  show() {
    visible = true;
    render();
  },
  hide() {
    visible = false;
  },
};

on('snapshot', () => visible && render());
on('kernelsched', () => visible && render());
window.addEventListener('resize', () => visible && render());

function render() {
  const box = $('scheds');
  const list = state.schedulers || [];
  if (!list.length) {
    cards.clear();
    box.replaceChildren(h('p', {class: 'empty', text: 'No kernel scheduler runs on this node: kernel scheduling is off (kernelsched.enabled, or no hook library next to mmkd), or no instance runs a job yet.'}));
    return;
  }
  if (box.querySelector('.empty')) box.replaceChildren();
  const seen = new Set();
  // The busiest first: most tasks connected, then by instance.
  const sorted = [...list].sort((a, b) => (b.tasks || []).length - (a.tasks || []).length || (a.instance < b.instance ? -1 : 1));
  sorted.forEach((sc, i) => {
    seen.add(sc.instance);
    let c = cards.get(sc.instance);
    if (!c) {
      c = card(sc.instance, sc.name || sc.instance);
      cards.set(sc.instance, c);
    }
    if (box.children[i] !== c.el) box.insertBefore(c.el, box.children[i] || null);
    fill(c, sc);
  });
  for (const [k, c] of cards) {
    if (!seen.has(k)) {
      c.el.remove();
      cards.delete(k);
    }
  }
}

function card(key, name) {
  const parts = {
    policy: h('span', {class: 'tag policy'}),
    summary: h('span', {class: 'muted small'}),
    counters: h('dl', {class: 'counters'}),
    queues: h('div', {class: 'queues'}),
    tasks: h('tbody'),
    canvas: h('canvas', {class: 'timeline', height: ROW * 2 + 22}),
  };
  const el = h('article', {class: 'sched', dataset: {instance: key}},
    h('div', {class: 'sched-head'}, h('b', {class: 'ident', text: name}), ' ', parts.policy, ' ', parts.summary),
    h('div', {class: 'sched-body'},
      h('div', null, h('h4', {text: 'Counters'}), parts.counters),
      h('div', null, h('h4', {text: 'Held now, per priority'}), parts.queues),
      h('div', {class: 'grow'}, h('h4', {text: 'Connected tasks'}),
        h('table', {class: 'tasks'},
          h('thead', null, h('tr', null, [['Task', 'the job whose process connected'], ['PID', 'its process id'], ['Prio', 'its priority, 0 (highest) to 9'],
            ['Type', 'online: its kernels first; offline'], ['Held', 'its launches held now'], ['Profile', 'whether its kernels\u2019 durations and gaps are profiled']]
            .map(([t, tip]) => h('th', {text: t, title: tip})))),
          parts.tasks))),
    h('h4', {text: 'Kernels over the last seconds'}),
    parts.canvas);
  return {el, parts};
}

function fill(c, sc) {
  const p = c.parts;
  setText(p.policy, sc.policy);
  // An instance with no task and nothing in its timeline is one line.
  const idle = !(sc.tasks || []).length && !(sc.timeline || []).length;
  c.el.classList.toggle('idle', idle);
  setText(p.summary, idle ? 'no task connected · ' + (sc.counters.kernels || 0).toLocaleString('en-US') + ' kernels seen' : '');
  p.summary.title = idle ? 'kernel launches its tasks\u2019 hooks reported since it started' : '';
  if (idle) return;
  p.counters.replaceChildren(...COUNTERS.flatMap(([k, label, what]) => [h('dt', {text: label, title: what}),
    h('dd', {text: (sc.counters[k] || 0).toLocaleString('en-US'), title: (sc.counters[k] || 0).toLocaleString('en-US') + ' ' + what + (k === 'quiet' ? ' now' : ', since the scheduler started')})]));
  const tasks = sc.tasks || [];
  const queues = sc.queues || [];
  const top = Math.max(1, ...queues);
  p.queues.replaceChildren(...queues.map((n, prio) => {
    const bar = h('span', {class: 'qbar'});
    bar.style.width = (100 * n / top) + '%';
    return h('div', {class: 'q', title: 'priority ' + prio + ': ' + n + ' launches held'},
      h('span', {class: 'qprio', text: prio}), h('span', {class: 'qtrack'}, bar), h('span', {class: 'qn', text: n}));
  }));
  p.tasks.replaceChildren(...(tasks.length ? tasks.map((t) => h('tr', null,
    h('td', {class: 'ident', text: t.name}), h('td', {text: t.pid, title: 'process id ' + t.pid}), h('td', {text: t.priority, title: 'priority ' + t.priority + ' (0 highest, 9 lowest)'}),
    h('td', null, h('span', {class: 'kind ' + (t.online ? 'online' : 'offline'), text: t.online ? 'online' : 'offline'}), t.free ? ' free' : '', t.quiet ? ' quiet' : ''),
    h('td', {text: t.held, title: t.held + ' of its launches held now'}), h('td', {text: t.profiled ? 'yes' : 'no'}))) :
    [h('tr', null, h('td', {colspan: 6, class: 'muted', text: 'none connected'}))]));
  drawTimeline(p.canvas, sc);
}

// priorityColor: priority 0 (highest) red through 9 blue.
const priorityColor = (prio) => 'hsl(' + (Math.max(0, Math.min(9, prio)) * 24) + ', 70%, 50%)';

function drawTimeline(canvas, sc) {
  const end = state.schedTime || Date.now();
  const start = end - windowMs;
  // One row per task: the connected ones and those in the timeline,
  // highest priority first.
  const tasks = new Map();
  for (const t of sc.tasks || []) tasks.set(t.name, t.priority);
  const spans = [];
  for (const sp of sc.timeline || []) {
    const a = new Date(sp.start).getTime();
    const b = new Date(sp.end).getTime();
    if (b < start) continue;
    if (!tasks.has(sp.task)) tasks.set(sp.task, sp.priority);
    spans.push({task: sp.task, prio: sp.priority, a, b});
  }
  const names = [...tasks.keys()].sort((x, y) => tasks.get(x) - tasks.get(y) || (x < y ? -1 : 1));
  // The canvas is as wide as its card's content (CSS width 100%); its
  // bitmap matches the screen's pixels.
  const width = Math.max(300, canvas.clientWidth || 600);
  const height = Math.max(1, names.length) * ROW + 22;
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(width * dpr);
  canvas.height = Math.round(height * dpr);
  canvas.style.height = height + 'px';
  const g = canvas.getContext('2d');
  g.scale(dpr, dpr);
  g.clearRect(0, 0, width, height);
  g.font = '12px system-ui, sans-serif';
  g.textBaseline = 'middle';
  const x = (t) => LABEL + (width - LABEL - 8) * (t - start) / windowMs;
  // Grid: five steps.
  g.strokeStyle = '#d8dce3';
  g.fillStyle = '#6b7280';
  const step = windowMs / 5;
  for (let k = 0; k <= 5; k++) {
    const px = Math.round(x(start + k * step)) + 0.5;
    g.beginPath();
    g.moveTo(px, 0);
    g.lineTo(px, height - 18);
    g.stroke();
    const ago = windowMs - k * step;
    const last = k === 5;
    g.textAlign = last ? 'right' : 'center';
    g.fillText(last ? 'now' : '−' + (ago >= 1000 ? ago / 1000 + ' s' : ago + ' ms'), last ? px + 4 : px, height - 8);
  }
  if (!names.length) {
    g.textAlign = 'left';
    g.fillText('no kernel released in the last seconds', LABEL + 8, ROW / 2);
    return;
  }
  const rowOf = new Map(names.map((n, i) => [n, i]));
  names.forEach((n, i) => {
    g.fillStyle = '#111827';
    g.textAlign = 'left';
    const label = n.length > 20 ? n.slice(0, 19) + '…' : n;
    g.fillText(label + ' (p' + tasks.get(n) + ')', 4, i * ROW + ROW / 2);
  });
  for (const sp of spans) {
    const a = Math.max(x(sp.a), LABEL);
    const b = Math.min(x(sp.b), width - 8);
    g.fillStyle = priorityColor(sp.prio);
    g.fillRect(a, rowOf.get(sp.task) * ROW + 3, Math.max(1, b - a), ROW - 6);
  }
}
