// The official openai client sends images (content part image_url with a data: URI) to
// /v1/chat/completions on `edge-infer serve` with no -m: the built-in demo model and its
// random gemma3 projector (16 image rows). An answer (plain and streamed), the same image
// again reuses the cached prefix, then every bad-image class is a 400 naming the param and
// the problem, and the server still answers afterwards. Prints a JSON summary on success;
// any failed assert exits non-zero.
import assert from "node:assert/strict";
import zlib from "node:zlib";
import { openaiClient } from "./server_common.mjs";

const { OpenAI, client } = await openaiClient();
const model = (await client.models.list()).data[0].id;

// A PNG file: 8-bit RGB, no filter, zlib-compressed rows.
const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4), crc = Buffer.alloc(4), td = Buffer.concat([Buffer.from(type), data]);
  len.writeUInt32BE(data.length);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
function png(w, h, colour) {
  const rows = [];
  for (let y = 0; y < h; y++) {
    const row = Buffer.alloc(1 + 3 * w);
    for (let x = 0; x < w; x++) row.set([(colour[0] + x) & 255, (colour[1] + y) & 255, colour[2]], 1 + 3 * x);
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0); ihdr.writeUInt32BE(h, 4); ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", ihdr),
                        chunk("IDAT", zlib.deflateSync(Buffer.concat(rows))), chunk("IEND", Buffer.alloc(0))]);
}
const uri = (bytes, mime = "image/png") => `data:${mime};base64,${bytes.toString("base64")}`;
const ask = (url) => [{
  role: "user",
  content: [{ type: "text", text: "What colour is this image?" }, { type: "image_url", image_url: { url } }],
}];
const summary = {};

const red = uri(png(96, 80, [220, 10, 10]));
const chat = await client.chat.completions.create({ model, messages: ask(red), max_tokens: 6, temperature: 0 });
assert.equal(chat.object, "chat.completion");
assert.ok(chat.usage.prompt_tokens > 16, `prompt_tokens ${chat.usage.prompt_tokens}`);
assert.ok(chat.usage.completion_tokens > 0);
summary.prompt_tokens = chat.usage.prompt_tokens;
const text = chat.choices[0].message.content ?? "";

// The same image again, streamed: the same answer, its prefix (text and image) cached.
const stream = await client.chat.completions.create({
  model, messages: ask(red), max_tokens: 6, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let streamed = "", usage = null;
for await (const c of stream) {
  streamed += c.choices[0]?.delta?.content ?? "";
  if (c.usage) usage = c.usage;
}
assert.equal(streamed, text);
assert.ok(usage.prompt_tokens_details.cached_tokens >= 16, JSON.stringify(usage));
summary.cached_tokens = usage.prompt_tokens_details.cached_tokens;

// Another image is not taken from the cache past the text before it.
const blue = await client.chat.completions.create({
  model, messages: ask(uri(png(64, 64, [10, 10, 220]))), max_tokens: 3, temperature: 0,
});
assert.ok(blue.usage.prompt_tokens_details.cached_tokens < summary.cached_tokens, JSON.stringify(blue.usage));

// Bad images: each class a 400 with the param and a code naming it.
async function expectBad(messages, code) {
  try {
    await client.chat.completions.create({ model, messages, max_tokens: 2 });
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, String(e));
    assert.equal(e.status, 400, e.message);
    assert.equal(e.code, code, e.message);
    assert.equal(e.param, "messages[0].content[1].image_url.url", e.message);
    return e.message;
  }
  assert.fail(`expected a 400 ${code}`);
}
const full = png(96, 80, [1, 2, 3]);
summary.errors = {
  http: await expectBad(ask("https://example.com/cat.png"), "unsupported_url"),
  base64: await expectBad(ask("data:image/png;base64,***"), "invalid_base64"),
  not_data: await expectBad(ask("file:///etc/passwd"), "invalid_image_url"),
  format: await expectBad(ask(uri(Buffer.from("GIF89a....", "latin1"), "image/gif")), "unsupported_image_format"),
  truncated: await expectBad(ask(uri(full.subarray(0, full.length - 30))), "invalid_image"),
  too_large: await expectBad(ask(uri(png(400, 300, [0, 0, 0]))), "image_too_large"),
};

const after = await client.chat.completions.create({ model, messages: ask(red), max_tokens: 2, temperature: 0 });
assert.equal(after.object, "chat.completion");
console.log(JSON.stringify(summary));
