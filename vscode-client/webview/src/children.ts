/**
 * Subagents in the timeline: each child of a `task` call is a card nested under that call's
 * tool card. Live, a card follows the child's own notices (its text, tool calls and state);
 * from history, it is rebuilt from the `task` call's result (agent, status, result), and a
 * card heard live keeps what it streamed when the stored row replaces the live one.
 *
 * Pure data, like `rows.ts`: the view is `childViews.ts`.
 */
import type { ChildNotice, ChildState, NoticeOf } from "../../src/webviewProtocol";
import type { Part, ToolPart } from "./rows";

export interface ChildCard {
  id: string;
  agent: string;
  state: ChildState;
  prompt: string;
  isolation?: string;
  parentToolCallId?: string;
  /** What the child is doing now, in a few words (shown on the collapsed card). */
  activity: string;
  /** The child's own transcript as it streamed (empty when read from history). */
  parts: Part[];
  merge?: string;
  error?: string;
  tokens?: number;
  /** The validated result, as JSON text (from the `task` call's result). */
  result?: string;
  /** Bumped on every change, so its view knows to redraw. */
  version: number;
}

export const LIVE_STATES: ReadonlySet<ChildState> = new Set(["queued", "running"]);

const ACTIVITY: Record<ChildState, string> = {
  queued: "queued",
  running: "starting",
  completed: "done",
  failed: "failed",
  aborted: "stopped",
};

/** `memento/subagent`: a new card, or the card's new state. */
export function childFromInfo(info: NoticeOf<"subagent">, card: ChildCard | undefined): ChildCard {
  const next: ChildCard = card ?? { id: info.id, agent: info.agent, state: info.state, prompt: info.prompt, activity: ACTIVITY[info.state], parts: [], version: 0 };
  const wasQueued = next.state === "queued";
  Object.assign(next, {
    agent: info.agent, state: info.state, prompt: info.prompt, isolation: info.isolation,
    parentToolCallId: info.parentToolCallId ?? next.parentToolCallId,
    merge: info.merge, error: info.error, tokens: info.tokens,
  });
  if (!LIVE_STATES.has(info.state) || (info.state === "running" && wasQueued)) next.activity = ACTIVITY[info.state];
  next.version += 1;
  return next;
}

/** A child's own stream/tool/turn notice, applied to its card. */
export function applyChildNotice(card: ChildCard, notice: ChildNotice): void {
  const parts = card.parts;
  switch (notice.kind) {
    case "stream": {
      if (notice.stream === "tool") {
        const id = notice.toolCallId ?? "";
        const part = parts.find((p): p is ToolPart => p.kind === "tool" && p.id === id);
        if (part !== undefined) part.args += notice.delta;
        else parts.push({ kind: "tool", id, name: notice.toolName ?? "tool", args: notice.delta, status: "streaming" });
        card.activity = `preparing ${notice.toolName ?? "a tool call"}`;
      } else {
        const last = parts[parts.length - 1];
        if (last !== undefined && last.kind === notice.stream) last.text += notice.delta;
        else parts.push({ kind: notice.stream, text: notice.delta });
        card.activity = notice.stream === "text" ? "writing" : "thinking";
      }
      break;
    }
    case "tool": {
      let part = parts.find((p): p is ToolPart => p.kind === "tool" && p.id === notice.toolCallId);
      if (part === undefined) {
        part = { kind: "tool", id: notice.toolCallId, name: notice.toolName, args: "", status: "running" };
        parts.push(part);
      }
      part.status = notice.state === "started" ? "running" : notice.isError ? "error" : "done";
      if (notice.output !== undefined) [part.output, part.outputTruncated] = [notice.output, notice.outputTruncated];
      card.activity = notice.state === "started" ? `running ${notice.toolName}` : "waiting for the model";
      break;
    }
    case "turn":
      if (notice.state === "started" || notice.state === "retrying") card.activity = "waiting for the model";
      if (notice.error !== undefined) card.error ??= notice.error;
      break;
  }
  card.version += 1;
}

/** The last words the child wrote, on one line (the collapsed card's live tail). */
export function childTail(card: ChildCard, chars = 80): string {
  const last = card.parts.findLast((p) => p.kind === "text");
  if (last?.kind !== "text") return "";
  const flat = last.text.replace(/\s+/g, " ").trim();
  return flat.length <= chars ? flat : `…${flat.slice(flat.length - chars + 1)}`;
}

/** The prompts of a `task` call's arguments, in input order (one task or a batch). */
function taskPrompts(args: string): string[] {
  try {
    const parsed = JSON.parse(args) as { prompt?: unknown; tasks?: unknown };
    const items: unknown[] = Array.isArray(parsed.tasks) ? parsed.tasks : [parsed];
    return items.map((item) => {
      const prompt = (item as { prompt?: unknown } | null)?.prompt;
      return typeof prompt === "string" ? prompt : "";
    });
  } catch {
    return [];
  }
}

/** The children a `task` call's result names (`{"results": [...]}`, in the order of its
 * tasks), as collapsed cards. */
export function childrenFromResult(output: string | undefined, callId: string, args = ""): ChildCard[] {
  if (output === undefined) return [];
  let body: unknown;
  try {
    body = JSON.parse(output);
  } catch {
    return []; // cut short (a notice's start of it), or an error text
  }
  const results = (body as { results?: unknown } | null)?.results;
  if (!Array.isArray(results)) return [];
  const cards: ChildCard[] = [];
  const prompts = taskPrompts(args);
  for (const [index, raw] of results.entries()) {
    if (typeof raw !== "object" || raw === null) continue;
    const r = raw as Record<string, unknown>;
    const status = r["status"];
    if (typeof r["id"] !== "string" || (status !== "completed" && status !== "failed" && status !== "aborted")) continue;
    const merge = r["merge"] as { state?: unknown } | undefined;
    cards.push({
      id: r["id"], agent: typeof r["agent"] === "string" ? r["agent"] : "agent", state: status, prompt: prompts[index] ?? "",
      parentToolCallId: callId, activity: ACTIVITY[status], parts: [],
      merge: typeof merge?.state === "string" ? merge.state : undefined,
      error: typeof r["error"] === "string" ? r["error"] : undefined,
      result: r["data"] === undefined || r["data"] === null ? undefined : JSON.stringify(r["data"], null, 2),
      version: 0,
    });
  }
  return cards;
}

/**
 * The cards of a `task` part once its result is known: the result's cards, each keeping what
 * was heard of it live (its transcript, prompt, open state's key), in the result's order;
 * cards heard live that the result does not name stay after them.
 */
export function mergeChildren(part: ToolPart, live: ReadonlyMap<string, ChildCard>): void {
  const stored = part.name === "task" ? childrenFromResult(part.output, part.id, part.args) : [];
  const heard = [...live.values()].filter((c) => c.parentToolCallId === part.id);
  if (stored.length === 0 && heard.length === 0) return;
  const known = new Map((part.children ?? []).concat(heard).map((c) => [c.id, c]));
  const merged = stored.map((card) => {
    const earlier = known.get(card.id);
    if (earlier === undefined) return card;
    known.delete(card.id);
    Object.assign(earlier, { prompt: earlier.prompt || card.prompt, state: card.state, merge: card.merge ?? earlier.merge, error: card.error ?? earlier.error, result: card.result, activity: card.activity });
    earlier.version += 1;
    return earlier;
  });
  part.children = [...merged, ...known.values()];
}
