// A BERT-family text encoder served by `edge-infer serve -m bert.gguf` (and a cross-encoder
// with --rerank): /v1/embeddings through the official openai client (unit norms, the same
// text giving the same vector, a batch equal to its items one by one), chat and completions
// refused naming the model as a text encoder, /v1/rerank scoring each (query, document) pair
// with the classification head; the server keeps serving after each refusal. argv[4]:
// "embed" or "rerank". Prints a JSON summary on success.
import assert from "node:assert/strict";
import { baseUrl, openaiClient } from "./server_common.mjs";

const mode = process.argv[4];
const { OpenAI, client } = await openaiClient();
const model = (await client.models.list()).data[0].id;
const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const post = async (path, body) => {
  const r = await fetch(`${baseUrl}${path}`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
};
const summary = { mode };

if (mode === "embed") {
  const texts = ["The cat sat on the mat.", "Phones need a battery.", "The cat sat on the mat."];
  const e = await client.embeddings.create({ model, input: texts });
  assert.equal(e.data.length, 3);
  summary.dim = e.data[0].embedding.length;
  for (const d of e.data) assert.ok(Math.abs(norm(d.embedding) - 1) < 1e-4);
  assert.deepEqual(e.data[0].embedding, e.data[2].embedding);
  assert.notDeepEqual(e.data[0].embedding, e.data[1].embedding);
  // One by one: the same vectors as in the batch (each sequence attends only to itself).
  const one = await client.embeddings.create({ model, input: texts[1] });
  one.data[0].embedding.forEach((x, i) => assert.ok(Math.abs(x - e.data[1].embedding[i]) < 1e-5));
  const ids = await post("/v1/embeddings", { model, input: [[2, 40, 41, 3]], dimensions: 8, encoding_format: "float" });
  assert.equal(ids.status, 200, JSON.stringify(ids.body));
  assert.equal(ids.body.data[0].embedding.length, 8);
  // A text encoder does not generate: 400 naming it.
  const chat = await post("/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }], max_tokens: 4 });
  assert.ok(chat.status >= 400 && chat.status < 500, JSON.stringify(chat.body));
  assert.match(JSON.stringify(chat.body), /text encoder/);
  const long = await post("/v1/embeddings", { model, input: [Array(600).fill(40)] });
  assert.equal(long.status, 400, JSON.stringify(long.body));
  assert.match(long.body.error.message, /600 tokens/);
} else {
  const docs = ["the cat sat on the mat", "phones need a battery", "a little girl in the park"];
  const rr = await post("/v1/rerank", { model, query: "where is the cat?", documents: docs, top_n: 2, return_documents: true });
  assert.equal(rr.status, 200, JSON.stringify(rr.body));
  assert.equal(rr.body.results.length, 2);
  assert.ok(rr.body.results[0].relevance_score >= rr.body.results[1].relevance_score);
  for (const r of rr.body.results) assert.equal(r.document.text, docs[r.index]);
  const all = await post("/v1/rerank", { query: "where is the cat?", documents: docs });
  assert.equal(all.body.results.length, 3);
  // The same pair alone scores the same as in the batch.
  const single = await post("/v1/rerank", { query: "where is the cat?", documents: [docs[all.body.results[2].index]] });
  assert.ok(Math.abs(single.body.results[0].relevance_score - all.body.results[2].relevance_score) < 1e-5);
  summary.rerank = all.body.results.map((r) => [r.index, Number(r.relevance_score.toFixed(4))]);
  const bad = await post("/v1/rerank", { model, query: "q", documents: [] });
  assert.equal(bad.status, 400);
  assert.equal(bad.body.error.param, "documents");
}
const again = await client.embeddings.create({ model, input: "still serving" });
assert.equal(again.data.length, 1);
console.log(JSON.stringify(summary));
