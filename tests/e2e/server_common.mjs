// Shared by the server e2e scripts: argv parsing and the official openai client, loaded
// from tests/node/node_modules (passed as argv[2]; the scripts live outside that tree).
import path from "node:path";
import { pathToFileURL } from "node:url";

export const [nodeModules, baseUrl, ...rest] = process.argv.slice(2);

export async function openaiClient(apiKey = "none", extra = {}) {
  const { default: OpenAI } = await import(pathToFileURL(path.join(nodeModules, "openai", "index.mjs")).href);
  return { OpenAI, client: new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey, maxRetries: 0, timeout: 60000, ...extra }) };
}

// Collects a chat stream: content, reasoning, tool calls, finish reasons, usage.
export async function collectChatStream(stream) {
  const out = { content: "", chunks: 0, finish: null, usage: null, role: null, logprobs: [] };
  for await (const chunk of stream) {
    out.chunks++;
    if (chunk.usage) out.usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta?.role) out.role = c.delta.role;
      if (c.delta?.content) out.content += c.delta.content;
      if (c.logprobs?.content) out.logprobs.push(...c.logprobs.content);
      if (c.finish_reason) out.finish = c.finish_reason;
    }
  }
  return out;
}

export async function metricValue(name) {
  const text = await (await fetch(`${baseUrl}/metrics`, { headers: authHeaders })).text();
  const line = text.split("\n").find((l) => l.startsWith(name + " "));
  return line === undefined ? undefined : Number(line.split(" ")[1]);
}

export const authHeaders = {};
export function setApiKey(key) {
  authHeaders.Authorization = `Bearer ${key}`;
}
