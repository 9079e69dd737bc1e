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
  ProtocolError,
  type FromPage,
  type Notice,
  type ReliefStep,
  type RewindMode,
  type RunningTurn,
  type ToPage,
} from "../webviewProtocol";
import { Coalescer, LiveTurn, type Timer } from "./coalescer";
import type { EditorActions, Log, PanelClient } from "./host";

/** Memento's LSP names (ARCHITECTURE §5) that the panel uses. */
export const LSP = {
  prompt: "memento/prompt",
  abort: "memento/abort",
  steer: "memento/steer",
  history: "memento/history",
  sessionList: "memento/session/list",
  sessionNew: "memento/session/new",
  sessionOpen: "memento/session/open",
  compact: "memento/compact",
  subagentAbort: "memento/subagent/abort",
  checkpointList: "memento/checkpoint/list",
  executeCommand: "workspace/executeCommand",
} as const;

/** Notification method → the `kind` the page knows it by. */
export const FORWARDED = {
  "memento/stream": "stream",
  "memento/turn": "turn",
  "memento/tool": "tool",
  "memento/tool/progress": "toolProgress",
  "memento/context": "context",
  "memento/compaction": "compaction",
  "memento/advisor": "advisor",
  "memento/subagent": "subagent",
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

const TTSR_INJECTION = "ttsr-injection";

/** What `memento/history` answers (read defensively: entries are checked one by one). */
interface HistoryPage {
  entries?: unknown;
  nextCursor?: string | null;
  runningTurn?: { turnId?: unknown; entryId?: unknown } | null;
  /** The page's relief steps by entry id, with the server's figures. */
  relief?: unknown;
}

/** The page's relief steps as a list (absent when it has none); the page checks each. */
function reliefSteps(relief: unknown): ReliefStep[] | undefined {
  const steps = isObject(relief) ? Object.values(relief).filter(isObject) : [];
  return steps.length > 0 ? (steps as ReliefStep[]) : undefined;
}

export class PanelBridge implements vscode.Disposable {
  private readonly coalescer: Coalescer;
  private readonly live = new LiveTurn();
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
      this.subscriptions.push(
        // A subagent's own turn events carry `subagentId`: the page nests them under the
        // parent's `task` card, out of the conversation's transcript.
        client.onNotification(method, (params) => this.hear({ ...asObject(params), kind })),
      );
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
    this.live.record(notice);
    if (this.post !== undefined) this.coalescer.push(notice);
    if (notice.kind === "turn" && notice.state === "retrying" && notice.rules?.length && notice.subagentId === undefined) {
      void this.fetchReminder(notice.turnId, notice.rules);
    }
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
      case "history": {
        const page = await client.sendRequest<HistoryPage>(LSP.history, {
          cursor: message.cursor,
          limit: message.limit,
        });
        const entries = Array.isArray(page.entries) ? page.entries.filter(isObject) : [];
        this.send({
          type: "history",
          requestId: message.requestId,
          entriesJson: JSON.stringify(entries),
          nextCursor: page.nextCursor ?? undefined,
          tail: message.tail,
          running: message.tail ? this.running(page.runningTurn) : undefined,
          relief: reliefSteps(page.relief),
        });
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
      case "openDiff":
        await this.editor.openDiff(message.path, message.checkpointId);
        return;
      case "openFile":
        await this.editor.openFile(message.path, message.line);
        return;
    }
  }

  private currentSession: string | undefined;

  /** The running turn for a page that opens mid-turn: what the server says of it (where its
   * entries start) and what was heard of it so far (the page replaces its stored steps with
   * these, so none shows twice). The server's answer and the notices it sent before it
   * arrive in order, so the notices hold at least what the entries do. */
  private running(server: HistoryPage["runningTurn"]): RunningTurn | undefined {
    const turnId = this.live.running;
    if (turnId === undefined) return undefined;
    const entryId = server?.turnId === turnId && typeof server.entryId === "string" ? server.entryId : undefined;
    return { turnId, entryId, notices: this.live.snapshot() };
  }

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

  /** The server appends the rules' reminder to the session right after the retry notice;
   * the newest TTSR injection in the history tail is that reminder. */
  private async fetchReminder(turnId: string, rules: string[]): Promise<void> {
    try {
      const page = await this.client.sendRequest<{ entries?: unknown[] }>(LSP.history, { limit: 20 });
      const entries = (page.entries ?? []).filter(isObject).reverse();
      const injection = entries.find(
        (e) => e["type"] === "custom_message" && e["customType"] === TTSR_INJECTION,
      );
      const content = injection?.["content"];
      if (typeof content === "string") this.hear({ kind: "reminder", turnId, rules, text: content });
    } catch (error) {
      if (!(error instanceof ProtocolError)) this.log.warn(`chat panel: no reminder: ${String(error)}`);
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
