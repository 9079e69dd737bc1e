// Builds the page into ../media/panel.js (+ panel.css copied from src/panel.css).
// `--watch` rebuilds on change; `--dev` keeps it unminified with inline source maps.
import { build, context } from "esbuild";
import { copyFile } from "node:fs/promises";

const dev = process.argv.includes("--dev");
const options = {
  entryPoints: ["src/main.ts"],
  outfile: "../media/panel.js",
  bundle: true,
  format: "iife",
  target: "chrome120",
  minify: !dev,
  sourcemap: dev ? "inline" : false,
  legalComments: "none",
  metafile: true,
  logLevel: "info",
};
await copyFile("src/panel.css", "../media/panel.css");
if (process.argv.includes("--watch")) {
  await (await context(options)).watch();
} else {
  const result = await build(options);
  const bytes = Object.values(result.metafile.outputs).reduce((sum, o) => sum + o.bytes, 0);
  console.log(`panel.js: ${(bytes / 1024).toFixed(1)} KiB`);
}
