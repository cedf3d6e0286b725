// The API client: every request carries the bearer token (kept in this
// tab's sessionStorage, never in a URL); a 401 asks for the token, saying
// where it is on the node (GET api/v1/signin), and retries. The live
// stream is read with fetch() and a ReadableStream rather than
// EventSource, which cannot send an Authorization header.

import {h, $} from './dom.js';

const TOKEN_KEY = 'mmk.token';

// APIError is a non-2xx answer: its status, the daemon's message and the
// request field at fault.
export class APIError extends Error {
  constructor(status, message, field) {
    super(message);
    this.status = status;
    this.field = field || '';
  }
}

const token = () => sessionStorage.getItem(TOKEN_KEY) || '';

function headers(json) {
  const hs = new Headers();
  const t = token();
  if (t) hs.set('Authorization', 'Bearer ' + t);
  if (json) hs.set('Content-Type', 'application/json');
  return hs;
}

// request sends a request to the daemon, relative to the page (so that a
// proxy prefix works). It answers the decoded JSON, or with raw the
// Response (a stream). A 401 asks for the token and tries again.
export async function request(path, {method = 'GET', body, signal, raw = false, headers: extra} = {}) {
  for (;;) {
    const hs = headers(body !== undefined);
    for (const [k, v] of Object.entries(extra || {})) hs.set(k, v);
    const resp = await fetch(path, {
      method, headers: hs, signal, cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (resp.status === 401) {
      await resp.body?.cancel().catch(() => {});
      // With a token sent, it was refused.
      await askToken(hs.has('Authorization'));
      continue;
    }
    if (raw && resp.ok) return resp;
    const data = await resp.json().catch(() => null);
    if (!resp.ok) throw new APIError(resp.status, (data && data.error) || resp.status + ' ' + resp.statusText, data && data.field);
    return data;
  }
}

let asking = null;
// where is what the daemon said of where its token is (GET
// api/v1/signin), once read.
let where = null;

// whereIsTheToken asks the daemon where its token is (served without
// the token; never the token itself); an mmkd without the route: {}.
async function whereIsTheToken() {
  if (where) return where;
  try {
    const resp = await fetch('api/v1/signin', {cache: 'no-store', credentials: 'omit', referrerPolicy: 'no-referrer'});
    if (resp.ok) where = await resp.json();
  } catch (e) {
    console.debug('mmk: sign-in hint:', e);
  }
  return where || {};
}

// explain says in the dialog where the token is, and that the one sent
// was refused.
function explain(w, refused) {
  const parts = [refused ? 'That token was not accepted. ' : ''];
  if (w.tokenFile) {
    parts.push('This mmkd asks for its token, which it keeps in the file ', h('code', {id: 'token-file', text: w.tokenFile}),
      ' on the node: show it there with ', h('code', {text: 'cat ' + w.tokenFile}), ' (as mmkd\u2019s user, or root) and paste it here.');
  } else if (w.tokenSetting) {
    parts.push('This mmkd asks for its token: the ', h('code', {text: w.tokenSetting}),
      ' setting of its configuration (or MMK_SERVER_TOKEN in its environment). Paste it here.');
  } else {
    parts.push('This mmkd asks for its token. Paste it here.');
  }
  $('token-why').replaceChildren(...parts);
}

// askToken shows the token dialog (once, however many requests wait on
// it), saying where the token is and, when refused, that the one sent
// was; it resolves when a token is entered.
export function askToken(refused) {
  if (asking) return asking;
  const dlg = $('token-dialog');
  const form = $('token-form');
  const input = $('token-input');
  explain(where || {}, refused);
  if (!where) whereIsTheToken().then((w) => explain(w, refused));
  asking = new Promise((resolve) => {
    const done = (ev) => {
      ev.preventDefault();
      const t = input.value.trim();
      if (!t) return;
      sessionStorage.setItem(TOKEN_KEY, t);
      input.value = '';
      form.removeEventListener('submit', done);
      dlg.removeEventListener('cancel', stay);
      dlg.close();
      asking = null;
      resolve();
    };
    // Escape would leave the page without data: keep the dialog.
    const stay = (ev) => ev.preventDefault();
    form.addEventListener('submit', done);
    dlg.addEventListener('cancel', stay);
    if (!dlg.open) dlg.showModal();
    input.focus();
  });
  return asking;
}

// readEvents yields the server-sent events of a response body as
// {event, data}; comment lines (heartbeats) call onBeat.
export async function* readEvents(resp, onBeat) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      buf += value;
      let end;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, end);
        buf = buf.slice(end + 2);
        let event = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) {
            if (onBeat) onBeat();
            continue;
          }
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          let val = colon < 0 ? '' : line.slice(colon + 1);
          if (val.startsWith(' ')) val = val.slice(1);
          if (field === 'event') event = val;
          else if (field === 'data') data.push(val);
        }
        if (data.length) yield {event, data: data.join('\n')};
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

// readText calls onText with each chunk of a text response until it ends
// or signal aborts.
export async function readText(resp, onText) {
  const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      onText(value);
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

// idempotencyKey is a random key that makes a retried submission safe.
export function idempotencyKey() {
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  return 'ui-' + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}
