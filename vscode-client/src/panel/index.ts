/**
 * The one call the extension makes to get the chat panel: `registerChatPanel(context, client)`
 * after its language client is created. It registers the webview view `memento.chat` (to be
 * declared in package.json under the `memento` activity-bar container) and returns what
 * `memento.openContextView` should do (the extension owns that command:
 * `api.setContextViewOpener(panel.openContextView)`).
 */
import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { checkpointUri } from "../checkpointTree";
import { PanelBridge } from "./bridge";
import type { EditorActions, PanelClient } from "./host";
import { ChatPanelProvider, VIEW_ID } from "./provider";


function workspaceFile(path: string): vscode.Uri | undefined {
  const folder = vscode.workspace.workspaceFolders?.[0];
  return folder === undefined ? undefined : vscode.Uri.joinPath(folder.uri, path);
}

export const vscodeEditor: EditorActions = {
  async openDiff(path, checkpointId) {
    const file = workspaceFile(path);
    if (file === undefined) return;
    if (checkpointId === undefined) {
      await vscode.window.showTextDocument(file, { preview: true });
      return;
    }
    await vscode.commands.executeCommand(
      "vscode.diff",
      checkpointUri(checkpointId, path), // served by the extension's CheckpointDocuments
      file,
      `${path} (checkpoint ↔ now)`,
    );
  },
  async openFile(path, line) {
    const file = workspaceFile(path);
    if (file === undefined) return;
    const position = new vscode.Position(Math.max(0, (line ?? 1) - 1), 0);
    await vscode.window.showTextDocument(file, { selection: new vscode.Range(position, position) });
  },
  async undoRelief(id) {
    // The Compactions view's command: one undo, one "does not fit" dialog, for both places.
    await vscode.commands.executeCommand("memento.compactions.undo", { itemId: id });
  },
};

export function registerChatPanel(
  context: vscode.ExtensionContext,
  client: PanelClient,
  log: vscode.LogOutputChannel | { warn(message: string): void } = console,
): { provider: ChatPanelProvider; openContextView: () => Thenable<unknown> } {
  const bridge = new PanelBridge(client, vscodeEditor, log, {
    set: (callback, ms) => setTimeout(callback, ms),
    clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
  });
  const provider = new ChatPanelProvider(bridge, {
    media: vscode.Uri.joinPath(context.extensionUri, "media"),
    joinPath: (base, ...parts) => vscode.Uri.joinPath(base, ...parts),
    readText: async (uri) => new TextDecoder().decode(await vscode.workspace.fs.readFile(uri)),
    random: (bytes) => randomBytes(bytes),
  });
  context.subscriptions.push(
    provider,
    vscode.window.registerWebviewViewProvider(VIEW_ID, provider, {
      webviewOptions: { retainContextWhenHidden: false },
    }),
  );
  return {
    provider,
    openContextView: () => provider.showContext(() => vscode.commands.executeCommand(`${VIEW_ID}.focus`)),
  };
}
