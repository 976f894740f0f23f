// Reference renderer for the chat-template conformance test: reads a JSON file
// {"templates": [source, ...], "cases": [{"template": index, "vars": {...}}, ...]} and prints
// one JSON line per case: {"ok": true, "out": "..."} or {"ok": false, "error": "..."}, using
// @huggingface/jinja (the engine transformers.js uses). Usage: node ref_chat_template.mjs <node_dir> <input.json>
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [nodeDir, inputPath] = process.argv.slice(2);
const require = createRequire(path.join(nodeDir, "package.json"));
const { Template } = await import(require.resolve("@huggingface/jinja"));
const input = JSON.parse(readFileSync(inputPath, "utf8"));
const compiled = input.templates.map((t) => {
  try {
    return { template: new Template(t) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
});
const lines = [];
for (const c of input.cases) {
  const t = compiled[c.template];
  if (t.error) {
    lines.push(JSON.stringify({ ok: false, error: "parse: " + t.error }));
    continue;
  }
  try {
    lines.push(JSON.stringify({ ok: true, out: t.template.render(c.vars) }));
  } catch (e) {
    lines.push(JSON.stringify({ ok: false, error: String(e && e.message ? e.message : e) }));
  }
}
process.stdout.write(lines.join("\n") + "\n");
