// The jobs table, its filters, the cancelling of the jobs selected in it
// and the submission form.
//
// The table shows at most `cap` rows (100, "Show more" adds 100). It is
// drawn whole only when it opens or a filter changes; a stream update
// touches only the rows of the jobs that changed (their cells' text), and
// inserts or removes rows where a job enters or leaves the filter.

import {h, $, setText, fmtMiB, fmtDuration, fmtTime, parseTime, stateClass, jobLink, terminal, instanceLabel, timeTitle} from './dom.js';
import {request, APIError, idempotencyKey} from './api.js';
import {state, on, now, putJobs, restraintOf, restraintText, stateWords, drawnKey} from './store.js';

const CAP_STEP = 100;
const ACTIVE = ['pending', 'placed', 'running', 'restarting'];

let visible = false;
let dirty = true;
let cap = CAP_STEP;
// MAX_LIST is the most jobs the daemon lists at once (web.MaxListLimit).
const MAX_LIST = 5000;
let filter = {state: '', type: '', name: ''};
let matching = 0; // jobs held that match the filter
let shown = []; // ids of the rows, newest first
const rows = new Map(); // id -> {tr, cells}
let fetchedFor = ''; // the filter and cap older jobs were last fetched for
// selected are the ids of the jobs whose boxes are checked: shown, not
// ended.
const selected = new Set();

export const jobsView = {
  show(params) {
    visible = true;
    const f = {state: params.get('state') || '', type: params.get('type') || '', name: params.get('name') || ''};
    if (params.toString() !== '' && (f.state !== filter.state || f.type !== filter.type || f.name !== filter.name)) {
      filter = f;
      $('f-state').value = f.state;
      $('f-type').value = f.type;
      $('f-name').value = f.name;
      cap = CAP_STEP;
      dirty = true;
    }
    if (dirty) render();
  },
  hide() {
    visible = false;
  },
};

export function initJobs() {
  const refilter = () => {
    filter = {state: $('f-state').value, type: $('f-type').value, name: $('f-name').value};
    cap = CAP_STEP;
    render();
  };
  $('f-state').addEventListener('change', refilter);
  $('f-type').addEventListener('change', refilter);
  let typing;
  $('f-name').addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(refilter, 150);
  });
  $('filters').addEventListener('submit', (ev) => ev.preventDefault());
  $('jobs-more').addEventListener('click', () => {
    cap += CAP_STEP;
    render();
  });
  mayWeSubmit();
  $('new-job').addEventListener('click', () => {
    $('submit').hidden = false;
    $('s-command').focus();
  });
  $('s-close').addEventListener('click', () => {
    $('submit').hidden = true;
  });
  $('submit').addEventListener('submit', submit);
  $('jobs-all').addEventListener('change', () => {
    const on = $('jobs-all').checked;
    for (const id of shown) {
      const j = state.jobs.get(id);
      if (!j || terminal(j.state)) continue;
      if (on) selected.add(id);
      else selected.delete(id);
      rows.get(id).cells.sel.checked = on;
    }
    updateBulk();
  });
  $('bulk-cancel').addEventListener('click', () => bulkConfirm(true));
  $('bulk-no').addEventListener('click', () => bulkConfirm(false));
  $('bulk-yes').addEventListener('click', cancelSelected);
  setInterval(tick, 1000);
}

// updateBulk shows "Cancel N selected jobs" while any is selected, and
// the header's box checked when every selectable row shown is.
function updateBulk() {
  const n = selected.size;
  $('bulk').hidden = n === 0;
  if (n === 0) bulkConfirm(false);
  setText($('bulk-cancel'), 'Cancel ' + n + ' selected ' + (n === 1 ? 'job' : 'jobs'));
  $('bulk-cancel').title = 'cancel the jobs whose boxes are checked: ' + [...selected].join(', ');
  const open = shown.filter((id) => {
    const j = state.jobs.get(id);
    return j && !terminal(j.state);
  });
  $('jobs-all').checked = open.length > 0 && open.every((id) => selected.has(id));
}

