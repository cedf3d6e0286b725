// The dashboard's entry: the client-side router (#/, #/jobs, #/jobs/ID,
// #/sched, #/plan, #/slo), the header, the live stream and the latency
// view's reads.

import {$, setText} from './dom.js';
import {state, on, connect, followSLOView} from './store.js';
import {overview} from './overview.js';
import {jobsView, initJobs} from './jobs.js';
import {jobPage, initJobPage} from './jobpage.js';
import {schedView, initSched} from './sched.js';
import {planView} from './plan.js';
import {sloView} from './slo.js';

const views = {overview, jobs: jobsView, job: jobPage, sched: schedView, plan: planView, slo: sloView};
let active = null;

// route shows the view the location's hash names: "#/jobs?state=running"
// or "#/jobs/ID".
function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query] = hash.split('?', 2);
  const params = new URLSearchParams(query || '');
  let name = 'overview';
  let arg;
  let m;
  if ((m = path.match(/^\/jobs\/([0-9a-z]{16})$/))) {
    name = 'job';
    arg = m[1];
  } else if (path === '/jobs') name = 'jobs';
  else if (path === '/sched') name = 'sched';
  else if (path === '/plan') name = 'plan';
  else if (path === '/slo') name = 'slo';
  if (active && active !== name) views[active].hide();
  for (const [k] of Object.entries(views)) $('view-' + k).hidden = k !== name;
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.view === (name === 'job' ? 'jobs' : name)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  active = name;
  views[name].show(params, arg);
  document.title = 'mmk · ' + (name === 'job' ? 'job ' + arg : name);
}

function renderCounts() {
  const c = state.counts || {};
  const parts = [];
  for (const st of ['running', 'placed', 'pending', 'restarting']) if (c[st]) parts.push(c[st] + ' ' + st);
  parts.push(state.total + ' jobs');
  setText($('counts'), parts.join(' · '));
  $('counts').title = 'jobs mmkd holds: ' + parts.join(', ') + ' in all, finished ones included';
}

on('snapshot', renderCounts);
on('jobs', renderCounts);
on('conn', (status, detail) => {
  const el = $('conn');
  el.dataset.state = status;
  setText(el, status === 'live' ? 'live' : status === 'connecting' ? 'connecting' : 'reconnecting');
  el.title = detail || '';
});

initJobs();
initJobPage();
initSched();
window.addEventListener('hashchange', route);
route();
connect();
followSLOView();
