// The context meter's text, colour and tooltip, from the last `memento/context` and the
// session's latest compaction.

import { plural, relativeTime, summaryBy, tokens } from "./format";
import type { CompactionItem, ContextParams, ModeResult, UsageFigures } from "./protocol";

export type MeterLevel = "ok" | "warning" | "error";

export interface MeterView {
  text: string;
  /** Markdown. */
  tooltip: string;
  level: MeterLevel;
}

/** Share of the threshold at which the meter turns to the warning colour. */
export const WARNING_SHARE = 0.85;

export function meterLevel(context: ContextParams): MeterLevel {
  const limit = context.thresholdTokens ?? context.contextWindow * 0.9;
  if (limit <= 0) return "ok";
  if (context.tokens >= limit) return "error";
  return context.tokens >= limit * WARNING_SHARE ? "warning" : "ok";
}

const LEVEL_NAMES: Record<string, string> = { compact: "compaction", prune: "prune", shake: "shake" };

export function compactionLine(item: CompactionItem, now: Date): string {
  const after = item.tokensAfter === undefined ? "?" : tokens(item.tokensAfter);
  const by = item.level === "compact" ? `, ${summaryBy(item)}` : "";
  const why = item.reason ? ` (${item.reason})` : "";
  return `${relativeTime(item.at, now)}: ${LEVEL_NAMES[item.level]}${why}, ${tokens(item.tokensBefore)} → ${after} tokens${by}`;
}

export function meterView(
  context: ContextParams | undefined,
  last: CompactionItem | undefined,
  busy: boolean,
  now: Date,
  mode: ModeResult["mode"] = "act",
): MeterView {
  const icon = busy ? "$(loading~spin)" : "$(dashboard)";
  if (context === undefined) {
    return { text: `${icon} Memento`, tooltip: "Memento: waiting for the session's context size", level: "ok" };
  }
  const percent = `${context.percent.toFixed(context.percent < 10 ? 1 : 0)}%`;
  const asking = mode === "ask" ? " · ask" : "";
  const text = `${icon} ${tokens(context.tokens)}/${tokens(context.contextWindow)} · ${percent}${asking}`;
  const lines = [
    `**Memento context**: ${context.tokens.toLocaleString("en-US")} of ${context.contextWindow.toLocaleString("en-US")} tokens (${percent})`,
  ];
  if (context.windowOrigin) {
    lines.push(`Window: ${context.contextWindow.toLocaleString("en-US")} tokens, ${context.windowOrigin}`);
  }
  if (context.thresholdTokens !== undefined) {
    lines.push(`Compacts above ${context.thresholdTokens.toLocaleString("en-US")} tokens`);
  } else {
    lines.push("Automatic compaction is off");
  }
  const share = context.tokens > 0 ? Math.round((100 * context.stablePrefixTokens) / context.tokens) : 0;
  lines.push(
    `Stable prefix: ${plural(context.stablePrefixTokens, "token")} (${share}% of the context, kept cached by the provider)`,
  );
  lines.push(...usageLines(context));
  lines.push(last ? `Last compaction: ${compactionLine(last, now)}` : "No compaction in this session yet");
  if (mode === "ask") lines.push("Ask mode: read-only, the agent changes no file (`Memento: Act Mode` to switch back)");
  lines.push("", "Click to open the context view");
  return { text, tooltip: lines.join("\n\n"), level: meterLevel(context) };
}

const count = (n: number): string => n.toLocaleString("en-US");

function figures(u: UsageFigures): string {
  return `${count(u.input)} input, ${count(u.cacheRead)} read from the cache (${u.cacheReadPercent}% of the prompt), ${count(u.cacheWrite)} written to it, ${count(u.output)} output`;
}

/** The provider's own figures: the newest request, then each provider over the session. */
export function usageLines(context: ContextParams): string[] {
  if (context.lastUsage === undefined) return [];
  const lines = [`Last request (${context.lastUsage.provider}): ${figures(context.lastUsage)}`];
  for (const u of context.usage ?? []) lines.push(`This session, ${u.provider} (${plural(u.requests, "request")}): ${figures(u)}`);
  return lines;
}
