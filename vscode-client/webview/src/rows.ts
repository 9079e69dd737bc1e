/** The timeline's rows: what the page shows, one virtual-list item each, drawn from the
 * transcript's items (`itemRows.ts`). Plain data. */
import type { ReliefAudit } from "../../src/protocol";

export type ToolStatus = "streaming" | "pending" | "running" | "done" | "error" | "cancelled";

export interface ToolPart {
  kind: "tool";
  id: string;
  name: string;
  /** What the card calls it when not its name: an MCP tool's `server › tool`. */
  label?: string;
  /** While it runs: how far it got, as its server said (`3/10 · message`). */
  progress?: string;
  args: string;
  status: ToolStatus;
  output?: string;
  /** The output is the start of the result; the session holds it whole. */
  outputTruncated?: boolean;
  /** A `task` call's subagents, nested under its card. */
  children?: ChildCard[];
  /** Its result's pin (absent until the result is stored, and on a subagent's cards). */
  pin?: PinState;
}

/** What a row's Pin button shows: the entry it pins, pinned or not as the server's
 * transcript says, and the pin or unpin of it on its way (none: nothing asked). */
export interface PinState {
  entryId: string;
  pinned: boolean;
  asking?: PinAction;
}

export type PinAction = "pin" | "unpin";

export type Part = { kind: "text"; text: string } | { kind: "thinking"; text: string } | ToolPart;

export interface TtsrMark {
  rules: string[];
  attempt?: number;
  reminder?: string;
  /** Index into `parts` where the rewritten attempt was dropped. */
  at: number;
}

interface RowBase {
  key: string;
  /** Bumped on every change, so a view knows to redraw. */
  version: number;
}

export interface UserRow extends RowBase {
  kind: "user";
  text: string;
  steer?: boolean;
  pin?: PinState;
}

export interface AssistantRow extends RowBase {
  kind: "assistant";
  parts: Part[];
  marks: TtsrMark[];
  state: "streaming" | "done" | "aborted" | "error";
  error?: string;
  /** The prompt to send again from the error's retry action. */
  retryText?: string;
  /** The context the turn's last model request carried (for the context chart). */
  context?: { tokens: number; stable: number };
  /** The reply's pin: the stored message its text ends with (absent until stored). */
  pin?: PinState;
}

export interface AdvisorRow extends RowBase {
  kind: "advisor";
  noteId: string;
  note: string;
  severity: "nit" | "concern" | "blocker";
  channel: string;
  path?: string;
  /** 1-based, as the server says it (the line Problems shows). */
  line?: number;
  resolved?: "apply" | "dismiss" | "toRule";
}

export interface CompactionRow extends RowBase {
  kind: "compaction";
  level: "prune" | "shake" | "compact";
  /** `skipped`: it would not have made the context smaller; nothing changed (`why`). */
  phase: "started" | "finished" | "failed" | "skipped";
  tokensBefore: number;
  tokensAfter?: number;
  summarizer?: "model" | "structured" | "provider";
  /** The provider that wrote the summary itself (`summarizer` "provider"), when known. */
  provider?: string;
  summary?: string;
  error?: string;
  why?: string;
  /** The step's audit id (`memento/relief/audit`); absent on a step that has none. */
  audit?: string;
  /** The undo that took this step back, as the server's transcript says. */
  undoneBy?: string;
  /** The step this one undoes (an undo is a relief step too). */
  undoes?: string;
  /** The divider is open on its audit, and what the page holds of that audit. */
  expanded?: boolean;
  auditState?: AuditState;
}

/** The audit of a relief step as the page holds it: asked, served, or refused. */
export type AuditState =
  | { state: "loading" }
  | { state: "ready"; audit: ReliefAudit }
  | { state: "failed"; message: string };

/** A summary the session keeps of something else (an abandoned branch after a rewind). */
export interface NoteRow extends RowBase {
  kind: "note";
  title: string;
  body: string;
}

export type Row = UserRow | AssistantRow | AdvisorRow | CompactionRow | NoteRow;

export function assistantRow(key: string): AssistantRow {
  return { kind: "assistant", key, version: 0, parts: [], marks: [], state: "done" };
}

export type ChildState = "queued" | "running" | "completed" | "failed" | "aborted";

/** A subagent's card under its `task` call: what the transcript's card says, and what the
 * child is doing now in a few words (shown on the collapsed card). */
export interface ChildCard {
  id: string;
  agent: string;
  state: ChildState;
  prompt: string;
  activity: string;
  /** The child's own transcript, its replies' parts in order. */
  parts: Part[];
  merge?: string;
  error?: string;
  /** The validated result, as JSON text. */
  result?: string;
}

export const LIVE_STATES: ReadonlySet<ChildState> = new Set(["queued", "running"]);

/** The last words the child wrote, on one line (the collapsed card's live tail). */
export function childTail(card: ChildCard, chars = 80): string {
  const last = card.parts.findLast((p) => p.kind === "text");
  if (last?.kind !== "text") return "";
  const flat = last.text.replace(/\s+/g, " ").trim();
  return flat.length <= chars ? flat : `…${flat.slice(flat.length - chars + 1)}`;
}

/** The file a tool call works on, from its (maybe half-streamed) JSON arguments. */
export function toolTarget(args: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(args);
    if (typeof parsed === "object" && parsed !== null) {
      const record = parsed as Record<string, unknown>;
      for (const key of ["path", "file_path", "filePath", "file", "command"]) {
        const value = record[key];
        if (typeof value === "string") return value;
      }
    }
  } catch {
    const match = /"(?:path|file_path|filePath|file)"\s*:\s*"((?:[^"\\]|\\.)*)"/.exec(args);
    if (match?.[1] !== undefined) return match[1];
  }
  return undefined;
}

export const EDIT_TOOLS = new Set(["edit", "write", "multi_edit", "apply_patch"]);

export function formatTokens(tokens: number): string {
  if (tokens >= 1_000_000) return `${(tokens / 1_000_000).toFixed(1)}M`;
  if (tokens >= 10_000) return `${Math.round(tokens / 1000)}k`;
  if (tokens >= 1000) return `${(tokens / 1000).toFixed(1)}k`;
  return String(tokens);
}

const LINE = 19; // px: a line of body text (13px × 1.45)
const CHAR = 7; // px: an average character of it

/** How tall a row will be, before it is measured (the list keeps the measured height). */
export function estimateHeight(row: Row, width: number): number {
  const perLine = Math.max(20, Math.floor((width - 40) / CHAR));
  const lines = (text: string): number => {
    let total = 0;
    let start = 0;
    // Line by line without splitting: this runs for every row of a long session.
    for (let n = 0; n < 400 && start <= text.length; n += 1) {
      const end = text.indexOf("\n", start);
      const length = (end < 0 ? text.length : end) - start;
      total += length === 0 ? 0.5 : Math.ceil(length / perLine);
      if (end < 0) break;
      start = end + 1;
    }
    return Math.min(total, 4000) * LINE;
  };
  switch (row.kind) {
    case "user":
      return 42 + lines(row.text);
    case "assistant":
      return 32 + row.parts.reduce((sum, p) => sum + (p.kind === "tool" ? 38 + 34 * (p.children?.length ?? 0) : p.kind === "thinking" ? 26 : lines(p.text) + 8), 0);
    case "advisor":
      return 96 + lines(row.note);
    default:
      return 30;
  }
}
