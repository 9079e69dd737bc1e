/**
 * Code highlighting with highlight.js: classes only (no eval, no inline styles), so it runs
 * under the page's CSP and takes its colours from the theme.
 *
 * Highlighting is the costliest part of rendering a code block, so settled messages do it
 * lazily: their blocks are drawn as plain text and coloured when they come near the viewport
 * (`LazyHighlighter`). Results are kept by language and code, so a block scrolled away and
 * back is coloured at once.
 */
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
import { LruCache } from "./cache";

const LANGUAGES = { bash, css, diff, go, javascript, json, lua, python, rust, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);
hljs.registerAliases(["sh", "shell", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml", "toml"], { languageName: "yaml" });

export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/** The language name highlight.js knows `lang` by, or undefined. */
export function knownLanguage(lang: string): string | undefined {
  const language = lang.trim().toLowerCase();
  return language !== "" && hljs.getLanguage(language) !== undefined ? language : undefined;
}

const highlighted = new LruCache<string>(2000);
const keyOf = (code: string, language: string): string => `${language}\u0000${code}`;

/** Highlighted HTML for `code` (escaped by highlight.js), remembered for next time unless
 * `remember` is false (a block still streaming changes every frame). */
export function highlight(code: string, language: string, remember = true): string {
  const key = keyOf(code, language);
  let html = highlighted.get(key);
  if (html === undefined) {
    try {
      html = hljs.highlight(code, { language, ignoreIllegals: true }).value;
    } catch {
      html = escapeHtml(code);
    }
    if (remember) highlighted.set(key, html);
  }
  return html;
}

/** The highlighted HTML of `code` if it was highlighted before. */
export function highlightedBefore(code: string, language: string): string | undefined {
  return highlighted.get(keyOf(code, language));
}

/** Compiles each language's grammar in idle time, one at a time (the first block of a
 * language otherwise pays for it: tens of milliseconds, in the middle of a stream). */
export function warmLanguages(whenIdle: (task: () => void) => void): void {
  const pending = Object.keys(LANGUAGES);
  const next = (): void => {
    const language = pending.shift();
    if (language === undefined) return;
    hljs.highlight("", { language, ignoreIllegals: true });
    whenIdle(next);
  };
  whenIdle(next);
}

/** Colours `code[data-lang]` blocks when they come within a screen of the viewport. */
export class LazyHighlighter {
  private readonly observer: IntersectionObserver | undefined;

  constructor(root: HTMLElement | null) {
    this.observer =
      typeof IntersectionObserver === "undefined"
        ? undefined
        : new IntersectionObserver((entries) => this.seen(entries), { root, rootMargin: "100% 0px" });
  }

  /** Blocks highlighted before are coloured now; the others when they are seen. */
  watch(container: ParentNode): void {
    for (const code of container.querySelectorAll<HTMLElement>("code[data-lang]")) {
      const before = highlightedBefore(code.textContent ?? "", code.dataset["lang"] ?? "");
      if (before !== undefined) colour(code, before);
      else if (this.observer === undefined) colour(code, highlight(code.textContent ?? "", code.dataset["lang"] ?? ""));
      else this.observer.observe(code);
    }
  }

  private seen(entries: IntersectionObserverEntry[]): void {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const code = entry.target as HTMLElement;
      this.observer?.unobserve(code);
      if (code.isConnected && code.dataset["lang"] !== undefined) colour(code, highlight(code.textContent ?? "", code.dataset["lang"]));
    }
  }
}

function colour(code: HTMLElement, html: string): void {
  code.innerHTML = html;
  delete code.dataset["lang"];
}