function bulkConfirm(open) {
  $('bulk-cancel').hidden = open;
  $('bulk-confirm').hidden = !open;
}

// cancelSelected cancels the selected jobs, one cancel request each (in
// the table's order), and says which mmkd refused, by id, and why.
async function cancelSelected() {
  const ids = shown.filter((id) => selected.has(id)).concat([...selected].filter((id) => !shown.includes(id)));
  const out = $('bulk-result');
  out.hidden = false;
  out.className = 'result';
  $('bulk-yes').disabled = true;
  const refused = [];
  let done = 0;
  try {
    for (const id of ids) {
      setText(out, 'Cancelling ' + (done + refused.length + 1) + ' of ' + ids.length + '…');
      try {
        const j = await request('api/v1/jobs/' + encodeURIComponent(id) + '/cancel', {method: 'POST', body: {reason: 'cancelled from the dashboard'}});
        putJobs([j]);
        selected.delete(id);
        done++;
      } catch (e) {
        const j = state.jobs.get(id);
        refused.push(id + (j ? ' (' + j.spec.name + ')' : '') + ': ' + e.message);
      }
    }
  } finally {
    $('bulk-yes').disabled = false;
  }
  out.className = 'result ' + (refused.length ? 'error' : 'ok');
  setText(out, 'Cancelled ' + done + ' of ' + ids.length + '.' + (refused.length ? ' Refused: ' + refused.join('; ') : ''));
  bulkConfirm(false);
  updateBulk();
}

// mayWeSubmit shows "New job" only where mmkd would run the jobs it
// sends: over TCP the dashboard holds mmkd's token, which makes it mmkd's
// user, root on a packaged node, whose jobs are refused unless
// jobs.allow_root is on. Elsewhere it says why and how to submit.
async function mayWeSubmit() {
  let w;
  try {
    w = await request('api/v1/whoami');
  } catch (e) {
    // An mmkd without this route: the form as before.
    $('new-job').hidden = false;
    return;
  }
  if (w.maySubmit) {
    $('new-job').hidden = false;
    return;
  }
  const who = w.user && w.user.name ? w.user.name : 'uid ' + (w.user ? w.user.uid : '?');
  setText($('new-job-off'), 'No submitting here: this dashboard acts as ' + who +
    (w.over === 'tcp' ? ' (mmkd\u2019s user, through its token)' : '') + ', and mmkd answers: ' + w.submitRefused +
    '. Submit as yourself on the node: mmkctl submit -- COMMAND (users of mmkd\u2019s socket group, mmk where the package is installed: usermod -aG mmk USER).');
  $('new-job-off').hidden = false;
}

on('snapshot', () => {
  // A new snapshot holds only the newest jobs: older ones are fetched
  // again if the table needs them.
  fetchedFor = '';
  if (visible) render();
  else dirty = true;
});
on('jobs', (changed) => {
  if (visible && !dirty) update(changed);
  else dirty = true;
});
// The restraints changed (or not): the rows shown say them.
on('slo', () => {
  if (!visible || dirty) return;
  for (const id of shown) {
    const j = state.jobs.get(id);
    if (j && rows.has(id)) fill(rows.get(id), j);
  }
});

function matches(j) {
  if (filter.state === 'active') {
    if (!ACTIVE.includes(j.state)) return false;
  } else if (filter.state && j.state !== filter.state) return false;
  if (filter.type && j.spec.type !== filter.type) return false;
  if (filter.name && !(j.spec.name || '').includes(filter.name)) return false;
  return true;
}

