// A server speaking with a Qwen3-TTS checkpoint, through the official openai client:
// GET /v1/audio/voices lists the checkpoint's speakers (then OpenAI's names as aliases of
// the first) and its languages; audio.speech.create with a named voice returns a valid WAV
// (24 kHz mono 16-bit, whole 80 ms frames), another speaker gives other audio, an OpenAI
// name speaks like the first speaker, a language is taken and an unknown one is a 400 naming
// the "language" parameter. Prints a JSON summary.
import assert from "node:assert/strict";
import { baseUrl, openaiClient } from "./server_common.mjs";

const { OpenAI, client } = await openaiClient();
const input = "Good morning from the edge.";
const voices = await (await fetch(`${baseUrl}/v1/audio/voices`)).json();
const speakers = voices.data.filter((v) => v.kind === "speaker").map((v) => v.id);
assert.ok(speakers.length >= 2, JSON.stringify(voices));
assert.equal(voices.default, speakers[0]);
assert.ok(voices.languages.includes("auto") && voices.languages.includes("english"));
assert.ok(voices.data.some((v) => v.id === "alloy" && v.kind === "alias"));

async function speak(body) {
  const res = await client.audio.speech.create({ model: "tts-1", input, response_format: "wav", ...body });
  assert.equal(res.headers.get("content-type"), "audio/wav");
  return Buffer.from(await res.arrayBuffer());
}

const first = await speak({ voice: speakers[0] });
assert.equal(first.toString("ascii", 0, 4), "RIFF");
assert.equal(first.readUInt16LE(22), 1);
assert.equal(first.readUInt32LE(24), 24000);
assert.equal(first.readUInt16LE(34), 16);
const samples = first.readUInt32LE(40) / 2;
assert.equal(first.length, 44 + samples * 2);
assert.ok(samples > 0 && samples % 1920 === 0, `${samples} samples: not whole 12.5 Hz frames`);
const second = await speak({ voice: speakers[1] });
assert.ok(!second.equals(first), "another speaker, the same audio");
const alias = await speak({ voice: "alloy" });
assert.ok(alias.equals(first), "an OpenAI name speaks with the first speaker");
const english = await speak({ voice: speakers[0], language: "english" });
assert.equal(english.toString("ascii", 0, 4), "RIFF");
await assert.rejects(speak({ voice: speakers[0], language: "klingon" }), (e) => {
  assert.ok(e instanceof OpenAI.BadRequestError, String(e));
  assert.equal(e.error?.param, "language");
  return true;
});
console.log(JSON.stringify({ speakers, samples, languages: voices.languages.length }));
