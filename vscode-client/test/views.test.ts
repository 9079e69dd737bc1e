import { describe, expect, it } from "vitest";
import { CompactionState, compactionNodes, summaryDocument } from "../src/compactionModel";
import { fileList, relativeTime, tokens } from "../src/format";
import { meterLevel, meterView } from "../src/meterModel";
import type { CompactionItem, ContextParams, ReliefAudit } from "../src/protocol";
import { auditDocument } from "../src/reliefAudit";

const NOW = new Date("2026-12-01T10:00:00Z");
const COMPACTED: CompactionItem = {
  id: "e1", at: "2026-12-01T09:58:00Z", level: "compact", reason: "manual",
  tokensBefore: 52_000, tokensAfter: 9_400, summarizer: "model", summary: "## Goal\nShip it",
};

describe("format", () => {
  it("shortens token counts and says how long ago", () => {
    expect([950, 1_220, 12_345, 128_000, 1_500_000].map(tokens)).toEqual(["950", "1.2k", "12.3k", "128k", "1.5M"]);
    expect(relativeTime("2026-12-01T09:59:58Z", NOW)).toBe("just now");
    expect(relativeTime("2026-12-01T09:59:00Z", NOW)).toBe("1 minute ago");
    expect(relativeTime("2026-11-28T10:00:00Z", NOW)).toBe("3 days ago");
    expect(fileList(["a", "b", "c", "d", "e"])).toBe("a, b, c and 2 more");
  });
});

describe("the context meter", () => {
  const context = (tokens: number, thresholdTokens?: number): ContextParams => ({
    tokens, contextWindow: 100_000, percent: tokens / 1000, stablePrefixTokens: 3_000, thresholdTokens,
  });

  it("turns to warning near the threshold and to error past it", () => {
    expect(meterLevel(context(60_000, 80_000))).toBe("ok");
    expect(meterLevel(context(70_000, 80_000))).toBe("warning");
    expect(meterLevel(context(80_000, 80_000))).toBe("error");
    expect(meterLevel(context(70_000))).toBe("ok"); // compaction off: 90% of the window is the limit
    expect(meterLevel(context(80_000))).toBe("warning");
    expect(meterLevel(context(91_000))).toBe("error");
  });

  it("shows tokens / window and percent, and spins while a turn runs", () => {
    expect(meterView(context(6_020, 83_616), undefined, false, NOW).text).toBe("$(dashboard) 6k/100k · 6.0%");
    expect(meterView(context(45_500), undefined, true, NOW).text).toBe("$(loading~spin) 45.5k/100k · 46%");
    expect(meterView(undefined, undefined, false, NOW).text).toBe("$(dashboard) Memento");
  });

  it("says ask mode in the text and the tooltip, and nothing in act mode", () => {
    const asking = meterView(context(6_020), undefined, false, NOW, "ask");
    expect(asking.text).toBe("$(dashboard) 6k/100k · 6.0% · ask");
    expect(asking.tooltip).toContain("Ask mode: read-only");
    expect(meterView(context(6_020), undefined, false, NOW, "act").tooltip).not.toContain("Ask mode");
  });

  it("explains the stable prefix and the last compaction in the tooltip", () => {
    const { tooltip } = meterView(context(12_000, 83_616), COMPACTED, false, NOW);
    expect(tooltip).toContain("12,000 of 100,000 tokens");
    expect(tooltip).toContain("Compacts above 83,616 tokens");
    expect(tooltip).toContain("Stable prefix: 3000 tokens (25% of the context");
    expect(tooltip).toContain("Last compaction: 2 minutes ago: compaction (manual), 52k → 9.4k tokens, summary by the model");
    expect(tooltip).not.toContain("Last request");
  });

  it("shows what the provider's cache read and wrote, as the server reported it", () => {
    const last = { provider: "anthropic", input: 120, output: 40, cacheRead: 11_500, cacheWrite: 380, requests: 1, cacheReadPercent: 95.8 };
    const total = { ...last, input: 2_000, cacheRead: 230_000, cacheWrite: 9_000, requests: 21, cacheReadPercent: 95.4 };
    const { tooltip } = meterView({ ...context(12_000), lastUsage: last, usage: [total] }, undefined, false, NOW);
    expect(tooltip).toContain(
      "Last request (anthropic): 120 input, 11,500 read from the cache (95.8% of the prompt), 380 written to it, 40 output",
    );
    expect(tooltip).toContain("This session, anthropic (21 requests): 2,000 input, 230,000 read from the cache (95.4% of the prompt)");
  });

  it("says when the provider wrote the summary itself", () => {
    const byProvider: CompactionItem = { ...COMPACTED, summarizer: "provider", provider: "openai" };
    const { tooltip } = meterView(context(12_000), byProvider, false, NOW);
    expect(tooltip).toContain("52k → 9.4k tokens, summary by the provider (openai)");
  });

  it("says where the window came from, as the server reports it", () => {
    const learned = { ...context(3_100, 3_482), contextWindow: 4_096, windowSource: "overflow" as const, windowOrigin: "learned from overflow" };
    expect(meterView(learned, undefined, false, NOW).tooltip).toContain("Window: 4,096 tokens, learned from overflow");
    expect(meterView(context(3_100), undefined, false, NOW).tooltip).not.toContain("Window:");
  });
});

