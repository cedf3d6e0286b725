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
};

const listeners = new Map();

// on subscribes fn to kind: snapshot, plan, jobs (fn(changedJobs)),
// reconfigs (fn(newOnes)), kernelsched, conn (fn(status, detail)).
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
