// Small typed fakes of the language client, the editor and the webview for the panel's tests.
import type * as vscode from "vscode";
import type { Timer } from "../../src/panel/coalescer";
import type { EditorActions, PanelClient, PanelWebview } from "../../src/panel/host";
import type { ToPage } from "../../src/webviewProtocol";

export class FakeClient implements PanelClient {
  readonly requests: { method: string; param: unknown }[] = [];
  readonly handlers = new Map<string, (params: unknown) => void>();
  answers: Record<string, (param: unknown) => unknown> = {};

  sendRequest<R>(method: string, param: unknown): Promise<R> {
    this.requests.push({ method, param });
    const answer = this.answers[method];
    if (answer === undefined) return Promise.reject(new Error(`no answer for ${method}`));
    try {
      return Promise.resolve(answer(param) as R);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  onNotification(method: string, handler: (params: unknown) => void): vscode.Disposable {
    this.handlers.set(method, handler);
    return { dispose: () => this.handlers.delete(method) };
  }

  notify(method: string, params: unknown): void {
    this.handlers.get(method)?.(params);
  }
}

export class FakeEditor implements EditorActions {
  readonly calls: unknown[][] = [];
  async openDiff(path: string, checkpointId: string | undefined): Promise<void> {
    this.calls.push(["diff", path, checkpointId]);
  }
  async openFile(path: string, line: number | undefined): Promise<void> {
    this.calls.push(["file", path, line]);
  }
  async undoRelief(id: string): Promise<void> {
    this.calls.push(["undoRelief", id]);
  }
}

export class ManualTimer implements Timer {
  private callbacks = new Map<number, () => void>();
  private next = 1;
  set(callback: () => void): unknown {
    this.callbacks.set(this.next, callback);
    return this.next++;
  }
  clear(handle: unknown): void {
    this.callbacks.delete(handle as number);
  }
  fire(): void {
    const pending = [...this.callbacks.values()];
    this.callbacks.clear();
    pending.forEach((callback) => callback());
  }
}

export function fakeUri(path: string): vscode.Uri {
  return { path, toString: () => `https://file+.vscode-resource.test${path}` } as unknown as vscode.Uri;
}

export class FakeWebview implements PanelWebview {
  html = "";
  options: vscode.WebviewOptions = {};
  readonly cspSource = "https://file+.vscode-resource.test";
  readonly posted: ToPage[] = [];
  private listener: ((message: unknown) => void) | undefined;

  postMessage(message: unknown): Thenable<boolean> {
    this.posted.push(message as ToPage);
    return Promise.resolve(true);
  }
  asWebviewUri(uri: vscode.Uri): vscode.Uri {
    return uri;
  }
  onDidReceiveMessage: vscode.Event<unknown> = (listener) => {
    this.listener = listener as (message: unknown) => void;
    return { dispose: () => (this.listener = undefined) };
  };
  fromPage(message: unknown): void {
    this.listener?.(message);
  }
}
