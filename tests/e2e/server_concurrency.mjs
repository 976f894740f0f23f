// Concurrency through the official client: 8 streaming requests with fixed seeds run one
// at a time, then all at once: each must produce exactly the same text. Then 8 at once
// again with every other one aborted mid-stream: the others finish intact, and the KV
// blocks in use return to 0 (/metrics). Prints a JSON summary.
import assert from "node:assert/strict";
import { openaiClient, collectChatStream, metricValue } from "./server_common.mjs";

const { client } = await openaiClient();
const model = (await client.models.list()).data[0].id;
const N = 8;
const req = (i, maxTokens = 24 + 4 * i) => ({
  model,
  messages: [{ role: "user", content: `Request number ${i}: ${"abcdefgh".slice(0, i + 1)}` }],
  max_tokens: maxTokens,
  temperature: 0.9,
  top_p: 0.95,
  seed: 100 + i,
  stream: true,
  stream_options: { include_usage: true },
  logprobs: true,
});

async function runOne(i, signal) {
  const stream = await client.chat.completions.create(req(i), { signal });
  return collectChatStream(stream);
}

const sequential = [];
for (let i = 0; i < N; i++) sequential.push(await runOne(i));
for (const s of sequential) assert.ok(s.usage.completion_tokens > 0);

const parallel = await Promise.all([...Array(N).keys()].map((i) => runOne(i)));
for (let i = 0; i < N; i++) {
  assert.equal(parallel[i].content, sequential[i].content, `request ${i}: text differs when run concurrently`);
  assert.deepEqual(parallel[i].logprobs.map((t) => t.token), sequential[i].logprobs.map((t) => t.token));
  assert.equal(parallel[i].usage.completion_tokens, sequential[i].usage.completion_tokens);
}

// Cancel half mid-stream (the client's stream ends quietly on abort: it yields no more).
// Those get room for 400 tokens: a tiny model could otherwise finish a short request in the
// milliseconds before the server's next write finds the client gone, and then it would
// count as finished, not cancelled. Seeded, their first tokens are the sequential run's.
const results = await Promise.all([...Array(N).keys()].map(async (i) => {
  const controller = new AbortController();
  const stream = await client.chat.completions.create(req(i, i % 2 === 1 ? 400 : undefined),
                                                      { signal: controller.signal });
  let content = "", chunks = 0;
  try {
    for await (const chunk of stream) {
      for (const c of chunk.choices) content += c.delta?.content ?? "";
      if (++chunks === 3 && i % 2 === 1) {
        controller.abort();
        break;
      }
    }
  } catch (e) {
    if (!controller.signal.aborted) throw e;
  }
  return { content, aborted: controller.signal.aborted };
}));
for (let i = 0; i < N; i++) {
  const full = sequential[i].content;
  if (i % 2 === 1) {
    assert.ok(results[i].aborted);
    assert.ok(full.startsWith(results[i].content), `request ${i}: aborted text is not a prefix`);
    assert.ok(results[i].content.length < full.length, `request ${i}: was not cut short`);
  } else {
    assert.equal(results[i].content, full, `request ${i}: text changed by the cancellations`);
  }
}

// KV blocks come back (cancelled requests free theirs at once; allow the engine a moment).
let used = -1;
for (let t = 0; t < 100; t++) {
  used = await metricValue("edge_kv_blocks_used");
  if (used === 0) break;
  await new Promise((r) => setTimeout(r, 50));
}
assert.equal(used, 0, "KV blocks still in use after all requests ended");
const total = await metricValue("edge_kv_blocks_total");
assert.ok(total > 0);
const cancelled = await metricValue("edge_requests_cancelled_total");
assert.ok(cancelled >= N / 2, `cancelled ${cancelled}`);
console.log(JSON.stringify({ kv_blocks_total: total, cancelled, texts: sequential.map((s) => s.content.length) }));