const newestFirst = (a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

// render draws the table whole: the first cap jobs that match.
function render() {
  dirty = false;
  const list = [];
  for (const j of state.jobs.values()) if (matches(j)) list.push(j);
  list.sort(newestFirst);
  matching = list.length;
  shown = list.slice(0, cap).map((j) => j.id);
  const keep = new Set(shown);
  for (const id of rows.keys()) if (!keep.has(id)) rows.delete(id);
  // Only shown jobs stay selected: a filter that hides one unselects it.
  for (const id of selected) if (!keep.has(id)) selected.delete(id);
  $('jobs-body').replaceChildren(...shown.map((id) => row(state.jobs.get(id)).tr));
  footer();
  updateBulk();
  fetchOlder();
}

// update applies the jobs of a stream message to the rows.
function update(changed) {
  const body = $('jobs-body');
  let hole = false;
  for (const j of changed) {
    const [i, found] = position(j.id);
    const m = matches(j);
    if (found && m) {
      fill(rows.get(j.id) || row(j), j);
    } else if (found) {
      rows.get(j.id)?.tr.remove();
      rows.delete(j.id);
      shown.splice(i, 1);
      selected.delete(j.id);
      hole = true;
    } else if (m && i < cap) {
      const r = row(j);
      body.insertBefore(r.tr, i < shown.length ? rows.get(shown[i]).tr : null);
      shown.splice(i, 0, j.id);
      if (shown.length > cap) {
        const last = shown.pop();
        rows.get(last)?.tr.remove();
        rows.delete(last);
      }
    }
  }
  matching = 0;
  for (const j of state.jobs.values()) if (matches(j)) matching++;
  // A row left the filter: pull up the next ones (rare: a redraw).
  if (hole && shown.length < Math.min(cap, matching)) render();
  else footer();
  updateBulk();
}

// position finds id in shown (newest first): its index and whether it is
// there, else where it would go.
function position(id) {
  let lo = 0;
  let hi = shown.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (shown[mid] > id) lo = mid + 1;
    else hi = mid;
  }
  return [lo, shown[lo] === id];
}

function footer() {
  const more = $('jobs-more');
  // Jobs the daemon has that the page does not (older than the
  // snapshot's): counted exactly only without a filter.
  const older = state.total > state.jobs.size;
  const filtered = filter.state || filter.type || filter.name;
  const left = filtered ? matching - shown.length : state.total - shown.length;
  more.hidden = !(left > 0 || (older && filtered && shown.length >= cap));
  setText(more, left > 0 ? 'Show more (' + left + (older && filtered ? '+' : '') + ' more)' : 'Show more');
  $('jobs-empty').hidden = shown.length > 0;
  setText($('jobs-shown'), shown.length + ' shown' + (state.total ? ' of ' + state.total : ''));
  $('jobs-shown').title = shown.length + ' rows shown; mmkd holds ' + state.total + ' jobs in all';
}

// fetchOlder asks the daemon for older jobs when the page holds fewer
// matches than it would show and the daemon has jobs the page lacks.
async function fetchOlder() {
  if (shown.length >= cap || state.total <= state.jobs.size) return;
  const key = JSON.stringify([filter, cap]);
  if (fetchedFor === key) return;
  fetchedFor = key;
  // The daemon answers at most MAX_LIST jobs a request.
  const q = new URLSearchParams({limit: String(Math.min(cap, MAX_LIST))});
  if (filter.state) q.set('state', filter.state === 'active' ? ACTIVE.join(',') : filter.state);
  if (filter.type) q.set('type', filter.type);
  if (filter.name) q.set('name', filter.name);
  try {
    putJobs(await request('api/v1/jobs?' + q));
  } catch (e) {
    console.error('mmk: older jobs:', e);
  }
}

// row is job j's row, made the first time and brought up to j since: a
// row kept while the table was hidden missed the updates of that time.
function row(j) {
  let r = rows.get(j.id);
  if (r) {
    fill(r, j);
    return r;
  }
  const cells = {
    sel: h('input', {type: 'checkbox', title: 'select ' + j.id + ' to cancel it with others'}),
    name: h('td', {class: 'name'}),
    owner: h('td', {class: 'owner'}),
    state: h('span'),
    type: h('td'),
    prio: h('td', {class: 'num'}),
    inst: h('td', {class: 'ident'}),
    mps: h('td', {class: 'num mps'}),
    mem: h('td', {class: 'num'}),
    start: h('td'),
    runtime: h('td', {class: 'num'}),
  };
  cells.sel.addEventListener('change', () => {
    if (cells.sel.checked) selected.add(j.id);
    else selected.delete(j.id);
    updateBulk();
  });
  const tr = h('tr', {dataset: {job: j.id}},
    h('td', {class: 'sel'}, cells.sel), h('td', {class: 'id'}, jobLink(j.id)), cells.name, cells.owner, h('td', null, cells.state), cells.type, cells.prio,
    cells.inst, cells.mps, cells.mem, cells.start, cells.runtime);
  r = {tr, cells, updatedAt: ''};
  rows.set(j.id, r);
  fill(r, j);
  return r;
}

