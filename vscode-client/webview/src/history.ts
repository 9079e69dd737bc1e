/**
 * Session entries (pi v3, as `memento/history` returns them) → timeline rows.
 *
 * Entries come from a file that pi, oh-my-pi or an older Memento may have written, so
 * every field is read defensively: an entry that does not fit is skipped, never fatal.
 */
import { childrenFromResult } from "./children";
import type { ReliefStep } from "../../src/webviewProtocol";
import {
  assistantRow,
  reminderText,
  type AssistantRow,
  type CompactionRow,
  type Part,
  type Row,
} from "./rows";

type Json = Record<string, unknown>;

const asString = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const asNumber = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
const asObject = (v: unknown): Json | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Json) : undefined;

/** The text of a message's content: a string, or the text blocks of a block list. */
export function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block) => {
      const b = asObject(block);
      return b?.["type"] === "text" ? (asString(b["text"]) ?? "") : "";
    })
    .join("");
}


const TTSR_INJECTION = "ttsr-injection";

/** `relief`: the page's relief steps with the server's figures (`memento/history`); a
 * compaction or prune/shake record is drawn from its step, never from its own fields. */
export function entriesToRows(entries: readonly Json[], relief: readonly ReliefStep[] = []): Row[] {
  const steps = new Map(relief.map((step) => [step.id, step]));
  const rows: Row[] = [];
  let turn: AssistantRow | undefined;

  const currentTurn = (entryId: string): AssistantRow => {
    if (turn === undefined) {
      turn = assistantRow(`entry:${entryId}`);
      rows.push(turn);
    }
    turn.entryIds.push(entryId);
    return turn;
  };

  for (const entry of entries) {
    const id = asString(entry["id"]);
    if (id === undefined) continue;
    switch (entry["type"]) {
      case "message": {
        const message = asObject(entry["message"]);
        if (message === undefined) break;
        const role = message["role"];
        if (role === "user") {
          turn = undefined;
          rows.push({ kind: "user", key: `entry:${id}`, version: 0, entryIds: [id], text: contentText(message["content"]) });
        } else if (role === "assistant") {
          addAssistant(currentTurn(id), message);
        } else if (role === "toolResult") {
          addToolResult(currentTurn(id), message);
        }
        break;
      }
      case "custom_message": {
        if (entry["customType"] === TTSR_INJECTION) {
          const row = currentTurn(id);
          const details = asObject(entry["details"]);
          const rules = Array.isArray(details?.["rules"]) ? details["rules"].filter((r): r is string => typeof r === "string") : [];
          if (details?.["restated"] !== true && rules.length > 0) {
            row.marks.push({ rules, reminder: reminderText(contentText(entry["content"])), at: row.parts.length });
          }
        }
        break;
      }
      case "compaction": {
        turn = undefined;
        const step = steps.get(id);
        if (step !== undefined) rows.push(reliefRow(id, step, asString(entry["summary"])));
        break;
      }
      case "custom": {
        const step = steps.get(id);
        if (step !== undefined) rows.push(reliefRow(id, step));
        break;
      }
      case "branch_summary":
        turn = undefined;
        rows.push({ kind: "note", key: `entry:${id}`, version: 0, entryIds: [id], title: "Rewound: what the abandoned path did", body: asString(entry["summary"]) ?? "" });
        break;
      case "advisor_note": {
        const severity = entry["severity"];
        rows.push({
          kind: "advisor", key: `advisor:${asString(entry["noteId"]) ?? id}`, version: 0, entryIds: [id],
          noteId: asString(entry["noteId"]) ?? id, note: asString(entry["note"]) ?? "",
          severity: severity === "nit" || severity === "blocker" ? severity : "concern",
          channel: asString(entry["channel"]) ?? "aside", path: asString(entry["path"]), line: asNumber(entry["line"]),
        });
        break;
      }
      default:
        if (turn !== undefined) turn.entryIds.push(id); // a checkpoint, label… inside the turn
    }
  }
  for (const row of rows) if (row.kind === "assistant") addChildren(row.parts);
  return rows;
}

/** A `task` call's subagents, from its stored result (collapsed cards: agent, status, result). */
function addChildren(parts: readonly Part[]): void {
  for (const part of parts) {
    if (part.kind === "tool" && part.name === "task" && part.output !== undefined) {
      const children = childrenFromResult(part.output, part.id, part.args);
      if (children.length > 0) part.children = children;
    }
  }
}

/** A relief step's divider: the server's figures (`relief`), the entry's summary text. */
function reliefRow(id: string, step: ReliefStep, summary?: string): CompactionRow {
  return {
    kind: "compaction", key: `entry:${id}`, version: 0, entryIds: [id], level: step.level, phase: "finished",
    tokensBefore: step.tokensBefore, tokensAfter: step.tokensAfter, summarizer: step.summarizer,
    provider: step.summarizer === "provider" ? step.provider : undefined, summary,
  };
}

