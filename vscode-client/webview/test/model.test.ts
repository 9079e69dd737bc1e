import { describe, expect, it } from "vitest";
import { conversation } from "../e2e/fixtures.mjs";
import { entriesToRows } from "../src/history";
import type { Notice } from "../../src/webviewProtocol";
import { retryText, Timeline } from "../src/model";

describe("history → rows", () => {
  it("groups a turn's assistant messages and tool results into one row", () => {
    const rows = entriesToRows(conversation(1));
    expect(rows.map((r) => r.kind)).toEqual(["user", "assistant"]);
    const turn = rows[1];
    if (turn?.kind !== "assistant") throw new Error("no assistant row");
    expect(turn.parts.map((p) => p.kind)).toEqual(["text", "tool", "text"]);
    expect(turn.parts[1]).toMatchObject({ name: "read", status: "done", output: "def part_0():\n    return 0\n" });
    expect(turn.entryIds).toHaveLength(3);
  });

  it("draws relief steps with the server's figures, never the entry's own (pi's estimate)", () => {
    const entries = [
      ...conversation(1),
      { id: "c", type: "compaction", summary: "## Goal\nShip it", tokensBefore: 446, details: { tokensAfter: 2_105 } },
      { id: "p", type: "custom", customType: "memento-governance", data: { level: "prune", tokensBefore: 1 } },
      { id: "q", type: "custom", customType: "memento-governance", data: { level: "shake", tokensBefore: 9 } },
    ];
    const rows = entriesToRows(entries, [
      { id: "c", level: "compact", reason: "manual", tokensBefore: 2_012, tokensAfter: 1_530, summarizer: "model" },
      { id: "p", level: "prune", reason: "threshold", tokensBefore: 1_530, tokensAfter: 1_400 },
    ]);
    expect(rows.filter((r) => r.kind === "compaction")).toEqual([
      {
        kind: "compaction", key: "entry:c", version: 0, entryIds: ["c"], level: "compact", phase: "finished",
        tokensBefore: 2_012, tokensAfter: 1_530, summarizer: "model", summary: "## Goal\nShip it",
      },
      {
        kind: "compaction", key: "entry:p", version: 0, entryIds: ["p"], level: "prune", phase: "finished",
        tokensBefore: 1_530, tokensAfter: 1_400, summarizer: undefined, summary: undefined,
      },
    ]);
  });

  it("says a compaction's summary came from the provider, naming it", () => {
    const details = { summarizer: "provider", provider: "openai", tokensAfter: 900, remote: { items: [] } };
    const [row] = entriesToRows(
      [{ id: "c", type: "compaction", summary: "s", tokensBefore: 9_000, details }],
      [{ id: "c", level: "compact", reason: "manual", tokensBefore: 9_000, tokensAfter: 900, summarizer: "provider", provider: "openai" }],
    );
    expect(row).toMatchObject({ kind: "compaction", summarizer: "provider", provider: "openai", tokensAfter: 900 });
  });

  it("skips entries it cannot read instead of failing", () => {
    const rows = entriesToRows([{ type: "message" }, { id: "x", type: "message", message: "no" }, { id: "y", type: "weird" }]);
    expect(rows).toEqual([]);
  });
});

