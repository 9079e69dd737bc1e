// Type-level check (run by `tsc`): vscode-languageclient's client is a PanelClient, and the
// provider fits VS Code's WebviewViewProvider.
import type * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import type { PanelClient } from "../../src/panel/host";
import type { ChatPanelProvider } from "../../src/panel/provider";

export function asPanelClient(client: LanguageClient): PanelClient {
  return client;
}
export function asViewProvider(provider: ChatPanelProvider): vscode.WebviewViewProvider {
  return provider;
}
