// A bounded soak: for argv[4] seconds, keep 6 clients busy with a mix of chat and
// completion requests (streaming and not), mid-stream cancellations, malformed bodies and
// invalid fields. Every response must be a 200 or the expected 4xx: a 5xx, a dropped
// connection or a crash fails. Prints counts as JSON.
import assert from "node:assert/strict";
import { baseUrl, rest, openaiClient } from "./server_common.mjs";

const seconds = Number(rest[0] ?? 20);
const { client } = await openaiClient();
const model = (await client.models.list()).data[0].id;
const counts = { ok: 0, cancelled: 0, rejected: 0 };
const end = Date.now() + seconds * 1000;
let rng = 12345;
const rand = (n) => {
  rng = (Math.imul(rng, 1664525) + 1013904223) >>> 0;  // 32-bit LCG; its high bits are the good ones
  return (rng >>> 12) % n;
};

async function post(path, body) {
  const r = await fetch(`${baseUrl}${path}`, { method: "POST", headers: { "Content-Type": "application/json" }, body });
  const text = await r.text();
  return { status: r.status, text };
}

async function one(kind, i) {
  const messages = [{ role: "user", content: `soak ${i} ${"xyz ".repeat(rand(20))}` }];
  switch (kind) {
    case 0: {
      const r = await client.chat.completions.create({ model, messages, max_tokens: 1 + rand(16), seed: i });
      assert.ok(r.choices[0].finish_reason);
      counts.ok++;
      break;
    }
    case 1: {
      const c = new AbortController();
      const stream = await client.completions.create(
        { model, prompt: `soak ${i}`, max_tokens: 40, stream: true, seed: i }, { signal: c.signal });
      const stopAfter = rand(6);
      let n = 0;
      for await (const _ of stream) {
        if (++n === stopAfter) {
          c.abort();  // hang up mid-stream
          break;
        }
      }
      if (c.signal.aborted) counts.cancelled++;
      else counts.ok++;
      break;
    }
    case 2: {
      const bodies = ["{", "[]", '{"messages": 3}', '{"messages":[{"role":"user","content":"x"}],"n":"two"}',
        '{"messages":[{"role":"user","content":"x"}],"max_tokens":-1}', "\u0000\u0001", '{"prompt":"x","stop":[1]}'];
      const path = rand(2) ? "/v1/chat/completions" : "/v1/completions";
      const r = await post(path, bodies[rand(bodies.length)]);
      assert.equal(r.status, 400, r.text);
      assert.equal(typeof JSON.parse(r.text).error.message, "string");
      counts.rejected++;
      break;
    }
    case 3: {
      const stream = await client.chat.completions.create({ model, messages, max_tokens: 8, stream: true, n: 2, seed: i });
      for await (const _ of stream);
      counts.ok++;
      break;
    }
  }
}

async function worker(w) {
  let i = w * 100000;
  while (Date.now() < end) await one(rand(4), i++);
}
await Promise.all([...Array(6).keys()].map(worker));
assert.ok(counts.ok > 0 && counts.rejected > 0);
console.log(JSON.stringify(counts));
