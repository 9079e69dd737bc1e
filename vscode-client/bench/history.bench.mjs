// Opening a 10,000-message history: time to first paint, time to interactive and JS heap,
// against a non-virtualized list of the same rows in the same run. Asserts nothing.
import { bigHistory } from "../webview/e2e/fixtures.mjs";
import { heapMB, ms, setup } from "./common.mjs";

const MESSAGES = Number(process.env.MESSAGES ?? 10000);
const entries = bigHistory(MESSAGES);

/** In the page: time from handing over the history to the first frame that shows rows, and
 * to the first moment the main thread is free again (a scroll to the middle answered). */
const measure = (page, deliver) =>
  page.evaluate(
    ([list, deliverSource]) =>
      new Promise((resolve) => {
        const t0 = performance.now();
        new Function("entries", deliverSource)(list);
        const deliveredAt = performance.now();
        const firstPaint = () =>
          requestAnimationFrame(() => {
            if (document.querySelector(".row") === null) return firstPaint();
            const paint = performance.now() - t0;
            const scroller = document.querySelector(".timeline");
            scroller.scrollTop = scroller.scrollHeight / 2;
            requestAnimationFrame(() => setTimeout(() => resolve({ paint, interactive: performance.now() - t0, handOver: deliveredAt - t0, rows: document.querySelectorAll(".row").length })));
          });
        firstPaint();
      }),
    [entries, deliver],
  );

const { server, browser, close } = await setup();
try {
  const results = {};
  const page = await browser.context.newPage();
  await page.goto(server.origin);
  const tail = await page.waitForFunction(() => window.__posted.find((m) => m.type === "history" && m.tail));
  const requestId = (await tail.jsonValue()).requestId;
  const baseHeap = await heapMB(page);
  results.panel = await measure(page, `window.postMessage({ type: "history", requestId: ${requestId}, entries, tail: true }, "*")`);
  results.panel.heap = await heapMB(page);
  results.panel.baseHeap = baseHeap;
  await page.close();

  const naive = await browser.context.newPage();
  await naive.goto(`${server.origin}/naive.html`);
  const naiveBase = await heapMB(naive);
  results.naive = await measure(naive, "window.naive.history(entries)");
  results.naive.heap = await heapMB(naive);
  results.naive.baseHeap = naiveBase;
  await naive.close();

  const messages = entries.filter((e) => e.type === "message").length;
  console.log(`history: ${messages} messages (${entries.length} entries) opened at once`);
  for (const [name, r] of Object.entries(results)) {
    console.log(`  ${name.padEnd(6)} first paint ${ms(r.paint).padStart(9)}  interactive ${ms(r.interactive).padStart(9)}  rows in DOM ${String(r.rows).padStart(5)}  heap ${r.heap.toFixed(1)} MB (page alone ${r.baseHeap.toFixed(1)} MB)`);
  }
  console.log(`  first paint ratio naive/panel: ${(results.naive.paint / results.panel.paint).toFixed(2)}x (targets: first paint <= 300 ms, heap <= 150 MB)`);
} finally {
  await close();
}
