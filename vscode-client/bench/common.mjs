// Shared by the panel's benchmarks: the built page, the baseline page, Chromium, and
// in-page frame timing.
import { mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { launch, OUTPUT, startServer } from "../webview/e2e/harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));
// The tools are the page package's (vscode-client/webview/node_modules).
const { build } = createRequire(join(here, "..", "webview", "package.json"))("esbuild");

export async function setup() {
  await mkdir(join(OUTPUT, "bench"), { recursive: true });
  const naive = join(OUTPUT, "bench", "naive.js");
  await build({ entryPoints: [join(here, "naive.ts")], outfile: naive, bundle: true, minify: true, format: "iife", logLevel: "silent" });
  const server = await startServer({ "/naive.js": naive, "/naive.html": join(here, "naive.html") });
  const browser = await launch();
  return {
    server,
    browser,
    close: async () => {
      await browser.close();
      await server.close();
    },
  };
}

/** Starts recording every frame's duration in the page (rAF to rAF). */
export const startFrames = (page) =>
  page.evaluate(() => {
    window.__frames = [];
    let last = performance.now();
    const tick = (now) => {
      window.__frames.push(now - last);
      last = now;
      if (window.__frames !== undefined) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });

export async function stopFrames(page) {
  const frames = await page.evaluate(() => window.__frames.slice(1));
  frames.sort((a, b) => a - b);
  const p99 = frames[Math.min(frames.length - 1, Math.floor(frames.length * 0.99))] ?? 0;
  return { frames: frames.length, longest: frames[frames.length - 1] ?? 0, p99 };
}

export async function heapMB(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("HeapProfiler.collectGarbage");
  await cdp.send("Performance.enable");
  const { metrics } = await cdp.send("Performance.getMetrics");
  const used = metrics.find((m) => m.name === "JSHeapUsedSize")?.value ?? 0;
  await cdp.detach();
  return used / 1024 / 1024;
}

export const ms = (n) => `${n.toFixed(1)} ms`;

/** A long markdown reply: paragraphs, lists, fenced code. */
export function reply(chars) {
  const pieces = [
    "Here is what changes and why. The parser reads the **config** once and caches it.\n\n",
    "- the `load` function now returns early\n- errors carry the file name\n- tests cover the empty file\n\n",
    "```python\ndef load(path):\n    with open(path) as f:\n        return parse(f.read())\n```\n\n",
    "1. run the tests\n2. check the output\n3. commit\n\n",
  ];
  let out = "";
  for (let i = 0; out.length < chars; i += 1) out += pieces[i % pieces.length];
  return out.slice(0, chars);
}
