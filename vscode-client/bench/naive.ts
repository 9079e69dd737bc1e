// The benchmarks' baseline, built from the page's own renderer and row views: what a chat
// panel without batching or virtualization does (one full re-render per delta; every row in
// the DOM).
import type { Item } from "../src/transcript";
import { rowOf } from "../webview/src/itemRows";
import { renderMarkdown } from "../webview/src/markdown";
import { createView } from "../webview/src/views";

declare global {
  interface Window {
    naive: { delta(text: string): void; history(items: Item[]): void };
  }
}

const root = document.getElementById("root")!;
let source = "";
let answer: HTMLElement | undefined;

window.naive = {
  delta(text) {
    source += text;
    answer ??= root.appendChild(document.createElement("div"));
    answer.className = "markdown";
    answer.innerHTML = renderMarkdown(source, "streaming"); // the whole message, every delta
  },
  history(items) {
    const context = { checkpointFor: () => undefined, diffBaseFor: () => undefined };
    for (const item of items) {
      const row = rowOf(item, 0);
      if (row !== undefined) root.append(createView(row, context).element);
    }
  },
};
