/**
 * The chat panel as a webview view in Memento's activity-bar container.
 *
 * The page is `media/panel.html` with `media/panel.js` and `media/panel.css` (built from
 * `webview/`), and `media/panel-boot.js` inline. Hidden views are not retained: the page
 * keeps its small UI state with `getState/setState` and reloads the timeline from
 * `memento/transcript` when shown again, which keeps a long session's memory in the extension
 * host bounded.
 */
import type * as vscode from "vscode";
import type { ToPage } from "../webviewProtocol";
import type { PanelBridge } from "./bridge";
import type { PanelWebview } from "./host";
import { contentSecurityPolicy, fillTemplate, makeNonce } from "./html";

export const VIEW_ID = "memento.chat";

export interface ProviderDeps {
  /** The extension's `media/` folder. */
  readonly media: vscode.Uri;
  readonly joinPath: (base: vscode.Uri, ...parts: string[]) => vscode.Uri;
  readonly readText: (uri: vscode.Uri) => Promise<string>;
  readonly random: (bytes: number) => Uint8Array;
}

/** What `resolveWebviewView` gets, narrowed to what the panel touches. */
export interface PanelView {
  readonly webview: PanelWebview;
  readonly visible: boolean;
  onDidDispose: vscode.Event<void>;
  show?(preserveFocus?: boolean): void;
}

export class ChatPanelProvider implements vscode.Disposable {
  private view: PanelView | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private pendingContext = false;

  constructor(
    private readonly bridge: PanelBridge,
    private readonly deps: ProviderDeps,
  ) {}

  async resolveWebviewView(view: PanelView): Promise<void> {
    this.view = view;
    const { webview } = view;
    webview.options = { enableScripts: true, localResourceRoots: [this.deps.media] };
    webview.html = await this.html(webview);
    const post = (message: ToPage): void => void webview.postMessage(message);
    this.disposables.push(
      webview.onDidReceiveMessage((message: unknown) => {
        if (isReady(message) && this.pendingContext) {
          this.pendingContext = false;
          queueMicrotask(() => this.bridge.send({ type: "showContext" }));
        }
        void this.bridge.receive(message);
      }),
      view.onDidDispose(() => {
        if (this.view === view) {
          this.view = undefined;
          this.bridge.attach(undefined);
        }
      }),
    );
    this.bridge.attach(post);
  }

  /** `memento.openContextView`: reveal the panel with its context view open. */
  showContext(reveal: () => Thenable<unknown>): Promise<void> {
    if (this.view !== undefined) {
      this.view.show?.(true);
      this.bridge.send({ type: "showContext" });
      return Promise.resolve();
    }
    this.pendingContext = true;
    return Promise.resolve(reveal()).then(() => undefined);
  }

  async html(webview: Pick<PanelWebview, "asWebviewUri" | "cspSource">): Promise<string> {
    const { media, joinPath, readText, random } = this.deps;
    const nonce = makeNonce(random);
    const template = await readText(joinPath(media, "panel.html"));
    return fillTemplate(template, {
      nonce,
      bootScript: await readText(joinPath(media, "panel-boot.js")),
      csp: contentSecurityPolicy(webview.cspSource, nonce),
      scriptUri: webview.asWebviewUri(joinPath(media, "panel.js")).toString(),
      styleUri: webview.asWebviewUri(joinPath(media, "panel.css")).toString(),
    });
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
    this.disposables.length = 0;
    this.bridge.dispose();
  }
}

function isReady(message: unknown): boolean {
  return typeof message === "object" && message !== null && (message as { type?: unknown }).type === "ready";
}
