// The status panel: the last reply's speed (measured here, from the stream) and the
// server's health from /metrics: KV blocks used of the pool, requests running and
// cancelled, and resident memory by memory-ledger category (plus each pipeline stage's
// measured RSS when the server serves a graph).
'use strict';
edge.status = {};

// Prometheus text -> [{name, labels: {k: v}, value}].
edge.status.parseMetrics = (text) => {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
};

edge.status.showReply = ({ ttftMs, tokens, decodeMs }) => {
  localStorage.setItem('edge.lastReply', JSON.stringify({ ttftMs, tokens, decodeMs }));  // shown after a reload
  edge.$('stat-ttft').textContent = ttftMs == null ? '–' : `${ttftMs.toFixed(0)} ms`;
  edge.$('stat-tokens').textContent = tokens == null ? '–' : String(tokens);
  const tps = tokens > 1 && decodeMs > 0 ? ((tokens - 1) * 1000) / decodeMs : null;
  edge.$('stat-tps').textContent = tps == null ? '–' : tps.toFixed(1);
};

function renderMemory(rows) {
  const body = edge.$('memory').tBodies[0];
  body.textContent = '';
  const max = Math.max(1, ...rows.map((r) => r.bytes));
  for (const r of rows) {
    const tr = body.insertRow();
    const name = tr.insertCell();
    name.textContent = r.name;
    const bar = document.createElement('div');
    bar.className = 'bar';
    bar.style.width = `${(100 * r.bytes) / max}%`;
    name.appendChild(bar);
    const bytes = tr.insertCell();
    bytes.className = 'bytes';
    bytes.textContent = edge.formatBytes(r.bytes);
  }
}

edge.status.refresh = async () => {
  const err = edge.$('status-error');
  try {
    const res = await edge.api('/metrics');
    if (!res.ok) throw new Error(`/metrics: HTTP ${res.status}`);
    const metrics = edge.status.parseMetrics(await res.text());
    const one = (name) => (metrics.find((m) => m.name === name) || {}).value;
    edge.$('stat-kv').textContent = `${one('edge_kv_blocks_used') ?? '–'} / ${one('edge_kv_blocks_total') ?? '–'}`;
    edge.$('stat-running').textContent = String(one('edge_requests_running') ?? '–');
    edge.$('stat-cancelled').textContent = String(one('edge_requests_cancelled_total') ?? '–');
    edge.$('stat-generated').textContent = String(one('edge_generated_tokens_total') ?? '–');
    const rows = metrics
      .filter((m) => m.name === 'edge_memory_ledger_bytes' && m.value > 0)
      .map((m) => ({ name: m.labels.category, bytes: m.value }));
    for (const m of metrics.filter((x) => x.name === 'edge_stage_resident_bytes'))
      rows.push({ name: `stage ${m.labels.stage} (RSS)`, bytes: m.value });
    renderMemory(rows);
    edge.status.hasSpeech = metrics.some((m) => m.name.startsWith('edge_tts_'));
    err.hidden = true;
  } catch (e) {
    err.textContent = String(e.message || e);
    err.hidden = false;
  }
};

try {
  const last = JSON.parse(localStorage.getItem('edge.lastReply') || 'null');
  if (last) edge.status.showReply(last);
} catch (e) { /* nothing kept */ }
