// The conversation: streamed replies from /v1/chat/completions (SSE), a stop button that
// aborts the fetch (the server sees the closed connection and cancels the generation),
// reasoning_content folded, tool calls shown, Markdown rendered with marked, sanitised by
// DOMPurify and highlighted by highlight.js. The conversation and the settings live in
// localStorage, so a reload shows them again.
'use strict';
const kChatKey = 'edge.chat.v1';
const kSettingsKey = 'edge.settings.v1';
const chat = { messages: [], controller: null };
const settingIds = ['system-prompt', 'temperature', 'top-p', 'top-k', 'max-tokens', 'seed', 'extra-params', 'speak'];

// localStorage holds a few MB: when images or audio do not fit, they are kept as a note.
function save() {
  try {
    localStorage.setItem(kChatKey, JSON.stringify(chat.messages));
  } catch (e) {
    const slim = chat.messages.map((m) => (!Array.isArray(m.content) ? m : { ...m,
      content: m.content.map((p) => (p.type === 'text' ? p : { type: 'text', text: `[${p.type} not kept]` })) }));
    try {
      localStorage.setItem(kChatKey, JSON.stringify(slim));
    } catch (e2) { /* nothing more to drop: the conversation lives until the tab closes */ }
  }
}

function saveSettings() {
  const s = {};
  for (const id of settingIds) s[id] = edge.$(id).type === 'checkbox' ? edge.$(id).checked : edge.$(id).value;
  localStorage.setItem(kSettingsKey, JSON.stringify(s));
}

function load() {
  try {
    chat.messages = JSON.parse(localStorage.getItem(kChatKey) || '[]');
    const s = JSON.parse(localStorage.getItem(kSettingsKey) || '{}');
    for (const id of settingIds) {
      if (!(id in s)) continue;
      if (edge.$(id).type === 'checkbox') edge.$(id).checked = !!s[id];
      else edge.$(id).value = s[id];
    }
  } catch (e) {
    chat.messages = [];
  }
}

// Model output must not make the browser fetch anything: an image keeps its source only as
// a data: URI (a remote one would leave the machine), and links open in a new tab.
DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'IMG' && !/^data:image\//i.test(node.getAttribute('src') || '')) node.removeAttribute('src');
  if (node.tagName === 'A') node.setAttribute('target', '_blank'), node.setAttribute('rel', 'noopener noreferrer');
});

function markdown(text, highlight) {
  const html = DOMPurify.sanitize(marked.parse(text || ''));
  const box = document.createElement('div');
  box.innerHTML = html;
  if (highlight) box.querySelectorAll('pre code').forEach((el) => hljs.highlightBlock(el));
  return box;
}

function textOf(content) {
  if (typeof content === 'string') return content;
  return (content || []).filter((p) => p.type === 'text').map((p) => p.text).join('\n');
}

// One message's element (re-rendered while it streams).
function renderMessage(m, el, done) {
  el.className = `msg ${m.role}${m.stopped ? ' stopped' : ''}${m.error ? ' failed' : ''}`;
  el.textContent = '';
  const role = document.createElement('div');
  role.className = 'role';
  role.textContent = m.role;
  el.appendChild(role);
  if (m.reasoning) {
    const d = document.createElement('details');
    d.className = 'reasoning';
    d.innerHTML = '<summary>Reasoning</summary>';
    const body = document.createElement('div');
    body.textContent = m.reasoning;
    d.appendChild(body);
    el.appendChild(d);
  }
  if (Array.isArray(m.content)) {
    for (const p of m.content) {
      if (p.type === 'image_url') {
        const img = document.createElement('img');
        img.className = 'attached';
        img.src = p.image_url.url;
        el.appendChild(img);
      } else if (p.type === 'input_audio') {
        const a = document.createElement('audio');
        a.controls = true;
        a.src = `data:audio/${p.input_audio.format === 'mp3' ? 'mpeg' : 'wav'};base64,${p.input_audio.data}`;
        el.appendChild(a);
      }
    }
  }
  const body = markdown(textOf(m.content), done);
  body.className = 'body';
  el.appendChild(body);
  for (const call of m.tool_calls || []) {
    const t = document.createElement('div');
    t.className = 'tool-call';
    const name = document.createElement('b');
    name.textContent = `tool call: ${call.function.name || '?'}`;
    const args = document.createElement('pre');
    args.textContent = call.function.arguments || '';
    t.append(name, args);
    el.appendChild(t);
  }
  if (m.stopped || m.error) {
    const note = document.createElement('div');
    note.className = 'note';
    note.textContent = m.error ? `error: ${m.error}` : 'stopped';
    el.appendChild(note);
  }
}

function renderAll() {
  const box = edge.$('messages');
  box.textContent = '';
  for (const m of chat.messages) {
    const el = document.createElement('div');
    renderMessage(m, el, true);
    box.appendChild(el);
  }
  box.scrollTop = box.scrollHeight;
}

