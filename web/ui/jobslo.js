// An online job's latency against its target on its page: a chart of the
// latency at the target's percentile, a second at a time (the median
// thin below it), the bound dashed, and the seconds with late requests
// marked; above it the job's standing in words. It reads
// GET api/v1/jobs/ID/slo every few seconds while the job runs.

import {$, s, setText, terminal} from './dom.js';
import {request} from './api.js';
import {state} from './store.js';

const POLL_MS = 2000;
const W = 480;
const H = 120;
const PAD = 4;

// followSLO draws an online job's latency until it has ended (then once
// more) or signal aborts; an offline job, or a daemon that measures no
// latency, has no box.
export async function followSLO(id, signal) {
  const box = $('job-slo');
  box.hidden = true;
  $('job-slo-chart').replaceChildren();
  setText($('job-slo-now'), 'no request measured yet');
  for (;;) {
    const j = state.jobs.get(id);
    if (j && j.spec && j.spec.type !== 'online') return; // offline: no box
    box.hidden = !j;
    const ended = j && terminal(j.state);
    try {
      const v = await request('api/v1/jobs/' + encodeURIComponent(id) + '/slo', {signal});
      if (signal.aborted) return;
      draw(v, j);
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (e.status === 503) {
        box.hidden = true;
        return;
      }
      setText($('job-slo-now'), 'latency: ' + e.message);
    }
    if (ended) return;
    await new Promise((r) => setTimeout(r, POLL_MS));
    if (signal.aborted) return;
  }
}

const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2)) + ' ms';

// draw writes the standing and the chart.
function draw(v, j) {
  const o = v.slo;
  const target = (o && o.target) || (j && j.spec && j.spec.slo) || '';
  if (!o) {
    setText($('job-slo-now'), (target ? 'target ' + target + ' · ' : '') + 'no request measured yet');
  } else {
    let text = (o.target ? o.target + (o.boundMs ? ' (' + ms(o.boundMs) + ')' : ' (bound not known yet)') : 'no target') + ' · ';
    if (o.aloneRequests) text += 'alone ' + ms(o.aloneMs) + ' at its percentile over ' + o.aloneRequests + ' requests · ';
    text += o.requests ? (100 * o.attainment).toFixed(2) + ' % of ' + o.requests + ' requests within' : 'no request yet';
    if (o.recentRequests) text += ' · now ' + ms(o.pctMs) + ' at its percentile, p50 ' + ms(o.p50Ms);
    text += ' · ' + o.state + ' · measured by the ' + o.source + ' · offline jobs' + (o.instance ? ' of ' + o.instance : '') + ': ' + o.rung;
    if (o.tpcsKept) text += ' (a mask keeping ' + o.tpcsKept + ' TPCs)';
    if (!o.live) text += ' · (last seen)';
    setText($('job-slo-now'), text);
    $('job-slo-now').title = 'its latency target and bound; its latency alone (measured with no offline job running, after its warm-up), where measured; the share of its requests within the bound since it connected, of how many; its latency now at the target\u2019s percentile and its median; ' +
      'whether the target holds; who measured (the hook or the service); what the controller does to the offline jobs beside it, in its instance';
    $('job-slo-now').dataset.state = o.state;
  }
  const hist = (v.history || []).filter((p) => p.requests > 0);
  $('job-slo-chart').replaceChildren(...(hist.length ? chart(hist) : []));
}

// chart is the SVG's children. Its latency axis is logarithmic, from a
// little below the least latency (or bound) drawn to a little above the
// most: a spike of 20 times the bound leaves the bound and the median
// readable (on a linear axis a 162 ms spike put a 7.8 ms bound on the
// floor, issue 53).
function chart(hist) {
  const t0 = Date.parse(hist[0].time);
  const t1 = Math.max(Date.parse(hist[hist.length - 1].time), t0 + 1);
  const vals = hist.flatMap((p) => [p.p50Ms, p.pctMs, p.boundMs]).filter((v) => v > 0);
  const lo = Math.max(Math.min(...vals, 1e9) / 1.3, 0.001);
  const top = Math.max(Math.max(...vals, 0) * 1.3, lo * 2);
  const x = (t) => PAD + ((Date.parse(t) - t0) / (t1 - t0)) * (W - 2 * PAD);
  const y = (m) => H - PAD - (Math.log(Math.max(m, lo) / lo) / Math.log(top / lo)) * (H - 2 * PAD);
  const line = (cls, key, title) =>
    s('polyline', {class: cls, points: hist.map((p) => x(p.time).toFixed(1) + ',' + y(p[key]).toFixed(1)).join(' ')}, s('title', {text: title}));
  const out = [s('title', {text: 'its request latency, a second at a time, in ms on a logarithmic scale (its top and bottom written at the left): at the target\u2019s percentile, the median, the bound; red dots: seconds with late requests'}),
    line('p50', 'p50Ms', 'median latency (ms)'), line('pct', 'pctMs', "latency at the target's percentile (ms)")];
  const bound = hist.filter((p) => p.boundMs > 0);
  if (bound.length) {
    out.push(s('polyline', {class: 'bound', points: bound.map((p) => x(p.time).toFixed(1) + ',' + y(p.boundMs).toFixed(1)).join(' ')},
      s('title', {text: 'the bound: ' + ms(bound[bound.length - 1].boundMs)})));
  }
  for (const p of hist.filter((q) => q.late > 0)) {
    out.push(s('circle', {class: 'late', cx: x(p.time).toFixed(1), cy: y(p.pctMs).toFixed(1), r: 2.5},
      s('title', {text: p.late + ' of ' + p.requests + ' requests late at ' + new Date(p.time).toLocaleTimeString()})));
  }
  out.push(s('text', {class: 'axis', x: PAD + 2, y: PAD + 10, text: ms(top)}),
    s('text', {class: 'axis', x: PAD + 2, y: H - PAD - 2, text: ms(lo) + ' (log scale)'}));
  return out;
}
