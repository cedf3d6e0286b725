// A job's page (#/jobs/ID): its details, an online job's latency against
// its target (jobslo.js), its GPU use (jobusage.js), its events, its live
// log, and a cancel button.

import {h, $, setText, fmtMiB, fmtTime, fmtDuration, parseTime, stateClass, terminal, instanceLabel, timeTitle} from './dom.js';
import {request, readText} from './api.js';
import {state, on, putJobs, restraintOf, restraintText, stateWords, drawnKey} from './store.js';
import {runtime, linkJobs} from './jobs.js';
import {followUsage} from './jobusage.js';
import {followSLO} from './jobslo.js';

// The log keeps at most LOG_KEEP characters on the page, dropping the
// oldest; it starts from the last LOG_TAIL bytes.
const LOG_KEEP = 1 << 20;
const LOG_TAIL = 256 << 10;

let current = null; // {id, ctrl, events: seq shown, logLen}

export const jobPage = {
  show(_params, id) {
    if (current && current.id === id) return;
    this.hide();
    current = {id, ctrl: new AbortController(), logLen: 0, drawn: ''};
    setText($('job-title'), id);
    $('job-state').className = 'state';
    setText($('job-state'), '');
    $('job-details').replaceChildren();
    $('job-events').replaceChildren();
    $('job-log').replaceChildren();
    $('job-error').hidden = true;
    confirmBox(false);
    const j = state.jobs.get(id);
    if (j) draw(j);
    load(current);
    followLog(current);
    followUsage(id, current.ctrl.signal);
    followSLO(id, current.ctrl.signal);
  },
  hide() {
    if (current) current.ctrl.abort();
    current = null;
  },
};

export function initJobPage() {
  $('job-cancel').addEventListener('click', () => confirmBox(true));
  $('job-confirm-no').addEventListener('click', () => confirmBox(false));
  $('job-confirm-yes').addEventListener('click', cancel);
  $('log-follow').addEventListener('change', () => {
    if ($('log-follow').checked) scrollLog();
  });
  setInterval(() => {
    const j = current && state.jobs.get(current.id);
    if (j && j.state === 'running') setText($('job-runtime'), runtime(j));
  }, 1000);
}

on('jobs', (changed) => {
  if (!current) return;
  const j = changed.find((x) => x.id === current.id);
  if (j) {
    draw(j);
    loadEvents(current);
  }
});
on('slo', () => {
  const j = current && state.jobs.get(current.id);
  if (j) draw(j);
});
on('snapshot', () => {
  if (!current) return;
  const j = state.jobs.get(current.id);
  if (j) draw(j);
  loadEvents(current);
});

async function load(cur) {
  try {
    const j = await request('api/v1/jobs/' + encodeURIComponent(cur.id), {signal: cur.ctrl.signal});
    if (cur !== current) return;
    putJobs([j]); // draws through the jobs listener
    draw(j);
  } catch (e) {
    if (cur === current && e.name !== 'AbortError') showError(e.message);
  }
  loadEvents(cur);
}

function showError(msg) {
  const el = $('job-error');
  el.hidden = false;
  setText(el, msg);
}

