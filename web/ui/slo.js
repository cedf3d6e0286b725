// The latency view (#/slo): every online job's target, its attainment
// recent and since it was submitted, its latency now at the target's
// percentile against the bound, its standing in words; and each
// instance's latency controller: its rung, the offline jobs it
// restrains and how, and its last decision with the numbers that made
// it. It reads GET api/v1/slo as the store does (every few seconds).

import {h, $, setText, fmtTime, jobLink, timeTitle} from './dom.js';
import {state, on, restraintText} from './store.js';
import {linkJobs} from './jobs.js';

let visible = false;

export const sloView = {
  show() {
    visible = true;
    render();
  },
  hide() {
    visible = false;
  },
};

on('slo', () => visible && render());
on('jobs', () => visible && render());

const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) + ' ms';
const pct = (x) => (100 * x).toFixed(2) + ' %';

function render() {
  const v = state.slo;
  if (!v) {
    setText($('slo-note'), 'this mmkd measures no latency (no kernel scheduler, or not read yet)');
    $('slo-jobs-body').replaceChildren();
    $('slo-inst-body').replaceChildren();
    return;
  }
  const jobs = v.jobs || [];
  const missed = jobs.filter((j) => j.state === 'missed' || j.state === 'not held' || j.state === 'unattainable').length;
  setText($('slo-note'), jobs.length + ' online ' + (jobs.length === 1 ? 'job' : 'jobs') + ' with latency measured' + (missed ? ' · ' + missed + ' not within target now' : ''));
  $('slo-note').title = 'online jobs whose requests mmk measured (by their hook, or as they reported them); not within target: missed, not held or unattainable now';
  $('slo-jobs-body').replaceChildren(...jobs.map(jobRow));
  $('slo-jobs-empty').hidden = jobs.length > 0;
  $('slo-inst-body').replaceChildren(...(v.instances || []).map(instRow));
}

function jobRow(o) {
  const j = state.jobs.get(o.id);
  const recent = o.recentRequests ? 1 - o.recentLate / o.recentRequests : null;
  const bound = o.boundMs ? ms(o.boundMs) : 'not known yet';
  const now = o.recentRequests ? ms(o.pctMs) : '—';
  const over = o.recentRequests && o.boundMs && o.pctMs > o.boundMs;
  return h('tr', {dataset: {job: o.id, state: o.state}},
    h('td', {class: 'ident'}, jobLink(o.id, o.name || (j ? j.spec.name : o.id))),
    h('td', {class: 'ident', text: o.instance, title: 'the instance it runs on'}),
    h('td', {class: 'ident', text: o.target, title: 'its latency target'}),
    h('td', {class: 'num', text: bound, title: o.aloneMs ? 'the bound in force; its latency alone ' + ms(o.aloneMs) + ' over ' + o.aloneRequests + ' requests' : 'the bound in force'}),
    h('td', {class: 'num' + (over ? ' bad' : ''), text: now, title: 'its latency now at the target\u2019s percentile, over the controller\u2019s window (' + o.recentRequests + ' requests, ' + o.recentLate + ' late)'}),
    h('td', {class: 'num', text: o.recentRequests ? ms(o.p50Ms) : '—', title: 'its median latency over the window'}),
    h('td', {class: 'num', text: recent === null ? '—' : pct(recent), title: 'share of the window\u2019s requests within the bound'}),
    h('td', {class: 'num', text: o.requests ? pct(o.attainment) : '—', title: 'share within the bound of its ' + o.requests + ' requests since it was submitted (' + o.late + ' late)'}),
    h('td', {class: 'num', text: o.rate ? o.rate.toFixed(1) + '/s' : '—', title: 'its requests a second'}),
    h('td', {class: 'state-' + o.state.replace(' ', '-'), title: o.detail + (o.live ? '' : ' (last seen: its process is not connected)')}, o.state + (o.live ? '' : ' (last seen)')),
  );
}

function instRow(i) {
  const restrained = Object.entries(i.restrained || {}).map(([id, r]) => {
    const j = state.jobs.get(id);
    return h('li', {title: restraintText(r)}, jobLink(id, j ? j.spec.name : id), ': ' + r.how);
  });
  const extra = [];
  if ((i.shielded || []).length) extra.push(h('li', {class: 'muted'}, 'beyond its reach (other users\u2019): ', ...linkJobs(i.shielded.join(', '))));
  if ((i.unrestrainable || []).length) extra.push(h('li', {class: 'muted'}, 'not hooked (only MPS priority reaches them): ', ...linkJobs(i.unrestrainable.join(', '))));
  const d = i.lastDecision;
  return h('tr', {dataset: {instance: i.instance}},
    h('td', {class: 'ident', text: i.instance}),
    h('td', {class: 'ident', text: i.active ? i.rung + (i.tpcsKept ? ' (' + i.tpcsKept + ' TPCs kept)' : '') : 'off',
      title: 'its ladder: ' + (i.ladder || []).join(', ') + '; the rung now restrains the offline jobs as said beside it'}),
    h('td', null, restrained.length || extra.length ? h('ul', {class: 'plain'}, ...restrained, ...extra) : h('span', {class: 'muted', text: 'none'})),
    h('td', {class: 'ident'}, d ? [h('span', {text: fmtTime(d.time) + ' ', title: timeTitle(d.time, 'decided')}), ...linkJobs(d.reason), d.error ? ' (failed: ' + d.error + ')' : ''] : h('span', {class: 'muted', text: 'no change of rung yet'})),
  );
}
