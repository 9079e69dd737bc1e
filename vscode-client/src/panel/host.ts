/**
 * The slices of the `vscode` API and of the language client that the chat panel uses,
 * named here so the panel's modules take them as parameters: the extension passes the real
 * objects (`registerChatPanel`), unit tests pass small typed fakes.
 */
import type * as vscode from "vscode";

/** What the panel needs of `vscode-languageclient`'s `LanguageClient` (checked against it in
 * the type tests). */
export interface PanelClient {
  sendRequest<R>(method: string, param: unknown): Promise<R>;
  onNotification(method: string, handler: (params: unknown) => void): vscode.Disposable;
}

/** The editor actions a card can ask for. */
export interface EditorActions {
  /** The checkpoint's copy of `path` against the workspace file, in VS Code's diff editor. */
  openDiff(path: string, checkpointId: string | undefined): Promise<void>;
  /** `path` in an editor, the cursor on `line` (1-based, as the server's notes say it). */
  openFile(path: string, line: number | undefined): Promise<void>;
  /** Undo the relief step `id` as the Compactions view does (it asks what to leave out when
   * the restored context would not fit). */
  undoRelief(id: string): Promise<void>;
}

/** The webview surface the panel posts to and hears from (`vscode.Webview`'s subset). */
export type PanelWebview = Pick<
  vscode.Webview,
  "postMessage" | "onDidReceiveMessage" | "asWebviewUri" | "cspSource"
> & { html: string; options: vscode.WebviewOptions };

export interface Log {
  warn(message: string): void;
}
