// What the user hears when the language server does not come up, and whether a server whose
// connection closed is started again. A server that never answered `initialize` is not
// restarted (it would fail the same way five times over): its start failed, and that gets one
// message naming the setting to set. One that ran and then crashed is restarted a few times,
// as vscode-languageclient does.

import { describe, type ServerCommand } from "./serverCommand";

export const COMMAND_SETTING = "memento.server.command";

/** vscode-jsonrpc's codes for a request the connection dropped: the server process went away. */
const CONNECTION_LOST = new Set([-32099, -32098, -32097, -32096]);

/** The one message for a server that did not start. `remote`: the extension runs on another
 * machine than the window (Remote, code-server), where this setting is a Remote setting. */
export function startFailure(command: ServerCommand, error: { message: string; code?: unknown }, remote = false): string {
  const lost = typeof error.code === "number" && CONNECTION_LOST.has(error.code);
  const why = lost ? "it exited before it answered (Memento: Show Server Log has its output)" : error.message;
  const where = remote ? "in the Remote settings" : "in your user settings";
  if (command.source === "python") {
    return (
      `Memento: \`memento\` is not on the PATH that VS Code runs extensions with, and \`${describe(command)}\` did not start: ${why}. ` +
      `Set "${COMMAND_SETTING}" ${where} to the memento program (the path \`which memento\` prints where you installed it).`
    );
  }
  if (command.source === "bundled") {
    return (
      `Memento: the server bundled with the extension did not start (${describe(command)}): ${why}. ` +
      `Reinstall the extension, or set "memento.server.importStrategy" to "fromEnvironment" ${where} to run a \`memento\` you installed.`
    );
  }
  return `Memento: the language server did not start (${describe(command)}): ${why}. Set "${COMMAND_SETTING}" ${where} to the program that runs \`memento lsp\`.`;
}

export type CloseDecision = { restart: true } | { restart: false; message?: string };

export class RestartPolicy {
  private readonly restarts: number[] = [];

  constructor(
    private readonly now: () => number = Date.now,
    readonly maxRestarts = 4,
    readonly windowMs = 3 * 60_000,
  ) {}

  /** The connection closed; `ran`: the server had answered `initialize`. No message when it
   * never ran: the start's own failure says what to set. */
  closed(ran: boolean): CloseDecision {
    if (!ran) return { restart: false };
    const now = this.now();
    while (this.restarts.length > 0 && now - (this.restarts[0] ?? now) > this.windowMs) this.restarts.shift();
    if (this.restarts.length >= this.maxRestarts) {
      return {
        restart: false,
        message: `The Memento server stopped ${this.maxRestarts + 1} times in ${this.windowMs / 60_000} minutes and is not started again: Memento: Show Server Log says why, Memento: Restart Server starts it.`,
      };
    }
    this.restarts.push(now);
    return { restart: true };
  }
}
