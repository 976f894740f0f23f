// Opens an SVG chart written by `edge-infer grid --plots` in headless Chromium
// (playwright-core from tests/node, Debian's /usr/bin/chromium) and checks that it
// renders: an <svg> root with a non-empty bounding box, drawn paths, the expected title
// text; saves a screenshot. argv: node_modules, svg path, screenshot path, title text.
import path from "node:path";
import { pathToFileURL } from "node:url";

const [nodeModules, svgPath, screenshotPath, title] = process.argv.slice(2);
const { chromium } = await import(pathToFileURL(path.join(nodeModules, "playwright-core", "index.mjs")).href);

const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
let failed = false;
try {
  const page = await browser.newPage({ viewport: { width: 900, height: 520 } });
  await page.goto(pathToFileURL(svgPath).href);
  const svg = page.locator("svg").first();
  const box = await svg.boundingBox();
  const shapes = await page.locator("svg path, svg polyline, svg line").count();
  const text = await page.evaluate(() => document.documentElement.textContent || "");
  console.log(JSON.stringify({ box, shapes, hasTitle: text.includes(title) }));
  if (!box || box.width < 100 || box.height < 100) {
    console.error("the chart has no visible extent");
    failed = true;
  }
  if (shapes < 5) {
    console.error(`only ${shapes} drawn shapes`);
    failed = true;
  }
  if (!text.includes(title)) {
    console.error(`title text "${title}" not in the chart`);
    failed = true;
  }
  await page.screenshot({ path: screenshotPath });
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
