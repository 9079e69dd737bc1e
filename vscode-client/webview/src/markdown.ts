/**
 * Markdown for the model's words: markdown-it renders, DOMPurify sanitizes, highlight.js
 * colours code (`highlight.ts`).
 *
 * While a reply streams, `IncrementalMarkdown` re-renders only its last top-level block:
 * every block before it is complete (a later block has begun) and keeps its DOM, so a
 * half-finished fence or list grows in place instead of the whole answer being redrawn.
 * A settled message is rendered once, whole (`renderSettled`), and remembered: a row that
 * scrolls away and back is not parsed again, and its code is coloured only when seen.
 */
import DOMPurify, { type Config as PurifyConfig } from "dompurify";
import MarkdownIt from "markdown-it";
import { LruCache } from "./cache";
import { escapeHtml, highlight, highlightedBefore, knownLanguage } from "./highlight";

/** How the renderer treats code blocks: colour now (and remember), colour now without
 * remembering (a block still streaming), or leave plain for `LazyHighlighter`. */
let codeMode: "now" | "streaming" | "lazy" = "now";

/** The renderer, made on first use: making it (linkify's patterns above all) is a good part
 * of the page's start, which the page spends asking for its history first. */
let md: MarkdownIt | undefined;
export function prepareMarkdown(): void {
  parser();
}

function parser(): MarkdownIt {
  if (md !== undefined) return md;
  md = new MarkdownIt({
    html: false, // the model's raw HTML is shown as text
    linkify: true,
    breaks: false,
    highlight(code, lang): string {
      const language = knownLanguage(lang);
      if (language === undefined) return `<pre class="code"><code class="hljs">${escapeHtml(code)}</code></pre>`;
      const html = codeMode === "lazy" ? highlightedBefore(code, language) : highlight(code, language, codeMode === "now");
      const lazy = html === undefined ? ` data-lang="${language}"` : "";
      return `<pre class="code"><code class="hljs language-${language}"${lazy}>${html ?? escapeHtml(code)}</code></pre>`;
    },
  });
  // Links only where the model wrote a URL: `main.py` and `lib.rs` are file names, not hosts.
  md.linkify.set({ fuzzyLink: false });
  // Set once: DOMPurify otherwise parses the configuration again on every call (each frame
  // of a stream).
  DOMPurify.setConfig(PURIFY);
  return md;
}

const PURIFY: PurifyConfig = {
  ALLOWED_ATTR: ["href", "title", "class", "start", "align", "colspan", "rowspan", "alt", "src"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object"],
};

export function renderMarkdown(source: string, mode: typeof codeMode = "now"): string {
  codeMode = mode;
  try {
    const html = parser().render(source);
    return DOMPurify.sanitize(html);
  } finally {
    codeMode = "now";
  }
}

const settled = new LruCache<string>(3000);

/** A finished message's HTML, rendered once: code blocks not coloured before carry
 * `data-lang` for `LazyHighlighter`. */
export function renderSettled(source: string): string {
  let html = settled.get(source);
  if (html === undefined) {
    html = renderMarkdown(source, "lazy");
    if (source.length < 200_000) settled.set(source, html);
  }
  return html;
}

/** Renders a small sample once, while the page waits for its first history page: that page
 * then meets rendering code that is already compiled (the first render of a page is several
 * times slower than the next). */
export function warmUp(): void {
  renderMarkdown("Warm **up** with `code`, _emphasis_ and https://example.com.\n\n- one\n- two\n\n1. three\n\n> quote\n", "lazy");
}

/** Offsets where each top-level block of `source` begins (line starts from markdown-it's map). */
export function blockStarts(source: string): number[] {
  const lineOffsets = [0];
  for (let i = source.indexOf("\n"); i >= 0; i = source.indexOf("\n", i + 1)) lineOffsets.push(i + 1);
  const starts: number[] = [];
  for (const token of parser().parse(source, {})) {
    if (token.level === 0 && token.map !== null && token.nesting >= 0) {
      const offset = lineOffsets[token.map[0]] ?? source.length;
      if (starts[starts.length - 1] !== offset) starts.push(offset);
    }
  }
  return starts;
}

/** Renders a growing markdown text into `container`, touching only its last block. */
export class IncrementalMarkdown {
  private committed = 0; // characters of `source` already rendered as finished blocks
  private committedSource = "";
  private tail: HTMLElement | undefined;
  private tailSource = "";

  constructor(
    private readonly container: HTMLElement,
    private readonly render: (source: string, mode: "now" | "streaming") => string = renderMarkdown,
  ) {}

  /** Renders `source` (the whole text so far). Returns how many blocks it (re)rendered. */
  update(source: string, final = false): number {
    // Text that does not extend what was rendered (a TTSR retry dropped it): start over.
    if (!source.startsWith(this.committedSource)) this.reset();
    const rest = source.slice(this.committed);
    const starts = blockStarts(rest);
    let rendered = 0;
    // A block is finished once the next one has begun for good: that one's first line is
    // complete, so it can no longer turn out to continue the block before ("3" after a
    // blank line is a paragraph, "3. c" the next item of the list above it).
    const last = starts[starts.length - 1] ?? 0;
    const settledStart = rest.indexOf("\n", last) >= 0;
    const finished = final ? starts.length : Math.max(0, starts.length - (settledStart ? 1 : 2));
    for (let i = 0; i < finished; i += 1) {
      const start = starts[i]!;
      const end = starts[i + 1] ?? rest.length;
      this.commit(rest.slice(start, end));
      rendered += 1;
    }
    if (finished > 0) {
      this.committed += starts[finished] ?? rest.length;
      this.committedSource = source.slice(0, this.committed);
    }
    const tailSource = final ? "" : source.slice(this.committed);
    if (tailSource !== this.tailSource) {
      this.tailSource = tailSource;
      if (tailSource.trim() === "") {
        this.tail?.remove();
        this.tail = undefined;
      } else {
        this.tail ??= this.container.appendChild(blockElement());
        this.tail.innerHTML = this.render(tailSource, "streaming");
        this.tail.dataset["state"] = "streaming";
        rendered += 1;
      }
    }
    if (final) {
      this.committed = source.length;
      this.committedSource = source;
    }
    return rendered;
  }

  private commit(blockSource: string): void {
    if (blockSource.trim() === "") return;
    const element = this.tail ?? blockElement();
    const drawn = this.tail !== undefined && this.tailSource === blockSource;
    this.tail = undefined;
    this.tailSource = "";
    if (!drawn) element.innerHTML = this.render(blockSource, "now");
    delete element.dataset["state"];
    if (element.parentNode !== this.container) this.container.appendChild(element);
  }

  reset(): void {
    this.container.replaceChildren();
    this.committed = 0;
    this.committedSource = "";
    this.tail = undefined;
    this.tailSource = "";
  }
}

function blockElement(): HTMLElement {
  const element = document.createElement("div");
  element.className = "md-block";
  return element;
}
