/**
 * Markdown for the model's words: markdown-it renders, DOMPurify sanitizes, highlight.js
 * colours code with classes only (no eval, no inline styles: it runs under the page's CSP).
 *
 * While a reply streams, `IncrementalMarkdown` re-renders only its last top-level block:
 * every block before it is complete (a later block has begun) and keeps its DOM, so a
 * half-finished fence or list grows in place instead of the whole answer being redrawn.
 */
import DOMPurify, { type Config as PurifyConfig } from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import lua from "highlight.js/lib/languages/lua";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import MarkdownIt from "markdown-it";

const LANGUAGES = { bash, css, diff, go, javascript, json, lua, python, rust, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);
hljs.registerAliases(["sh", "shell", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml", "toml"], { languageName: "yaml" });

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

const md: MarkdownIt = new MarkdownIt({
  html: false, // the model's raw HTML is shown as text
  linkify: true,
  breaks: false,
  highlight(code, lang): string {
    const language = lang.trim().toLowerCase();
    if (language !== "" && hljs.getLanguage(language) !== undefined) {
      try {
        return `<pre class="code"><code class="hljs language-${escapeHtml(language)}">${
          hljs.highlight(code, { language, ignoreIllegals: true }).value
        }</code></pre>`;
      } catch {
        // fall through to plain text
      }
    }
    return `<pre class="code"><code class="hljs">${escapeHtml(code)}</code></pre>`;
  },
});

const PURIFY: PurifyConfig = {
  ALLOWED_ATTR: ["href", "title", "class", "start", "align", "colspan", "rowspan", "alt", "src"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object"],
};

export function renderMarkdown(source: string): string {
  return DOMPurify.sanitize(md.render(source), PURIFY) as unknown as string;
}

/** Offsets where each top-level block of `source` begins (line starts from markdown-it's map). */
export function blockStarts(source: string): number[] {
  const lineOffsets = [0];
  for (let i = source.indexOf("\n"); i >= 0; i = source.indexOf("\n", i + 1)) lineOffsets.push(i + 1);
  const starts: number[] = [];
  for (const token of md.parse(source, {})) {
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
    private readonly render: (source: string) => string = renderMarkdown,
  ) {}

  /** Renders `source` (the whole text so far). Returns how many blocks it (re)rendered. */
  update(source: string, final = false): number {
    // Text that does not extend what was rendered (a TTSR retry dropped it): start over.
    if (!source.startsWith(this.committedSource)) this.reset();
    const rest = source.slice(this.committed);
    const starts = blockStarts(rest);
    let rendered = 0;
    // Every block but the last is finished once the next one has begun.
    const finished = final ? starts.length : starts.length - 1;
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
        this.tail.innerHTML = this.render(tailSource);
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
    if (!drawn) element.innerHTML = this.render(blockSource);
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
