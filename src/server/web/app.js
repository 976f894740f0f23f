// Shared by the page's scripts: the API key rule and fetch helpers. The page and its
// assets load without a key; the first API call that gets a 401 asks for the key once,
// keeps it in localStorage and sends it as "Authorization: Bearer <key>" from then on.
'use strict';
const edge = {};

edge.$ = (id) => document.getElementById(id);

edge.keyStore = {
  get: () => localStorage.getItem('edge.apiKey') || '',
  set: (k) => (k ? localStorage.setItem('edge.apiKey', k) : localStorage.removeItem('edge.apiKey')),
};

// Resolves with a key typed into the dialog. One dialog at a time: callers that hit a 401
// together wait for the same answer.
edge.askKey = (() => {
  let pending = null;
  return (refused) => {
    if (pending) return pending;
    const dialog = edge.$('key-dialog');
    edge.$('key-error').hidden = !refused;
    edge.$('key-input').value = '';
    pending = new Promise((resolve) => {
      dialog.addEventListener('close', () => {
        pending = null;
        const key = edge.$('key-input').value.trim();
        edge.keyStore.set(key);
        resolve(key);
      }, { once: true });
    });
    dialog.showModal();
    return pending;
  };
})();

// fetch() against the API with the stored key; a 401 asks for the key and tries again.
edge.api = async (path, init = {}) => {
  for (let attempt = 0; ; ++attempt) {
    const headers = new Headers(init.headers || {});
    const key = edge.keyStore.get();
    if (key) headers.set('Authorization', 'Bearer ' + key);
    const res = await fetch(path, { ...init, headers });
    if (res.status !== 401 || attempt >= 3) return res;
    await edge.askKey(attempt > 0 || key !== '');
  }
};

edge.apiJson = async (path, init) => {
  const res = await edge.api(path, init);
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error((body.error && body.error.message) || `${path}: HTTP ${res.status}`);
  return body;
};

edge.formatBytes = (n) => {
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) n /= 1024, ++i;
  return (i ? n.toFixed(1) : String(n)) + ' ' + units[i];
};

// Reads a server-sent-events body; calls onEvent(parsed JSON) per "data:" event until
// [DONE] or the end of the body. Throws an AbortError when the fetch is aborted.
edge.readSse = async (res, onEvent) => {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
      if (!data) continue;
      if (data === '[DONE]') return;
      onEvent(JSON.parse(data));
    }
  }
};
