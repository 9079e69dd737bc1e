/**
 * The chat panel's traffic: server notifications into the page (checked, coalesced), the
 * page's requests out to the server (checked, answered with typed replies).
 *
 * Knows nothing of how the webview is made (`provider.ts`); the page may come and go
 * (hidden views are disposed to keep memory low) while the bridge lives on with the client.
 */
import type * as vscode from "vscode";
import {
  parseFromPage,
  parseNotice,
  type FromPage,
  type Notice,
  type RewindMode,
  type ToPage,
} from "../webviewProtocol";
import * as names from "../protocolNames";
import { Coalescer, type Timer } from "./coalescer";
import type { EditorActions, Log, PanelClient } from "./host";

/** Memento's LSP names (ARCHITECTURE §5) that the panel uses. */
export const LSP = {
  prompt: "memento/prompt",
  abort: "memento/abort",
  steer: "memento/steer",
  transcript: "memento/transcript",
  sessionList: "memento/session/list",
  sessionNew: "memento/session/new",
  sessionOpen: "memento/session/open",
  compact: "memento/compact",
  reliefAudit: names.RELIEF_AUDIT,
  pin: names.PIN,
  unpin: names.UNPIN,
  subagentAbort: "memento/subagent/abort",
  checkpointList: "memento/checkpoint/list",
  executeCommand: "workspace/executeCommand",
} as const;

/** Notification method → the `kind` the page knows it by. */
export const FORWARDED = {
  "memento/transcript/patch": "patch",
  "memento/turn": "turn",
  "memento/tool/progress": "toolProgress",
  "memento/context": "context",
} as const satisfies Record<string, Notice["kind"]>;
export const CHECKPOINTS_CHANGED = "memento/checkpoints";

export const ADVISOR_COMMANDS = {
  apply: "memento.advisor.apply",
  dismiss: "memento.advisor.dismiss",
  toRule: "memento.advisor.toRule",
} as const;
export const REWIND_COMMAND = "memento.checkpoint.rewind";

/** The rewind command's argument: `mode` is the server's own `all | conversation | files`. */
export function rewindArguments(checkpointId: string, mode: RewindMode): Record<string, unknown> {
  return { checkpointId, mode };
}

export class PanelBridge implements vscode.Disposable {
  private readonly coalescer: Coalescer;
  private readonly subscriptions: vscode.Disposable[] = [];
  private post: ((message: ToPage) => void) | undefined;

  constructor(
    private readonly client: PanelClient,
    private readonly editor: EditorActions,
    private readonly log: Log,
    timer: Timer,
  ) {
    this.coalescer = new Coalescer((notices) => this.post?.({ type: "notices", notices }), timer);
    for (const [method, kind] of Object.entries(FORWARDED)) {
      this.subscriptions.push(client.onNotification(method, (params) => this.hear({ ...asObject(params), kind })));
    }
    this.subscriptions.push(
      client.onNotification(CHECKPOINTS_CHANGED, () => void this.refreshCheckpoints()),
    );
  }

  /** A page is listening (or none, with `undefined`: notices are dropped, not queued). */
  attach(post: ((message: ToPage) => void) | undefined): void {
    this.post = post;
    if (post === undefined) this.coalescer.discard();
  }

  /** Posts to the page at once, after anything queued (so replies keep their order). */
  send(message: ToPage): void {
    this.coalescer.flush();
    this.post?.(message);
  }

  hear(raw: unknown): void {
    let notice: Notice;
    try {
      notice = parseNotice(raw);
    } catch (error) {
      this.log.warn(`chat panel: dropped a notification: ${String(error)}`);
      return;
    }
    if (this.post !== undefined) this.coalescer.push(notice);
  }

  /** A message from the page: checked, then carried out; failures go back as `failed`. */
  async receive(raw: unknown): Promise<void> {
    let message: FromPage;
    try {
      message = parseFromPage(raw);
    } catch (error) {
      this.log.warn(`chat panel: ignored a message from the page: ${String(error)}`);
      return;
    }
    const requestId = "requestId" in message ? message.requestId : undefined;
    try {
      await this.handle(message);
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      this.send({ type: "failed", requestId, op: message.type, message: text });
    }
  }