function draw(j) {
  if (!current || j.id !== current.id) return;
  const rs = restraintOf(j);
  const key = drawnKey(j, rs);
  if (current.drawn === key) return;
  current.drawn = key;
  setText($('job-title'), j.spec.name + ' ');
  $('job-title').append(h('small', {class: 'id', text: j.id}));
  const st = $('job-state');
  st.className = stateClass(j.state);
  setText(st, stateWords(j, rs));
  $('job-cancel-box').hidden = terminal(j.state);
  if (terminal(j.state)) confirmBox(false);

  const p = j.placement;
  // Each row: its name, its value, and the value's tooltip; IDENT marks
  // a value that is a name or text of the job's, not a number.
  const rows = [
    ['State', [j.state, j.reason ? ' — ' : '', ...linkJobs(j.reason)], 'its state and why it is in it'],
    ['Type', j.spec.type, 'online: latency-critical, its kernels first; offline: throughput'],
    ['Priority', j.priority, 'its priority, 0 (highest) to 9 (lowest)'],
    ['Memory', fmtMiB(j.memoryMiB), 'the GPU memory it asked for: ' + j.memoryMiB + ' MiB'],
    ['GPU memory limit', p && p.memLimitMiB ? fmtMiB(p.memLimitMiB) + ' (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT)' : '—',
      p && p.memLimitMiB ? 'the device memory its MPS client may hold: ' + p.memLimitMiB + ' MiB, its memory plus the margin' : ''],
    // A claim job (Kubernetes) has no command: its claim and pods instead.
    j.spec.claim ? ['Claim', j.spec.claim.namespace + '/' + j.spec.claim.name + ' for ' + ((j.spec.claim.pods || []).join(', ') || 'no pod yet'), IDENT]
      : ['Command', h('ol', {class: 'argv', start: 0, title: 'the argv, one argument per line'}, j.spec.command.map((a) => h('li', null, h('code', {text: a})))), IDENT],
    ['Environment', j.spec.env ? h('code', {class: 'argv', text: Object.entries(j.spec.env).map(([k, v]) => k + '=' + v).join('\n')}) : '—', IDENT],
    ['Working directory', j.spec.workdir || 'its own directory', IDENT],
    ['Workload hint', j.spec.workload ? j.spec.workload.model + ' ' + j.spec.workload.mode + (j.spec.workload.batch ? ' bs' + j.spec.workload.batch : '') : '—', IDENT],
    ['Task key', j.taskKey, IDENT],
    ['Instance', p ? instanceLabel(p) + (terminal(j.state) ? ' (last)' : '') : '—', IDENT],
    ['MPS share', p && p.mpsPercent ? p.mpsPercent + ' %' : p ? 'none (MPS is off on this node)' : '—',
      p && p.mpsPercent ? 'the percent of the instance\u2019s SMs its MPS client may use (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE)' : ''],
    ['Predicted speed', p ? p.speed.toFixed(2) + ' × alone' : '—',
      'the predictor\u2019s estimate of its speed where it runs, as a multiple of its speed alone on a whole GPU (1 × alone: as fast as alone)'],
    ['Device', p ? p.device : '—', IDENT],
    ['PID', j.pid || '—', 'its process id on the node (its process group\u2019s)'],
    ['Exit', j.exitCode === undefined ? '—' : j.exitCode + (j.signal ? ' (' + j.signal + ')' : ''), 'its exit status' + (j.signal ? ' and the signal that ended it' : '')],
    ['Restarts', j.restarts, 'how many times mmk stopped and started it again (to re-share or move it)'],
    ['Created', fmtTime(j.createdAt), timeTitle(j.createdAt, 'submitted')],
    ['Started', fmtTime(j.startedAt) || '—', timeTitle(j.startedAt, 'started')],
    ['Finished', fmtTime(j.finishedAt) || '—', timeTitle(j.finishedAt, 'finished')],
    ['Runtime', h('span', {id: 'job-runtime', text: runtime(j) || '—'}), 'how long it ran' + (terminal(j.state) ? '' : ' so far')],
  ];
  if (rs) {
    rows.splice(1, 0, ['Restrained', [h('span', {id: 'job-restraint', text: rs.state}), ' — ', ...linkJobs(restraintText(rs, true))],
      'what its instance’s latency controller does to it now, for which online jobs’ targets, and the numbers of its last decision']);
  }
  if (j.wait && j.state === 'pending') {
    // What holds the job, as the placement loop's last decision found.
    const since = parseTime(j.wait.since);
    rows.splice(1, 0,
      ['Waiting', j.wait.reason, 'what holds it, as the last placement decision found'],
      ['Waiting since', since ? fmtTime(since) + ' (' + fmtDuration(Date.now() - since.getTime()) + ')' : '—', timeTitle(since, 'waiting since')],
      ['Queue position', j.wait.position + ' of the waiting jobs', 'its place among the waiting jobs, in the order they are placed']);
  }
  if (j.idempotencyKey) rows.push(['Idempotency key', j.idempotencyKey, IDENT]);
  $('job-details').replaceChildren(...rows.flatMap(([k, v, tip]) => [h('dt', {text: k}),
    h('dd', tip === IDENT ? {class: 'ident'} : {title: tip || null}, v)]));
}

