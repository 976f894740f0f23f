// The chat page in headless Chromium (playwright-core + Debian's /usr/bin/chromium)
// against a real `edge-infer serve` with an API key on loopback:
//   key prompt on first load -> a streamed reply -> stop mid-stream (the server counts a
//   cancelled request) -> reload (the conversation is still there, no second prompt) ->
//   the status panel filled from /metrics -> rendering (reasoning, Markdown, code, tool
//   calls, sanitising), an image attachment and spoken replies, against canned answers.
// Every request the browser makes is routed: one to a host other than loopback fails the
// test. A screenshot of each state goes to SHOT_DIR. Prints a JSON summary; exit 1 on failure.
// Usage: node web_chat.mjs NODE_MODULES BASE_URL SHOT_DIR API_KEY
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, baseUrl, shotDir, apiKey] = process.argv.slice(2);
const { chromium } = await import(pathToFileURL(path.join(nodeModules, "playwright-core", "index.mjs")).href);

const summary = { foreign: [], pageErrors: [], steps: [] };
const fail = (msg) => {
  throw new Error(msg);
};
const step = (name) => summary.steps.push(name);

async function metric(name) {
  const text = await (await fetch(`${baseUrl}/metrics`, { headers: { Authorization: `Bearer ${apiKey}` } })).text();
  const line = text.split("\n").find((l) => l.startsWith(name + " "));
  return line ? Number(line.split(" ")[1]) : NaN;
}