describe("Timeline", () => {
  it("a relief step that was not applied ends its divider with the server's reason, and no figure", () => {
    const t = new Timeline(() => 0);
    t.apply({ kind: "compaction", phase: "started", level: "compact", reason: "manual", tokensBefore: 2_012 });
    const why = "not compacted: a summary would not make the context smaller: the 312 tokens old enough to summarise would become a 405-token summary";
    t.apply({ kind: "compaction", phase: "skipped", level: "compact", reason: "manual", tokensBefore: 2_012, why });
    expect(t.rows).toHaveLength(1);
    expect(t.rows[0]).toMatchObject({ kind: "compaction", phase: "skipped", why, tokensAfter: undefined });
    expect(t.series()).toEqual([]); // the context chart marks no compaction
  });

  it("a TTSR retry drops the current request's partial answer, not earlier steps", () => {
    const t = new Timeline(() => 0);
    t.apply({ kind: "turn", turnId: "t", state: "started" });
    t.apply({ kind: "stream", turnId: "t", stream: "text", delta: "step one" });
    t.apply({ kind: "tool", turnId: "t", toolCallId: "c", toolName: "read", state: "finished" });
    t.apply({ kind: "stream", turnId: "t", stream: "text", delta: "bad words" });
    t.apply({ kind: "turn", turnId: "t", state: "retrying", rules: ["r"], attempt: 2 });
    const row = t.rows[0];
    if (row?.kind !== "assistant") throw new Error("no row");
    expect(row.parts.map((p) => (p.kind === "text" ? p.text : p.kind))).toEqual(["step one", "tool"]);
    expect(row.marks).toEqual([{ rules: ["r"], attempt: 2, at: 2 }]);
  });

  it("an MCP tool's card names its server and the server's tool", () => {
    const t = new Timeline(() => 0);
    t.apply({ kind: "turn", turnId: "t", state: "started" });
    t.apply({ kind: "tool", turnId: "t", toolCallId: "c", toolName: "mcp__time__convert_time", state: "started", server: "time", serverTool: "convert_time" });
    t.apply({ kind: "tool", turnId: "t", toolCallId: "r", toolName: "read", state: "started" });
    const row = t.rows[0];
    if (row?.kind !== "assistant") throw new Error("no row");
    expect(row.parts.map((p) => (p.kind === "tool" ? p.label ?? p.name : p.kind))).toEqual(["time › convert_time", "read"]);
    t.apply({ kind: "toolProgress", turnId: "t", toolCallId: "c", progress: 3, total: 10, message: "converting" });
    expect(row.parts[0]).toMatchObject({ progress: "3/10 · converting" });
  });

  it("an older page goes on top; a tail sync keeps the older rows the reader loaded", () => {
    const t = new Timeline(() => 0);
    t.loadTail(conversation(10, { first: 10 }), "10");
    expect(t.hasOlder).toBe(true);
    const added = t.prependPage(conversation(10), undefined);
    expect(added).toBe(20);
    expect(t.hasOlder).toBe(false);
    t.loadTail(conversation(5, { first: 15 }), "30");
    expect(t.rows).toHaveLength(40);
    expect(t.hasOlder).toBe(false);
  });

  it("a finished turn is replaced by its stored entries on the next tail sync, in the live rows' places", () => {
    const t = new Timeline(() => 0);
    t.loadTail(conversation(2), undefined);
    t.addPrompt("Question 2: how does part 2 work?");
    t.apply({ kind: "turn", turnId: "t", state: "started" });
    t.apply({ kind: "stream", turnId: "t", stream: "text", delta: "Answer 2." });
    t.apply({ kind: "turn", turnId: "t", state: "finished" });
    const [prompt, turn] = t.rows.slice(-2);
    t.loadTail(conversation(3), undefined);
    const stored = entriesToRows(conversation(3));
    expect(t.rows.map(({ key, version, ...content }) => content)).toEqual(stored.map(({ key, version, ...content }) => content));
    // Their views stay (and redraw what differs): the stored rows take the live rows' keys.
    expect(t.rows.map((r) => r.key)).toEqual([...stored.slice(0, -2).map((r) => r.key), prompt!.key, turn!.key]);
    expect(t.rows[t.rows.length - 1]!.version).toBeGreaterThan(turn!.version);
  });
});

