// The `Ui` port on the real VS Code window.

import * as vscode from "vscode";
import type { ProgressUi } from "./modelSetup";
import type { PickItem } from "./ports";

export const TEXT_SCHEME = "memento-text";

/** Read-only documents with text Memento made (summaries, candidate rules). */
export class TextDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly changes = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changes.event;

  put(name: string, content: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: TEXT_SCHEME, path: `/${name}` });
    this.texts.set(uri.toString(), content);
    this.changes.fire(uri);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }
}

export function vscodeUi(texts: TextDocuments): ProgressUi {
  return {
    progress(title, work) {
      return Promise.resolve(
        vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title, cancellable: true }, (progress, cancel) => {
          // VS Code's bar takes increments; the server reports the total.
          let shown = 0;
          return work((message, percentage) => {
            const increment = percentage === undefined ? undefined : Math.max(0, percentage - shown);
            shown = percentage ?? shown;
            progress.report({ message, increment });
          }, cancel);
        }),
      );
    },
    async pick<T>(items: PickItem<T>[], options: { title: string; placeholder?: string }) {
      const chosen = await vscode.window.showQuickPick(items, {
        title: options.title,
        placeHolder: options.placeholder,
        matchOnDescription: true,
        matchOnDetail: true,
      });
      return chosen?.value;
    },
    input: (options) =>
      Promise.resolve(
        vscode.window.showInputBox({
          title: options.title,
          prompt: options.prompt,
          placeHolder: options.placeholder,
          value: options.value,
          ignoreFocusOut: true,
        }),
      ),
    confirm: (message, detail, buttons) =>
      Promise.resolve(vscode.window.showWarningMessage(message, { modal: true, detail }, ...buttons)),
    info: (message, ...actions) => Promise.resolve(vscode.window.showInformationMessage(message, ...actions)),
    warn: (message, ...actions) => Promise.resolve(vscode.window.showWarningMessage(message, ...actions)),
    error: (message, ...actions) => Promise.resolve(vscode.window.showErrorMessage(message, ...actions)),
    async showText(title, content, language) {
      const document = await vscode.workspace.openTextDocument(texts.put(title, content));
      await vscode.languages.setTextDocumentLanguage(document, language);
      await vscode.window.showTextDocument(document, { preview: true });
    },
    async openSettings(query) {
      await vscode.commands.executeCommand("workbench.action.openSettings", query);
    },
  };
}
