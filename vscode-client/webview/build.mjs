// Builds the page into ../media/panel.js, its code highlighter into ../media/panel-highlight.js,
// loaded after the first paint, and its inline start into ../media/panel-boot.js, which the
// extension puts in the page (+ panel.css copied from src/panel.css).
// `--watch` rebuilds on change; `--dev` keeps it unminified with inline source maps.
import { build, context } from "esbuild";
import { copyFile } from "node:fs/promises";

const dev = process.argv.includes("--dev");
const options = {
  entryPoints: { panel: "src/main.ts", "panel-highlight": "src/highlighter.ts", "panel-boot": "src/boot.ts" },
  outdir: "../media",
  bundle: true,
  format: "iife",
  target: "chrome120",
  minify: !dev,
  sourcemap: dev ? "inline" : false,
  legalComments: "none",
  // markdown-it needs only the entity decoder: the package's index would bring its encoder's
  // tables too (23 KiB the page parses at every load).
  alias: { entities: "entities/lib/decode.js" },
  logLevel: "info",
};
await copyFile("src/panel.css", "../media/panel.css");
if (process.argv.includes("--watch")) {
  await (await context(options)).watch();
} else {
  await build(options); // logs each file's size
}
