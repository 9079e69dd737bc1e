import { describe, expect, it } from "vitest";
import { PanelBridge } from "../../src/panel/bridge";
import { contentSecurityPolicy, fillTemplate } from "../../src/panel/html";
import { ChatPanelProvider, type PanelView } from "../../src/panel/provider";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { FakeClient, FakeEditor, FakeWebview, ManualTimer, fakeUri } from "./fakes";

const template = readFileSync(fileURLToPath(new URL("../../media/panel.html", import.meta.url)), "utf8");
const BOOT = 'acquireVsCodeApi().postMessage({ type: "ready" }); if (1 < 2 && "&") {}';

function setup() {
  const client = new FakeClient();
  const timer = new ManualTimer();
  const bridge = new PanelBridge(client, new FakeEditor(), { warn: () => {} }, timer);
  const provider = new ChatPanelProvider(bridge, {
    media: fakeUri("/ext/media"),
    joinPath: (base, ...parts) => fakeUri([base.path, ...parts].join("/")),
    readText: async (uri) => (uri.path.endsWith("/panel-boot.js") ? BOOT : template),
    random: (n) => new Uint8Array(n).fill(7),
  });
  const webview = new FakeWebview();
  let dispose: () => void = () => {};
  const view: PanelView = { webview, visible: true, onDidDispose: (listener) => { dispose = listener as () => void; return { dispose: () => {} }; } };
  return { client, timer, provider, webview, view, dispose: () => dispose() };
}

describe("ChatPanelProvider", () => {
  it("loads the page from media/ with a nonce'd script and a strict CSP", async () => {
    const { provider, webview, view } = setup();
    await provider.resolveWebviewView(view);
    expect(webview.options.enableScripts).toBe(true);
    expect(webview.options.localResourceRoots?.map((u) => u.path)).toEqual(["/ext/media"]);
    expect(webview.html).not.toMatch(/\{\{/);
    // Two scripts, both in the head under the nonce: the inline start (panel-boot.js, as it
    // is) ahead of the stylesheet, and the page's script deferred: fetched with the
    // stylesheet, run once the document is parsed.
    const head = webview.html.slice(0, webview.html.indexOf("</head>"));
    const nonce = /<script defer nonce="([^"]+)" src="([^"]+)"><\/script>/.exec(head);
    expect(nonce?.[2]).toBe("https://file+.vscode-resource.test/ext/media/panel.js");
    expect(head).toContain(`<script nonce="${nonce?.[1]}">${BOOT}</script>`);
    expect(head.indexOf(BOOT)).toBeLessThan(head.indexOf("<link rel=\"stylesheet\""));
    expect(webview.html.match(/<script/g)).toHaveLength(2);
    expect(webview.html).toContain(`script-src 'nonce-${nonce?.[1]}'`);
    expect(webview.html).toContain("default-src 'none'");
    expect(webview.html).not.toContain("unsafe-inline");
    expect(webview.html).toContain('href="https://file+.vscode-resource.test/ext/media/panel.css"');
  });

  it("forwards to the page while it lives, and stops when VS Code disposes it", async () => {
    const { client, timer, provider, webview, view, dispose } = setup();
    await provider.resolveWebviewView(view);
    client.notify("memento/transcript/patch", { sessionId: "s", seq: 1, ops: [{ op: "text", item: "r", key: "r/0.0", text: "a" }] });
    timer.fire();
    expect(webview.posted).toHaveLength(1);
    dispose();
    client.notify("memento/transcript/patch", { sessionId: "s", seq: 2, ops: [{ op: "text", item: "r", key: "r/0.0", text: "b" }] });
    timer.fire();
    expect(webview.posted).toHaveLength(1);
  });

  it("opens the context view on the page once it is ready", async () => {
    const { client, provider, webview, view } = setup();
    client.answers["memento/checkpoint/list"] = () => ({ checkpoints: [] });
    let revealed = 0;
    await provider.showContext(async () => { revealed += 1; await provider.resolveWebviewView(view); });
    expect(revealed).toBe(1);
    webview.fromPage({ type: "ready" });
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(webview.posted).toContainEqual({ type: "showContext" });
  });
});

describe("the page template", () => {
  it("escapes values and refuses a missing one", () => {
    expect(fillTemplate('<a x="{{v}}">', { v: '"><script>' })).toBe('<a x="&quot;&gt;&lt;script&gt;">');
    expect(() => fillTemplate("{{missing}}", {})).toThrow(/no value for \{\{missing\}\}/);
  });

  it("puts a script's text in as it is, unless it could end its script element", () => {
    expect(fillTemplate("<script>{{{s}}}</script>", { s: 'a && b < "c"' })).toBe('<script>a && b < "c"</script>');
    expect(() => fillTemplate("<script>{{{s}}}</script>", { s: "x</SCRIPT><script>evil()" })).toThrow(/could end its script/);
    expect(() => fillTemplate("<script>{{{s}}}</script>", { s: "<!-- x" })).toThrow(/could end its script/);
    expect(() => fillTemplate("{{{missing}}}", {})).toThrow(/no value for \{\{missing\}\}/);
  });

  it("allows scripts only by nonce", () => {
    expect(contentSecurityPolicy("vscode-resource:", "N")).toBe(
      "default-src 'none'; script-src 'nonce-N'; style-src vscode-resource:; img-src vscode-resource: data:; font-src vscode-resource:; base-uri 'none'; form-action 'none'",
    );
  });
});
