// The Checkpoints view (label, time, the files changed since, each one a diff of the
// checkpoint's content against the workspace) and the `memento-checkpoint:` documents
// those diffs read the checkpoint side from.

import * as vscode from "vscode";
import { changedFiles, checkpointDescription, checkpointLabel } from "./checkpointModel";
import { errorMessage, type MementoServer } from "./ports";
import type { CheckpointFileResult, CheckpointItem, CheckpointListResult } from "./protocol";
import * as names from "./protocolNames";

export const CHECKPOINT_SCHEME = "memento-checkpoint";

export type CheckpointNode =
  | { kind: "checkpoint"; item: CheckpointItem }
  | { kind: "file"; item: CheckpointItem; path: string };

/** `memento-checkpoint:/src/a.py?<checkpoint id>`: a file as that checkpoint's snapshot holds it. */
export function checkpointUri(checkpointId: string, path: string): vscode.Uri {
  return vscode.Uri.from({ scheme: CHECKPOINT_SCHEME, path: `/${path}`, query: checkpointId });
}

export class CheckpointDocuments implements vscode.TextDocumentContentProvider {
  private readonly changes = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changes.event;

  constructor(private readonly server: MementoServer) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const path = uri.path.replace(/^\//, "");
    try {
      const file = await this.server.request<CheckpointFileResult>(names.CHECKPOINT_FILE, {
        checkpointId: uri.query,
        path,
      });
      if (!file.exists) return "";
      return file.binary ? `(${path} is a binary file at this checkpoint)` : (file.content ?? "");
    } catch (error) {
      return `(Memento could not read ${path} at checkpoint ${uri.query}: ${errorMessage(error)})`;
    }
  }
}

export class CheckpointTree implements vscode.TreeDataProvider<CheckpointNode>, vscode.Disposable {
  items: CheckpointItem[] = [];
  private readonly changes = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changes.event;
  private readonly subscription: vscode.Disposable;

  constructor(
    private readonly server: MementoServer,
    private readonly root: () => vscode.Uri | undefined,
  ) {
    this.subscription = server.onNotification(names.CHECKPOINTS_NOTIFICATION, () => void this.refresh());
  }

  async refresh(): Promise<void> {
    try {
      this.items = (await this.server.request<CheckpointListResult>(names.CHECKPOINT_LIST)).checkpoints;
    } catch {
      this.items = [];
    }
    this.changes.fire();
  }

  getChildren(node?: CheckpointNode): CheckpointNode[] {
    if (node === undefined) return this.items.map((item) => ({ kind: "checkpoint", item }));
    if (node.kind === "checkpoint") return node.item.files.map((path) => ({ kind: "file", item: node.item, path }));
    return [];
  }

  getTreeItem(node: CheckpointNode): vscode.TreeItem {
    const now = new Date();
    if (node.kind === "checkpoint") {
      const { item } = node;
      const tree = new vscode.TreeItem(
        checkpointLabel(item),
        item.files.length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
      );
      tree.id = `checkpoint:${item.id}`;
      tree.description = checkpointDescription(item, now);
      tree.tooltip = new vscode.MarkdownString(
        `**${checkpointLabel(item)}**\n\n${item.createdAt}\n\n${changedFiles(item)}`,
      );
      tree.iconPath = new vscode.ThemeIcon(item.kind === "rewind" ? "history" : "milestone");
      tree.contextValue = "checkpoint";
      return tree;
    }
    const tree = new vscode.TreeItem(node.path, vscode.TreeItemCollapsibleState.None);
    tree.id = `checkpoint:${node.item.id}:${node.path}`;
    const workspace = this.workspaceUri(node.path);
    if (workspace) tree.resourceUri = workspace;
    tree.contextValue = "checkpointFile";
    tree.command = { command: "memento.checkpoints.diffItem", title: "Diff with Workspace", arguments: [node] };
    return tree;
  }

  private workspaceUri(path: string): vscode.Uri | undefined {
    const root = this.root();
    return root ? vscode.Uri.joinPath(root, ...path.split("/")) : undefined;
  }

  /** A file: its diff; a checkpoint: every changed file's diff in one multi-file view. */
  async diff(node: CheckpointNode): Promise<void> {
    const label = checkpointLabel(node.item);
    const pairs = (node.kind === "file" ? [node.path] : node.item.files).flatMap((path) => {
      const right = this.workspaceUri(path);
      return right ? [{ path, left: checkpointUri(node.item.id, path), right }] : [];
    });
    if (!pairs.length) {
      void vscode.window.showInformationMessage(`Memento: no file changed since “${label}”.`);
      return;
    }
    const [only] = pairs;
    if (pairs.length === 1 && only !== undefined) {
      const { path, left, right } = only;
      await vscode.commands.executeCommand("vscode.diff", left, right, `${path} (checkpoint “${label}” ↔ workspace)`);
      return;
    }
    await vscode.commands.executeCommand(
      "vscode.changes",
      `Since checkpoint “${label}”`,
      pairs.map(({ left, right }) => [right, left, right]),
    );
  }

  dispose(): void {
    this.subscription.dispose();
    this.changes.dispose();
  }
}