// fill writes a job into its row's cells; a running job its latency
// controller restrains says so in its state ("running (suspended)") and
// why in its title.
function fill(r, j) {
  const rs = restraintOf(j);
  const key = drawnKey(j, rs);
  if (r.updatedAt === key) return;
  r.updatedAt = key;
  const c = r.cells;
  setText(c.name, j.spec.name);
  const o = j.owner;
  setText(c.owner, o ? o.name || 'uid ' + o.uid : 'mmkd\u2019s user');
  c.owner.title = o ? 'runs as ' + (o.name ? o.name + ' (uid ' + o.uid + ')' : 'uid ' + o.uid) + ', gid ' + o.gid : 'runs as mmkd\u2019s user (submitted before owners were recorded)';
  // An ended job cannot be cancelled: its box is off.
  c.sel.disabled = terminal(j.state);
  if (c.sel.disabled) selected.delete(j.id);
  c.sel.checked = selected.has(j.id);
  c.name.title = j.spec.claim ? 'Kubernetes claim ' + j.spec.claim.namespace + '/' + j.spec.claim.name : j.spec.command.join(' ');
  setText(c.state, stateWords(j, rs));
  c.state.className = stateClass(j.state);
  c.state.title = rs ? restraintText(rs) : j.reason || '';
  r.tr.dataset.state = j.state;
  if (rs) r.tr.dataset.restraint = rs.state;
  else delete r.tr.dataset.restraint;
  setText(c.type, j.spec.type);
  setText(c.prio, j.priority);
  c.prio.title = 'priority ' + j.priority + ' (0 highest, 9 lowest)';
  setText(c.inst, terminal(j.state) ? '' : instanceLabel(j.placement));
  c.inst.title = j.placement && !terminal(j.state) ? 'runs on ' + instanceLabel(j.placement) + ', device ' + j.placement.device : '';
  const mps = j.placement && !terminal(j.state) && j.placement.mpsPercent;
  setText(c.mps, mps ? mps + ' %' : '');
  c.mps.title = mps ? 'its MPS share: ' + mps + ' % of the instance\u2019s SMs' : '';
  setText(c.mem, fmtMiB(j.memoryMiB));
  c.mem.title = 'the GPU memory it asked for: ' + fmtMiB(j.memoryMiB) + (j.memoryMiB >= 1024 ? ' (' + j.memoryMiB + ' MiB)' : '');
  setText(c.start, fmtTime(j.startedAt));
  c.start.title = timeTitle(j.startedAt, 'started');
  setText(c.runtime, runtime(j));
  c.runtime.title = j.startedAt && !j.startedAt.startsWith('0001-') ? 'how long it ran' + (terminal(j.state) ? '' : ' so far') : '';
}

// linkJobs turns the job ids in a text ("arrival of job ID") into links
// named after the jobs.
export function linkJobs(text) {
  return String(text || '').split(/\b([0-9][0-9a-hjkmnp-tv-z]{15})\b/).map((part, i) => {
    if (i % 2 === 0) return part;
    const j = state.jobs.get(part);
    return jobLink(part, j ? j.spec.name : part);
  });
}

// runtime is how long the job ran (runs), or "".
export function runtime(j) {
  const start = parseTime(j.startedAt);
  if (!start) return '';
  const end = parseTime(j.finishedAt);
  return fmtDuration((end ? end.getTime() : now()) - start.getTime());
}

