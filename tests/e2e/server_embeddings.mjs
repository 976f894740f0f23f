// /v1/embeddings through the official openai client (which asks for base64 and decodes it)
// and by plain fetch (floats), and /v1/rerank, against `edge-infer serve`: shapes, unit
// norms, `dimensions` as the renormalised prefix, token-id input, the same text giving the
// same vector, rerank order, top_n and documents, and the 400s for bad input (the field
// named), after which the server still answers. Prints a JSON summary on success.
import assert from "node:assert/strict";
import { baseUrl, openaiClient } from "./server_common.mjs";

const { OpenAI, client } = await openaiClient();
const model = (await client.models.list()).data[0].id;
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const post = async (path, body) => {
  const r = await fetch(`${baseUrl}${path}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
};
const summary = {};

const texts = ["The quick brown fox.", "A slow green turtle.", "The quick brown fox."];
const e = await client.embeddings.create({ model, input: texts });
assert.equal(e.object, "list");
assert.equal(e.data.length, 3);
const dim = e.data[0].embedding.length;
summary.dim = dim;
for (const d of e.data) assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-4);
assert.deepEqual(e.data[0].embedding, e.data[2].embedding);
assert.notDeepEqual(e.data[0].embedding, e.data[1].embedding);
assert.ok(e.usage.prompt_tokens > 0);

// Floats by plain fetch equal the client's decoded base64.
const f = await post("/v1/embeddings", { model, input: texts[1], encoding_format: "float" });
assert.equal(f.status, 200);
f.body.data[0].embedding.forEach((x, i) => assert.ok(Math.abs(x - e.data[1].embedding[i]) < 1e-6));

// dimensions: the first N values, normalised again.
const short = await client.embeddings.create({ model, input: texts[0], dimensions: 16 });
const v = short.data[0].embedding;
assert.equal(v.length, 16);
const head = e.data[0].embedding.slice(0, 16);
const n = norm(head);
v.forEach((x, i) => assert.ok(Math.abs(x - head[i] / n) < 1e-5));

// Token ids in.
const ids = await post("/v1/embeddings", { model, input: [[1, 20, 30, 40], [5, 6]] });
assert.equal(ids.status, 200);
assert.equal(ids.body.data.length, 2);

// Rerank: every document scored in (0, 1), best first, top_n of them, texts on request.
const docs = ["foxes are quick", "turtles are slow", "the sky is blue"];
const rr = await post("/v1/rerank", { model, query: "Which animal is fast?", documents: docs, top_n: 2, return_documents: true });
assert.equal(rr.status, 200, JSON.stringify(rr.body));
assert.equal(rr.body.results.length, 2);
assert.ok(rr.body.results[0].relevance_score >= rr.body.results[1].relevance_score);
for (const r of rr.body.results) {
  assert.ok(r.relevance_score > 0 && r.relevance_score < 1);
  assert.equal(r.document.text, docs[r.index]);
}
const all = await post("/v1/rerank", { query: "Which animal is fast?", documents: docs });
assert.equal(all.body.results.length, 3);
summary.rerank = all.body.results.map((r) => [r.index, Number(r.relevance_score.toFixed(4))]);

// Bad input: 400 naming the field; the server keeps serving.
const bad = async (path, body, param) => {
  const r = await post(path, body);
  assert.equal(r.status, 400, JSON.stringify(r.body));
  assert.equal(r.body.error.param, param, JSON.stringify(r.body));
};
await bad("/v1/embeddings", { model, input: [] }, "input");
await bad("/v1/embeddings", { model, input: "x", dimensions: dim + 1 }, "dimensions");
await bad("/v1/embeddings", { model, input: "x", encoding_format: "int8" }, "encoding_format");
await bad("/v1/embeddings", { model, input: [[1, 999999]] }, "input");
await bad("/v1/rerank", { model, query: "q", documents: [] }, "documents");
await bad("/v1/rerank", { model, query: "q", documents: Array(1001).fill("d") }, "documents");
await bad("/v1/rerank", { model, documents: ["d"] }, "query");
await assert.rejects(client.embeddings.create({ model, input: [] }), (err) => err instanceof OpenAI.APIError && err.status === 400);
const chat = await client.chat.completions.create({ model, messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
assert.equal(chat.object, "chat.completion");

console.log(JSON.stringify(summary));
