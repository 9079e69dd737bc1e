// The Compactions view: the step running now and the session's compactions; selecting one
// opens its audit (what it took out, what stayed, the summary) as a read-only markdown
// document; a step can be undone from its context menu.

import * as vscode from "vscode";
import type { ProgressValue } from "./client";
import { CompactionState, compactionNodes, summaryDocument, type TreeNode } from "./compactionModel";
import { errorMessage, type MementoServer, type Ui } from "./ports";
import type { CompactionListResult, CompactionParams, ReliefAudit, ReliefUndoResult } from "./protocol";
import * as names from "./protocolNames";
import { auditDocument } from "./reliefAudit";

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

  /** The step's audit, as the server gives it (its summary alone from a server without audits). */
  async openSummary(id: string): Promise<void> {
    const item = this.state.find(id);
    if (item === undefined) {
      await this.ui.error(`Memento: compaction ${id} is no longer on the active branch.`);
      return;
    }
    let text = summaryDocument(item);
    try {
      text = auditDocument(await this.server.request<ReliefAudit>(names.RELIEF_AUDIT, { id }));
    } catch {
      // An older server: the summary it listed stands in.
    }
    try {
      await this.ui.showText(`compaction-${item.id}.md`, text, "markdown");
    } catch (error) {
      await this.ui.error(`Memento: cannot open the summary: ${errorMessage(error)}`);
    }
  }

  /** Undo a step; when the restored context would not fit, the server says why and what to
   * leave out, and the user may ask again with that left out. */
  async undo(id: string): Promise<void> {
    let drop: string[] = [];
    for (;;) {
      let result: ReliefUndoResult;
      try {
        result = await this.server.request<ReliefUndoResult>(names.RELIEF_UNDO, drop.length ? { id, drop } : { id });
      } catch (error) {
        await this.ui.error(`Memento: cannot undo: ${errorMessage(error)}`);
        return;
      }
      if (result.undone) {
        await this.refresh();
        void this.ui.info(`Memento: undone; context ${result.tokensBefore.toLocaleString("en-US")} → ${result.tokensAfter.toLocaleString("en-US")} tokens.`);
        return;
      }
      const droppable = result.droppable ?? [];
      const listed = droppable.map((d) => `${d.tool ?? d.role}${d.file ? ` ${d.file}` : ""} (${d.tokens.toLocaleString("en-US")} tokens)`);
      const action = drop.length || !droppable.length ? undefined : "Leave Them Out and Undo";
      const message = `Memento: ${result.why ?? "not undone"}${listed.length ? ` To leave out: ${listed.join(", ")}.` : ""}`;
      const chosen = action ? await this.ui.warn(message, action) : await this.ui.warn(message);
      if (chosen !== action || action === undefined) return;
      drop = droppable.map((d) => d.entryId);
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
