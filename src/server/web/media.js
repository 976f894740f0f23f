// Media where the served pipeline has it: image and audio attachments (sent as OpenAI
// content parts image_url / input_audio), microphone recording (PCM captured through Web
// Audio and written as a 16-bit WAV, since input_audio takes wav or mp3, not the browser's
// webm), and spoken replies: sentences go to /v1/audio/speech (pcm over SSE) as the reply
// streams and are played as their audio arrives.
'use strict';
edge.media = { caps: { vision: false, audio: false, speech: false }, pending: [] };

// What the server can take and say. Input media: a model entry of /v1/models or
// /v1/pipeline naming "vision" / "audio" in capabilities, modalities or input_modalities.
// Speech out: /metrics carries speech figures only when a speech graph is attached.
edge.media.detect = async () => {
  const names = new Set();
  const collect = (v) => {
    if (Array.isArray(v)) v.forEach((x) => names.add(String(x)));
    else if (v && typeof v === 'object') Object.keys(v).filter((k) => v[k]).forEach((k) => names.add(k));
  };
  const scan = (o) => {
    if (!o || typeof o !== 'object') return;
    collect(o.capabilities), collect(o.modalities), collect(o.input_modalities);
  };
  try {
    const models = await edge.apiJson('/v1/models');
    (models.data || []).forEach(scan);
    const name = models.data && models.data[0] && models.data[0].id;
    if (name) edge.$('model-name').textContent = name;
  } catch (e) { /* the chat still works; no media controls */ }
  const pipe = await edge.api('/v1/pipeline').catch(() => null);
  if (pipe && pipe.ok) scan(await pipe.json().catch(() => null));
  const caps = edge.media.caps;
  caps.vision = names.has('vision') || names.has('image');
  caps.audio = names.has('audio') || names.has('audio_in');
  caps.speech = !!edge.status.hasSpeech;
  edge.$('attach-image').hidden = !caps.vision;
  edge.$('attach-audio').hidden = !caps.audio;
  edge.$('record-audio').hidden = !caps.audio || !navigator.mediaDevices;
  edge.$('speak-row').hidden = !caps.speech;
};

function renderPending() {
  const box = edge.$('attachments');
  box.textContent = '';
  box.hidden = edge.media.pending.length === 0;
  edge.media.pending.forEach((p, i) => {
    const chip = document.createElement('span');
    chip.className = 'chip';
    chip.textContent = `${p.label} ✕`;
    chip.title = 'Remove';
    chip.onclick = () => (edge.media.pending.splice(i, 1), renderPending());
    box.appendChild(chip);
  });
}

const readDataUrl = (file) => new Promise((resolve, reject) => {
  const r = new FileReader();
  r.onload = () => resolve(r.result);
  r.onerror = () => reject(r.error);
  r.readAsDataURL(file);
});

edge.media.addImage = async (file) => {
  const url = await readDataUrl(file);
  edge.media.pending.push({ label: file.name, part: { type: 'image_url', image_url: { url } } });
  renderPending();
};

edge.media.addAudio = async (file, label) => {
  const url = await readDataUrl(file);
  const format = /mpeg|mp3/.test(file.type) || /\.mp3$/i.test(file.name || '') ? 'mp3' : 'wav';
  edge.media.pending.push({ label: label || file.name,
    part: { type: 'input_audio', input_audio: { data: url.slice(url.indexOf(',') + 1), format } } });
  renderPending();
};

// The content parts of the attachments, and clears them.
edge.media.takeParts = () => {
  const parts = edge.media.pending.map((p) => p.part);
  edge.media.pending = [];
  renderPending();
  return parts;
};

// Float32 mono samples -> a 16-bit PCM WAV Blob.
function wavBlob(samples, rate) {
  const view = new DataView(new ArrayBuffer(44 + samples.length * 2));
  const str = (o, s) => [...s].forEach((c, i) => view.setUint8(o + i, c.charCodeAt(0)));
  str(0, 'RIFF'), view.setUint32(4, 36 + samples.length * 2, true), str(8, 'WAVEfmt ');
  view.setUint32(16, 16, true), view.setUint16(20, 1, true), view.setUint16(22, 1, true);
  view.setUint32(24, rate, true), view.setUint32(28, rate * 2, true);
  view.setUint16(32, 2, true), view.setUint16(34, 16, true), str(36, 'data');
  view.setUint32(40, samples.length * 2, true);
  samples.forEach((s, i) => view.setInt16(44 + i * 2, Math.max(-1, Math.min(1, s)) * 0x7fff, true));
  return new Blob([view], { type: 'audio/wav' });
}

