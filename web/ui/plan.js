// The plan: each GPU's layout with its instances and their jobs, and the
// history of reconfigurations (cause, MIG steps, jobs restarted and
// started, cost).

import {h, $, setText, fmtMiB, fmtTime, fmtDuration, jobLink, timeTitle} from './dom.js';
import {state, on} from './store.js';
import {linkJobs} from './jobs.js';
import {STP_TITLE} from './overview.js';

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
  const waiting = Math.max(p.waitingTotal || 0, (p.waiting || []).length);
  setText($('plan-note'), p.decisions + ' decisions · predicted throughput ' + (p.total || 0).toFixed(2) + ' STP · ' + waiting + ' waiting');
  $('plan-note').title = p.decisions + ' runs of the placement loop since mmkd started; ' + STP_TITLE + '; ' + waiting + ' pending jobs without a place';
  const rows = [];
  for (const g of p.gpus) {
    g.instances.forEach((inst, i) => {
      const jobs = inst.jobs.length ? inst.jobs.flatMap((j, k) => [k ? ', ' : '', jobLink(j.id, j.name),
        j.mpsPercent ? h('span', {text: ' ' + j.mpsPercent + ' %', title: j.name + '\u2019s MPS share: ' + j.mpsPercent + ' % of the instance\u2019s SMs'}) : '']) : [h('span', {class: 'muted', text: 'idle'})];
      rows.push(h('tr', {class: i === 0 ? 'first' : ''},
        h('td', {text: i === 0 ? g.index : '', title: i === 0 ? 'GPU ' + g.index + ' (NVML\u2019s index)' : null}),
        h('td', {class: 'ident', text: i === 0 ? g.model : ''}),
        h('td', {text: i === 0 ? (g.mig ? 'yes' : 'no') : ''}),
        h('td', {class: 'ident', text: i === 0 ? g.layout || 'whole GPU' : ''}),
        h('td', {class: 'ident', text: inst.name + ' · ' + (g.mig ? inst.profile + '@' + inst.start : 'whole GPU')}),
        h('td', {class: 'num', text: inst.sms, title: 'the instance\u2019s ' + inst.sms + ' streaming multiprocessors'}),
        h('td', {class: 'num', text: fmtMiB(inst.memoryMiB), title: 'the instance\u2019s GPU memory: ' + inst.memoryMiB + ' MiB'}),
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
    h('td', {text: r.seq, title: 'reconfiguration ' + r.seq + ', in the order they happened'}),
    h('td', {text: fmtTime(r.time), title: timeTitle(r.time)}),
    h('td', {text: r.gpu, title: 'GPU ' + r.gpu + ' (NVML\u2019s index)'}),
    h('td', {class: 'ident'}, linkJobs(r.cause)),
    h('td', null, h('code', {text: (r.from || '—') + ' → ' + (r.to || '—')})),
    h('td', null, r.steps && r.steps.length ? h('ol', {class: 'steps'}, r.steps.map((s) => h('li', {text: s}))) : '—',
      r.error ? h('div', {class: 'error', text: r.error}) : null),
    h('td', null, jobList(r.restarted)),
    h('td', null, jobList(r.started)),
    h('td', {class: 'num gain', text: ((r.gain || 0) >= 0 ? '+' : '') + (r.gain || 0).toFixed(2) + ' STP',
      title: 'the predicted throughput it gained: ' + ((r.gain || 0) >= 0 ? '+' : '') + (r.gain || 0).toFixed(2) + ' STP (1 STP: one job alone on a GPU)'}),
    h('td', {class: 'num', text: fmtDuration(r.durationNs / 1e6), title: 'how long applying it took (the MIG steps)'}));
}
