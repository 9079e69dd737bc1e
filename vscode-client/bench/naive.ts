// The benchmarks' baseline, built from the page's own renderer and row views: what a chat
// panel without batching or virtualization does (one full re-render per delta; every row in
// the DOM).
import { entriesToRows } from "../webview/src/history";
import { renderMarkdown } from "../webview/src/markdown";
import { createView } from "../webview/src/views";

declare global {
  interface Window {
    naive: { delta(text: string): void; history(entries: Record<string, unknown>[]): void };
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
  history(entries) {
    const context = { checkpointFor: () => undefined };
    for (const row of entriesToRows(entries)) {
      root.append(createView(row, context).element);
    }
  },
};
