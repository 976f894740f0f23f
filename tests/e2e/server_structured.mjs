// Structured outputs through the official openai client against `edge-infer serve` on a
// random model (the perfect adversary: it never writes JSON by itself). For each of 20
// schemas, `perSchema` sampled requests (argv: perSchema, default 5) must return JSON that
// parses and that Ajv (an independent validator) accepts against the schema; the client's
// chat.completions.parse works; json_object and a GBNF grammar constrain too; a schema
// outside the subset is refused with a 400 naming the keyword, and the server keeps serving.
// Prints a JSON summary on success; any failed check exits non-zero.
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { nodeModules, openaiClient, rest } from "./server_common.mjs";

const perSchema = Number(rest[0] ?? 5);
const { default: Ajv } = await import(pathToFileURL(path.join(nodeModules, "ajv", "dist", "ajv.js")).href);
const ajv = new Ajv({ strict: false });
const { OpenAI, client } = await openaiClient();
const model = (await client.models.list()).data[0].id;

const obj = (properties, required = Object.keys(properties)) => ({
  type: "object", properties, required, additionalProperties: false,
});
const schemas = [
  obj({ name: { type: "string" } }),
  obj({ n: { type: "integer" }, x: { type: "number" }, ok: { type: "boolean" }, nil: { type: "null" } }),
  obj({ color: { enum: ["red", "green", "blue"] } }),
  obj({ kind: { const: "point" }, xy: { type: "array", items: { type: "number" }, minItems: 2, maxItems: 2 } }),
  obj({ tags: { type: "array", items: { type: "string", maxLength: 6 }, maxItems: 4 } }),
  obj({ who: obj({ first: { type: "string" }, last: { type: "string" } }), age: { type: "integer" } }),
  obj({ items: { type: "array", items: obj({ id: { type: "integer" }, label: { type: "string" } }), maxItems: 3 } }),
  obj({ v: { anyOf: [{ type: "string" }, { type: "integer" }, { type: "null" }] } }),
  obj({ v: { type: ["string", "null"] } }),
  obj({ a: obj({ b: obj({ c: obj({ d: obj({ e: { type: "boolean" } }) }) }) }) }),
  { type: "array", items: { type: "integer" }, maxItems: 5 },
  { enum: ["yes", "no", 1, null, true] },
  { type: "string", minLength: 2, maxLength: 10 },
  {
    $defs: { node: obj({ v: { type: "integer" }, kids: { type: "array", items: { $ref: "#/$defs/node" }, maxItems: 2 } }) },
    $ref: "#/$defs/node",
  },
  {
    $defs: { money: obj({ amount: { type: "number" }, currency: { enum: ["EUR", "USD"] } }) },
    ...obj({ price: { $ref: "#/$defs/money" }, tax: { $ref: "#/$defs/money" } }),
  },
  obj({ shape: { anyOf: [obj({ r: { type: "number" } }), obj({ w: { type: "number" }, h: { type: "number" } })] } }),
  { type: "object", properties: { a: { type: "integer" }, b: { type: "string" }, c: { type: "boolean" } }, required: ["b"] },
  { type: "object", additionalProperties: { type: "integer" } },
  obj({ title: { type: "string", description: "a title", minLength: 1 }, year: { type: "integer", title: "Year" } }),
  obj({ matrix: { type: "array", items: { type: "array", items: { enum: [0, 1] }, maxItems: 3 }, maxItems: 3 } }),
];
assert.equal(schemas.length, 20);
const strictOk = (s) => JSON.stringify(s).indexOf('"required":["b"]') < 0 && !("additionalProperties" in s && typeof s.additionalProperties === "object");