// tick advances the runtimes of the running jobs shown.
function tick() {
  if (!visible) return;
  for (const id of shown) {
    const j = state.jobs.get(id);
    if (j && j.state === 'running') setText(rows.get(id).cells.runtime, runtime(j));
  }
}

// The form's fields by the API's field names, to point at the one at
// fault.
const FIELDS = {
  name: 's-name', command: 's-command', type: 's-type', priority: 's-priority', memory: 's-memory',
  memoryMiB: 's-memory', env: 's-env', 'workload.model': 's-model', 'workload.batch': 's-batch', 'workload.mode': 's-mode',
  slo: 's-slo', workdir: 's-workdir',
};

class FormError extends Error {
  constructor(field, message) {
    super(message);
    this.field = field;
  }
}

// specOf reads the form into a job spec.
function specOf() {
  const spec = {type: $('s-type').value};
  const cmd = $('s-command').value.trim();
  if (cmd.startsWith('[')) {
    let argv;
    try {
      argv = JSON.parse(cmd);
    } catch (e) {
      throw new FormError('command', 'The command is not a JSON array: ' + e.message);
    }
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string')) {
      throw new FormError('command', 'A JSON command must be an array of strings.');
    }
    spec.command = argv;
  } else {
    spec.command = cmd.split('\n').map((l) => l.replace(/\r$/, '')).filter((l) => l !== '');
  }
  if (!spec.command.length) throw new FormError('command', 'Give the program and its arguments, one per line.');
  const name = $('s-name').value.trim();
  if (name) spec.name = name;
  const prio = $('s-priority').value.trim();
  if (prio !== '') spec.priority = Number(prio);
  const mem = $('s-memory').value.trim();
  // As the CLI: a size needs its unit (mmkd refuses "8", naming the field).
  if (mem) spec.memory = mem;
  // mmkd checks the target and the directory as it does the CLI's, and
  // names the field at fault.
  const target = $('s-slo').value.trim();
  if (target) spec.slo = target;
  const workdir = $('s-workdir').value.trim();
  if (workdir) spec.workdir = workdir;
  const env = {};
  for (const line of $('s-env').value.split('\n')) {
    if (!line.trim()) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new FormError('env', 'Environment lines are KEY=VALUE: ' + line.slice(0, 40));
    env[line.slice(0, eq).trim()] = line.slice(eq + 1);
  }
  if (Object.keys(env).length) spec.env = env;
  const model = $('s-model').value.trim();
  if (model) {
    spec.workload = {model, mode: $('s-mode').value};
    const batch = $('s-batch').value.trim();
    if (batch) spec.workload.batch = Number(batch);
  }
  return spec;
}

async function submit(ev) {
  ev.preventDefault();
  const out = $('s-result');
  for (const el of $('submit').querySelectorAll('.bad')) el.classList.remove('bad');
  out.className = 'result';
  let spec;
  try {
    spec = specOf();
  } catch (e) {
    return fail(e);
  }
  const go = $('s-go');
  go.disabled = true;
  setText(out, 'submitting…');
  try {
    // One key per submission: a retry after the token prompt is the
    // same submission.
    const job = await request('api/v1/jobs', {method: 'POST', body: spec, headers: {'Idempotency-Key': idempotencyKey()}});
    putJobs([job]);
    out.className = 'result ok';
    out.replaceChildren('Submitted ', jobLink(job.id, job.spec.name + ' (' + job.id + ')'), ': ' + job.state + '.');
  } catch (e) {
    fail(e);
  } finally {
    go.disabled = false;
  }
}

function fail(e) {
  const out = $('s-result');
  out.className = 'result error';
  setText(out, e.message);
  const field = e instanceof APIError || e instanceof FormError ? e.field : '';
  const key = Object.keys(FIELDS).find((f) => field === f || field.startsWith(f + '.') || field.startsWith(f + '['));
  if (key) {
    const el = $(FIELDS[key]);
    el.classList.add('bad');
    el.focus();
  }
}
