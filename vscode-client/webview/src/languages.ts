/**
 * The languages the code highlighter colours, and their aliases. The page checks a fence's
 * language against this list without loading the highlighter (`highlight.ts`); the
 * highlighter's own bundle (`highlighter.ts`) registers exactly these grammars.
 */
export const LANGUAGES = ["bash", "css", "diff", "go", "javascript", "json", "lua", "python", "rust", "typescript", "xml", "yaml"] as const;

export type Language = (typeof LANGUAGES)[number];

export const ALIASES: Readonly<Record<string, Language>> = {
  sh: "bash", shell: "bash", zsh: "bash", console: "bash",
  js: "javascript", jsx: "javascript", mjs: "javascript",
  ts: "typescript", tsx: "typescript",
  py: "python",
  html: "xml", svg: "xml",
  yml: "yaml", toml: "yaml",
};
