// Serves the built page (../../media) on 127.0.0.1 with a stand-in for `acquireVsCodeApi`,
// under the same CSP the extension sets, and opens it in Debian's Chromium via playwright-core.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, extname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
// PANEL_MEDIA: another build of the page (to compare builds in one sitting).
export const MEDIA = process.env.PANEL_MEDIA ?? join(here, "..", "..", "media");
export const OUTPUT = join(here, "..", "test-output");
const TYPES = { ".js": "text/javascript", ".css": "text/css", ".html": "text/html" };

export const CHROMIUM_ARGS = [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
];

/** The same placeholders the extension fills (src/panel/html.ts), with the stand-in scripts
 * (`preludes`: paths served here, or `{ file }` to put inline, as VS Code puts its own
 * `acquireVsCodeApi` script inline in the page) ahead of the page's own, under the same nonce.
 * The benchmarks' stand-in runs the extension side in a worker, which the CSP then allows
 * from the origin. */
export async function harnessPage(origin, preludes = ["/fake-vscode.js"], { worker = false } = {}) {
  const { nonce, csp } = harnessPolicy(origin, { worker });
  const template = await readFile(join(MEDIA, "panel.html"), "utf8");
  const bootScript = await readFile(join(MEDIA, "panel-boot.js"), "utf8").catch(() => ""); // an older build has none
  const html = fill(template, { nonce, csp, bootScript, scriptUri: `${origin}/panel.js`, styleUri: `${origin}/panel.css` });
  const script = async (prelude) =>
    typeof prelude === "string"
      ? `<script nonce="${nonce}" src="${origin}${prelude}"></script>`
      : `<script nonce="${nonce}">${await readFile(prelude.file, "utf8")}</script>`;
  const scripts = (await Promise.all(preludes.map(script))).join("\n  ");
  // Ahead of the page's own scripts, as VS Code puts its script first in the head.
  return html.replace(/<script/, (tag) => `${scripts}\n  ${tag}`);
}

export const FAKE_VSCODE = join(here, "fake-vscode.js");

/** A fresh nonce and the CSP the extension sets for it. */
export function harnessPolicy(origin, { worker = false } = {}) {
  const nonce = "harness" + Math.random().toString(36).slice(2);
  const csp = [
    "default-src 'none'", `script-src 'nonce-${nonce}'`, `style-src ${origin}`,
    `img-src ${origin} data:`, `font-src ${origin}`, "base-uri 'none'", "form-action 'none'",
    ...(worker ? [`worker-src ${origin}`] : []),
  ].join("; ");
  return { nonce, csp };
}

/** Placeholders filled as the extension fills them: `{{name}}` attribute-escaped, `{{{name}}}`
 * (a script's text) as it is. */
export function fill(template, values) {
  return template.replace(/\{\{\{(\w+)\}\}\}|\{\{(\w+)\}\}/g, (_, script, name) => (script !== undefined ? values[script] : values[name].replace(/"/g, "&quot;")));
}

/** `extra`: more files to serve, by path (the benchmarks' scripts), or a function of the
 * origin that makes the body (the benchmarks' page). */
export async function startServer(extra = {}) {
  let origin = "";
  const server = createServer(async (request, response) => {
    const path = new URL(request.url ?? "/", origin).pathname;
    try {
      const file = extra[path];
      const body = typeof file === "function" ? await file(origin)
        : file !== undefined ? await readFile(file)
        : path === "/" ? await harnessPage(origin)
        : path === "/fake-vscode.js" ? await readFile(join(here, "fake-vscode.js"))
        : await readFile(join(MEDIA, path.slice(1)));
      response.writeHead(200, { "content-type": TYPES[extname(path) || ".html"] ?? "application/octet-stream" });
      response.end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
  return { origin, close: () => new Promise((resolve) => server.close(resolve)) };
}

export async function launch() {
  const profile = await mkdtemp(join(tmpdir(), "memento-panel-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 420, height: 760 },
  });
  // Nothing leaves the machine: only the harness origin is served.
  await context.route(/^(?!http:\/\/127\.0\.0\.1)/, (route) => route.abort());
  return {
    context,
    close: async () => {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** The page's posts so far, and a way to answer. */
export function panel(page) {
  return {
    posted: () => page.evaluate(() => window.__posted),
    send: (message) => page.evaluate((m) => window.postMessage(m, "*"), message),
    notices: (...notices) => page.evaluate((n) => window.postMessage({ type: "notices", notices: n }, "*"), notices),
    /** Waits until the page posted a message of `type` for which `predicate(m, arg)` holds
     * (`predicate` runs here, on each new post: the page's CSP forbids compiling it there). */
    waitForPost: async (type, predicate = () => true, arg = null) => {
      for (;;) {
        const posted = await page.evaluate(() => window.__posted);
        const found = posted.find((m) => m.type === type && predicate(m, arg));
        if (found !== undefined) return found;
        await page.waitForFunction((seen) => window.__posted.length > seen, posted.length);
      }
    },
    frame: () => page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))),
  };
}
