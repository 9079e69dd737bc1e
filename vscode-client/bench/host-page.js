// The benchmarks' stand-in for VS Code in the page (loaded before the page's own script):
// `acquireVsCodeApi` posts to the extension side in a worker (`host.ts`), and what the worker
// posts is relayed into the page with `window.postMessage`, as VS Code's webview host frame
// relays the extension's messages into the page's frame (one more copy on the page's thread).
window.__posted = [];
const events = new Map(); // what the host said → when (its clock: ms since the epoch)
const waiting = new Map();
const worker = new Worker(`/host.js${location.search}`);
worker.onmessage = (event) => {
  const said = event.data?.bench;
  if (said === undefined) {
    if (event.data.type === "history") window.__answeredAt ??= performance.now();
    return window.postMessage(event.data, "*");
  }
  events.set(said, event.data.at);
  waiting.get(said)?.(event.data.at);
};
/** Resolves with the time (ms since the epoch) at which the host said `what`. */
window.__hostSaid = (what) =>
  events.has(what) ? Promise.resolve(events.get(what)) : new Promise((resolve) => waiting.set(what, resolve));
window.__host = (command) => worker.postMessage(command);
window.acquireVsCodeApi = () => ({
  postMessage: (message) => {
    window.__posted.push(message);
    if (message.type === "history") window.__askedAt ??= performance.now();
    worker.postMessage(message);
  },
  getState: () => undefined,
  setState: () => {},
});
// First paint: the end of the first frame that rendered timeline rows (checked at each frame's
// animation callbacks; the task posted from there runs once that frame is rendered). The
// benchmark awaits `__painted` (polling from outside would run on the page's thread too).
const channel = new MessageChannel();
let painted;
window.__painted = new Promise((resolve) => { painted = resolve; });
channel.port1.onmessage = () => {
  window.__firstPaint ??= performance.now();
  painted(window.__firstPaint);
};
const watch = () => {
  if (document.querySelector(".row") !== null) channel.port2.postMessage(0);
  else requestAnimationFrame(watch);
};
requestAnimationFrame(watch);
