// The page's state, kept live by GET api/v1/stream: a snapshot at
// connect, then the plan, the jobs that changed, new reconfigurations and
// the kernel schedulers. Views subscribe with on(kind, fn); they get the
// whole state on "snapshot" and only what changed otherwise.

import {request, readEvents} from './api.js';
import {terminal} from './dom.js';

// How many jobs, newest first, the snapshot brings; older ones are
// fetched on demand (a job's page, "show more").
export const SNAPSHOT_JOBS = 500;

export const state = {
  plan: null,
  jobs: new Map(), // id -> job
  counts: {},
  total: 0,
  reconfigs: [], // newest first
  schedulers: [],
  // skew is the daemon's clock minus the browser's, in ms.
  skew: 0,
  schedTime: 0, // the daemon's time of the schedulers, ms since the epoch
  // slo is GET api/v1/slo's answer (every online job's standing, each
  // instance's rung and what it does to each offline job), read every
  // few seconds; null before the first, or where mmkd measures no
  // latency.
  slo: null,
};

const listeners = new Map();

// on subscribes fn to kind: snapshot, plan, jobs (fn(changedJobs)),
// reconfigs (fn(newOnes)), kernelsched, slo, conn (fn(status,
// detail)).
export function on(kind, fn) {
  if (!listeners.has(kind)) listeners.set(kind, []);
  listeners.get(kind).push(fn);
}

function emit(kind, ...args) {
  for (const fn of listeners.get(kind) || []) {
    try {
      fn(...args);
    } catch (e) {
      console.error('mmk:', kind, e);
    }
  }
}

// now is the daemon's current time in ms.
export const now = () => Date.now() + state.skew;

// putJobs merges jobs fetched outside the stream (a job's page, "show
// more") and tells the views, as an update would.
export function putJobs(list) {
  const changed = [];
  for (const j of list) {
    if (state.jobs.get(j.id)?.updatedAt !== j.updatedAt && take(j)) changed.push(j);
  }
  if (changed.length) emit('jobs', changed);
}

// take stores job j and reports whether it did: not where the job held
// has ended and j has not, since a job never leaves an ended state (a GET
// answered late, or a stream message older than a GET, would take the
// views back to a state the job has left).
function take(j) {
  const old = state.jobs.get(j.id);
  if (old && terminal(old.state) && !terminal(j.state)) return false;
  state.jobs.set(j.id, j);
  return true;
}

function handle(ev) {
  const d = JSON.parse(ev.data);
  switch (ev.event) {
    case 'snapshot':
      state.skew = new Date(d.time).getTime() - Date.now();
      state.plan = d.plan;
      state.jobs = new Map(d.jobs.map((j) => [j.id, j]));
      state.counts = d.counts;
      state.total = d.total;
      state.reconfigs = d.reconfigs;
      state.schedulers = d.schedulers;
      state.schedTime = new Date(d.time).getTime();
      emit('snapshot');
      break;
    case 'plan':
      state.plan = d;
      emit('plan');
      break;
    case 'jobs':
      state.counts = d.counts;
      state.total = d.total;
      emit('jobs', d.jobs.filter((j) => take(j)));
      break;
    case 'reconfigs':
      state.reconfigs = d.concat(state.reconfigs).slice(0, 200);
      emit('reconfigs', d);
      break;
    case 'kernelsched':
      state.schedulers = d.schedulers;
      state.schedTime = new Date(d.time).getTime();
      state.skew = state.schedTime - Date.now();
      emit('kernelsched');
      break;
  }
}

// A stream that says nothing (not even a heartbeat) for this long is
// taken as dead and opened again.
const SILENCE_MS = 45000;

// connect reads the stream for as long as the page lives, reconnecting
// (after 1 s, doubling up to 15 s) whenever it ends.
export async function connect() {
  let backoff = 1000;
  for (;;) {
    const ctrl = new AbortController();
    let watchdog;
    const alive = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => ctrl.abort(), SILENCE_MS);
    };
    try {
      emit('conn', 'connecting');
      alive();
      const resp = await request('api/v1/stream?jobs=' + SNAPSHOT_JOBS, {raw: true, signal: ctrl.signal});
      for await (const ev of readEvents(resp, alive)) {
        alive();
        if (ev.event === 'snapshot') {
          backoff = 1000;
          emit('conn', 'live');
        }
        handle(ev);
      }
      emit('conn', 'down', 'the daemon closed the stream');
    } catch (e) {
      emit('conn', 'down', e && e.message);
    } finally {
      clearTimeout(watchdog);
      ctrl.abort();
    }
    await new Promise((r) => setTimeout(r, backoff));
    backoff = Math.min(backoff * 2, 15000);
  }
}

// SLO_POLL_MS is how often the latency view is read while the page is
// shown: restraints are the controllers' state now, not job changes the
// stream carries.
const SLO_POLL_MS = 3000;

// followSLOView reads GET api/v1/slo every SLO_POLL_MS for as long as the
// page lives (not while it is hidden), and stops where mmkd measures no
// latency (503).
export async function followSLOView() {
  for (;;) {
    if (!document.hidden) {
      try {
        state.slo = await request('api/v1/slo');
        emit('slo');
      } catch (e) {
        if (e.status === 503) {
          state.slo = null;
          emit('slo');
          return;
        }
      }
    }
    await new Promise((r) => setTimeout(r, SLO_POLL_MS));
  }
}

// restraintOf is what its instance's latency controller does to job j
// now (jobs.Restraint: state, how, rung, for, reason), or null: for a
// running job, the latency view's (read every few seconds), else, before
// the first, the job's own as mmkd last answered it.
export function restraintOf(j) {
  if (j.state !== 'running') return null;
  if (!state.slo) return j.restraint || null;
  for (const i of state.slo.instances || []) {
    if (i.restrained && i.restrained[j.id]) return i.restrained[j.id];
  }
  return null;
}

// stateWords is a job's state as shown: "running (suspended)" where
// restraint rs holds it.
export const stateWords = (j, rs) => (rs ? j.state + ' (' + rs.state + ')' : j.state);

// drawnKey is what a job's drawing depends on: its version and its
// restraint rs.
export const drawnKey = (j, rs) => j.updatedAt + (rs ? '|' + rs.state + '|' + rs.reason : '');

// restraintText says a restraint in a sentence: how, for which jobs
// (by name where held, unless ids: the ids alone, for linkJobs to make
// links of), and the decision's numbers.
export function restraintText(r, ids = false) {
  const names = (r.for || []).map((id) => {
    const j = !ids && state.jobs.get(id);
    return j ? j.spec.name + ' (' + id + ')' : id;
  });
  return r.how + (names.length ? ' for the target of ' + names.join(', ') : '') + ' (rung ' + r.rung + ')' + (r.reason ? ': ' + r.reason : '');
}
