// Chromium performance tracing over CDP, summarised: each frame's main-thread work (the
// AnimationFrame spans Chromium records for every frame) and where the renderer's main thread
// spent its time (self time per trace event name).
export async function startTrace(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Tracing.start", {
    transferMode: "ReturnAsStream",
    traceConfig: {
      includedCategories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "toplevel"],
    },
  });
  return cdp;
}

export async function stopTrace(cdp) {
  const done = new Promise((resolve) => cdp.once("Tracing.tracingComplete", resolve));
  await cdp.send("Tracing.end");
  const { stream } = await done;
  let text = "";
  for (;;) {
    const chunk = await cdp.send("IO.read", { handle: stream, size: 1 << 20 });
    text += chunk.base64Encoded ? Buffer.from(chunk.data, "base64").toString() : chunk.data;
    if (chunk.eof) break;
  }
  await cdp.send("IO.close", { handle: stream });
  await cdp.detach();
  const parsed = JSON.parse(text);
  return Array.isArray(parsed) ? parsed : parsed.traceEvents;
}

/** Self time (ms) per event name on the renderer main thread, largest first. */
export function mainThreadSelfTimes(events, top = 15) {
  const names = events.filter((e) => e.ph === "M" && e.name === "thread_name" && e.args?.name === "CrRendererMain");
  const threads = new Set(names.map((e) => `${e.pid}:${e.tid}`));
  const spans = events
    .filter((e) => e.ph === "X" && threads.has(`${e.pid}:${e.tid}`) && typeof e.dur === "number")
    .sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const self = new Map();
  const stack = [];
  for (const e of spans) {
    while (stack.length > 0 && stack[stack.length - 1].end <= e.ts) stack.pop();
    const parent = stack[stack.length - 1];
    if (parent !== undefined) self.set(parent.name, (self.get(parent.name) ?? 0) - Math.min(e.dur, parent.end - e.ts));
    self.set(e.name, (self.get(e.name) ?? 0) + e.dur);
    stack.push({ name: e.name, end: e.ts + e.dur });
  }
  return [...self.entries()].map(([name, us]) => [name, us / 1000]).sort((a, b) => b[1] - a[1]).slice(0, top);
}

/**
 * Every frame's spans, in ms: `frame` is an AnimationFrame (from the first task that led to the
 * frame to the end of its rendering), `render` its rendering part (animation callbacks — the
 * panel's DOM update — style, layout, paint).
 */
export function frameSpans(events) {
  const open = new Map();
  const spans = { frame: [], render: [] };
  for (const e of events) {
    const kind = e.name === "AnimationFrame" ? "frame" : e.name === "AnimationFrame::Render" ? "render" : undefined;
    if (kind === undefined || (e.ph !== "b" && e.ph !== "e")) continue;
    const key = `${kind}:${e.pid}:${e.id ?? e.id2?.local}`;
    if (e.ph === "b") open.set(key, e.ts);
    else if (open.has(key)) {
      spans[kind].push((e.ts - open.get(key)) / 1000);
      open.delete(key);
    }
  }
  for (const list of Object.values(spans)) list.sort((a, b) => a - b);
  return spans;
}
