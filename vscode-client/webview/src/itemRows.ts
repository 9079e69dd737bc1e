/**
 * Transcript items → timeline rows: what the server says, in the shapes the views draw. One
 * row per item (a checkpoint is no row: its "Restore to here" goes on a row, `model.ts`).
 * Pure; nothing here reads session entries or guesses what a turn was.
 */
import type { Item, Part as WirePart, ReplyItem, SubagentCard, ToolPart as WireTool } from "../../src/transcript";
import { assistantRow, type AssistantRow, type AuditState, type ChildCard, type Part, type PinAction, type PinState, type Row, type ToolPart } from "./rows";

/** What the page knows beside the transcript, which a row shows too. */
export interface RowExtras {
  /** The prompt a failed reply answered (its Retry sends it again). */
  prompt?: string;
  /** A running tool's progress (`memento/tool/progress`), by tool call id. */
  progress?: ReadonlyMap<string, string>;
  /** An advisor note the user acted upon, by note id. */
  resolved?: ReadonlyMap<string, "apply" | "dismiss" | "toRule">;
  /** Relief dividers open on their audit (by item key), and the audits held (by audit id). */
  expanded?: ReadonlySet<string>;
  audits?: ReadonlyMap<string, AuditState>;
  /** Entries a pin or unpin was asked for, not answered yet. */
  pinning?: Pinning;
}

/** The pins and unpins on their way, by entry id. */
export type Pinning = Pick<ReadonlyMap<string, { action: PinAction }>, "get">;

/** The pin of `entryId` as the transcript says it (`pinned`), none without an entry. */
export function pinOf(entryId: string | undefined, pinned: boolean | undefined, pinning: Pinning | undefined): PinState | undefined {
  if (entryId === undefined) return undefined;
  const asking = pinning?.get(entryId)?.action;
  return asking === undefined ? { entryId, pinned: pinned === true } : { entryId, pinned: pinned === true, asking };
}

export function rowOf(item: Item, version: number, extras: RowExtras = {}): Row | undefined {
  const base = { key: item.key, version };
  switch (item.kind) {
    case "user":
      return { ...base, kind: "user", text: item.text, steer: item.steer || undefined, pin: pinOf(item.entryId, item.pinned, extras.pinning) };
    case "reply":
      return { ...replyRow(item, extras), version };
    case "relief":
      return {
        ...base, kind: "compaction", level: item.level, phase: item.phase, tokensBefore: item.tokensBefore,
        tokensAfter: item.tokensAfter, summarizer: item.summarizer, provider: item.provider, summary: item.summary,
        error: item.error, why: item.why, audit: item.audit, undoneBy: item.undoneBy, undoes: item.undoes,
        expanded: extras.expanded?.has(item.key) || undefined,
        auditState: item.audit === undefined ? undefined : extras.audits?.get(item.audit),
      };
    case "advisor":
      return {
        ...base, kind: "advisor", noteId: item.noteId, note: item.note, severity: item.severity, channel: item.channel,
        path: item.path, line: item.line, resolved: extras.resolved?.get(item.noteId),
      };
    case "rewind":
      return { ...base, kind: "note", title: "Rewound: what the abandoned path did", body: item.summary };
    case "checkpoint":
      return undefined;
  }
}

function replyRow(item: ReplyItem, extras: RowExtras): AssistantRow {
  const row = assistantRow(item.key);
  row.state = item.state;
  for (const part of item.parts) addPart(row, part, extras);
  if (item.context !== undefined) row.context = { tokens: item.context.tokens, stable: item.context.stablePrefixTokens };
  if (item.state === "error") row.retryText = extras.prompt;
  const pin = pinOf(item.entryId, item.pinned, extras.pinning);
  if (pin !== undefined) row.pin = pin;
  return row;
}

function addPart(row: AssistantRow, part: WirePart, extras: RowExtras): void {
  switch (part.kind) {
    case "text":
    case "thinking":
      row.parts.push({ kind: part.kind, text: part.text });
      return;
    case "tool":
      row.parts.push(toolOf(part, extras));
      return;
    case "ttsr":
      row.marks.push({ rules: part.rules, attempt: part.attempt, reminder: part.reminder, at: row.parts.length });
      return;
    case "error":
      row.error = part.message;
      return;
  }
}

/** `extras` for the session's own cards; none for a subagent's (its results are not entries
 * of this session: nothing there to pin). */
function toolOf(part: WireTool, extras: RowExtras | undefined): ToolPart {
  const tool: ToolPart = { kind: "tool", id: part.toolCallId, name: part.name, args: part.args, status: part.status };
  if (part.server !== undefined) tool.label = `${part.server} › ${part.serverTool ?? part.name}`;
  if (part.output !== undefined) tool.output = part.output;
  if (part.outputTruncated === true) tool.outputTruncated = true;
  const done = extras?.progress?.get(part.toolCallId);
  if (done !== undefined && part.status === "running") tool.progress = done;
  if (part.subagents.length > 0) tool.children = part.subagents.map(cardOf);
  const pin = extras === undefined ? undefined : pinOf(part.resultEntryId, part.pinned, extras.pinning);
  if (pin !== undefined) tool.pin = pin;
  return tool;
}

const SETTLED: Record<ChildCard["state"], string> = {
  queued: "queued",
  running: "starting",
  completed: "done",
  failed: "failed",
  aborted: "stopped",
};

export function cardOf(card: SubagentCard): ChildCard {
  const parts: Part[] = [];
  let error = card.error;
  for (const item of card.items) {
    if (item.kind !== "reply") continue;
    for (const part of item.parts) {
      if (part.kind === "text" || part.kind === "thinking") parts.push({ kind: part.kind, text: part.text });
      else if (part.kind === "tool") parts.push(toolOf(part, undefined));
      else if (part.kind === "error") error ??= part.message;
    }
  }
  return {
    id: card.id, agent: card.agent, state: card.state, prompt: card.prompt, activity: activity(card.state, parts),
    parts, merge: card.merge, error, result: card.result,
  };
}

/** What a live child is doing, from the last thing it streamed. */
function activity(state: ChildCard["state"], parts: readonly Part[]): string {
  const last = parts[parts.length - 1];
  if (state !== "running" || last === undefined) return SETTLED[state];
  if (last.kind === "text") return "writing";
  if (last.kind === "thinking") return "thinking";
  if (last.status === "streaming") return `preparing ${last.name}`;
  if (last.status === "pending" || last.status === "running") return `running ${last.name}`;
  return "waiting for the model";
}
