// The context meter in the status bar: visible while the server runs, updated from
// `memento/context`, spinning while a turn runs, coloured as the threshold nears.

import * as vscode from "vscode";
import type { CompactionState } from "./compactionModel";
import { meterView } from "./meterModel";
import type { MementoServer } from "./ports";
import type { ContextParams, ModeResult, TurnParams } from "./protocol";
import * as names from "./protocolNames";

export const METER_ID = "contextMeter";

export class ContextMeter implements vscode.Disposable {
  readonly item = vscode.window.createStatusBarItem(METER_ID, vscode.StatusBarAlignment.Right, 100);
  private context: ContextParams | undefined;
  private mode: ModeResult["mode"] = "act";
  private readonly turns = new Set<string>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly server: MementoServer,
    private readonly compactions: CompactionState,
  ) {
    this.item.name = "Memento Context";
    this.item.command = "memento.openContextView";
    this.subscriptions = [
      server.onNotification<ContextParams>(names.CONTEXT_NOTIFICATION, (params) => {
        this.context = params;
        this.render();
      }),
      server.onNotification<ModeResult>(names.MODE_NOTIFICATION, (params) => {
        this.mode = params.mode;
        this.render();
      }),
      server.onNotification<TurnParams>(names.TURN, (params) => {
        if (params.state === "started" || params.state === "retrying") this.turns.add(params.turnId);
        else this.turns.delete(params.turnId);
        this.render();
      }),
    ];
  }

  /** The server (re)started: ask for the context size now rather than wait for a turn. */
  async connected(): Promise<void> {
    this.turns.clear();
    try {
      this.context = await this.server.request<ContextParams>(names.CONTEXT);
    } catch {
      this.context = undefined;
    }
    try {
      this.mode = (await this.server.request<ModeResult>(names.MODE, {})).mode;
    } catch {
      this.mode = "act"; // a server without memento/mode always acts
    }
    this.render();
    this.item.show();
  }

  stopped(reason: string | undefined): void {
    this.turns.clear();
    this.item.text = "$(error) Memento";
    this.item.tooltip = reason ? `Memento is not running: ${reason}` : "Memento is not running";
    this.item.command = "memento.showServerLog";
    this.item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    this.item.show();
  }

  render(): void {
    const view = meterView(this.context, this.compactions.items[0], this.turns.size > 0, new Date(), this.mode);
    this.item.text = view.text;
    this.item.tooltip = new vscode.MarkdownString(view.tooltip, true);
    this.item.command = "memento.openContextView";
    this.item.backgroundColor =
      view.level === "ok" ? undefined : new vscode.ThemeColor(`statusBarItem.${view.level}Background`);
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
    this.item.dispose();
  }
}
