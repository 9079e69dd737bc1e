// The Compactions view: the step running now and the session's compactions; selecting one
// opens its summary as a read-only markdown document.

import * as vscode from "vscode";
import type { ProgressValue } from "./client";
import { CompactionState, compactionNodes, summaryDocument, type TreeNode } from "./compactionModel";
import { errorMessage, type MementoServer, type Ui } from "./ports";
import type { CompactionListResult, CompactionParams } from "./protocol";
import * as names from "./protocolNames";

export class CompactionTree implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  readonly state = new CompactionState();
  private readonly changes = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changes.event;
  /** Fired after the list was fetched again (the meter's tooltip names the latest). */
  readonly onDidRefresh = new vscode.EventEmitter<void>();
  private readonly tokens = new Set<string | number>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly server: MementoServer,
    private readonly ui: Ui,
    progress: vscode.Event<ProgressValue>,
  ) {
    this.subscriptions = [
      server.onNotification<CompactionParams>(names.COMPACTION_NOTIFICATION, (params) => {
        if (this.state.onCompaction(params)) void this.refresh();
        else this.changes.fire();
      }),
      server.onNotification(names.SESSION_NOTIFICATION, () => void this.refresh()),
      server.onNotification(names.CHECKPOINTS_NOTIFICATION, () => void this.refresh()),
      progress((event) => this.onProgress(event)),
    ];
  }

  private onProgress({ token, value }: ProgressValue): void {
    if (value.kind === "begin" && value.title?.startsWith("Memento:")) this.tokens.add(token);
    if (!this.tokens.has(token)) return;
    if (value.kind === "end") this.tokens.delete(token);
    else this.state.onProgress(value.message, value.percentage);
    this.changes.fire();
  }

  async refresh(): Promise<void> {
    try {
      const list = await this.server.request<CompactionListResult>(names.COMPACTION_LIST);
      this.state.items = list.compactions;
    } catch {
      this.state.items = []; // not running: the view's welcome text stands in
    }
    this.changes.fire();
    this.onDidRefresh.fire();
  }

  async openSummary(id: string): Promise<void> {
    const item = this.state.find(id);
    if (item === undefined) {
      await this.ui.error(`Memento: compaction ${id} is no longer on the active branch.`);
      return;
    }
    try {
      await this.ui.showText(`compaction-${item.id}.md`, summaryDocument(item), "markdown");
    } catch (error) {
      await this.ui.error(`Memento: cannot open the summary: ${errorMessage(error)}`);
    }
  }

  getChildren(node?: TreeNode): TreeNode[] {
    return node ? [] : compactionNodes(this.state, new Date());
  }

  getTreeItem(node: TreeNode): vscode.TreeItem {
    const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
    item.id = node.id;
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.iconPath = new vscode.ThemeIcon(node.icon);
    item.contextValue = node.contextValue;
    if (node.itemId !== undefined) {
      item.command = { command: "memento.compactions.openSummary", title: "Open Summary", arguments: [node] };
    }
    return item;
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
    this.changes.dispose();
    this.onDidRefresh.dispose();
  }
}
