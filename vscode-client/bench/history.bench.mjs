// Opening a 10,000-message session, against a non-virtualized list of the same rows in the
// same run. The panel is measured the way it really loads (the page starts, asks the
// extension side, already running with its session made up, for the last page, pages older
// history in as the reader scrolls to the top) and in the worst case (the whole session in
// one message); next to the floor, a page with one row and no work served the same way (what
// the browser itself takes from navigation to a first paint here). Prints; asserts nothing.
import { bigHistory } from "../webview/e2e/fixtures.mjs";
import { floorRun, medians, memory, ms, openPanel, RUNS, setup, startHost, startRecording, stopRecording } from "./common.mjs";

const MESSAGES = Number(process.env.MESSAGES ?? 10000);

/** In the page: scroll the timeline to the middle and wait for that frame: the page answers. */
const interactive = (page) =>
  page.evaluate(
    () =>
      new Promise((resolve) => {
        const scroller = document.querySelector(".timeline");
        scroller.scrollTop = scroller.scrollHeight / 2;
        requestAnimationFrame(() => setTimeout(() => resolve(performance.now())));
      }),
  );

/** Open: from navigation to the first frame that shows rows, and until the page answers a scroll. */
async function openRun(browser, server) {
  const page = await openPanel(browser, server, MESSAGES);
  const { paint, asked, answered, script } = await page.evaluate(() => ({
    paint: window.__firstPaint,
    asked: window.__askedAt,
    answered: window.__answeredAt,
    script: performance.getEntriesByType("resource").find((e) => e.name.endsWith("/panel.js"))?.responseEnd ?? NaN,
  }));
  const hostReady = (await page.evaluate(() => window.__hostSaid("ready"))) - (await page.evaluate(() => performance.timeOrigin));
  const ready = await interactive(page);
  // Where the time went: when the page asked (its inline start, before panel.js), when
  // panel.js arrived, when the answer did, and the drawing from whichever came last.
  const result = { paint, interactive: ready, asked, script, hostReady, answered, draw: paint - Math.max(answered, script), rows: await page.locator(".row").count(), ...(await memory(page)) };
  // Then the reader goes back to the start: to the top again and again, each time the next
  // older page comes in, until the first message is on screen.
  const recording = await startRecording(page);
  const started = Date.now();
  await page.evaluate(
    () =>
      new Promise((resolve) => {
        const scroller = document.querySelector(".timeline");
        const up = () => {
          if (document.querySelector(".row-user")?.textContent?.includes("Question 0:") && scroller.scrollTop === 0) return resolve();
          scroller.scrollTop = 0;
          requestAnimationFrame(up);
        };
        up();
      }),
  );
  result.toTop = Date.now() - started;
  const scroll = await stopRecording(page, recording);
  Object.assign(result, { scrollP99: scroll.p99, scrollLongest: scroll.longest, scrollMissed: scroll.missed, scrollFrames: scroll.frames });
  const all = await memory(page);
  Object.assign(result, { heapAll: all.heap, nodesAll: all.nodes });
  await page.close();
  return result;
}

/** The worst case: the whole session in one `transcript` message from the extension side. */
async function worstRun(browser, server) {
  await startHost(browser, server, MESSAGES);
  const page = await browser.context.newPage();
  await page.goto(`${server.origin}/bench?messages=${MESSAGES}&everything`);
  const times = await page.evaluate(async () => {
    await window.__hostSaid("held"); // the page's tail request reached the host
    window.__host({ bench: "everything" });
    const sent = await window.__hostSaid("everything");
    const paint = await window.__painted;
    return { sent, paint: performance.timeOrigin + paint, origin: performance.timeOrigin };
  });
  const ready = await interactive(page);
  const result = {
    paint: times.paint - times.sent,
    interactive: times.origin + ready - times.sent,
    rows: await page.locator(".row").count(),
    ...(await memory(page)),
  };
  await page.close();
  return result;
}

/** The naive panel: every row in the DOM, from the items handed over in the page. */
async function naiveRun(browser, server, entries) {
  const page = await browser.context.newPage();
  await page.goto(`${server.origin}/naive.html`);
  await page.evaluate((list) => {
    window.__entries = list;
  }, entries);
  const paint = await page.evaluate(
    () =>
      new Promise((resolve) => {
        window.__t0 = performance.now();
        window.naive.history(window.__entries);
        window.__entries = undefined;
        const channel = new MessageChannel();
        channel.port1.onmessage = () => resolve(performance.now() - window.__t0);
        requestAnimationFrame(() => channel.port2.postMessage(0));
      }),
  );
  const ready = await interactive(page);
  const t0 = await page.evaluate(() => window.__t0);
  const result = { paint, interactive: ready - t0, rows: await page.locator(".row").count(), ...(await memory(page)) };
  await page.close();
  return result;
}

const { server, browser, close } = await setup();
try {
  const items = bigHistory(MESSAGES);
  // Runs of the scenarios take turns, so that the machine's load falls on them alike.
  const runs = { open: [], worst: [], naive: [], floor: [] };
  for (let i = 0; i < RUNS; i += 1) {
    runs.floor.push(await floorRun(browser, server));
    runs.open.push(await openRun(browser, server));
    runs.worst.push(await worstRun(browser, server));
    runs.naive.push(await naiveRun(browser, server, items));
  }
  const [open, worst, naive, floor] = [medians(runs.open), medians(runs.worst), medians(runs.naive), medians(runs.floor)];
  // A message: a prompt, or a model message or tool result of a reply (as the session stores them).
  const messages = items.reduce((n, i) => n + (i.kind === "user" ? 1 : i.kind === "reply" ? 1 + 2 * i.parts.filter((p) => p.kind === "tool").length : 0), 0);
  console.log(`history: ${messages} messages (${items.length} transcript items); medians of ${RUNS} runs`);
  const line = (name, r, note) =>
    console.log(`  ${name.padEnd(34)} first paint ${ms(r.paint).padStart(10)} (runs ${r.range("paint")})  interactive ${ms(r.interactive).padStart(10)}  rows in DOM ${String(r.rows).padStart(5)}  heap ${r.heap.toFixed(1)} MB  ${note}`);
  line("panel: open (page load, last page)", open, `(from navigation start: asked ${ms(open.asked)}, panel.js arrived ${ms(open.script)}, answered ${ms(open.answered)} (the extension side, running before navigation, connected at ${ms(open.hostReady)}); drawing after the later of the two ${ms(open.draw)})`);
  console.log(`  ${"floor: one row, no work".padEnd(34)} first paint ${ms(floor.paint).padStart(10)} (runs ${floor.range("paint")})  (from navigation start: the browser's own cost here; the panel's above it: ${ms(open.paint - floor.paint)})`);
  console.log(
    `  ${"  then to the top, page by page".padEnd(34)} ${(open.toTop / 1000).toFixed(1)} s for all pages; frames p99 ${ms(open.scrollP99)}, longest ${ms(open.scrollLongest)}, missed ${open.scrollMissed}/${open.scrollFrames}; heap with everything loaded ${open.heapAll.toFixed(1)} MB, ${open.nodesAll} DOM nodes`,
  );
  line("panel: all in one message (worst)", worst, "(from the extension side's post)");
  line("naive: every row in the DOM", naive, "(from the items in the page)");
  console.log(`  first paint ratio naive/panel: open ${(naive.paint / open.paint).toFixed(1)}x, one message ${(naive.paint / worst.paint).toFixed(1)}x; targets: first paint <= 300 ms, heap <= 150 MB`);
} finally {
  await close();
}
