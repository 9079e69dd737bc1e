/**
 * The code highlighter, a bundle of its own (`media/panel-highlight.js`): highlight.js with
 * the grammars of `languages.ts`. It is most of the page's script by size and none of it is
 * needed to show the first rows (settled code is coloured only when seen), so the page loads
 * it after its first paint (`loadHighlighter` in `highlight.ts`) and finds it on `globalThis`.
 */
import hljs from "highlight.js/lib/core";
import type { LanguageFn } from "highlight.js";
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
import type { Highlighter } from "./highlight";
import { ALIASES, type Language } from "./languages";

const GRAMMARS: Record<Language, LanguageFn> = { bash, css, diff, go, javascript, json, lua, python, rust, typescript, xml, yaml };
for (const [name, grammar] of Object.entries(GRAMMARS)) hljs.registerLanguage(name, grammar);
for (const [alias, name] of Object.entries(ALIASES)) hljs.registerAliases(alias, { languageName: name });

const highlighter: Highlighter = {
  // Classes only (no inline styles), escaped by highlight.js.
  highlight: (code, language) => hljs.highlight(code, { language, ignoreIllegals: true }).value,
  // A grammar is compiled on its first use: tens of milliseconds the page spends in idle time.
  warm: (language) => void hljs.highlight("", { language, ignoreIllegals: true }),
};
(globalThis as { mementoHighlighter?: Highlighter }).mementoHighlighter = highlighter;
