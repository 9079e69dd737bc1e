// 5,000 deltas at 200/s into the panel, against the naive baseline (one full re-render per
// delta) in the same run. Prints the longest frame and the p99 frame time; asserts nothing.
import { heapMB, ms, reply, setup, startFrames, stopFrames } from "./common.mjs";

const DELTAS = Number(process.env.DELTAS ?? 5000);
const RATE = 200; // per second
const text = reply(DELTAS * 4);
const deltas = Array.from({ length: DELTAS }, (_, i) => text.slice(i * 4, i * 4 + 4));

/** Sends the deltas from a timer in the page itself, at RATE a second. */
async function drive(page, send) {
  await page.evaluate(
    ([list, rate, sendSource]) =>
      new Promise((resolve) => {
        const send = new Function("delta", sendSource);
        const started = performance.now();
        let i = 0;
        const step = () => {
          const due = Math.min(list.length, Math.floor(((performance.now() - started) * rate) / 1000) + 1);
          while (i < due) send(list[i++]);
          if (i < list.length) setTimeout(step, 1);
          else requestAnimationFrame(() => requestAnimationFrame(resolve));
        };
        step();
      }),
    [deltas, RATE, send],
  );
}

const { server, browser, close } = await setup();
try {
  const results = {};
  // Memento's panel: each delta arrives as its own message (worse than what the extension's
  // coalescer sends); the page applies them once per frame.
  const page = await browser.context.newPage();
  await page.goto(server.origin);
  await page.evaluate(() => window.postMessage({ type: "notices", notices: [{ kind: "turn", turnId: "b", state: "started" }] }, "*"));
  await startFrames(page);
  await drive(page, 'window.postMessage({ type: "notices", notices: [{ kind: "stream", turnId: "b", stream: "text", delta }] }, "*")');
  results.panel = { ...(await stopFrames(page)), heap: await heapMB(page) };
  const shown = await page.locator(".row-assistant .markdown").innerText();
  if (!shown.includes("commit")) throw new Error("the streamed reply did not render");
  await page.close();

  const naive = await browser.context.newPage();
  await naive.goto(`${server.origin}/naive.html`);
  await startFrames(naive);
  await drive(naive, "window.naive.delta(delta)");
  results.naive = { ...(await stopFrames(naive)), heap: await heapMB(naive) };
  await naive.close();

  console.log(`stream: ${DELTAS} deltas at ${RATE}/s (${text.length} chars of markdown)`);
  for (const [name, r] of Object.entries(results)) {
    console.log(`  ${name.padEnd(6)} frames ${String(r.frames).padStart(5)}  longest ${ms(r.longest).padStart(9)}  p99 ${ms(r.p99).padStart(8)}  heap ${r.heap.toFixed(1)} MB`);
  }
  console.log(`  p99 ratio naive/panel: ${(results.naive.p99 / results.panel.p99).toFixed(2)}x (target: panel p99 <= 16.7 ms)`);
} finally {
  await close();
}