  private async handle(message: FromPage): Promise<void> {
    const { client } = this;
    switch (message.type) {
      case "ready":
        await this.refreshCheckpoints();
        return;
      case "prompt": {
        const { turnId } = await client.sendRequest<{ turnId: string }>(LSP.prompt, {
          text: message.text,
        });
        this.send({ type: "prompted", requestId: message.requestId, turnId });
        return;
      }
      case "steer": {
        const result = await client.sendRequest<{ delivered: boolean; turnId?: string }>(
          LSP.steer,
          { text: message.text },
        );
        if (!result.delivered && result.turnId !== undefined) {
          this.send({ type: "prompted", requestId: message.requestId, turnId: result.turnId });
        }
        return;
      }
      case "abort":
        await client.sendRequest(LSP.abort, {});
        return;
      case "abortSubagent":
        await client.sendRequest(LSP.subagentAbort, { id: message.id });
        return;
      case "transcript": {
        // The server sends the patches a page holds before the page: `send` posts those first.
        const page = await client.sendRequest<unknown>(LSP.transcript, {
          cursor: message.cursor,
          limit: message.limit,
          newestFirst: false,
        });
        this.send({ type: "transcript", requestId: message.requestId, pageJson: JSON.stringify(page) });
        return;
      }
      case "listSessions": {
        const { sessions } = await client.sendRequest<{ sessions: unknown[] }>(LSP.sessionList, {});
        this.send({
          type: "sessions",
          requestId: message.requestId,
          sessions: sessions as never,
          current: this.currentSession,
        });
        return;
      }
      case "newSession":
      case "openSession": {
        const { id } = await client.sendRequest<{ id: string }>(
          message.type === "newSession" ? LSP.sessionNew : LSP.sessionOpen,
          message.type === "openSession" ? { id: message.id } : {},
        );
        this.currentSession = id;
        this.send({ type: "sessionChanged", id });
        await this.refreshCheckpoints();
        return;
      }
      case "advisor":
        await this.command(ADVISOR_COMMANDS[message.action], { noteId: message.noteId });
        return;
      case "rewind": {
        const result = await this.command<{ restored?: string[]; conflicts?: string[] }>(
          REWIND_COMMAND,
          rewindArguments(message.checkpointId, message.mode),
        );
        // The conversation reloads first: its reset would clear the result the page shows.
        if (message.mode !== "files") this.send({ type: "sessionChanged", id: this.currentSession });
        this.send({
          type: "rewound",
          restored: result?.restored ?? [],
          conflicts: result?.conflicts ?? [],
        });
        return;
      }
      case "compact":
        await client.sendRequest(LSP.compact, {});
        return;
      case "audit": {
        const audit = await client.sendRequest<unknown>(LSP.reliefAudit, { id: message.id });
        this.send({ type: "audit", requestId: message.requestId, id: message.id, audit: asObject(audit) });
        return;
      }
      case "undoRelief":
        try {
          await this.editor.undoRelief(message.id);
        } finally {
          // The page's Undo waits for this: a declined undo ("does not fit") leaves it as it was.
          this.send({ type: "undoSettled", id: message.id });
        }
        return;
      case "pin":
      case "unpin":
        try {
          // Pinned or not reaches the page as the transcript's patch; a refusal as `failed`.
          await client.sendRequest(message.type === "pin" ? LSP.pin : LSP.unpin, { entryId: message.entryId });
        } finally {
          this.send({ type: "pinSettled", entryId: message.entryId });
        }
        return;
      case "openDiff":
        await this.editor.openDiff(message.path, message.checkpointId);
        return;
      case "openFile":
        await this.editor.openFile(message.path, message.line);
        return;
    }
  }

  private currentSession: string | undefined;

  private command<R>(command: string, argument: Record<string, unknown>): Promise<R | undefined> {
    return this.client.sendRequest<R | undefined>(LSP.executeCommand, {
      command,
      arguments: [argument],
    });
  }

  private async refreshCheckpoints(): Promise<void> {
    if (this.post === undefined) return;
    try {
      const result = await this.client.sendRequest<unknown>(LSP.checkpointList, {});
      this.hear({ ...asObject(result), kind: "checkpoints" });
    } catch (error) {
      this.log.warn(`chat panel: could not list checkpoints: ${String(error)}`);
    }
  }

  dispose(): void {
    this.coalescer.discard();
    for (const subscription of this.subscriptions) subscription.dispose();
    this.subscriptions.length = 0;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function asObject(value: unknown): Record<string, unknown> {
  return isObject(value) ? value : {};
}
