/**
 * Code highlighting with highlight.js: classes only (no eval, no inline styles), so it runs
 * under the page's CSP and takes its colours from the theme.
 *
 * The highlighter is a script of its own (`highlighter.ts`), loaded after the page's first
 * paint (`loadHighlighter`): until it is there, code is drawn as plain text marked
 * `data-lang`, and coloured when it arrives.
 *
 * Highlighting is the costliest part of rendering a code block, so settled messages do it
 * lazily: their blocks are drawn as plain text and coloured when they come near the viewport
 * (`LazyHighlighter`). Results are kept by language and code, so a block scrolled away and
 * back is coloured at once.
 */
import { LruCache } from "./cache";
import { ALIASES, LANGUAGES } from "./languages";

/** What the highlighter's bundle provides. */
export interface Highlighter {
  /** Highlighted HTML for `code` (escaped). */
  highlight(code: string, language: string): string;
  /** Compiles `language`'s grammar now rather than at its first block. */
  warm(language: string): void;
}

const loaded = (): Highlighter | undefined => (globalThis as { mementoHighlighter?: Highlighter }).mementoHighlighter;

// The page's own script element, while it runs: the highlighter is next to it, and is let in
// by the same nonce (the CSP is unchanged).
const pageScript = typeof document === "undefined" ? null : (document.currentScript as HTMLScriptElement | null);
let loading: Promise<boolean> | undefined;

/** Loads the highlighter (once); resolves with whether it is there. */
export function loadHighlighter(): Promise<boolean> {
  if (loaded() !== undefined) return Promise.resolve(true);
  if (pageScript === null) return Promise.resolve(false);
  loading ??= new Promise((resolve) => {
    const script = document.createElement("script");
    script.nonce = pageScript.nonce ?? "";
    script.src = new URL("panel-highlight.js", pageScript.src).href;
    script.onload = () => resolve(loaded() !== undefined);
    script.onerror = () => {
      console.warn("memento panel: the code highlighter did not load; code stays plain");
      resolve(false);
    };
    document.head.append(script);
  });
  return loading;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

const KNOWN = new Set<string>([...LANGUAGES, ...Object.keys(ALIASES)]);

/** The language name the highlighter knows `lang` by, or undefined. */
export function knownLanguage(lang: string): string | undefined {
  const language = lang.trim().toLowerCase();
  return KNOWN.has(language) ? language : undefined;
}

const highlighted = new LruCache<string>(2000);
const keyOf = (code: string, language: string): string => `${language}\u0000${code}`;

/** Highlighted HTML for `code` (escaped), remembered for next time unless `remember` is
 * false (a block still streaming changes every frame); undefined while the highlighter is
 * not loaded. */
export function highlight(code: string, language: string, remember = true): string | undefined {
  const key = keyOf(code, language);
  let html = highlighted.get(key);
  if (html === undefined) {
    const highlighter = loaded();
    if (highlighter === undefined) return undefined;
    try {
      html = highlighter.highlight(code, language);
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
  const highlighter = loaded();
  if (highlighter === undefined) return;
  const pending: string[] = [...LANGUAGES];
  const next = (): void => {
    const language = pending.shift();
    if (language === undefined) return;
    highlighter.warm(language);
    whenIdle(next);
  };
  whenIdle(next);
}

/** Colours `code[data-lang]` blocks when they come within a screen of the viewport. */
export class LazyHighlighter {
  private readonly observer: IntersectionObserver | undefined;

  constructor(private readonly root: HTMLElement | null) {
    this.observer =
      typeof IntersectionObserver === "undefined"
        ? undefined
        : new IntersectionObserver((entries) => this.seen(entries), { root, rootMargin: "100% 0px" });
  }

  /** Blocks highlighted before are coloured now; the others when they are seen. */
  watch(container: ParentNode): void {
    for (const code of container.querySelectorAll<HTMLElement>("code[data-lang]")) {
      const language = code.dataset["lang"] ?? "";
      const html = this.observer === undefined ? highlight(code.textContent ?? "", language) : highlightedBefore(code.textContent ?? "", language);
      if (html !== undefined) colour(code, html);
      else this.observer?.observe(code);
    }
  }

  /** The highlighter arrived: every block drawn plain so far is looked at again. */
  loaded(): void {
    this.observer?.disconnect();
    if (this.root !== null) this.watch(this.root);
  }

  private seen(entries: IntersectionObserverEntry[]): void {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const code = entry.target as HTMLElement;
      const language = code.dataset["lang"];
      if (!code.isConnected || language === undefined) {
        this.observer?.unobserve(code);
        continue;
      }
      const html = highlight(code.textContent ?? "", language);
      if (html === undefined) continue; // not loaded yet: `loaded()` looks again
      this.observer?.unobserve(code);
      colour(code, html);
    }
  }
}

function colour(code: HTMLElement, html: string): void {
  code.innerHTML = html;
  delete code.dataset["lang"];
}