let recording = null;
edge.media.toggleRecording = async () => {
  const button = edge.$('record-audio');
  if (recording) {
    const { stream, ctx, chunks } = recording;
    recording = null;
    stream.getTracks().forEach((t) => t.stop());
    await ctx.close();
    const all = new Float32Array(chunks.reduce((n, c) => n + c.length, 0));
    chunks.reduce((o, c) => (all.set(c, o), o + c.length), 0);
    button.textContent = 'Record';
    const blob = wavBlob(all, ctx.sampleRate);
    return edge.media.addAudio(new File([blob], 'recording.wav', { type: 'audio/wav' }));
  }
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
  const ctx = new AudioContext();
  const source = ctx.createMediaStreamSource(stream);
  const tap = ctx.createScriptProcessor(4096, 1, 1);
  const chunks = [];
  tap.onaudioprocess = (e) => chunks.push(new Float32Array(e.inputBuffer.getChannelData(0)));
  source.connect(tap), tap.connect(ctx.destination);
  recording = { stream, ctx, chunks };
  button.textContent = 'Stop recording';
};

// ---- spoken replies ------------------------------------------------------------------
const speech = { queue: [], busy: false, ctx: null, at: 0, abort: null, said: 0 };
const kSpeechRate = 24000;  // response_format pcm: s16le, 24 kHz mono

function playPcm(bytes) {
  const n = bytes.length >> 1;
  if (!n) return;
  const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
  const buf = speech.ctx.createBuffer(1, n, kSpeechRate);
  const ch = buf.getChannelData(0);
  for (let i = 0; i < n; ++i) ch[i] = view.getInt16(i * 2, true) / 32768;
  const src = speech.ctx.createBufferSource();
  src.buffer = buf;
  src.connect(speech.ctx.destination);
  speech.at = Math.max(speech.at, speech.ctx.currentTime + 0.05);
  src.start(speech.at);
  speech.at += buf.duration;
}

async function speakNext() {
  if (speech.busy || !speech.queue.length) return;
  speech.busy = true;
  const input = speech.queue.shift();
  speech.abort = new AbortController();
  try {
    speech.ctx = speech.ctx || new AudioContext();
    const res = await edge.api('/v1/audio/speech', {
      method: 'POST', signal: speech.abort.signal, headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'tts-1', input, voice: 'alloy', response_format: 'pcm', stream_format: 'sse' }),
    });
    if (res.ok) {
      await edge.readSse(res, (ev) => {
        if (ev.type === 'speech.audio.delta') playPcm(Uint8Array.from(atob(ev.audio), (c) => c.charCodeAt(0)));
      });
    }
  } catch (e) { /* a stopped or failed utterance: go on with the next */ }
  speech.busy = false;
  speakNext();
}

// Called with the whole reply text so far: complete sentences not yet said are queued.
edge.media.speakProgress = (text, final) => {
  if (!edge.media.caps.speech || !edge.$('speak').checked) return;
  const rest = text.slice(speech.said);
  const m = final ? [rest, rest] : /^[\s\S]*?[.!?。](?=\s)/.exec(rest);
  if (!m) return;
  speech.said += m[0].length;
  const sentence = m[0].replace(/[*_`#>]/g, '').trim();
  if (/\w/.test(sentence)) speech.queue.push(sentence.slice(0, 4096));
  speakNext();
  if (!final) edge.media.speakProgress(text, false);
};

edge.media.resetSpeech = (stopPlaying) => {
  speech.said = 0;
  if (!stopPlaying) return;
  speech.queue = [];
  if (speech.abort) speech.abort.abort();
  if (speech.ctx) speech.ctx.close(), (speech.ctx = null), (speech.at = 0);
};
