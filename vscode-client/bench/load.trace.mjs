// Where opening the panel's page goes, traced (`node ../bench/load.trace.mjs` from webview/):
// the page's main thread from its first HTML parse until its first rows are painted, task by
// task (start, duration, what ran inside), and its self time by event name. Asserts nothing.
import { floorRun, median, RUNS, setup, startHost } from "./common.mjs";
import { mainThreadSelfTimes, startTrace, stopTrace } from "./trace.mjs";

const MESSAGES = Number(process.env.MESSAGES ?? 10000);
const TASK_MS = 2; // tasks shorter than this are left out of the listing

const { server, browser, close } = await setup();
try {
  await startHost(browser, server, MESSAGES);
  const runs = [];
  const floors = [];
  for (let i = 0; i < RUNS; i += 1) {
    floors.push((await floorRun(browser, server)).paint);
    const page = await browser.context.newPage();
    const cdp = await startTrace(page);
    await page.goto(`${server.origin}/bench?messages=${MESSAGES}`);
    await page.evaluate(() => window.__painted);
    const times = await page.evaluate(() => ({
      asked: window.__askedAt,
      answered: window.__answeredAt,
      paint: window.__firstPaint,
      script: performance.getEntriesByType("resource").find((e) => e.name.endsWith("/panel.js"))?.responseEnd ?? NaN,
    }));
    times.hostReady = (await page.evaluate(() => window.__hostSaid("ready"))) - (await page.evaluate(() => performance.timeOrigin));
    times.resources = await page.evaluate(() => performance.getEntriesByType("resource").map((e) => `${e.name.split("/").pop().split("?")[0]} ${e.startTime.toFixed(0)}–${e.responseEnd.toFixed(0)}`).join(", "));
    times.document = await page.evaluate(() => { const n = performance.getEntriesByType("navigation")[0]; return `response ${n.responseStart.toFixed(0)}–${n.responseEnd.toFixed(0)}, interactive ${n.domInteractive.toFixed(0)}, loaded ${n.domContentLoadedEventEnd.toFixed(0)}`; });
    const events = await stopTrace(cdp);
    await page.close();
    // The page's renderer: the main thread that evaluated panel.js.
    const evaluated = events.find((e) => e.name === "EvaluateScript" && /\/panel\.js$/.test(e.args?.data?.url ?? ""));
    const spans = events.filter((e) => e.ph === "X" && typeof e.dur === "number" && e.pid === evaluated?.pid && e.tid === evaluated?.tid).sort((a, b) => a.ts - b.ts);
    runs.push({ ...times, evaluate: (evaluated?.dur ?? NaN) / 1000 });
    if (i < RUNS - 1) continue;
    console.log(`last run: document ${times.document}; resources (start–end): ${times.resources}`);
    console.log(`last run: panel.js arrived ${times.script.toFixed(0)} ms, asked ${times.asked.toFixed(0)}, answered ${times.answered.toFixed(0)}, painted ${times.paint.toFixed(0)} (ms from navigation)`);
    console.log(`  main thread, self time (ms): ${mainThreadSelfTimes(events.filter((e) => e.ph !== "X" || e.pid === evaluated?.pid), 12).map(([n, v]) => `${n} ${v.toFixed(1)}`).join(", ")}`);
    const t0 = spans.find((e) => e.name === "ParseHTML")?.ts ?? spans[0]?.ts ?? 0;
    let end = 0;
    for (const task of spans) {
      if (task.ts < end || task.dur < TASK_MS * 1000) continue;
      end = task.ts + task.dur;
      const inner = spans.filter((c) => c !== task && c.ts >= task.ts && c.ts + c.dur <= end && c.dur > 1000 && !/RunTask|OnHandleReady/.test(c.name)).slice(0, 4);
      const label = (c) => `${c.name}${c.args?.data?.url ? `(${c.args.data.url.split("/").pop()})` : ""} ${(c.dur / 1000).toFixed(1)}`;
      console.log(`  @${((task.ts - t0) / 1000).toFixed(0).padStart(5)} ms ${(task.dur / 1000).toFixed(1).padStart(6)} ms  ${inner.map(label).join(" > ")}`);
    }
  }
  const m = (key) => median(runs.map((r) => r[key])).toFixed(1);
  console.log(`medians of ${RUNS}: panel.js arrived ${m("script")}, evaluated in ${m("evaluate")}, asked ${m("asked")}, extension side ready ${m("hostReady")}, answered ${m("answered")}, painted ${m("paint")} (ms); the floor (a page with one row) painted ${median(floors).toFixed(1)} ms`);
} finally {
  await close();
}