const loopback = new Set(["127.0.0.1", "localhost", "[::1]"]);
fs.mkdirSync(shotDir, { recursive: true });
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"], headless: true });
let code = 0;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.route("**/*", (route) => {
    const url = new URL(route.request().url());
    if (url.protocol === "data:" || url.protocol === "blob:" || loopback.has(url.hostname)) return route.continue();
    summary.foreign.push(route.request().url());
    return route.abort();
  });
  const page = await context.newPage();
  page.on("pageerror", (e) => summary.pageErrors.push(String(e)));
  const shot = (name) => page.screenshot({ path: path.join(shotDir, name), fullPage: true });
  const lastReply = () => page.locator(".msg.assistant .body").last();

  // 1. The page loads without the key, then asks for it once.
  await page.goto(baseUrl + "/");
  await page.locator("#key-dialog[open]").waitFor({ timeout: 10000 });
  await shot("1-key-prompt.png");
  if (!(await page.locator("#speak-row").isHidden())) fail("the speech control shows before the server said it speaks");
  await page.fill("#key-input", apiKey);
  await page.click("#key-save");
  await page.locator("body[data-ready='1']").waitFor({ timeout: 10000 });
  if ((await page.evaluate(() => localStorage.getItem("edge.apiKey"))) !== apiKey) fail("the key was not stored");
  step("key prompt");

  // 2. A reply streams in: the text grows over several renders before the reply ends.
  await page.fill("#max-tokens", "600");
  await page.fill("#extra-params", '{"ignore_eos": true}');  // long enough to take many renders
  await page.evaluate(() => {
    window.__lengths = [];
    new MutationObserver(() => {
      const b = document.querySelectorAll(".msg.assistant .body");
      if (b.length) window.__lengths.push(b[b.length - 1].textContent.length);
    }).observe(document.getElementById("messages"), { childList: true, subtree: true, characterData: true });
  });
  await page.fill("#input", "Tell me a story.");
  await page.press("#input", "Enter");
  await page.locator("#stop:disabled").waitFor({ timeout: 20000 });  // the reply ended
  const lengths = await page.evaluate(() => window.__lengths.filter((n) => n > 0));
  const distinct = new Set(lengths).size;
  const first = (await lastReply().textContent()) || "";
  if (!first.length) fail("no reply text");
  if (distinct < 2) fail(`the reply did not stream (text lengths seen: ${JSON.stringify(lengths)})`);
  summary.streamedRenders = distinct;
  summary.panel = { tps: await page.textContent("#stat-tps"), ttft: await page.textContent("#stat-ttft"),
                    tokens: await page.textContent("#stat-tokens") };
  if (!/^\d+(\.\d+)?$/.test(summary.panel.tps)) fail("no tokens/s after the reply");
  if (!/^\d+ ms$/.test(await page.textContent("#stat-ttft"))) fail("no TTFT after the reply");
  await shot("2-streamed.png");
  step("streamed");

  // 3. Stop mid-stream: the fetch is aborted and the server cancels the generation. The
  // tiny model writes ~1000 tokens in about a second; should a reply end before the click
  // lands, the next attempt starts a new chat (the context has no room for another one).
  const cancelledBefore = await metric("edge_requests_cancelled_total");
  await page.fill("#max-tokens", "1000");  // context 2048: room for it after the first exchange
  for (let attempt = 1; ; ++attempt) {
    if (attempt > 1) await page.click("#new-chat");
    const replies = attempt > 1 ? 1 : 2;
    await page.fill("#input", "Now a very long one.");
    await page.press("#input", "Enter");
    await page.waitForFunction((n) => {
      const b = document.querySelectorAll(".msg.assistant .body");
      return (b.length === n && b[n - 1].textContent.length > 0) || document.querySelector(".msg.failed");
    }, replies, { timeout: 20000, polling: "raf" });
    if (await page.locator(".msg.failed").count()) fail(`the reply failed: ${await page.textContent(".msg.failed")}`);
    await page.click("#stop");
    await page.locator("#stop:disabled").waitFor({ timeout: 10000 });
    if (await page.locator(".msg.assistant.stopped").count()) break;
    if (attempt === 3) fail("three replies ended before Stop was clicked");
  }
  let cancelled = cancelledBefore;
  for (let i = 0; i < 100 && !(cancelled > cancelledBefore); ++i) {
    await new Promise((r) => setTimeout(r, 100));
    cancelled = await metric("edge_requests_cancelled_total");
  }
  if (!(cancelled > cancelledBefore)) fail(`/metrics shows no cancelled request (${cancelledBefore} -> ${cancelled})`);
  summary.cancelled = cancelled;
  const before = await page.locator(".msg").evaluateAll((els) => els.map((e) => [e.className, e.textContent]));
  await shot("3-stopped.png");
  step("stopped");

  // 4. Reload: the conversation comes back from localStorage; the key is not asked again.
  await page.reload();
  await page.locator("body[data-ready='1']").waitFor({ timeout: 10000 });
  if (await page.locator("#key-dialog[open]").count()) fail("the key was asked for again after a reload");
  const after = await page.locator(".msg").evaluateAll((els) => els.map((e) => [e.className, e.textContent]));
  if (JSON.stringify(after) !== JSON.stringify(before))
    fail(`the conversation changed across the reload: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`);
  if (after.length < 2 || !after[after.length - 1][0].includes("stopped")) fail("the stopped reply is not there");
  summary.messagesAfterReload = after.length;
  step("reloaded");

  // 5. The status panel: KV blocks of the pool and resident memory by category.
  await page.waitForFunction(() => /^\d+ \/ \d+$/.test(document.getElementById("stat-kv").textContent), null,
                             { timeout: 10000 });
  const memoryRows = await page.locator("#memory tr").count();
  if (memoryRows < 2) fail(`memory table has ${memoryRows} rows`);
  summary.kv = await page.textContent("#stat-kv");
  summary.memoryRows = memoryRows;
  summary.speakControl = !(await page.locator("#speak-row").isHidden());
  await shot("4-reloaded-status.png");
  step("status");

  // 6. Rendering and media against canned answers (the demo model's text is noise, and image
  // input lands with issue 13): /v1/models announces vision and audio, the chat reply
  // carries reasoning, Markdown with code, an HTML injection and a tool call. The image
  // must go out as an image_url data: part; the reply must be rendered folded, highlighted,
  // sanitised; "Speak replies" must fetch /v1/audio/speech from the real server.
  let sent = null;
  const speech = [];
  page.on("response", (r) => r.url().endsWith("/v1/audio/speech") && speech.push(r.status()));
  await page.route("**/v1/models", (route) => route.fulfill({ contentType: "application/json",
    body: JSON.stringify({ object: "list", data: [{ id: "canned", object: "model", capabilities: ["vision", "audio"] }] }) }));
  await page.route("**/v1/chat/completions", (route) => {
    sent = JSON.parse(route.request().postData());
    const chunk = (delta) => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
    route.fulfill({ contentType: "text/event-stream", body: [
      chunk({ role: "assistant", reasoning_content: "The user sent a dot." }),
      chunk({ content: "It is **one dot**. Code:\n\n```python\nprint('dot')\n```\n" }),
      chunk({ content: '<img src="x" onerror="window.__xss = 1"> ![far](http://192.0.2.1/a.png) Done.' }),
      chunk({ tool_calls: [{ index: 0, id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":' } }] }),
      chunk({ tool_calls: [{ index: 0, function: { arguments: ' "Oslo"}' } }] }),
      "data: [DONE]\n\n"].join("") });
  });
  await page.click("#new-chat");
  await page.reload();
  await page.locator("body[data-ready='1']").waitFor({ timeout: 10000 });
  if (await page.locator("#attach-image").isHidden()) fail("no image control though /v1/models announces vision");
  const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==", "base64");
  await page.setInputFiles("#image-file", { name: "dot.png", mimeType: "image/png", buffer: png });
  await page.locator("#attachments .chip").waitFor({ timeout: 5000 });
  // Audio: a WAV file, and a recording from Chromium's fake microphone (written as WAV).
  const wav = Buffer.alloc(44 + 3200);
  wav.write("RIFF", 0), wav.writeUInt32LE(36 + 3200, 4), wav.write("WAVEfmt ", 8), wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20), wav.writeUInt16LE(1, 22), wav.writeUInt32LE(16000, 24), wav.writeUInt32LE(32000, 28);
  wav.writeUInt16LE(2, 32), wav.writeUInt16LE(16, 34), wav.write("data", 36), wav.writeUInt32LE(3200, 40);
  await page.setInputFiles("#audio-file", { name: "note.wav", mimeType: "audio/wav", buffer: wav });
  await page.click("#record-audio");
  await page.locator("#record-audio", { hasText: "Stop recording" }).waitFor({ timeout: 5000 });
  await new Promise((r) => setTimeout(r, 600));
  await page.click("#record-audio");
  await page.locator("#attachments .chip", { hasText: "recording.wav" }).waitFor({ timeout: 5000 });
  if (summary.speakControl) await page.check("#speak");
  await page.fill("#input", "What is in this image?");
  await page.press("#input", "Enter");
  await page.locator(".msg.assistant .tool-call").waitFor({ timeout: 10000 });
  await page.locator("#stop:disabled").waitFor({ timeout: 10000 });
  const userParts = sent && sent.messages[sent.messages.length - 1].content;
  const image = Array.isArray(userParts) && userParts.find((p) => p.type === "image_url");
  if (!image || !image.image_url.url.startsWith("data:image/png;base64,")) fail(`no image_url part: ${JSON.stringify(userParts)}`);
  const audio = (Array.isArray(userParts) ? userParts : []).filter((p) => p.type === "input_audio");
  if (audio.length !== 2 || audio.some((a) => a.input_audio.format !== "wav" || !a.input_audio.data.startsWith("UklGR")))
    fail(`want two input_audio WAV parts (file, recording): ${JSON.stringify(audio.map((a) => a.input_audio.format))}`);
  summary.recordedWavBytes = Buffer.from(audio[1].input_audio.data, "base64").length;
  if (summary.recordedWavBytes <= 44) fail("the recording is empty");
  if ((await page.locator(".msg.user img.attached").count()) !== 1) fail("the attached image is not shown");
  if ((await page.locator("details.reasoning:not([open])").count()) !== 1) fail("reasoning is not shown folded");
  if ((await page.textContent(".msg.assistant .body strong")) !== "one dot") fail("Markdown not rendered");
  if (!(await page.locator(".msg.assistant pre code.hljs").count())) fail("code not highlighted");
  if (await page.locator(".msg.assistant img[src]").count()) fail("a reply's image kept a non-data: source");
  if (await page.locator("[onerror]").count() || (await page.evaluate(() => window.__xss))) fail("HTML not sanitised");
  const tool = await page.textContent(".msg.assistant .tool-call");
  if (!tool.includes("get_weather") || !tool.includes('"Oslo"')) fail(`tool call shown as: ${tool}`);
  if (summary.speakControl) {
    for (let i = 0; i < 150 && !speech.length; ++i) await new Promise((r) => setTimeout(r, 100));
    if (speech[0] !== 200) fail(`spoken reply: /v1/audio/speech answered ${JSON.stringify(speech)}`);
    summary.speech = speech;
  }
  await shot("5-rendering-media.png");
  step("rendering and media");

  // 7. The real server: the demo has vision and audio projectors, so /v1/models announces both
  // and an attached image is answered (the image_url part goes through the encoder).
  await page.unroute("**/v1/models");
  await page.unroute("**/v1/chat/completions");
  await page.click("#new-chat");
  await page.uncheck("#speak").catch(() => {});
  await page.reload();
  await page.locator("body[data-ready='1']").waitFor({ timeout: 10000 });
  if (await page.locator("#attach-image").isHidden()) fail("the server has vision but the image control is hidden");
  // The demo has an audio projector too: /v1/models announces "audio" and its controls show.
  if (await page.locator("#attach-audio").isHidden() || await page.locator("#record-audio").isHidden())
    fail("the server has audio input but the audio controls are hidden");
  await page.fill("#max-tokens", "16");
  await page.setInputFiles("#image-file", { name: "dot.png", mimeType: "image/png", buffer: png });
  await page.fill("#input", "What colour is this dot?");
  await page.press("#input", "Enter");
  await page.locator(".msg.assistant").waitFor({ timeout: 10000 });
  await page.locator("#stop:disabled").waitFor({ timeout: 30000 });
  if (await page.locator(".msg.failed").count()) fail(`the image was refused: ${await page.textContent(".msg.failed")}`);
  if (!((await lastReply().textContent()) || "").length) fail("no answer to the image");
  await shot("6-real-image.png");
  step("real image");

  if (summary.foreign.length) fail(`requests left the machine: ${summary.foreign.join(", ")}`);
  if (summary.pageErrors.length) fail(`page errors: ${summary.pageErrors.join(" | ")}`);
} catch (e) {
  summary.error = String(e.message || e);
  code = 1;
} finally {
  await browser.close();
}
console.log(JSON.stringify(summary));
process.exit(code);