describe("a page that opens mid-turn", () => {
  const message = (id: string, message: Record<string, unknown>) => ({ id, type: "message", message });
  const call = (id: string, path: string) => ({ type: "toolCall", id, name: "read", arguments: { path } });
  // The running turn stored so far: its prompt, step one with its result, a steer, step two's call.
  const stored = [
    message("p", { role: "user", content: "read both" }),
    message("a1", { role: "assistant", content: [{ type: "text", text: "Step one." }, call("c1", "a.py")] }),
    message("r1", { role: "toolResult", toolCallId: "c1", content: [{ type: "text", text: "whole result one" }] }),
    message("s", { role: "user", content: "also b" }),
    message("a2", { role: "assistant", content: [{ type: "text", text: "Step two." }, call("c2", "b.py")] }),
  ];
  const heard: Notice[] = [
    { kind: "turn", turnId: "t", state: "started" },
    { kind: "stream", turnId: "t", stream: "text", delta: "Step one." },
    { kind: "stream", turnId: "t", stream: "tool", toolCallId: "c1", toolName: "read", delta: '{"path":"a.py"}' },
    { kind: "tool", turnId: "t", toolCallId: "c1", toolName: "read", state: "started" },
    { kind: "tool", turnId: "t", toolCallId: "c1", toolName: "read", state: "finished", output: "whole res", outputTruncated: true },
    { kind: "stream", turnId: "t", stream: "text", delta: "Step two." },
    { kind: "stream", turnId: "t", stream: "tool", toolCallId: "c2", toolName: "read", delta: '{"path":"b.py"}' },
    { kind: "tool", turnId: "t", toolCallId: "c2", toolName: "read", state: "started" },
  ];
  const texts = (t: Timeline) =>
    t.rows.flatMap((r) => (r.kind === "assistant" ? r.parts.flatMap((p) => (p.kind === "text" ? [p.text] : [])) : r.kind === "user" ? [`user: ${r.text}`] : []));

  it("shows each step of the running turn once, live, with the stored results", () => {
    const t = new Timeline(() => 0);
    t.loadTail([...conversation(1), ...stored], undefined, { turnId: "t", entryId: "p", notices: heard });
    expect(texts(t)).toEqual(["user: Question 0: how does part 0 work?", expect.stringContaining("Answer 0."), "Done with part 0.", "user: read both", "Step one.", "Step two.", "user: also b"]);
    const live = t.rows.find((r) => r.kind === "assistant" && r.turnId === "t");
    if (live?.kind !== "assistant") throw new Error("no live row");
    expect(live.parts.map((p) => (p.kind === "tool" ? [p.id, p.status, p.output] : p.kind))).toEqual([
      "text", ["c1", "done", "whole result one"], "text", ["c2", "running", undefined],
    ]);
    expect(live.entryIds).toEqual(["a1", "r1", "a2"]);
    expect(t.running).toBe("t");
    // The turn goes on in the same row, and its stored entries replace it when it ends.
    t.apply({ kind: "stream", turnId: "t", stream: "text", delta: " More." });
    expect(texts(t).filter((x) => /Step|More/.test(x))).toEqual(["Step one.", "Step two.", " More."]);
  });

  it("without the server's word, takes the turn's steps from after the last prompt", () => {
    const t = new Timeline(() => 0);
    t.loadTail([...conversation(1), ...stored.slice(0, 3)], undefined, { turnId: "t", notices: heard.slice(0, 5) });
    expect(texts(t).filter((x) => x === "Step one.")).toHaveLength(1);
  });

  it("a turn that began before the first page takes its earlier steps from the older page", () => {
    const t = new Timeline(() => 0);
    const page = stored.slice(3);
    t.loadTail(page, "3", { turnId: "t", entryId: "p", notices: heard });
    expect(texts(t)).toEqual(["Step one.", "Step two.", "user: also b"]);
    t.prependPage([...conversation(1), ...stored.slice(0, 3)], undefined);
    expect(texts(t).slice(3)).toEqual(["user: read both", "Step one.", "Step two.", "user: also b"]);
    const live = t.rows.find((r) => r.kind === "assistant" && r.turnId === "t");
    expect(live?.entryIds).toEqual(["a1", "r1", "a2"]);
  });

  it("a finished tool call shows its output from the notice, cut or whole", () => {
    const t = new Timeline(() => 0);
    for (const notice of heard.slice(0, 5)) t.apply(notice);
    const row = t.rows[0];
    expect(row?.kind === "assistant" && row.parts[1]).toMatchObject({ kind: "tool", status: "done", output: "whole res", outputTruncated: true });
  });
});

