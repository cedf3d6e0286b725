// The plan: each GPU's layout with its instances and their jobs, and the
// history of reconfigurations (cause, MIG steps, jobs restarted and
// started, cost).

import {h, $, setText, fmtMiB, fmtTime, fmtDuration, jobLink} from './dom.js';
import {state, on} from './store.js';
import {linkJobs} from './jobs.js';

const RECONFIGS_SHOWN = 200;

let visible = false;
let dirty = true;

export const planView = {
  show() {
    visible = true;
    if (dirty) render();
  },
  hide() {
    visible = false;
  },
};

on('snapshot', () => (visible ? render() : (dirty = true)));
on('plan', () => (visible ? renderLayout() : (dirty = true)));
on('reconfigs', (fresh) => {
  if (!visible) {
    dirty = true;
    return;
  }
  const body = $('reconfigs-body');
  body.prepend(...fresh.map(reconfigRow));
  while (body.children.length > RECONFIGS_SHOWN) body.lastChild.remove();
  $('reconfigs-empty').hidden = true;
});

function render() {
  dirty = false;
  renderLayout();
  const list = state.reconfigs || [];
  $('reconfigs-body').replaceChildren(...list.slice(0, RECONFIGS_SHOWN).map(reconfigRow));
  $('reconfigs-empty').hidden = list.length > 0;
}

function renderLayout() {
  const p = state.plan;
  if (!p) return;
  setText($('plan-note'), p.decisions + ' decisions · predicted throughput ' + (p.total || 0).toFixed(2) + ' · ' + Math.max(p.waitingTotal || 0, (p.waiting || []).length) + ' waiting');
  const rows = [];
  for (const g of p.gpus) {
    g.instances.forEach((inst, i) => {
      const jobs = inst.jobs.length ? inst.jobs.flatMap((j, k) => [k ? ', ' : '', jobLink(j.id, j.name), j.mpsPercent ? ' ' + j.mpsPercent + ' %' : '']) : [h('span', {class: 'muted', text: 'idle'})];
      rows.push(h('tr', {class: i === 0 ? 'first' : ''},
        h('td', {text: i === 0 ? g.index : ''}),
        h('td', {text: i === 0 ? g.model : ''}),
        h('td', {text: i === 0 ? (g.mig ? 'yes' : 'no') : ''}),
        h('td', {text: i === 0 ? g.layout || 'whole GPU' : ''}),
        h('td', {text: inst.name + ' · ' + (g.mig ? inst.profile + '@' + inst.start : 'whole GPU')}),
        h('td', {class: 'num', text: inst.sms}),
        h('td', {class: 'num', text: fmtMiB(inst.memoryMiB)}),
        h('td', {text: inst.mps ? 'yes' : 'no'}),
        h('td', null, jobs)));
    });
  }
  $('plan-body').replaceChildren(...rows);
}

function jobList(ids) {
  if (!ids || !ids.length) return ['—'];
  return ids.flatMap((id, k) => {
    const j = state.jobs.get(id);
    return [k ? ', ' : '', jobLink(id, j ? j.spec.name : id)];
  });
}

function reconfigRow(r) {
  return h('tr', {class: r.error ? 'failed' : ''},
    h('td', {text: r.seq}),
    h('td', {text: fmtTime(r.time)}),
    h('td', {text: r.gpu}),
    h('td', null, linkJobs(r.cause)),
    h('td', null, h('code', {text: (r.from || '—') + ' → ' + (r.to || '—')})),
    h('td', null, r.steps && r.steps.length ? h('ol', {class: 'steps'}, r.steps.map((s) => h('li', {text: s}))) : '—',
      r.error ? h('div', {class: 'error', text: r.error}) : null),
    h('td', null, jobList(r.restarted)),
    h('td', null, jobList(r.started)),
    h('td', {class: 'num', text: (r.gain || 0).toFixed(2)}),
    h('td', {class: 'num', text: fmtDuration(r.durationNs / 1e6)}));
}
