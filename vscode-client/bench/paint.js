// First paint, in the benchmarks' pages (the panel's and the trivial floor page): the end of
// the first frame that rendered timeline rows. A task posted while a frame is being made (its
// animation callbacks, where the panel draws, and the microtasks after them) runs once that
// frame is rendered. Rows already there (the floor's, parsed from its HTML) are checked at
// the first frame's animation callbacks; rows the panel adds are seen by a mutation observer,
// whose callback runs right after the panel's own animation callback that added them. The
// benchmark awaits `__painted` (polling from outside would run on the page's thread too).
const channel = new MessageChannel();
let painted;
window.__painted = new Promise((resolve) => { painted = resolve; });
channel.port1.onmessage = () => {
  window.__firstPaint ??= performance.now();
  painted(window.__firstPaint);
};
const seen = () => {
  observer.disconnect();
  channel.port2.postMessage(0);
};
const observer = new MutationObserver(() => {
  if (document.querySelector(".row") !== null) seen();
});
observer.observe(document, { childList: true, subtree: true });
requestAnimationFrame(() => {
  if (document.querySelector(".row") !== null) seen();
});
