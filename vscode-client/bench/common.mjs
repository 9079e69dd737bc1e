// Shared by the panel's benchmarks: the built page behind a worker that plays the extension
// (`host.ts`), the baseline page, Chromium, and what is measured in the page (frames, long
// tasks, Chromium's own counters, heap). Each figure is the median of RUNS runs.
import { mkdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { FAKE_VSCODE, fill, harnessPage, harnessPolicy, launch, OUTPUT, startServer } from "../webview/e2e/harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));
// The tools are the page package's (vscode-client/webview/node_modules).
const { build } = createRequire(join(here, "..", "webview", "package.json"))("esbuild");

export const RUNS = Number(process.env.RUNS ?? 3);
export const TRACE = process.env.TRACE !== "0";
export const BENCH_OUTPUT = join(OUTPUT, "bench");

export async function setup() {
  await mkdir(BENCH_OUTPUT, { recursive: true });
  const bundle = (entry, outfile) =>
    build({ entryPoints: [join(here, entry)], outfile: join(BENCH_OUTPUT, outfile), bundle: true, minify: true, format: "iife", target: "chrome120", logLevel: "silent" });
  await Promise.all([bundle("naive.ts", "naive.js"), bundle("host.ts", "host.js")]);
  const server = await startServer({
    "/naive.js": join(BENCH_OUTPUT, "naive.js"),
    "/naive.html": join(here, "naive.html"),
    "/host.js": join(BENCH_OUTPUT, "host.js"),
    // The stand-ins inline, as VS Code's own script is: the page fetches what it would in VS
    // Code (panel.css, panel.js), no more.
    "/bench": (origin) => harnessPage(origin, [FAKE_VSCODE, join(here, "host-page.js"), join(here, "paint.js")].map((file) => ({ file })), { worker: true }),
    // The floor: a page with one row, under the same CSP, with the same first-paint watcher.
    "/floor": async (origin) => {
      const html = fill(await readFile(join(here, "floor.html"), "utf8"), harnessPolicy(origin));
      return html.replace("/*paint*/", await readFile(join(here, "paint.js"), "utf8"));
    },
    // Where the extension side is started and kept running (not measured).
    "/host-holder": () => HOLDER,
  });
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

const HOLDER = `<!DOCTYPE html><html><head><title>extension side</title></head><body><script>
  const port = new SharedWorker("/host.js" + location.search).port;
  window.__ready = new Promise((resolve) => { port.onmessage = (e) => e.data.bench === "ready" && resolve(); });
  port.postMessage({ bench: "hello" });
</script></body></html>`;

/**
 * The extension side for a session of `messages` messages, started (its session made up) in a
 * page of its own that stays open, before any panel page is navigated to: in VS Code the
 * extension host runs and the server holds the session when the panel opens.
 */
export async function startHost(browser, server, messages) {
  if (holders.has(messages)) return;
  const page = await browser.context.newPage();
  await page.goto(`${server.origin}/host-holder?messages=${messages}`);
  await page.evaluate(() => window.__ready);
  holders.add(messages);
}
const holders = new Set();

/** The panel behind the worker host, on a session of `messages` messages, its first page shown. */
export async function openPanel(browser, server, messages) {
  await startHost(browser, server, messages);
  const page = await browser.context.newPage();
  page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
  await page.goto(`${server.origin}/bench?messages=${messages}`);
  if (messages > 0) await page.evaluate(() => window.__painted);
  return page;
}

/** The floor: first paint (ms from navigation) of a page with one row and no work, served the
 * same way: what the browser itself takes on this machine, under the same load. */
export async function floorRun(browser, server) {
  const page = await browser.context.newPage();
  await page.goto(`${server.origin}/floor`);
  const paint = await page.evaluate(() => window.__painted);
  await page.close();
  return { paint };
}

/**
 * Starts recording in the page: every frame's duration (rAF to rAF), long tasks (> 50 ms)
 * and long animation frames; and Chromium's own counters over CDP (`Performance.getMetrics`).
 */
export async function startRecording(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const before = await metrics(cdp);
  await page.evaluate(() => {
    const run = { frames: [], longTasks: [], longFrames: [] };
    window.__recording = run;
    let last = performance.now();
    const tick = (now) => {
      if (window.__recording !== run) return;
      run.frames.push(now - last);
      last = now;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
    run.observers = [
      ["longtask", run.longTasks],
      ["long-animation-frame", run.longFrames],
    ].map(([type, into]) => {
      const observer = new PerformanceObserver((list) => into.push(...list.getEntries().map((e) => e.duration)));
      observer.observe({ type });
      return observer;
    });
  });
  return { cdp, before };
}

export async function stopRecording(page, { cdp, before }) {
  const run = await page.evaluate(() => {
    const r = window.__recording;
    window.__recording = undefined;
    for (const o of r.observers) {
      for (const e of o.takeRecords()) (e.entryType === "longtask" ? r.longTasks : r.longFrames).push(e.duration);
      o.disconnect();
    }
    return { frames: r.frames.slice(1), longTasks: r.longTasks, longFrames: r.longFrames };
  });
  const after = await metrics(cdp);
  await cdp.detach();
  const frames = [...run.frames].sort((a, b) => a - b);
  const n = run.frames.length;
  const delta = (name) => (after[name] ?? 0) - (before[name] ?? 0);
  return {
    frames: n,
    p99: quantile(frames, 0.99),
    longest: frames[n - 1] ?? 0,
    // A frame over 1.5 intervals at 60 Hz missed at least one vsync.
    missed: run.frames.filter((f) => f > 25).length,
    longTasks: run.longTasks.length,
    longFrames: run.longFrames.length,
    // Main-thread time per frame, by kind (Chromium's counters, seconds → ms).
    scriptPerFrame: (delta("ScriptDuration") * 1000) / Math.max(1, n),
    layoutPerFrame: ((delta("LayoutDuration") + delta("RecalcStyleDuration")) * 1000) / Math.max(1, n),
    taskPerFrame: (delta("TaskDuration") * 1000) / Math.max(1, n),
    layouts: delta("LayoutCount"),
  };
}

async function metrics(cdp) {
  const { metrics: list } = await cdp.send("Performance.getMetrics");
  return Object.fromEntries(list.map((m) => [m.name, m.value]));
}

/** JS heap after a full collection, and DOM nodes, in the page. */
export async function memory(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("HeapProfiler.collectGarbage");
  await cdp.send("Performance.enable");
  const m = await metrics(cdp);
  await cdp.detach();
  return { heap: (m.JSHeapUsedSize ?? 0) / 1024 / 1024, nodes: m.Nodes ?? 0 };
}

/** One frame, then the task after it: the page has rendered what it had. */
export const settled = (page) =>
  page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0))));

export function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
}

export function median(values) {
  const sorted = values.filter((v) => typeof v === "number").sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The median of each numeric field over runs, and the spread of `key` (min–max). */
export function medians(runs) {
  const out = {};
  for (const key of Object.keys(runs[0] ?? {})) out[key] = median(runs.map((r) => r[key]));
  out.range = (key) => {
    const values = runs.map((r) => r[key]);
    return `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
  };
  return out;
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
