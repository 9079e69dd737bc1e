// Memento for VS Code: the language client, the command palette, the context meter and the
// Chat, Checkpoints, Compactions and MCP Servers views in Memento's activity-bar container (`memento`).

import * as vscode from "vscode";
import { CheckpointDocuments, CHECKPOINT_SCHEME, type CheckpointNode, CheckpointTree } from "./checkpointTree";
import { MementoClient, type Middleware } from "./client";
import * as commands from "./commands";
import { CompactionTree } from "./compactionTree";
import type { TreeNode } from "./compactionModel";
import type { McpNode } from "./mcpModel";
import { McpTree } from "./mcpTree";
import { ContextMeter } from "./meter";
import { registerChatPanel } from "./panel";
import type { MementoServer } from "./ports";
import * as names from "./protocolNames";
import { setUpModel } from "./modelSetup";
import { interceptCommand } from "./quickFixes";
import { TEXT_SCHEME, TextDocuments, vscodeUi } from "./vscodeUi";

/** What `memento.openContextView` (the meter's click) does: the chat panel's context view
 * once the panel is registered, the Memento side bar before. */
let openContextView: () => Thenable<unknown> = () =>
  vscode.commands.executeCommand("workbench.view.extension.memento");

export interface MementoApi {
  server: MementoServer;
  /** The chat panel takes over the meter's click with its context view. */
  setContextViewOpener(open: () => Thenable<unknown>): void;
}

export async function activate(context: vscode.ExtensionContext): Promise<MementoApi> {
  const output = vscode.window.createOutputChannel("Memento", { log: true });
  const texts = new TextDocuments();
  const ui = vscodeUi(texts);
  let deps: commands.Deps | undefined;
  // Quick fixes run server commands; two of them need the user's say first.
  const middleware: Middleware = { executeCommand: interceptCommand(() => deps) };
  const client = new MementoClient(output, context.extension.packageJSON, middleware, context.extensionPath);
  deps = { server: client, ui };
  const live = deps;
  const compactions = new CompactionTree(client, ui, client.onProgress);
  const checkpoints = new CheckpointTree(client, () => vscode.workspace.workspaceFolders?.[0]?.uri);
  const mcp = new McpTree(client, ui);
  const meter = new ContextMeter(client, compactions.state);
  const panel = registerChatPanel(
    context,
    {
      sendRequest: <R>(method: string, param: unknown) => client.request<R>(method, (param ?? {}) as object),
      onNotification: (method, handler) => client.onNotification(method, handler),
    },
    output,
  );
  openContextView = panel.openContextView;

  const register = (id: string, run: (...args: never[]) => unknown) =>
    vscode.commands.registerCommand(id, run as (...args: unknown[]) => unknown);
  context.subscriptions.push(
    output,
    client,
    compactions,
    checkpoints,
    meter,
    mcp,
    vscode.workspace.registerTextDocumentContentProvider(TEXT_SCHEME, texts),
    vscode.workspace.registerTextDocumentContentProvider(CHECKPOINT_SCHEME, new CheckpointDocuments(client)),
    vscode.window.createTreeView("memento.checkpoints", { treeDataProvider: checkpoints, showCollapseAll: true }),
    vscode.window.createTreeView("memento.compactions", { treeDataProvider: compactions }),
    vscode.window.createTreeView("memento.mcpServers", { treeDataProvider: mcp, showCollapseAll: true }),
    register("memento.sendPrompt", async (text?: string) => {
      const prompt = typeof text === "string" ? text : await ui.input({ title: "Memento: Send Prompt", prompt: "What should the agent do?" });
      if (!prompt?.trim()) return undefined;
      const turnId = await commands.sendPrompt(live, prompt);
      // The reply streams into the chat panel: bring it into view.
      if (turnId !== undefined) void vscode.commands.executeCommand("memento.chat.focus");
      return turnId;
    }),
    register("memento.createCheckpoint", () => commands.createCheckpoint(live)),
    register("memento.rewind", (id?: string) => commands.rewind(live, typeof id === "string" ? id : undefined)),
    register("memento.undoRewind", () => commands.undoRewind(live)),
    register("memento.compactContext", () => commands.compactContext(live)),
    register("memento.pin", () => commands.pin(live)),
    register("memento.unpin", () => commands.unpin(live)),
    register("memento.stop", () => commands.stop(live)),
    register("memento.newSession", () => commands.newSession(live)),
    register("memento.openSession", () => commands.openSession(live)),
    register("memento.toggleAdvisor", () => commands.toggleAdvisor(live)),
    register("memento.makeRule", () => commands.makeRule(live)),
    register("memento.askMode", () => commands.setMode(live, "ask")),
    register("memento.actMode", () => commands.setMode(live, "act")),
    register("memento.trustWorkspace", () => commands.trustWorkspace(live)),
    register("memento.showSettings", () => commands.showSettings(live)),
    register("memento.showServerLog", () => {
      output.info(client.describeServer());
      output.show(true);
    }),
    register("memento.restartServer", () => client.restart()),
    register("memento.setUpModel", () => setUpModel({ server: client, ui })),
    register("memento.openContextView", () => openContextView()),
    register("memento.checkpoints.refresh", () => checkpoints.refresh()),
    register("memento.checkpoints.rewindItem", (node: CheckpointNode) => commands.rewind(live, node.item.id)),
    register("memento.checkpoints.diffItem", (node: CheckpointNode) => checkpoints.diff(node)),
    register("memento.compactions.refresh", () => compactions.refresh()),
    register("memento.compactions.openSummary", (node: TreeNode) =>
      node.itemId === undefined ? undefined : compactions.openSummary(node.itemId),
    ),
    register("memento.compactions.undo", (node: TreeNode) =>
      node.itemId === undefined ? undefined : compactions.undo(node.itemId),
    ),
    register("memento.mcp.refresh", () => mcp.refresh(true)),
    register("memento.mcp.restart", (node: McpNode) => mcp.restart(node)),
    register("memento.mcp.trust", (node: McpNode) => mcp.trust(node)),
    register("memento.mcp.untrust", (node: McpNode) => mcp.untrust(node)),
    // Glob rules follow the file in front of the user.
    vscode.window.onDidChangeActiveTextEditor((editor) => sendActiveDocument(client, editor)),
    client.onDidChangeRunning((running) => {
      if (running) {
        sendActiveDocument(client, vscode.window.activeTextEditor);
        void meter.connected();
        void checkpoints.refresh();
        void compactions.refresh();
        void mcp.refresh(false);
      } else {
        meter.stopped(client.startError);
      }
    }),
    compactions.onDidRefresh.event(() => meter.render()),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("memento.server")) void client.restart();
      else if (event.affectsConfiguration("memento")) void client.pushSettings();
    }),
    // The server reads `workspaceTrusted` at initialize: start it again with the new answer.
    vscode.workspace.onDidGrantWorkspaceTrust(() => void client.restart()),
  );
  void client.start();
  return {
    server: client,
    setContextViewOpener(open) {
      openContextView = open;
    },
  };
}

function sendActiveDocument(client: MementoClient, editor: vscode.TextEditor | undefined): void {
  const uri = editor?.document.uri;
  // An output channel or a diff's checkpoint side is not "the file in front": keep the last one.
  if (uri !== undefined && uri.scheme !== "file") return;
  client.notify(names.ACTIVE_DOCUMENT, { uri: uri?.toString() ?? null });
}

export function deactivate(): void {
  // The client is in the context's subscriptions: VS Code disposes (stops) it.
}
