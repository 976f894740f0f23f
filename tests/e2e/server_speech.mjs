// The official openai client's audio.speech.create against `edge-infer serve` with a speech
// pair (random weights: the audio is noise, its shape is what is checked): a valid WAV
// (RIFF header, PCM 16-bit mono, 24 kHz, data size = what follows), raw PCM of the same
// samples, the streamed forms (stream_format "audio": the same audio, in more than one
// piece; "sse": the same audio in base64 delta events), speed, and 400s for an unknown voice and an unsupported format. Prints a JSON summary.
import assert from "node:assert/strict";
import { baseUrl, openaiClient } from "./server_common.mjs";

const { OpenAI, client } = await openaiClient();
const summary = {};
const input = "Hello world, this is a test.";

function parseWav(buf) {
  assert.equal(buf.toString("ascii", 0, 4), "RIFF");
  assert.equal(buf.toString("ascii", 8, 12), "WAVE");
  assert.equal(buf.toString("ascii", 12, 16), "fmt ");
  assert.equal(buf.readUInt16LE(20), 1, "PCM");
  const channels = buf.readUInt16LE(22), rate = buf.readUInt32LE(24), bits = buf.readUInt16LE(34);
  assert.equal(buf.toString("ascii", 36, 40), "data");
  const dataBytes = buf.readUInt32LE(40);
  return { channels, rate, bits, dataBytes, riff: buf.readUInt32LE(4) };
}

const res = await client.audio.speech.create({ model: "tts-1", input, voice: "alloy", response_format: "wav" });
assert.equal(res.headers.get("content-type"), "audio/wav");
const wav = Buffer.from(await res.arrayBuffer());
const h = parseWav(wav);
assert.equal(h.channels, 1);
assert.equal(h.rate, 24000);
assert.equal(h.bits, 16);
assert.equal(h.dataBytes, wav.length - 44);
assert.equal(h.riff, wav.length - 8);
assert.ok(h.dataBytes > 0 && h.dataBytes % 2 === 0);
summary.samples = h.dataBytes / 2;
summary.seconds = summary.samples / 24000;

// The same text as raw PCM: the same samples (the talker is seeded).
const pcm = Buffer.from(await (await client.audio.speech.create({ model: "tts-1", input, voice: "nova", response_format: "pcm" })).arrayBuffer());
assert.equal(pcm.length, h.dataBytes);
assert.ok(pcm.equals(wav.subarray(44)));

// Streamed: chunks as they are produced; the same PCM behind a streaming header.
const streamed = await client.audio.speech.create({ model: "tts-1", input, voice: "alloy", response_format: "pcm", stream_format: "audio" });
let pieces = 0;
const parts = [];
for await (const part of streamed.body) {
  pieces++;
  parts.push(Buffer.from(part));
}
const all = Buffer.concat(parts);
assert.ok(all.equals(pcm), `streamed ${all.length} bytes, whole ${pcm.length}`);
assert.ok(pieces > 1, "windowed: the audio comes in more than one piece");
summary.stream_pieces = pieces;

// Server-sent events: speech.audio.delta events (base64) carry the same PCM, then
// speech.audio.done.
const sseRes = await fetch(`${baseUrl}/v1/audio/speech`, {
  method: "POST", headers: { "Content-Type": "application/json" },
  body: JSON.stringify({ model: "tts-1", input, voice: "alloy", response_format: "pcm", stream_format: "sse" }),
});
assert.equal(sseRes.headers.get("content-type"), "text/event-stream");
const events = (await sseRes.text()).split("\n\n").filter((e) => e.startsWith("data: ")).map((e) => JSON.parse(e.slice(6)));
assert.ok(events.length > 2);
assert.equal(events.at(-1).type, "speech.audio.done");
const sseAudio = Buffer.concat(events.filter((e) => e.type === "speech.audio.delta").map((e) => Buffer.from(e.audio, "base64")));
assert.ok(sseAudio.equals(pcm), `sse ${sseAudio.length} bytes, whole ${pcm.length}`);
summary.sse_events = events.length;

// speed 2: about half as many samples.
const fast = Buffer.from(await (await client.audio.speech.create({ model: "tts-1", input, voice: "alloy", response_format: "pcm", speed: 2.0 })).arrayBuffer());
assert.ok(Math.abs(fast.length / 2 - pcm.length / 4) <= 2, `speed 2: ${fast.length / 2} samples of ${pcm.length / 2}`);

for (const [body, param] of [
  [{ model: "tts-1", input, voice: "nobody" }, "voice"],
  [{ model: "tts-1", input, voice: "alloy", response_format: "mp3" }, "response_format"],
  [{ model: "tts-1", input: "", voice: "alloy" }, "input"],
]) {
  await assert.rejects(client.audio.speech.create(body), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.error?.param, param);
    return true;
  });
}
// Still serving.
const again = Buffer.from(await (await client.audio.speech.create({ model: "tts-1", input, voice: "alloy", response_format: "wav" })).arrayBuffer());
assert.ok(again.equals(wav));
console.log(JSON.stringify(summary));
