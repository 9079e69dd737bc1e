// The MCP Servers view: every server with its state, tools and prompts; restart, trust and
// untrust from each server's inline actions. Refreshed on `memento/mcp`.

import * as vscode from "vscode";
import { mcpNodes, type McpNode, trustQuestion } from "./mcpModel";
import { errorMessage, type MementoServer, type Ui } from "./ports";
import type { McpChangedParams, McpListResult, McpServerItem } from "./protocol";
import * as names from "./protocolNames";

export class McpTree implements vscode.TreeDataProvider<McpNode>, vscode.Disposable {
  private nodes: McpNode[] = [];
  private readonly changes = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changes.event;
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly server: MementoServer,
    private readonly ui: Ui,
  ) {
    this.subscriptions = [
      server.onNotification<McpChangedParams>(names.MCP_NOTIFICATION, () => void this.refresh(false)),
    ];
  }

  /** `start`: start the servers that may (they otherwise start at the first turn). */
  async refresh(start = false): Promise<void> {
    try {
      const list = await this.server.request<McpListResult>(names.MCP_LIST, { start });
      this.nodes = mcpNodes(list.servers, list.problems ?? []);
    } catch {
      this.nodes = []; // not running: the view's welcome text stands in
    }
    this.changes.fire();
  }

  async restart(node: McpNode): Promise<void> {
    await this.run(node, (server) => this.server.request(names.MCP_RESTART, { name: server.name }), "restart");
  }

  async trust(node: McpNode): Promise<void> {
    const server = node.server;
    if (server === undefined) return;
    const { message, detail } = trustQuestion(server);
    if ((await this.ui.confirm(message, detail, ["Trust and Start"])) !== "Trust and Start") return;
    await this.run(
      node,
      (s) => this.server.request(names.MCP_TRUST, { name: s.name, trusted: true, digest: s.digest }),
      "trust",
    );
  }

  async untrust(node: McpNode): Promise<void> {
    await this.run(node, (s) => this.server.request(names.MCP_TRUST, { name: s.name, trusted: false }), "untrust");
  }

  private async run(node: McpNode, action: (server: McpServerItem) => Promise<unknown>, what: string): Promise<void> {
    if (node.server === undefined) return;
    try {
      await action(node.server);
    } catch (error) {
      await this.ui.error(`Memento: cannot ${what} ${node.server.name}: ${errorMessage(error)}`);
    }
    await this.refresh(false);
  }

  getChildren(node?: McpNode): McpNode[] {
    return node ? (node.children ?? []) : this.nodes;
  }

  getTreeItem(node: McpNode): vscode.TreeItem {
    const collapsible = node.children?.length
      ? vscode.TreeItemCollapsibleState.Collapsed
      : vscode.TreeItemCollapsibleState.None;
    const item = new vscode.TreeItem(node.label, collapsible);
    item.id = node.id;
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.iconPath = new vscode.ThemeIcon(node.icon);
    item.contextValue = node.contextValue;
    return item;
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
    this.changes.dispose();
  }
}
