// DOM and formatting helpers. Every value reaches the page as a text node
// or textContent: job names, commands and logs are user input, and no
// function here parses HTML.

const SVG = 'http://www.w3.org/2000/svg';

// h builds an element: h('a', {href: '#/', class: 'x', text: 'go'}, child...).
// Props: class, text (textContent), dataset (object), on<event> (listener),
// anything else as an attribute. Children are nodes or strings (text).
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  append(el, children);
  return el;
}

// s builds an SVG element the same way.
export function s(tag, props, ...children) {
  const el = document.createElementNS(SVG, tag);
  setProps(el, props);
  append(el, children);
  return el;
}

function setProps(el, props) {
  if (!props) return;
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// $ is document.getElementById.
export const $ = (id) => document.getElementById(id);

// setText changes a node's text only when it differs (no needless layout).
export function setText(el, text) {
  const t = String(text ?? '');
  if (el.textContent !== t) el.textContent = t;
}

// fmtMiB writes a memory size: 40448 -> "39.5 GiB", 512 -> "512 MiB".
export function fmtMiB(mib) {
  if (mib === undefined || mib === null) return '';
  if (mib >= 1024) {
    const g = mib / 1024;
    return (g >= 100 || Number.isInteger(g) ? g.toFixed(0) : g.toFixed(1)) + ' GiB';
  }
  return mib + ' MiB';
}

// fmtDuration writes milliseconds as "850 ms", "12 s", "3 m 05 s", "2 h 03 m".
export function fmtDuration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return '';
  if (ms < 1000) return Math.round(ms) + ' ms';
  const s = Math.floor(ms / 1000);
  if (s < 60) return s + ' s';
  const m = Math.floor(s / 60);
  if (m < 60) return m + ' m ' + String(s % 60).padStart(2, '0') + ' s';
  const hr = Math.floor(m / 60);
  if (hr < 48) return hr + ' h ' + String(m % 60).padStart(2, '0') + ' m';
  return Math.floor(hr / 24) + ' d ' + (hr % 24) + ' h';
}

// parseTime reads an RFC 3339 time; the zero time and absent ones are null.
export function parseTime(t) {
  if (!t || t.startsWith('0001-')) return null;
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? null : d;
}

const two = (n) => String(n).padStart(2, '0');

// timeTitle is a time's tooltip: the local date and time in full, and
// UTC.
export function timeTitle(t, what) {
  const d = t instanceof Date ? t : parseTime(t);
  if (!d) return '';
  return (what ? what + ': ' : '') + d.toLocaleString() + ' (' + d.toISOString().replace('.000Z', 'Z') + ')';
}

// fmtTime writes a time as the browser's local "HH:MM:SS", with the date
// when it is not today.
export function fmtTime(t) {
  const d = t instanceof Date ? t : parseTime(t);
  if (!d) return '';
  const hms = two(d.getHours()) + ':' + two(d.getMinutes()) + ':' + two(d.getSeconds());
  const now = new Date();
  if (d.toDateString() === now.toDateString()) return hms;
  return d.getFullYear() + '-' + two(d.getMonth() + 1) + '-' + two(d.getDate()) + ' ' + hms;
}

// stateClass is the CSS class of a job state's badge.
export const stateClass = (state) => 'state st-' + (/^[a-z]+$/.test(state) ? state : 'unknown');

// badge is a job state's badge.
export const badge = (state) => h('span', {class: stateClass(state), text: state});

// jobLink links to a job's page.
export const jobLink = (id, text) => h('a', {href: '#/jobs/' + encodeURIComponent(id), text: text ?? id});

// terminal reports a state a job never leaves.
export const terminal = (state) => state === 'succeeded' || state === 'failed' || state === 'cancelled';

// instanceLabel names where a job runs as mmk does everywhere, the
// instance's name with its profile: "gpu0/gi1 · 4g.40gb", "gpu2 · whole
// GPU", or "". A record from before names shows its key.
export function instanceLabel(p) {
  if (!p) return '';
  return (p.instanceName || p.instanceKey) + ' · ' + (p.profile || 'whole GPU');
}
