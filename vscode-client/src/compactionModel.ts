// What the Compactions view shows: the step running now (from `memento/compaction` and its
// work-done progress), the last failure, and the session's compactions, newest first.

import { relativeTime, summaryBy, tokens } from "./format";
import type { CompactionItem, CompactionParams, CompactResult } from "./protocol";

export interface LivePhase {
  level: CompactionParams["level"];
  reason: CompactionParams["reason"];
  tokensBefore: number;
  message?: string;
  percent?: number;
}

export interface TreeNode {
  id: string;
  label: string;
  description?: string;
  tooltip?: string;
  icon: string;
  contextValue: string;
  /** For a compaction: its id, to open its summary. */
  itemId?: string;
}

const RUNNING: Record<CompactionParams["level"], string> = {
  prune: "Pruning stale tool results…",
  shake: "Shaking heavy content…",
  compact: "Compacting the context…",
};

const DONE: Record<CompactionParams["level"], string> = { prune: "Pruned", shake: "Shook", compact: "Compacted" };
const NOT_DONE: Record<CompactionParams["level"], string> = {
  prune: "Not pruned",
  shake: "Not shaken",
  compact: "Not compacted",
};

/** What Compact Context says: the server's figures, or its reason for compacting nothing. */
export function compactReport(result: CompactResult): string {
  const change = `${tokens(result.tokensBefore)} → ${tokens(result.tokensAfter)} tokens`;
  if (result.compacted) return `Memento: context compacted, ${change}.`;
  const why = `Memento: ${result.why ?? "nothing was compacted"}.`;
  return result.tokensAfter !== result.tokensBefore ? `${why} Context ${change}.` : why;
}

export class CompactionState {
  live: LivePhase | undefined;
  /** The last step that failed, or was not applied (`skipped`), and why. */
  failure: { level: CompactionParams["level"]; error: string; skipped?: boolean } | undefined;
  items: CompactionItem[] = [];

  /** Applies a `memento/compaction` notification; true when the list should be fetched again. */
  onCompaction(params: CompactionParams): boolean {
    if (params.phase === "started") {
      this.live = { level: params.level, reason: params.reason, tokensBefore: params.tokensBefore };
      this.failure = undefined;
      return false;
    }
    this.live = undefined;
    if (params.phase === "failed") this.failure = { level: params.level, error: params.error ?? "unknown error" };
    if (params.phase === "skipped") {
      this.failure = { level: params.level, error: params.why ?? "it would not have made the context smaller", skipped: true };
      return false; // nothing was recorded: the list is as it was
    }
    return true;
  }

  onProgress(message: string | undefined, percent: number | undefined): void {
    if (this.live === undefined) return;
    if (message !== undefined) this.live.message = message;
    if (percent !== undefined) this.live.percent = percent;
  }

  find(id: string): CompactionItem | undefined {
    return this.items.find((item) => item.id === id);
  }
}

export function itemNode(item: CompactionItem, now: Date): TreeNode {
  const after = item.tokensAfter === undefined ? "?" : tokens(item.tokensAfter);
  const parts = [relativeTime(item.at, now)];
  if (item.reason) parts.push(item.reason);
  if (item.level === "compact") parts.push(summaryBy(item));
  else if (item.entries !== undefined) parts.push(`${item.entries} entr${item.entries === 1 ? "y" : "ies"}`);
  if (item.undoneBy) parts.push("undone");
  return {
    id: `compaction:${item.id}`,
    label: `${DONE[item.level]} ${tokens(item.tokensBefore)} → ${after}`,
    description: parts.join(" · "),
    tooltip: `${DONE[item.level]} at ${item.at}: ${item.tokensBefore} → ${item.tokensAfter ?? "?"} tokens`,
    icon: item.level === "compact" ? "fold" : item.level === "prune" ? "trash" : "filter",
    contextValue: "compaction",
    itemId: item.id,
  };
}

export function compactionNodes(state: CompactionState, now: Date): TreeNode[] {
  const nodes: TreeNode[] = [];
  if (state.live !== undefined) {
    const { live } = state;
    const progress = [live.message, live.percent === undefined ? undefined : `${live.percent}%`].filter(Boolean);
    nodes.push({
      id: "live",
      label: RUNNING[live.level],
      description: [`${tokens(live.tokensBefore)} tokens`, live.reason, ...progress].join(" · "),
      icon: "sync~spin",
      contextValue: "live",
    });
  } else if (state.failure !== undefined) {
    const { failure } = state;
    nodes.push({
      id: "failure",
      label: failure.skipped ? NOT_DONE[failure.level] : `${DONE[failure.level]} failed`,
      description: failure.error,
      tooltip: failure.error,
      icon: failure.skipped ? "info" : "error",
      contextValue: "failure",
    });
  }
  return nodes.concat(state.items.map((item) => itemNode(item, now)));
}

/** The read-only document a compaction opens to. */
export function summaryDocument(item: CompactionItem): string {
  const after = item.tokensAfter === undefined ? "unknown" : item.tokensAfter.toLocaleString("en-US");
  const head = [
    `# ${DONE[item.level]} at ${item.at}`,
    "",
    `- Tokens: ${item.tokensBefore.toLocaleString("en-US")} → ${after}`,
    `- Reason: ${item.reason ?? "unknown"}`,
  ];
  if (item.level === "compact") {
    const by =
      item.summarizer === "structured"
        ? "built by code (no model answered)"
        : item.summarizer === "provider"
          ? `by the provider${item.provider ? ` (${item.provider})` : ""}, its own compaction`
          : "by the model";
    head.push(`- Summary: ${by}`);
    return [...head, "", "---", "", item.summary ?? "(no summary text)", ""].join("\n");
  }
  const what =
    item.level === "prune"
      ? "Stale tool results were replaced by one-line notices"
      : "Heavy blocks were replaced by placeholders (the originals are saved next to the session file)";
  return [...head, `- Entries rewritten: ${item.entries ?? "unknown"}`, "", `${what}.`, ""].join("\n");
}
