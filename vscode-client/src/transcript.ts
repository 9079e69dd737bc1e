// Until the chat panel lands, prompts sent from the palette and their streamed replies are
// written to the "Memento Chat" output channel.

import type * as vscode from "vscode";
import type { MementoServer } from "./ports";
import type { StreamParams, TurnParams } from "./protocol";
import * as names from "./protocolNames";

export class Transcript implements vscode.Disposable {
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    server: MementoServer,
    private readonly channel: vscode.OutputChannel,
  ) {
    this.subscriptions = [
      server.onNotification<StreamParams>(names.STREAM, (params) => {
        if (params.stream === "text") channel.append(params.delta);
        else if (params.stream === "tool" && params.toolName) channel.append(`\n[tool ${params.toolName}] `);
      }),
      server.onNotification<TurnParams>(names.TURN, (params) => {
        if (params.state === "retrying") channel.appendLine(`\n[retrying${params.rules ? `: ${params.rules.join(", ")}` : ""}]`);
        else if (params.state !== "started") channel.appendLine(`\n[turn ${params.state}${params.error ? `: ${params.error}` : ""}]\n`);
      }),
    ];
  }

  prompt(text: string): void {
    this.channel.appendLine(`> ${text}\n`);
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
  }
}