describe("the retrying banner", () => {
  it("says why and when when the server does, and still reads well when it does not", () => {
    expect(retryText({ attempt: 2, reason: "rate limited (429)", retryAt: 5_300 }, 1_000)).toEqual({ text: "Retrying in 5s… (attempt 2) — rate limited (429)", nextMs: 300 });
    expect(retryText({ attempt: 2, retryAt: 1_000 }, 1_000)).toEqual({ text: "Retrying now… (attempt 2)" });
    expect(retryText({ attempt: 3 }, 0)).toEqual({ text: "Retrying… (attempt 3)" });
    expect(retryText({}, 0)).toEqual({ text: "Retrying…" });
  });

  it("takes the reason from the server's error when it gives no reason", () => {
    const t = new Timeline(() => 0);
    t.apply({ kind: "turn", turnId: "t", state: "started" });
    t.apply({ kind: "turn", turnId: "t", state: "retrying", attempt: 2, error: "HTTP 503" });
    expect(t.banner).toEqual({ attempt: 2, reason: "HTTP 503", retryAt: undefined });
    t.apply({ kind: "stream", turnId: "t", stream: "text", delta: "back" });
    expect(t.banner).toBeUndefined();
  });
});

describe("subagents under their task's card", () => {
  const child = { subagentId: "explore", parentTurnId: "t" };
  const info = (state: "queued" | "running" | "completed" | "aborted", more: Record<string, unknown> = {}) =>
    ({ kind: "subagent", id: "explore", agent: "explore", state, prompt: "find the parser", isolation: "none", parentTurnId: "t", parentToolCallId: "c1", ...more }) as const;
  const result = JSON.stringify({ results: [
    { id: "explore", agent: "explore", status: "completed", data: { files: ["parse.py"] } },
    { id: "worker", agent: "worker", status: "failed", error: "patch did not apply", merge: { state: "failed", files: ["a.py"] } },
  ] });
  const taskPart = (t: Timeline) => {
    const row = t.rows.findLast((r) => r.kind === "assistant");
    const part = row?.kind === "assistant" ? row.parts.find((p) => p.kind === "tool" && p.name === "task") : undefined;
    if (part?.kind !== "tool") throw new Error("no task part");
    return part;
  };
  const started = () => {
    const t = new Timeline(() => 0);
    t.apply({ kind: "turn", turnId: "t", state: "started" });
    t.apply({ kind: "stream", turnId: "t", stream: "tool", toolCallId: "c1", toolName: "task", delta: '{"prompt":"find the parser"}' });
    t.apply({ kind: "tool", turnId: "t", toolCallId: "c1", toolName: "task", state: "started" });
    t.apply(info("queued"));
    t.apply(info("running"));
    return t;
  };

  it("streams a child's text and tool calls into its card, never into the conversation", () => {
    const t = started();
    t.apply({ kind: "turn", turnId: "c", state: "started", ...child });
    t.apply({ kind: "stream", turnId: "c", stream: "text", delta: "Looking ", ...child });
    t.apply({ kind: "stream", turnId: "c", stream: "text", delta: "around.", ...child });
    t.apply({ kind: "tool", turnId: "c", toolCallId: "x", toolName: "grep", state: "started", ...child });
    t.apply({ kind: "turn", turnId: "c", state: "finished", ...child });
    const part = taskPart(t);
    expect(part.children?.map((c) => [c.id, c.state, c.activity])).toEqual([["explore", "running", "running grep"]]);
    expect(part.children?.[0]?.parts.map((p) => (p.kind === "text" ? p.text : p.kind === "tool" ? `${p.name}:${p.status}` : p.kind))).toEqual(["Looking around.", "grep:running"]);
    const row = t.rows[0];
    expect(row?.kind === "assistant" && row.parts.map((p) => p.kind)).toEqual(["tool"]);
    expect(t.running).toBe("t"); // the child's turn ending is not the conversation's
    expect(row?.kind === "assistant" && row.state).toBe("streaming");
  });

  it("the task's result gives each card its outcome; the stored row keeps what streamed", () => {
    const t = started();
    t.apply({ kind: "stream", turnId: "c", stream: "text", delta: "Found it.", ...child });
    t.apply(info("completed", { tokens: 120 }));
    t.apply({ kind: "tool", turnId: "t", toolCallId: "c1", toolName: "task", state: "finished", output: result });
    expect(taskPart(t).children?.map((c) => [c.id, c.state, c.result !== undefined, c.merge])).toEqual([
      ["explore", "completed", true, undefined], ["worker", "failed", false, "failed"],
    ]);
    t.apply({ kind: "turn", turnId: "t", state: "finished" });
    const message = (id: string, m: Record<string, unknown>) => ({ id, type: "message", message: m });
    t.loadTail([
      message("u", { role: "user", content: "go" }),
      message("a", { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "task", arguments: { prompt: "find the parser" } }] }),
      message("r", { role: "toolResult", toolCallId: "c1", toolName: "task", content: [{ type: "text", text: result }] }),
    ], undefined);
    const cards = taskPart(t).children ?? [];
    expect(cards.map((c) => [c.id, c.state])).toEqual([["explore", "completed"], ["worker", "failed"]]);
    expect(cards[0]?.parts).toEqual([{ kind: "text", text: "Found it." }]);
    expect(cards[0]?.prompt).toBe("find the parser");
  });

  it("a session read from history shows its children as collapsed cards with agent, status and result", () => {
    const rows = entriesToRows([
      { id: "a", type: "message", message: { role: "assistant", content: [{ type: "toolCall", id: "c9", name: "task", arguments: { tasks: [{ prompt: "find the parser" }, { agent: "worker", prompt: "fix it" }] } }] } },
      { id: "r", type: "message", message: { role: "toolResult", toolCallId: "c9", content: [{ type: "text", text: result }] } },
    ]);
    const part = rows[0]?.kind === "assistant" ? rows[0].parts[0] : undefined;
    expect(part?.kind === "tool" && part.children?.map((c) => ({ id: c.id, agent: c.agent, state: c.state, prompt: c.prompt, result: c.result, error: c.error }))).toEqual([
      { id: "explore", agent: "explore", state: "completed", prompt: "find the parser", result: JSON.stringify({ files: ["parse.py"] }, null, 2), error: undefined },
      { id: "worker", agent: "worker", state: "failed", prompt: "fix it", result: undefined, error: "patch did not apply" },
    ]);
  });

  it("an aborted turn's task result keeps the finished children and marks the stopped one", () => {
    const aborted = JSON.stringify({ results: [
      { id: "explore", agent: "explore", status: "completed", data: { files: ["parse.py"] } },
      { id: "runner", agent: "runner", status: "aborted", error: "aborted" },
    ], error: "aborted by the user; the results of the subagents that had finished are kept" });
    const t = started();
    t.apply(info("completed"));
    t.apply({ kind: "subagent", id: "runner", agent: "runner", state: "running", prompt: "run it", isolation: "worktree", parentTurnId: "t", parentToolCallId: "c1" });
    t.apply({ kind: "subagent", id: "runner", agent: "runner", state: "aborted", prompt: "run it", isolation: "worktree", parentTurnId: "t", parentToolCallId: "c1", error: "aborted" });
    t.apply({ kind: "tool", turnId: "t", toolCallId: "c1", toolName: "task", state: "finished", isError: true, output: aborted });
    t.apply({ kind: "turn", turnId: "t", state: "aborted" });
    const live = taskPart(t);
    expect(live.status).toBe("error");
    expect(live.children?.map((c) => [c.id, c.state, c.result !== undefined])).toEqual([["explore", "completed", true], ["runner", "aborted", false]]);
    const rows = entriesToRows([
      { id: "a", type: "message", message: { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "task", arguments: { tasks: [{ prompt: "find the parser" }, { prompt: "run it" }] } }] } },
      { id: "r", type: "message", message: { role: "toolResult", toolCallId: "c1", isError: true, content: [{ type: "text", text: aborted }] } },
    ]);
    const part = rows[0]?.kind === "assistant" ? rows[0].parts[0] : undefined;
    expect(part?.kind === "tool" && part.children?.map((c) => [c.id, c.state, c.error])).toEqual([["explore", "completed", undefined], ["runner", "aborted", "aborted"]]);
  });

  it("a child heard before its task call is drawn gets a task card in its parent's turn", () => {
    const t = new Timeline(() => 0);
    t.apply({ kind: "turn", turnId: "t", state: "started" });
    t.apply(info("running"));
    expect(taskPart(t).children?.map((c) => c.id)).toEqual(["explore"]);
    t.apply({ kind: "stream", turnId: "x", stream: "text", delta: "unknown child", subagentId: "nobody", parentTurnId: "t" });
    expect(t.rows).toHaveLength(1);
  });
});