// The request for `history` (the conversation before the reply being streamed).
function requestBody(history) {
  const num = (id) => (edge.$(id).value === '' ? undefined : Number(edge.$(id).value));
  const messages = [];
  const system = edge.$('system-prompt').value.trim();
  if (system) messages.push({ role: 'system', content: system });
  for (const m of history) {
    if (m.error && !textOf(m.content)) continue;
    const out = { role: m.role, content: m.content };
    if (m.tool_calls && m.tool_calls.length) out.tool_calls = m.tool_calls;
    messages.push(out);
  }
  let extra = {};
  const raw = edge.$('extra-params').value.trim();
  if (raw) extra = JSON.parse(raw);  // a typo is reported as the reply's error
  const topK = num('top-k');
  return { model: edge.$('model-name').textContent || 'edge-infer', messages, stream: true,
    stream_options: { include_usage: true }, temperature: num('temperature'), top_p: num('top-p'),
    top_k: topK ? topK : undefined, max_tokens: num('max-tokens'), seed: num('seed'), ...extra };
}

// Folds one streamed chunk's delta into the assistant message.
function applyDelta(m, delta) {
  if (delta.content) m.content += delta.content;
  if (delta.reasoning_content) m.reasoning = (m.reasoning || '') + delta.reasoning_content;
  for (const tc of delta.tool_calls || []) {
    m.tool_calls = m.tool_calls || [];
    const slot = (m.tool_calls[tc.index || 0] ||= { id: '', type: 'function', function: { name: '', arguments: '' } });
    if (tc.id) slot.id = tc.id;
    if (tc.function && tc.function.name) slot.function.name += tc.function.name;
    if (tc.function && tc.function.arguments) slot.function.arguments += tc.function.arguments;
  }
}

async function send(text) {
  const parts = edge.media.takeParts();
  const content = parts.length ? [{ type: 'text', text }, ...parts] : text;
  chat.messages.push({ role: 'user', content });
  const reply = { role: 'assistant', content: '' };
  chat.messages.push(reply);
  renderAll();
  save();
  const el = edge.$('messages').lastElementChild;
  const t0 = performance.now();
  let tFirst = null, tLast = null, pieces = 0, usage = null, frame = 0;
  const redraw = () => {
    frame = 0;
    renderMessage(reply, el, false);
    edge.$('messages').scrollTop = edge.$('messages').scrollHeight;
  };
  chat.controller = new AbortController();
  setBusy(true);
  edge.media.resetSpeech(true);
  try {
    const res = await edge.api('/v1/chat/completions', { method: 'POST', signal: chat.controller.signal,
      headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(requestBody(chat.messages.slice(0, -1))) });
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      throw new Error((body.error && body.error.message) || `HTTP ${res.status}`);
    }
    await edge.readSse(res, (ev) => {
      if (ev.error) throw new Error(ev.error.message || 'the server ended the stream with an error');
      if (ev.usage) usage = ev.usage;
      const delta = ev.choices && ev.choices[0] && ev.choices[0].delta;
      if (!delta) return;
      if (delta.content || delta.reasoning_content || delta.tool_calls) {
        tLast = performance.now();
        if (tFirst === null) tFirst = tLast;
        ++pieces;
      }
      applyDelta(reply, delta);
      edge.media.speakProgress(reply.content, false);
      if (!frame) frame = requestAnimationFrame(redraw);
    });
    edge.media.speakProgress(reply.content, true);
  } catch (e) {
    if (e.name === 'AbortError') reply.stopped = true;
    else reply.error = String(e.message || e);
  } finally {
    if (frame) cancelAnimationFrame(frame);
    chat.controller.abort();  // after an error event too: the server stops generating
    chat.controller = null;
    setBusy(false);
    renderMessage(reply, el, true);
    save();
    const tokens = usage ? usage.completion_tokens : pieces;
    edge.status.showReply({ ttftMs: tFirst === null ? null : tFirst - t0, tokens,
      decodeMs: tFirst === null ? 0 : tLast - tFirst });
    // The server counts a cancel once its next write finds the connection closed.
    setTimeout(edge.status.refresh, 200);
    setTimeout(edge.status.refresh, 1500);
  }
}

function setBusy(busy) {
  edge.$('send').disabled = busy;
  edge.$('stop').disabled = !busy;
  document.body.dataset.busy = busy ? '1' : '';
}

function wire() {
  edge.$('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const text = edge.$('input').value.trim();
    if (!text || chat.controller) return;
    edge.$('input').value = '';
    send(text);
  });
  edge.$('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) (e.preventDefault(), edge.$('composer').requestSubmit());
  });
  edge.$('stop').onclick = () => chat.controller && chat.controller.abort();
  edge.$('new-chat').onclick = () => {
    if (chat.controller) chat.controller.abort();
    edge.media.resetSpeech(true);
    chat.messages = [];
    save();
    renderAll();
  };
  edge.$('set-key').onclick = () => edge.askKey(false);
  for (const id of settingIds) edge.$(id).addEventListener('change', saveSettings);
  edge.$('attach-image').onclick = () => edge.$('image-file').click();
  edge.$('attach-audio').onclick = () => edge.$('audio-file').click();
  edge.$('image-file').onchange = (e) => e.target.files[0] && edge.media.addImage(e.target.files[0]);
  edge.$('audio-file').onchange = (e) => e.target.files[0] && edge.media.addAudio(e.target.files[0]);
  edge.$('record-audio').onclick = () => edge.media.toggleRecording().catch((e) => alert(e.message || e));
}

async function start() {
  load();
  wire();
  renderAll();
  await edge.status.refresh();  // also learns whether the server speaks
  await edge.media.detect();
  document.body.dataset.ready = '1';
  setInterval(() => document.visibilityState === 'visible' && !chat.controller && edge.status.refresh(), 5000);
}

start();