const messages = [{ role: "user", content: "Answer in JSON." }];
const summary = { requests: 0, valid: 0, finish: {}, schemas: schemas.length };
const failures = [];
async function one(schema, i, k) {
  const r = await client.chat.completions.create({
    model, messages, max_tokens: 160, temperature: 1, seed: 1000 * i + k,
    response_format: { type: "json_schema", json_schema: { name: `s${i}`, schema, strict: strictOk(schema) } },
  });
  summary.requests++;
  const text = r.choices[0].message.content ?? "";
  summary.finish[r.choices[0].finish_reason] = (summary.finish[r.choices[0].finish_reason] ?? 0) + 1;
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    failures.push({ schema: i, k, text, why: "does not parse" });
    return;
  }
  if (!ajv.validate(schema, value)) failures.push({ schema: i, k, text, why: ajv.errorsText() });
  else summary.valid++;
}
for (let i = 0; i < schemas.length; i++) {
  const batch = [];
  for (let k = 0; k < perSchema; k++) batch.push(one(schemas[i], i, k));
  await Promise.all(batch);
}
assert.deepEqual(failures, [], JSON.stringify(failures.slice(0, 3)));

// The client's parse(): message.parsed is the object.
const parsed = await client.chat.completions.parse({
  model, messages, max_tokens: 120, seed: 5,
  response_format: { type: "json_schema", json_schema: { name: "who", schema: schemas[5], strict: true } },
});
assert.ok(ajv.validate(schemas[5], parsed.choices[0].message.parsed), JSON.stringify(parsed.choices[0].message));

// json_object: any object; streamed, the chunks join into it.
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 120, seed: 9, stream: true, response_format: { type: "json_object" },
});
let streamed = "";
for await (const chunk of stream) streamed += chunk.choices[0]?.delta?.content ?? "";
const o = JSON.parse(streamed);
assert.ok(o !== null && typeof o === "object" && !Array.isArray(o), streamed);

// llama.cpp's grammar field (GBNF), on completions.
const g = await client.completions.create({
  model, prompt: "Pick:", max_tokens: 20, seed: 3, grammar: 'root ::= ("yes" | "no") "!"',
});
assert.match(g.choices[0].text, /^(yes|no)!$/);

// Forced tool calls: tool_choice "required" (parallel calls allowed) and a named function
// without parallel calls; every call names a tool and its arguments validate.
const tools = [
  { type: "function", function: { name: "get_weather", parameters: obj({ city: { type: "string", maxLength: 20 }, days: { type: "integer" } }) } },
  { type: "function", function: { name: "tap", parameters: obj({ id: { type: "string", maxLength: 12 } }) } },
];
summary.tool_calls = 0;
for (let k = 0; k < perSchema * 2; k++) {
  const named = k % 2 === 1;
  const r = await client.chat.completions.create({
    model, messages, tools, max_tokens: 200, seed: 77 + k,
    tool_choice: named ? { type: "function", function: { name: "tap" } } : "required",
    parallel_tool_calls: !named,
  });
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, "tool_calls", JSON.stringify(r));
  assert.ok(m.tool_calls && m.tool_calls.length >= 1, JSON.stringify(m));
  if (named) assert.equal(m.tool_calls.length, 1);
  for (const call of m.tool_calls) {
    const tool = tools.find((t) => t.function.name === call.function.name);
    assert.ok(tool && (!named || tool.function.name === "tap"), JSON.stringify(call));
    assert.ok(ajv.validate(tool.function.parameters, JSON.parse(call.function.arguments)), call.function.arguments);
    summary.tool_calls++;
  }
}

// Refusals name the field and the keyword; the server keeps serving.
await assert.rejects(
  client.chat.completions.create({
    model, messages, max_tokens: 8,
    response_format: { type: "json_schema", json_schema: { name: "bad", schema: { type: "string", pattern: "^a" } } },
  }),
  (e) => e instanceof OpenAI.APIError && e.status === 400 && /pattern/.test(e.message) && e.param === "response_format.json_schema.schema",
);
await assert.rejects(
  client.completions.create({ model, prompt: "x", max_tokens: 4, grammar: "root ::= undefined-rule" }),
  (e) => e instanceof OpenAI.APIError && e.status === 400 && /undefined-rule/.test(e.message),
);
const after = await client.chat.completions.create({ model, messages, max_tokens: 4 });
assert.equal(after.object, "chat.completion");

console.log(JSON.stringify(summary));
