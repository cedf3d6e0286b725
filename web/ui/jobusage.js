// A job's GPU use on its page: a small chart of the memory its processes
// hold (with its limit, dashed) and, where NVML gives it (not on MIG
// instances), the percent of time its kernels ran, over the last samples
// of GET api/v1/jobs/ID/usage, read every few seconds while the job runs.

import {$, s, setText, fmtMiB, terminal} from './dom.js';
import {request} from './api.js';
import {state} from './store.js';

const POLL_MS = 2000;
const W = 480;
const H = 120;
const PAD = 4;

// followUsage draws the job's use until it has ended (then once more)
// or signal aborts.
export async function followUsage(id, signal) {
  const box = $('job-usage');
  box.hidden = false;
  $('job-usage-chart').replaceChildren();
  setText($('job-usage-now'), 'not sampled yet');
  for (;;) {
    const j = state.jobs.get(id);
    const ended = j && terminal(j.state);
    try {
      const v = await request('api/v1/jobs/' + encodeURIComponent(id) + '/usage', {signal});
      if (signal.aborted) return; // another page took the chart
      draw(v, j);
    } catch (e) {
      if (e.name === 'AbortError') return;
      if (e.status === 503) {
        box.hidden = true; // this daemon samples no GPU use
        return;
      }
      setText($('job-usage-now'), 'GPU use: ' + e.message);
    }
    if (ended) return;
    await new Promise((r) => setTimeout(r, POLL_MS));
    if (signal.aborted) return;
  }
}

// draw renders the samples and the last values.
function draw(v, j) {
  const hist = v.history || [];
  const u = v.usage;
  const limit = (u && u.limitMiB) || (j && j.placement && j.placement.memLimitMiB) || 0;
  if (u) {
    let text = fmtMiB(u.usedMemoryMiB) + (limit ? ' of its ' + fmtMiB(limit) + ' limit' : '') + ', at most ' + fmtMiB(u.peakMemoryMiB);
    text += u.util ? ' · SM ' + u.smUtil + ' %, memory ' + u.memUtil + ' %' : ' · no utilisation (NVML gives none on a MIG instance or to an MPS client)';
    text += ' · ' + u.processes + (u.processes === 1 ? ' process' : ' processes');
    setText($('job-usage-now'), text);
    $('job-usage-now').title = 'at the last sample (' + new Date(u.at).toLocaleTimeString() + '): the GPU memory its processes hold on its device' +
      (limit ? ' against its MPS memory limit' : '') + ', the most they held in this run, the percent of time its kernels ran and its memory was read or written where NVML gives it, and its processes NVML lists';
  } else {
    setText($('job-usage-now'), hist.length ? 'not running: its last samples' : 'no sample (the job does not run)');
  }
  $('job-usage-chart').replaceChildren(...(hist.length ? chart(hist, limit) : []));
}

// chart is the SVG's children: a memory area, the limit, and the SM line.
function chart(hist, limit) {
  const t0 = Date.parse(hist[0].t);
  const t1 = Math.max(Date.parse(hist[hist.length - 1].t), t0 + 1);
  const top = Math.max(limit, ...hist.map((p) => p.usedMemoryMiB), 1) * 1.1;
  const x = (t) => PAD + ((Date.parse(t) - t0) / (t1 - t0)) * (W - 2 * PAD);
  const yMem = (m) => H - PAD - (m / top) * (H - 2 * PAD);
  const yPct = (p) => H - PAD - (p / 100) * (H - 2 * PAD);
  const pts = hist.map((p) => x(p.t).toFixed(1) + ',' + yMem(p.usedMemoryMiB).toFixed(1));
  const out = [
    s('title', {text: 'its GPU memory (MiB, the scale\u2019s top written at the left)' + (limit ? ' against its limit, dashed' : '') + ' and SM utilisation (%, 0 to 100) over its last ' + hist.length + ' samples'}),
    s('polygon', {class: 'mem', points: [PAD + ',' + (H - PAD), ...pts, x(hist[hist.length - 1].t).toFixed(1) + ',' + (H - PAD)].join(' ')},
      s('title', {text: 'memory of its processes (MiB)'})),
  ];
  if (limit) {
    out.push(s('line', {class: 'limit', x1: PAD, x2: W - PAD, y1: yMem(limit).toFixed(1), y2: yMem(limit).toFixed(1)},
      s('title', {text: 'its memory limit: ' + fmtMiB(limit)})));
  }
  const util = hist.filter((p) => p.util);
  if (util.length) {
    out.push(s('polyline', {class: 'sm', points: util.map((p) => x(p.t).toFixed(1) + ',' + yPct(p.smUtil).toFixed(1)).join(' ')},
      s('title', {text: 'SM utilisation (%)'})));
  }
  out.push(s('text', {class: 'axis', x: PAD + 2, y: PAD + 10, text: fmtMiB(Math.round(top))}));
  return out;
}
