// The official openai client sends audio clips (content part input_audio, base64 WAV) to
// /v1/chat/completions on `edge-infer serve -m LM --mmproj AUDIO_PROJECTOR
// --max-audio-seconds 2`: an answer (plain and streamed, the clip's rows counted in the
// prompt), then every bad-audio class as a 400 naming the param and the problem, and the
// server still answers afterwards. Prints a JSON summary on success; any failed assert
// exits non-zero.
import assert from "node:assert/strict";
import { openaiClient } from "./server_common.mjs";

const { OpenAI, client } = await openaiClient();
const listed = (await client.models.list()).data[0];
const model = listed.id;
// /v1/models announces audio input (the chat page shows its audio controls from this).
assert.ok((listed.capabilities ?? []).includes("audio"), JSON.stringify(listed));

// A WAV image: 16-bit PCM (bits 16) or IEEE float (bits 32, tag 3), interleaved channels.
function wav(samples, { rate = 16000, channels = 1, bits = 16, tag = bits === 32 ? 3 : 1 } = {}) {
  const bytesPer = bits / 8, data = Buffer.alloc(samples.length * bytesPer);
  samples.forEach((x, i) => {
    if (bits === 16) data.writeInt16LE(Math.round(Math.max(-1, Math.min(1, x)) * 32767), 2 * i);
    else if (bits === 32) data.writeFloatLE(x, 4 * i);
    else data.writeUInt8(Math.round(128 + 127 * x), i);
  });
  const h = Buffer.alloc(44);
  h.write("RIFF", 0); h.writeUInt32LE(36 + data.length, 4); h.write("WAVE", 8);
  h.write("fmt ", 12); h.writeUInt32LE(16, 16); h.writeUInt16LE(tag, 20); h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(rate, 24); h.writeUInt32LE(rate * channels * bytesPer, 28);
  h.writeUInt16LE(channels * bytesPer, 32); h.writeUInt16LE(bits, 34);
  h.write("data", 36); h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}
const tone = (seconds, rate = 16000, channels = 1) =>
  Array.from({ length: Math.round(seconds * rate) * channels }, (_, i) =>
    0.4 * Math.sin((2 * Math.PI * 440 * Math.floor(i / channels)) / rate));

const ask = (data, format = "wav") => [{
  role: "user",
  content: [
    { type: "text", text: "What is in this clip?" },
    { type: "input_audio", input_audio: { data, format } },
  ],
}];
const summary = {};

// One second at 16 kHz mono: 30 s of mel frames -> 375 rows (stack 4) in the prompt.
const clip = wav(tone(1)).toString("base64");
const chat = await client.chat.completions.create({ model, messages: ask(clip), max_tokens: 6, temperature: 0 });
assert.equal(chat.object, "chat.completion");
assert.ok(chat.usage.prompt_tokens > 375, `prompt_tokens ${chat.usage.prompt_tokens}`);
assert.ok(chat.usage.completion_tokens > 0);
summary.prompt_tokens = chat.usage.prompt_tokens;
const text = chat.choices[0].message.content ?? "";

// The same clip streamed (and 44.1 kHz stereo float: resampled, mixed down) also answers.
const stream = await client.chat.completions.create({ model, messages: ask(clip), max_tokens: 6, temperature: 0, stream: true });
let streamed = "";
for await (const c of stream) streamed += c.choices[0]?.delta?.content ?? "";
assert.equal(streamed, text);
const stereo = wav(tone(0.5, 44100, 2), { rate: 44100, channels: 2, bits: 32 }).toString("base64");
const st = await client.chat.completions.create({ model, messages: ask(stereo), max_tokens: 3, temperature: 0 });
assert.equal(st.usage.prompt_tokens, chat.usage.prompt_tokens);

// Bad audio: each class a 400 with the param and a code naming it.
async function expectBad(messages, code, param) {
  try {
    await client.chat.completions.create({ model, messages, max_tokens: 2 });
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, String(e));
    assert.equal(e.status, 400, e.message);
    assert.equal(e.code, code, e.message);
    assert.equal(e.param, param, e.message);
    return e.message;
  }
  assert.fail(`expected a 400 ${code}`);
}
const p = "messages[0].content[1].input_audio";
summary.errors = {
  base64: await expectBad(ask("not*base64!"), "invalid_base64", `${p}.data`),
  format: await expectBad(ask(clip, "mp3"), "unsupported_audio_format", `${p}.format`),
  not_wav: await expectBad(ask(Buffer.from("ID3 this is an mp3, honest").toString("base64")), "invalid_audio", `${p}.data`),
  truncated: await expectBad(ask(wav(tone(1)).subarray(0, 1000).toString("base64")), "invalid_audio", `${p}.data`),
  bits8: await expectBad(ask(wav(tone(0.2), { bits: 8 }).toString("base64")), "unsupported_audio_format", `${p}.data`),
  too_long: await expectBad(ask(wav(tone(3)).toString("base64")), "audio_too_long", `${p}.data`),
};
assert.match(summary.errors.not_wav, /not a WAV file/);
assert.match(summary.errors.truncated, /truncated/);
assert.match(summary.errors.too_long, /3\.0 s/);

// Still serving, with the same answer.
const after = await client.chat.completions.create({ model, messages: ask(clip), max_tokens: 6, temperature: 0 });
assert.equal(after.choices[0].message.content ?? "", text);
console.log(JSON.stringify(summary));
