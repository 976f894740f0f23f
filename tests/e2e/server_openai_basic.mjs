// The official openai client against `edge-infer serve` on a tiny random model: models,
// chat and completions (streaming and not), usage, logprobs, n, seed, stop, a tool-call
// round trip in the input, and OpenAI-shaped errors. Every check is an assert: any
// failure exits non-zero. Prints a JSON summary on success.
import assert from "node:assert/strict";
import { baseUrl, openaiClient, collectChatStream, setApiKey } from "./server_common.mjs";

const KEY = "test-key";
setApiKey(KEY);
const { OpenAI, client } = await openaiClient(KEY);
const summary = {};

// /v1/models
const models = await client.models.list();
assert.equal(models.data.length, 1);
const model = models.data[0].id;
summary.model = model;

const messages = [{ role: "user", content: "Tell me a story about a fox." }];

// Chat, non-streaming, greedy.
const chat = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
assert.equal(chat.object, "chat.completion");
assert.equal(chat.choices.length, 1);
assert.equal(chat.choices[0].message.role, "assistant");
assert.ok(["stop", "length"].includes(chat.choices[0].finish_reason));
assert.ok(chat.usage.prompt_tokens > 0);
assert.ok(chat.usage.completion_tokens > 0 && chat.usage.completion_tokens <= 12);
assert.equal(chat.usage.total_tokens, chat.usage.prompt_tokens + chat.usage.completion_tokens);
const greedyText = chat.choices[0].message.content ?? "";
summary.chat_text = greedyText;

// The same, streamed: identical text, usage in the last chunk.
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true },
});
const s = await collectChatStream(stream);
assert.equal(s.role, "assistant");
assert.equal(s.content, greedyText);
assert.equal(s.finish, chat.choices[0].finish_reason);
assert.deepEqual(s.usage.completion_tokens, chat.usage.completion_tokens);
assert.deepEqual(s.usage.prompt_tokens, chat.usage.prompt_tokens);

// Chat logprobs with alternatives.
const lp = await client.chat.completions.create({
  model, messages, max_tokens: 6, temperature: 0, logprobs: true, top_logprobs: 3,
});
const lpc = lp.choices[0].logprobs.content;
// An end-of-generation token counts in usage but is not output (and has no logprob entry).
const eogSlack = (finish) => (finish === "stop" ? 1 : 0);
assert.ok(lp.usage.completion_tokens - lpc.length <= eogSlack(lp.choices[0].finish_reason) && lpc.length <= lp.usage.completion_tokens);
for (const t of lpc) {
  assert.equal(typeof t.token, "string");
  assert.ok(t.logprob <= 0);
  assert.equal(t.top_logprobs.length, 3);
  // Greedy: the chosen token is the most likely one.
  assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob);
  assert.ok(Math.abs(t.top_logprobs[0].logprob - t.logprob) < 1e-4);
}
assert.ok(greedyText.startsWith(lp.choices[0].message.content ?? ""));

// Completions: non-streaming with logprobs, then streamed (same text).
const comp = await client.completions.create({ model, prompt: "Once upon a time", max_tokens: 10, temperature: 0, logprobs: 2 });
assert.equal(comp.object, "text_completion");
const ctext = comp.choices[0].text;
const nlp = comp.choices[0].logprobs.tokens.length;
assert.ok(nlp <= comp.usage.completion_tokens && comp.usage.completion_tokens - nlp <= eogSlack(comp.choices[0].finish_reason));
assert.equal(comp.choices[0].logprobs.token_logprobs.length, nlp);
for (const top of comp.choices[0].logprobs.top_logprobs) assert.ok(Object.keys(top).length <= 2 && Object.keys(top).length >= 1);
const cstream = await client.completions.create({
  model, prompt: "Once upon a time", max_tokens: 10, temperature: 0, stream: true, stream_options: { include_usage: true },
});
let streamed = "", cusage = null;
for await (const chunk of cstream) {
  if (chunk.usage) cusage = chunk.usage;
  for (const c of chunk.choices) streamed += c.text;
}
assert.equal(streamed, ctext);
assert.equal(cusage.completion_tokens, comp.usage.completion_tokens);
summary.completion_text = ctext;

// Token-id prompts work too.
const ids = await client.completions.create({ model, prompt: [1, 50, 60, 70], max_tokens: 3, temperature: 0 });
assert.ok(ids.usage.prompt_tokens === 4);

