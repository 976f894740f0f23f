// Forced tool calls on a harmony model (a random GPT-OSS, which speaks with special tokens):
// tool_choice "required" over two tools and a named function, each reply one call (harmony's
// <|call|> ends the reply) naming a tool of the request, its arguments valid for that tool's
// schema by Ajv; streaming gives the same call as deltas; an unconstrained request still
// answers. Prints a JSON summary on success.
import assert from "node:assert/strict";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { nodeModules, openaiClient } from "./server_common.mjs";

const { default: Ajv } = await import(pathToFileURL(path.join(nodeModules, "ajv", "dist", "ajv.js")).href);
const ajv = new Ajv({ strict: false });
const { client } = await openaiClient();
const model = (await client.models.list()).data[0].id;
const obj = (properties) => ({ type: "object", properties, required: Object.keys(properties), additionalProperties: false });
const tools = [
  { type: "function", function: { name: "get_weather", parameters: obj({ city: { type: "string", maxLength: 20 }, days: { type: "integer" } }) } },
  { type: "function", function: { name: "tap", parameters: obj({ id: { type: "string", maxLength: 12 } }) } },
];
const messages = [{ role: "user", content: "Tap the battery icon." }];
const summary = { tool_calls: 0, names: {} };
for (let k = 0; k < 8; k++) {
  const named = k % 2 === 1;
  const r = await client.chat.completions.create({
    model, messages, tools, max_tokens: 120, seed: 11 + k,
    tool_choice: named ? { type: "function", function: { name: "tap" } } : "required",
  });
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, "tool_calls", JSON.stringify(r));
  assert.equal(m.tool_calls?.length, 1, JSON.stringify(m));
  const call = m.tool_calls[0];
  const tool = tools.find((t) => t.function.name === call.function.name);
  assert.ok(tool && (!named || call.function.name === "tap"), JSON.stringify(call));
  assert.ok(ajv.validate(tool.function.parameters, JSON.parse(call.function.arguments)), call.function.arguments);
  summary.tool_calls++;
  summary.names[call.function.name] = (summary.names[call.function.name] ?? 0) + 1;
}
// Streaming: the call arrives as tool_call deltas that join to valid arguments.
const stream = await client.chat.completions.create({
  model, messages, tools, max_tokens: 120, seed: 5, stream: true,
  tool_choice: { type: "function", function: { name: "get_weather" } },
});
let name = "", args = "", finish = "";
for await (const ch of stream) {
  for (const tc of ch.choices[0]?.delta?.tool_calls ?? []) {
    name += tc.function?.name ?? "";
    args += tc.function?.arguments ?? "";
  }
  finish = ch.choices[0]?.finish_reason ?? finish;
}
assert.equal(name, "get_weather");
assert.equal(finish, "tool_calls");
assert.ok(ajv.validate(tools[0].function.parameters, JSON.parse(args)), args);
const after = await client.chat.completions.create({ model, messages, max_tokens: 4 });
assert.equal(after.object, "chat.completion");
console.log(JSON.stringify(summary));