describe("the Compactions view", () => {
  it("shows the running step with its progress, then the list once it finished", () => {
    const state = new CompactionState();
    expect(state.onCompaction({ phase: "started", level: "compact", reason: "threshold", tokensBefore: 84_000 })).toBe(false);
    state.onProgress("Summarizing the conversation", 10);
    const [live] = compactionNodes(state, NOW);
    expect([live.label, live.description, live.icon]).toEqual([
      "Compacting the context…", "84k tokens · threshold · Summarizing the conversation · 10%", "sync~spin",
    ]);
    expect(state.onCompaction({ phase: "finished", level: "compact", reason: "threshold", tokensBefore: 84_000, tokensAfter: 9_000 })).toBe(true);
    state.items = [COMPACTED, { id: "e0", at: "2026-12-01T09:00:00Z", level: "prune", reason: "turn", tokensBefore: 30_000, tokensAfter: 28_000, entries: 2 }];
    expect(compactionNodes(state, NOW).map((n) => [n.label, n.description])).toEqual([
      ["Compacted 52k → 9.4k", "2 minutes ago · manual · summary by the model"],
      ["Pruned 30k → 28k", "1 hour ago · turn · 2 entries"],
    ]);
  });

  it("keeps a failure on top until the next step starts", () => {
    const state = new CompactionState();
    state.onCompaction({ phase: "failed", level: "compact", reason: "overflow", tokensBefore: 99_000, error: "nothing left to compact" });
    expect(compactionNodes(state, NOW)[0]).toMatchObject({ label: "Compacted failed", description: "nothing left to compact" });
    state.onCompaction({ phase: "started", level: "prune", reason: "threshold", tokensBefore: 90_000 });
    expect(compactionNodes(state, NOW)[0].label).toBe("Pruning stale tool results…");
  });

  it("shows a step that was not applied with the server's reason, and lists nothing new", () => {
    const state = new CompactionState();
    state.onCompaction({ phase: "started", level: "compact", reason: "manual", tokensBefore: 2_012 });
    const why = "not compacted: a summary would not make the context smaller: the 312 tokens old enough to summarise would become a 405-token summary";
    expect(state.onCompaction({ phase: "skipped", level: "compact", reason: "manual", tokensBefore: 2_012, why })).toBe(false);
    expect(compactionNodes(state, NOW)).toEqual([
      { id: "failure", label: "Not compacted", description: why, tooltip: why, icon: "info", contextValue: "failure" },
    ]);
  });

  it("opens a compaction as a markdown document with its summary", () => {
    const doc = summaryDocument({ ...COMPACTED, summarizer: "structured" });
    expect(doc).toContain("- Tokens: 52,000 → 9,400");
    expect(doc).toContain("built by code (no model answered)");
    expect(doc.endsWith("## Goal\nShip it\n")).toBe(true);
  });

  it("names the provider that compacted the conversation itself", () => {
    const item: CompactionItem = { ...COMPACTED, summarizer: "provider", provider: "anthropic" };
    const state = new CompactionState();
    state.items = [item];
    expect(compactionNodes(state, NOW)[0].description).toBe("2 minutes ago · manual · summary by the provider (anthropic)");
    expect(summaryDocument(item)).toContain("- Summary: by the provider (anthropic), its own compaction");
  });

  it("opens a step's audit as the server gives it, and says when it was undone", () => {
    const audit: ReliefAudit = {
      id: "c1", at: "2026-12-01T09:58:00Z", level: "compact", reason: "threshold",
      tokensBefore: 52_000, tokensAfter: 9_400, summarizer: "model", model: "qwen-coder",
      summary: "## Goal\nShip it",
      summarized: [{ entryId: "t1", role: "toolResult", tool: "read", file: "a.py", tokens: 1_020, preview: "alpha | beta" }],
      kept: [{ entryId: "u2", role: "user", tokens: 40, preview: "And now?" }],
      cut: { firstKeptEntryId: "u2", keepRecentTokens: 200, splitTurn: false, why: "the newest ~40 tokens stay verbatim" },
      carried: [{ entryId: "w1", role: "custom", tokens: 90, preview: "Your memory of this workspace" }],
      undoneBy: "x9",
    };
    const doc = auditDocument(audit);
    expect(doc).toContain("- Tokens: 52,000 → 9,400");
    expect(doc).toContain("- Summary by: model (qwen-coder)");
    expect(doc).toContain("- Undone by: x9");
    expect(doc).toContain("- Cut at u2: the newest ~40 tokens stay verbatim");
    expect(doc).toContain("## Summarised (1)");
    expect(doc).toContain("| t1 | read `a.py` | 1,020 | alpha \\| beta |");
    expect(doc).toContain("## Kept verbatim (1)");
    expect(doc).toContain("## Carried across by the memory (1)");
    const pruned = auditDocument({
      id: "p1", at: "2026-12-01T09:58:00Z", level: "prune", tokensBefore: 5_000, tokensAfter: 4_000,
      edits: [{ entryId: "t1", kind: "toolResult", role: "toolResult", tool: "read", file: "a.py", tokens: 1_000, chars: 4_000, replacement: "[Superseded]", preview: "x", restored: true }],
    });
    expect(pruned).toContain("| t1 | read `a.py` | 1,000 | [Superseded] | brought back |");
    const state = new CompactionState();
    state.items = [{ ...COMPACTED, undoneBy: "x9" }];
    expect(compactionNodes(state, NOW)[0].description).toBe("2 minutes ago · manual · summary by the model · undone");
  });
});
