// The benchmarks' stand-in for VS Code in the page (loaded before the page's own script):
// `acquireVsCodeApi` posts to the extension side, a SharedWorker already running when the
// page is navigated to (`host.ts`), and what the worker posts is relayed into the page with
// `window.postMessage`, as VS Code's webview host frame relays the extension's messages into
// the page's frame (one more copy on the page's thread).
window.__posted = [];
const events = new Map(); // what the host said → when (its clock: ms since the epoch)
const waiting = new Map();
const search = new URLSearchParams(location.search);
// The same URL as the one `common.mjs` started: this connects to that worker.
const host = new SharedWorker(`/host.js?messages=${search.get("messages") ?? 0}`).port;
host.onmessage = (event) => {
  const said = event.data?.bench;
  if (said === undefined) {
    if (event.data.type === "transcript") window.__answeredAt ??= performance.now();
    return window.postMessage(event.data, "*");
  }
  events.set(said, event.data.at);
  waiting.get(said)?.(event.data.at);
};
host.postMessage({ bench: "hello", everything: search.has("everything") });
/** Resolves with the time (ms since the epoch) at which the host said `what`. */
window.__hostSaid = (what) =>
  events.has(what) ? Promise.resolve(events.get(what)) : new Promise((resolve) => waiting.set(what, resolve));
window.__host = (command) => host.postMessage(command);
window.acquireVsCodeApi = () => ({
  postMessage: (message) => {
    window.__posted.push(message);
    if (message.type === "transcript") window.__askedAt ??= performance.now();
    host.postMessage(message);
  },
  getState: () => undefined,
  setState: () => {},
});
