// 5,000 deltas at 200/s into the panel, against the naive baseline (one full re-render per
// delta) in the same run. The panel is fed the way VS Code feeds it: from the extension side
// (the real bridge and coalescer, in a worker) relayed into the page; and in the worst case
// with every delta in a message of its own. Prints frame times; asserts nothing.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { BENCH_OUTPUT, median, medians, memory, ms, openPanel, quantile, reply, RUNS, setup, startRecording, stopRecording, TRACE } from "./common.mjs";
import { frameSpans, mainThreadSelfTimes, startTrace, stopTrace } from "./trace.mjs";

const DELTAS = Number(process.env.DELTAS ?? 5000);
const RATE = 200; // per second
const HISTORY = 600; // messages in the session; its last page is on screen while the reply streams
const text = reply(DELTAS * 4);
const deltas = Array.from({ length: DELTAS }, (_, i) => text.slice(i * 4, i * 4 + 4));

async function panelRun(browser, server, coalesce, traced) {
  const page = await openPanel(browser, server, HISTORY);
  const recording = await startRecording(page);
  const trace = traced ? await startTrace(page) : undefined;
  await page.evaluate(async ([list, rate, merge]) => {
    window.__host({ bench: "stream", turnId: "b", deltas: list, rate, coalesce: merge });
    await window.__hostSaid("streamed");
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  }, [deltas, RATE, coalesce]);
  const events = trace ? await stopTrace(trace) : undefined;
  const result = { ...(await stopRecording(page, recording)), ...(await memory(page)) };
  const blocks = await page.locator(".row-assistant[data-state=streaming] pre.code").count();
  if (blocks !== text.split("```python").length - 1) throw new Error(`the streamed reply did not render (${blocks} code blocks)`);
  await page.close();
  return { result, events };
}

/** The machine's own noise: the same page for as long, nothing streaming. */
async function idleRun(browser, server) {
  const page = await openPanel(browser, server, HISTORY);
  const recording = await startRecording(page);
  await page.evaluate((ms) => new Promise((resolve) => setTimeout(resolve, ms)), (DELTAS * 1000) / RATE);
  const result = { ...(await stopRecording(page, recording)), ...(await memory(page)) };
  await page.close();
  return result;
}

/** The naive panel: each delta re-renders the whole message (timer in the page, no messages). */
async function naiveRun(browser, server) {
  const page = await browser.context.newPage();
  await page.goto(`${server.origin}/naive.html`);
  const recording = await startRecording(page);
  await page.evaluate(
    ([list, rate]) =>
      new Promise((resolve) => {
        const started = performance.now();
        let i = 0;
        const step = () => {
          const due = Math.min(list.length, Math.floor(((performance.now() - started) * rate) / 1000) + 1);
          while (i < due) window.naive.delta(list[i++]);
          if (i < list.length) setTimeout(step, Math.max(0, started + (i * 1000) / rate - performance.now()));
          else requestAnimationFrame(() => requestAnimationFrame(resolve));
        };
        step();
      }),
    [deltas, RATE],
  );
  const result = { ...(await stopRecording(page, recording)), ...(await memory(page)) };
  await page.close();
  return result;
}

const { server, browser, close } = await setup();
try {
  const scenarios = [
    ["panel, through the coalescer", (traced) => panelRun(browser, server, true, traced)],
    ["panel, a message per delta", (traced) => panelRun(browser, server, false, traced)],
  ];
  // Runs of the scenarios take turns, so that the machine's load falls on them alike.
  const runs = scenarios.map(() => []);
  const idle = [];
  for (let i = 0; i < RUNS; i += 1) {
    for (const [k, [, run]] of scenarios.entries()) runs[k].push((await run(false)).result);
    idle.push(await idleRun(browser, server));
  }
  const table = scenarios.map(([name], k) => [name, medians(runs[k])]);
  const traces = [];
  if (TRACE) for (const [name, run] of scenarios) traces.push([name, (await run(true)).events]);
  const naive = [];
  for (let i = 0; i < Number(process.env.NAIVE_RUNS ?? RUNS); i += 1) naive.push(await naiveRun(browser, server));
  if (naive.length > 0) table.push(["naive: re-render per delta", medians(naive)]);
  table.push(["idle page (the machine's noise)", medians(idle)]);

  console.log(`stream: ${DELTAS} deltas at ${RATE}/s (${text.length} chars of markdown), ${HISTORY} messages of history; medians of ${RUNS} runs`);
  console.log("  frame = rAF to rAF (16.7 ms at 60 Hz); missed = frames over 25 ms; per frame: main-thread ms from Chromium's counters");
  for (const [name, r] of table) {
    console.log(
      `  ${name.padEnd(30)} p99 ${ms(r.p99).padStart(10)} (runs ${r.range("p99")})  longest ${ms(r.longest).padStart(11)}  missed ${String(r.missed).padStart(5)}/${r.frames}` +
        `  long tasks ${String(r.longTasks).padStart(4)}  script ${r.scriptPerFrame.toFixed(2)}  style+layout ${r.layoutPerFrame.toFixed(2)}  task ${r.taskPerFrame.toFixed(2)}  heap ${r.heap.toFixed(1)} MB`,
    );
  }
  const [coalesced] = table;
  const baseline = naive.length > 0 ? table[table.length - 2][1] : undefined;
  if (baseline) console.log(`  p99 ratio naive/panel (coalesced): ${(baseline.p99 / coalesced[1].p99).toFixed(1)}x`);
  console.log("  targets: frame work p99 <= 16 ms (traced runs below); frames p99 <= 16.7 ms, i.e. no missed vsync beyond the idle page's");
  for (const [name, events] of traces) {
    const spans = frameSpans(events);
    console.log(`  traced run, ${name}: frame work p99 ${ms(quantile(spans.render, 0.99))} (median ${ms(median(spans.render))}, longest ${ms(spans.render[spans.render.length - 1] ?? 0)}, ${spans.render.length} frames); animation frame p99 ${ms(quantile(spans.frame, 0.99))}`);
    console.log(`    main thread, self time: ${mainThreadSelfTimes(events, 8).map(([n, t]) => `${n} ${t.toFixed(0)}`).join(", ")} (ms)`);
    if (process.env.SAVE_TRACE) await writeFile(join(BENCH_OUTPUT, `stream-${name.replace(/\W+/g, "-")}.trace.json`), JSON.stringify(events));
  }
} finally {
  await close();
}