function addAssistant(row: AssistantRow, message: Json): void {
  const content = Array.isArray(message["content"]) ? message["content"] : [];
  for (const raw of content) {
    const block = asObject(raw);
    if (block === undefined) continue;
    const part = blockPart(block);
    if (part === undefined) continue;
    const last = row.parts[row.parts.length - 1];
    if (part.kind !== "tool" && last?.kind === part.kind) last.text += part.text;
    else row.parts.push(part);
    if (part.kind === "tool" && row.orphans?.[part.id] !== undefined) {
      const orphan = row.orphans[part.id]!;
      part.output = orphan.output;
      part.status = orphan.isError ? "error" : "done";
    }
  }
  const stop = message["stopReason"];
  if (stop === "error") {
    row.state = "error";
    row.error = asString(message["errorMessage"]) ?? "the model request failed";
  } else if (stop === "aborted") {
    row.state = "aborted";
  }
  const usage = asObject(message["usage"]);
  if (usage !== undefined) {
    const input = asNumber(usage["input"]) ?? 0;
    const cacheRead = asNumber(usage["cacheRead"]) ?? 0;
    const cacheWrite = asNumber(usage["cacheWrite"]) ?? 0;
    const tokens = input + cacheRead + cacheWrite;
    if (tokens > 0) row.context = { tokens, stable: cacheRead };
  }
}

function blockPart(block: Json): Part | undefined {
  switch (block["type"]) {
    case "text":
      return { kind: "text", text: asString(block["text"]) ?? "" };
    case "thinking":
      return { kind: "thinking", text: asString(block["thinking"]) ?? "" };
    case "toolCall":
      return {
        kind: "tool", id: asString(block["id"]) ?? "", name: asString(block["name"]) ?? "tool",
        args: JSON.stringify(block["arguments"] ?? {}), status: "running",
      };
    default:
      return undefined;
  }
}

function addToolResult(row: AssistantRow, message: Json): void {
  const callId = asString(message["toolCallId"]) ?? "";
  const output = contentText(message["content"]);
  const isError = message["isError"] === true;
  const part = row.parts.find((p) => p.kind === "tool" && p.id === callId);
  if (part?.kind === "tool") {
    part.output = output;
    part.status = isError ? "error" : "done";
  } else {
    row.orphans = { ...row.orphans, [callId]: { output, isError } };
  }
}

/** Joins an older page's last row with a newer page's first row when they are one turn. */
export function joinPages(older: Row[], newer: Row[]): Row[] {
  const last = older[older.length - 1];
  const first = newer[0];
  if (last?.kind !== "assistant" || first?.kind !== "assistant") return [...older, ...newer];
  const merged: AssistantRow = { ...last, parts: [...last.parts], entryIds: [...last.entryIds, ...first.entryIds], version: first.version + 1 };
  const offset = merged.parts.length;
  merged.parts.push(...first.parts);
  merged.marks = [...last.marks, ...first.marks.map((m) => ({ ...m, at: m.at + offset }))];
  merged.state = first.state;
  merged.context = first.context ?? last.context;
  merged.error = first.error;
  for (const part of last.parts) {
    const orphan = part.kind === "tool" ? first.orphans?.[part.id] : undefined;
    if (part.kind === "tool" && orphan !== undefined) {
      const index = merged.parts.indexOf(part);
      merged.parts[index] = { ...part, output: orphan.output, status: orphan.isError ? "error" : "done" };
    }
  }
  addChildren(merged.parts);
  merged.key = first.key; // the newer row is what the list shows already
  return [...older.slice(0, -1), merged, ...newer.slice(1)];
}

/**
 * A page opened mid-turn: the rows the running turn stored so far (from the row after its
 * prompt's, all of the page when the prompt is older than the page, after the last prompt
 * when the server does not say) are taken out, to be shown once, as the live row rebuilt
 * from what was heard of the turn. Returns the rows that stay and those taken.
 */
export function takeRunningTurn(rows: Row[], entryId: string | undefined): { kept: Row[]; taken: Row[] } {
  const prompt =
    entryId === undefined ? rows.findLastIndex((r) => r.kind === "user") : rows.findIndex((r) => r.entryIds.includes(entryId));
  const from = prompt >= 0 ? prompt + 1 : entryId === undefined ? rows.length : 0;
  return { kept: rows.slice(0, from), taken: rows.slice(from) };
}

/** The live row of a running turn that stored `taken` so far: their entries (checkpoints
 * attach to them) and tool results (whole, where a notice's may be cut) go to it; the steps
 * themselves come again from the turn's notices. */
export function resumedRow(turnId: string, taken: readonly Row[]): AssistantRow {
  const row = assistantRow(`turn:${turnId}`, turnId);
  row.state = "streaming";
  row.entryIds = taken.flatMap((r) => (r.kind === "assistant" ? r.entryIds : []));
  for (const stored of taken) {
    if (stored.kind !== "assistant") continue;
    for (const part of stored.parts) {
      if (part.kind === "tool" && part.output !== undefined) {
        row.orphans = { ...row.orphans, [part.id]: { output: part.output, isError: part.status === "error" } };
      }
    }
    for (const [id, orphan] of Object.entries(stored.orphans ?? {})) row.orphans = { ...row.orphans, [id]: orphan };
  }
  return row;
}