// IDENT marks a detail that is a name or text, not a number.
const IDENT = {};

let eventsBusy = null;

// loadEvents fetches the job's transitions (once at a time; a call while
// one runs fetches again after it).
async function loadEvents(cur) {
  if (eventsBusy) {
    eventsBusy.again = true;
    return;
  }
  eventsBusy = {again: false};
  try {
    const evs = await request('api/v1/jobs/' + encodeURIComponent(cur.id) + '/events', {signal: cur.ctrl.signal});
    if (cur === current) {
      $('job-events').replaceChildren(...evs.map((e) => h('tr', null,
        h('td', {text: fmtTime(e.time), title: timeTitle(e.time)}), h('td', {text: e.from || ''}), h('td', null, h('span', {class: stateClass(e.to), text: e.to})),
        h('td', {class: 'ident'}, linkJobs(e.reason)))));
    }
  } catch (e) {
    if (cur === current && e.name !== 'AbortError') showError(e.message);
  } finally {
    const again = eventsBusy.again;
    eventsBusy = null;
    if (again && cur === current) loadEvents(cur);
  }
}

function confirmBox(open) {
  $('job-cancel').hidden = open;
  $('job-confirm').hidden = !open;
}

async function cancel() {
  const cur = current;
  if (!cur) return;
  $('job-confirm-yes').disabled = true;
  try {
    const j = await request('api/v1/jobs/' + encodeURIComponent(cur.id) + '/cancel', {method: 'POST', body: {reason: 'cancelled from the dashboard'}});
    putJobs([j]);
    confirmBox(false);
  } catch (e) {
    showError(e.message);
  } finally {
    $('job-confirm-yes').disabled = false;
  }
}

// followLog streams the job's log into the page until the job has ended
// and its log is read; a stream cut short is read again (from its tail).
async function followLog(cur) {
  const pre = $('job-log');
  const status = $('log-status');
  for (;;) {
    setText(status, 'following');
    try {
      const resp = await request('api/v1/jobs/' + encodeURIComponent(cur.id) + '/logs?follow=1&tail=' + LOG_TAIL, {raw: true, signal: cur.ctrl.signal});
      pre.replaceChildren();
      cur.logLen = 0;
      await readText(resp, (text) => appendLog(cur, pre, text));
      // The daemon ends a followed log once the job has ended; the
      // stream may not have said so yet.
      const j = await request('api/v1/jobs/' + encodeURIComponent(cur.id), {signal: cur.ctrl.signal});
      putJobs([j]);
      if (terminal(j.state)) {
        setText(status, cur.logLen ? 'the job ended' : 'the job ended; its log is empty');
        return;
      }
    } catch (e) {
      if (cur !== current || e.name === 'AbortError') return;
      setText(status, 'log: ' + e.message);
      if (e.status === 404) return;
    }
    if (cur !== current) return;
    await new Promise((r) => setTimeout(r, 2000));
    if (cur !== current) return;
  }
}

function appendLog(cur, pre, text) {
  if (cur !== current) return;
  pre.append(document.createTextNode(text));
  cur.logLen += text.length;
  // Drop the oldest chunks past the limit.
  while (cur.logLen > LOG_KEEP && pre.firstChild && pre.firstChild !== pre.lastChild) {
    cur.logLen -= pre.firstChild.textContent.length;
    pre.firstChild.remove();
  }
  scrollLog();
}

function scrollLog() {
  if ($('log-follow').checked) {
    const pre = $('job-log');
    pre.scrollTop = pre.scrollHeight;
  }
}