// n = 3 with a seed: three choices, and the same request again gives the same three.
const nreq = { model, messages, max_tokens: 8, temperature: 1.0, seed: 1234, n: 3 };
const n1 = await client.chat.completions.create(nreq);
const n2 = await client.chat.completions.create(nreq);
assert.equal(n1.choices.length, 3);
assert.deepEqual(n1.choices.map((c) => c.index), [0, 1, 2]);
assert.deepEqual(n1.choices.map((c) => c.message.content), n2.choices.map((c) => c.message.content));

// stop: cut the greedy completion at a string from its middle.
const long = await client.completions.create({ model, prompt: "The", max_tokens: 24, temperature: 0 });
const full = long.choices[0].text;
if (full.length >= 8) {
  const stopAt = full.slice(Math.floor(full.length / 2), Math.floor(full.length / 2) + 3);
  const cut = await client.completions.create({ model, prompt: "The", max_tokens: 24, temperature: 0, stop: [stopAt] });
  assert.equal(cut.choices[0].finish_reason, "stop");
  assert.equal(cut.choices[0].text, full.slice(0, full.indexOf(stopAt)));
  summary.stop_checked = true;
}

// Sampling knobs are accepted.
const knobs = await client.chat.completions.create({
  model, messages, max_tokens: 4, temperature: 0.7, top_p: 0.9, presence_penalty: 0.5, frequency_penalty: 0.5,
  seed: 3, top_k: 20, min_p: 0.05, repetition_penalty: 1.1,
});
assert.ok(knobs.usage.completion_tokens >= 1);

// A tool-call round trip on the input side: tools offered, an assistant tool call and the
// tool's result in the history. (Random weights cannot be steered into emitting a call;
// the output-side parsing is unit-tested over the HTTP layer in tests/server.)
const tools = [{ type: "function", function: { name: "get_weather", description: "Weather of a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const round = await client.chat.completions.create({
  model, max_tokens: 6, temperature: 0, tools, tool_choice: "auto",
  messages: [
    { role: "user", content: "Weather in Paris?" },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }] },
    { role: "tool", tool_call_id: "call_1", content: "sunny, 21C" },
  ],
  chat_template_kwargs: { enable_thinking: false },
});
assert.ok(["stop", "length", "tool_calls"].includes(round.choices[0].finish_reason));
assert.ok(round.usage.prompt_tokens > chat.usage.prompt_tokens);

// Errors: right class (status) and OpenAI shape.
async function expectError(promise, status, param) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, String(e));
    assert.equal(e.status, status, e.message);
    assert.equal(typeof e.error?.message, "string");
    if (param !== undefined) assert.equal(e.param, param);
    return e;
  }
  assert.fail(`expected HTTP ${status}`);
}
const { client: badKey } = await openaiClient("wrong-key");
await expectError(badKey.models.list(), 401);
await expectError(client.chat.completions.create({ model: "no-such-model", messages }), 404, "model");
await expectError(client.chat.completions.create({ model, messages, temperature: 7 }), 400, "temperature");
await expectError(client.chat.completions.create({ model, messages, max_tokens: 10_000_000 }), 400, "max_tokens");
await expectError(client.chat.completions.create({ model, messages: [{ role: "user", content: "fox ".repeat(3000) }] }), 400, "messages");
await expectError(client.completions.create({ model, prompt: [999999] }), 400, "prompt");
await expectError(client.chat.completions.create({ model, messages: [] }), 400, "messages");

// Raw HTTP: malformed JSON, wrong type, unknown route.
const h = { Authorization: `Bearer ${KEY}`, "Content-Type": "application/json" };
let r = await fetch(`${baseUrl}/v1/chat/completions`, { method: "POST", headers: h, body: "{nope" });
assert.equal(r.status, 400);
assert.equal((await r.json()).error.code, "invalid_json");
r = await fetch(`${baseUrl}/v1/chat/completions`, { method: "POST", headers: h, body: JSON.stringify({ model, messages: "hi" }) });
assert.equal(r.status, 400);
r = await fetch(`${baseUrl}/v1/engines`, { headers: h });
assert.equal(r.status, 404);
assert.equal(typeof (await r.json()).error.message, "string");

// /tokenize and /detokenize round trip; /health.
r = await fetch(`${baseUrl}/tokenize`, { method: "POST", headers: h, body: JSON.stringify({ content: "hello fox", add_special: false }) });
const tok = await r.json();
assert.ok(tok.tokens.length > 0);
r = await fetch(`${baseUrl}/detokenize`, { method: "POST", headers: h, body: JSON.stringify({ tokens: tok.tokens }) });
assert.equal((await r.json()).content.trim(), "hello fox");
r = await fetch(`${baseUrl}/health`);
assert.equal(r.status, 200);

// Still serving after all that.
const after = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
assert.equal(after.choices[0].message.content ?? "", greedyText);
console.log(JSON.stringify(summary));
