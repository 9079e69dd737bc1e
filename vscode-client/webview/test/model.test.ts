import { describe, expect, it } from "vitest";
import type { Item, Op, Patch, ReplyItem, SubagentCard, ToolPart, TranscriptPage } from "../../src/transcript";
import type { Notice } from "../../src/webviewProtocol";
import { retryText, Timeline } from "../src/model";
import type { AssistantRow, Row } from "../src/rows";

const SESSION = "s";
const page = (items: Item[], seq = 0, nextCursor?: string): TranscriptPage => ({ sessionId: SESSION, seq, items, ...(nextCursor ? { nextCursor } : {}) });
const patch = (seq: number, ...ops: Op[]): Patch => ({ sessionId: SESSION, seq, ops });
const user = (id: string, text: string, steer = false): Item => ({ kind: "user", key: `u:${id}`, entryId: id, text, steer });
const reply = (id: string, state: ReplyItem["state"], parts: ReplyItem["parts"] = [], more: Partial<ReplyItem> = {}): ReplyItem =>
  ({ kind: "reply", key: `r:u:${id}`, state, parts, ...more });
const textPart = (key: string, text: string) => ({ kind: "text", key, text }) as const;
const tool = (key: string, name: string, status: ToolPart["status"], more: Partial<ToolPart> = {}): ToolPart =>
  ({ kind: "tool", key, toolCallId: `call-${key}`, name, args: "{}", status, subagents: [], ...more });
const append = (node: Item | ReplyItem["parts"][number], parent?: string, item = parent ?? node.key): Op =>
  (parent === undefined ? { op: "append", item, node } : { op: "append", item, parent, node }) as Op;
const text = (item: string, key: string, delta: string): Op => ({ op: "text", item, key, text: delta });

function assistant(t: Timeline, key: string): AssistantRow {
  const row = t.rows.find((r) => r.key === key);
  if (row?.kind !== "assistant") throw new Error(`no reply row ${key}`);
  return row;
}

const texts = (row: Row) => (row.kind === "assistant" ? row.parts.map((p) => (p.kind === "tool" ? `${p.name}:${p.status}` : p.text)) : []);

describe("the page's copy of the transcript", () => {
  it("draws a page, then applies patches in order; a patch the page holds is skipped", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([user("1", "hi")], 4));
    expect(t.applyPatch(patch(4, append(user("1", "hi"))))).toBe("skipped");
    expect(t.applyPatch(patch(5, append(reply("1", "streaming")), append(textPart("r:u:1/0.0", "Hel"), "r:u:1")))).toBe("applied");
    expect(t.applyPatch(patch(6, text("r:u:1", "r:u:1/0.0", "lo")))).toBe("applied");
    expect(t.rows.map((r) => r.kind)).toEqual(["user", "assistant"]);
    expect(texts(assistant(t, "r:u:1"))).toEqual(["Hello"]);
    expect(t.running).toBe(true);
    expect(t.applyPatch(patch(7, { op: "update", item: "r:u:1", node: { kind: "reply", key: "r:u:1", state: "done" } }))).toBe("applied");
    expect(t.running).toBe(false);
    expect(assistant(t, "r:u:1").state).toBe("done");
  });

  it("skips patches until its first page is in (the page holds them)", () => {
    const t = new Timeline(() => 0);
    expect(t.applyPatch(patch(1, append(user("1", "hi"))))).toBe("skipped");
    expect(t.rows).toEqual([]);
  });

  it("asks to read again on a reset, on another session, and on an op that does not fit; then waits for the page", () => {
    for (const bad of [patch(2, { op: "reset" }), { ...patch(2, append(user("2", "x"))), sessionId: "other" }, patch(2, text("u:1", "nope", "x"))]) {
      const t = new Timeline(() => 0);
      t.loadTail(page([user("1", "hi")], 1));
      expect(t.applyPatch(bad)).toBe("reload");
      expect(t.applyPatch(patch(3, append(user("3", "later"))))).toBe("skipped");
      t.loadTail(page([user("1", "hi"), user("3", "later")], 3));
      expect(t.rows.map((r) => r.key)).toEqual(["u:1", "u:3"]);
      expect(t.applyPatch(patch(4, append(user("4", "next"))))).toBe("applied");
    }
  });

  it("reads again a page that was read before a reset it heard meanwhile", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([user("1", "hi")], 1));
    expect(t.applyPatch(patch(5, { op: "reset" }))).toBe("reload");
    expect(t.loadTail(page([user("1", "hi")], 4))).toBe(false); // answered before the reset
    expect(t.applyPatch(patch(6, append(user("6", "x"))))).toBe("skipped");
    expect(t.loadTail(page([user("1", "hi")], 5))).toBe(true);
    expect(t.applyPatch(patch(6, append(user("6", "x"))))).toBe("applied");
  });

  it("ignores changes to items older than the pages it read (reading them later brings them)", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([user("2", "newer")], 1, "u:2"));
    expect(t.applyPatch(patch(2, { op: "update", item: "a:old", node: { kind: "advisor", key: "a:old", noteId: "n", note: "x", severity: "nit", channel: "aside" } }))).toBe("applied");
    t.prependPage(page([user("1", "older")], 2));
    expect(t.rows.map((r) => r.key)).toEqual(["u:1", "u:2"]);
    expect(t.hasOlder).toBe(false);
  });

  it("redraws only the rows whose items changed; the others keep their row (and view)", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([user("1", "a"), reply("1", "done", [textPart("r:u:1/0.0", "one")]), user("2", "b"), reply("2", "streaming", [textPart("r:u:2/0.0", "tw")])], 1));
    const before = t.rows.slice();
    t.settle();
    t.applyPatch(patch(2, text("r:u:2", "r:u:2/0.0", "o")));
    expect([...t.rows]).toHaveLength(4);
    expect(t.structural).toBe(false);
    expect([...t.dirty]).toEqual(["r:u:2"]);
    expect(t.rows.slice(0, 3)).toEqual(before.slice(0, 3));
    expect(t.rows[0]).toBe(before[0]);
    expect(t.rows[3]!.version).toBeGreaterThan(before[3]!.version);
    t.settle();
    t.applyPatch(patch(3, append(user("3", "c"))));
    expect(t.structural).toBe(true);
    expect([...t.dirty]).toEqual(["u:3"]);
    expect(t.rows[0]).toBe(before[0]);
  });

  it("a TTSR mark sits where the server put it; the server removes what the retry dropped", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([reply("1", "streaming", [textPart("r/0.0", "step one"), tool("r/0.1", "read", "done"), textPart("r/1.0", "bad words")])], 1));
    t.applyPatch(patch(2, { op: "remove", item: "r:u:1", key: "r/1.0" }, append({ kind: "ttsr", key: "m:1", rules: ["r"], interrupted: true, attempt: 2, reminder: "say it well" }, "r:u:1")));
    const row = assistant(t, "r:u:1");
    expect(texts(row)).toEqual(["step one", "read:done"]);
    expect(row.marks).toEqual([{ rules: ["r"], attempt: 2, reminder: "say it well", at: 2 }]);
  });

  it("an MCP tool's card names its server and the server's tool, with its progress while it runs", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([reply("1", "streaming", [tool("c", "mcp__time__convert_time", "running", { server: "time", serverTool: "convert_time" }), tool("r", "read", "running")])], 1));
    t.apply({ kind: "toolProgress", turnId: "t", toolCallId: "call-c", progress: 3, total: 10, message: "converting" });
    const row = assistant(t, "r:u:1");
    expect(row.parts.map((p) => (p.kind === "tool" ? [p.label ?? p.name, p.progress] : p.kind))).toEqual([["time › convert_time", "3/10 · converting"], ["read", undefined]]);
  });

  it("a relief step that was not applied shows the server's reason, and the chart marks no compaction", () => {
    const t = new Timeline(() => 0);
    const why = "not compacted: a summary would not make the context smaller";
    t.loadTail(page([{ kind: "relief", key: "c:live:0", level: "compact", reason: "manual", phase: "skipped", tokensBefore: 2_012, why, transient: true }], 1));
    expect(t.rows[0]).toMatchObject({ kind: "compaction", phase: "skipped", why, tokensAfter: undefined });
    expect(t.series()).toEqual([]);
  });

  it("the context chart takes each reply's context and each finished compaction", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([
      reply("1", "done", [], { context: { tokens: 900, stablePrefixTokens: 800 } }),
      { kind: "relief", key: "c:1", level: "compact", phase: "finished", tokensBefore: 900, tokensAfter: 300 },
      reply("2", "done", [], { context: { tokens: 400, stablePrefixTokens: 0 } }),
    ], 1));
    expect(t.series()).toEqual([{ tokens: 900, stable: 800, compaction: false }, { tokens: 300, stable: 0, compaction: true }, { tokens: 400, stable: 0, compaction: false }]);
  });

  it("Stop and Steer show from the turn's start, before its reply, and go when it ends", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([], 0));
    t.apply({ kind: "turn", turnId: "t", state: "started" });
    expect(t.running).toBe(true);
    t.apply({ kind: "turn", turnId: "c", state: "finished", subagentId: "explore" });
    expect(t.running).toBe(true);
    t.apply({ kind: "turn", turnId: "t", state: "finished" });
    expect(t.running).toBe(false);
    // A page opened mid-turn knows from the transcript alone.
    t.loadTail(page([user("1", "go"), reply("1", "streaming")], 3));
    expect(t.running).toBe(true);
  });

  it("a failed reply offers its prompt again; a refused prompt says so until the next item comes", () => {
    const t = new Timeline(() => 7);
    t.loadTail(page([user("1", "do it"), reply("1", "error", [{ kind: "error", key: "e:1", message: "HTTP 400" }])], 1));
    expect(assistant(t, "r:u:1")).toMatchObject({ state: "error", error: "HTTP 400", retryText: "do it" });
    t.failPrompt("the server is busy", "again");
    expect(t.rows.at(-1)).toMatchObject({ kind: "assistant", state: "error", error: "the server is busy", retryText: "again" });
    t.applyPatch(patch(2, append(user("2", "again"))));
    expect(t.rows.map((r) => r.key)).toEqual(["u:1", "r:u:1", "u:2"]);
  });

  it("an advisor note acted upon stays, greyed", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([{ kind: "advisor", key: "a:1", noteId: "n1", note: "check it", severity: "concern", channel: "aside" }], 1));
    t.resolveNote("n1", "dismiss");
    expect(t.rows[0]).toMatchObject({ kind: "advisor", resolved: "dismiss" });
  });
});

describe("checkpoints", () => {
  const items: Item[] = [
    user("1", "write hello"), reply("1", "done", [textPart("r:u:1/0.0", "Here is hello.")]),
    user("2", "say goodbye"), reply("2", "done", [tool("r:u:2/0.0", "edit", "done")]),
    { kind: "checkpoint", key: "k:1", checkpointId: "cp2", label: "say goodbye" },
    user("3", "again"), reply("3", "done"),
  ];
  const listed: Notice = { kind: "checkpoints", checkpoints: [{ id: "cp2", label: "say goodbye", createdAt: "2026-01-01T00:00:00Z", files: ["app.py"] }] };

  it("puts Restore to here on the row before the prompt of the turn it was taken in, once listed", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page(items, 1));
    expect(t.rows.map((r) => r.key)).toEqual(["u:1", "r:u:1", "u:2", "r:u:2", "u:3", "r:u:3"]);
    expect(t.rows.map((r) => t.checkpointFor(r)?.id)).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
    t.apply(listed);
    expect(t.rows.map((r) => t.checkpointFor(r)?.id)).toEqual([undefined, "cp2", undefined, undefined, undefined, undefined]);
  });

  it("the turn's edits diff against it", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page(items, 1));
    expect(t.rows.map((r) => t.diffBaseFor(r))).toEqual([undefined, undefined, undefined, "cp2", undefined, undefined]);
  });

  it("a checkpoint of the first turn goes on its prompt", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([user("1", "edit"), reply("1", "done"), { kind: "checkpoint", key: "k:1", checkpointId: "cp2", label: "edit" }], 1));
    t.apply(listed);
    expect(t.rows.map((r) => t.checkpointFor(r)?.id)).toEqual(["cp2", undefined]);
  });
});

describe("subagents under their task's card", () => {
  const card = (state: "running" | "completed" | "aborted", parts: ReplyItem["parts"]): SubagentCard => ({
    kind: "subagent", key: "s:explore", id: "explore", agent: "explore", state, prompt: "find the parser",
    items: [user("c1", "find the parser"), { ...reply("c1", state === "running" ? "streaming" : "done", parts), key: "s:explore/r:u:c1" }],
  });

  it("a child's text and tool calls go into its card, with what it is doing now", () => {
    const t = new Timeline(() => 0);
    const task = tool("r/0.0", "task", "running", { subagents: [card("running", [textPart("s:explore/r/0.0", "Reading parser.py now.")])] });
    t.loadTail(page([user("1", "delegate"), reply("1", "streaming", [task])], 1));
    const part = assistant(t, "r:u:1").parts[0];
    if (part?.kind !== "tool") throw new Error("no task part");
    expect(part.children).toEqual([{ id: "explore", agent: "explore", state: "running", prompt: "find the parser", activity: "writing", parts: [{ kind: "text", text: "Reading parser.py now." }] }]);
    t.applyPatch(patch(2, append(tool("s:explore/r/0.1", "grep", "running"), "s:explore/r:u:c1", "r:u:1")));
    const again = assistant(t, "r:u:1").parts[0];
    expect(again?.kind === "tool" && again.children?.[0]?.activity).toBe("running grep");
    // The conversation shows none of the child's words.
    expect(texts(assistant(t, "r:u:1"))).toEqual(["task:running"]);
  });

  it("a stopped child keeps its card, marked, with its result and error", () => {
    const t = new Timeline(() => 0);
    const task = tool("r/0.0", "task", "done", { subagents: [{ ...card("aborted", []), error: "stopped by the user", result: "{}" }] });
    t.loadTail(page([reply("1", "done", [task])], 1));
    const part = assistant(t, "r:u:1").parts[0];
    expect(part?.kind === "tool" && part.children?.[0]).toMatchObject({ state: "aborted", activity: "stopped", error: "stopped by the user", result: "{}" });
  });
});

describe("the retrying banner", () => {
  it("says why and when when the server does, and still reads well when it does not", () => {
    expect(retryText({ attempt: 2, reason: "rate limited (429)", retryAt: 5_300 }, 1_000)).toEqual({ text: "Retrying in 5s… (attempt 2) — rate limited (429)", nextMs: 300 });
    expect(retryText({ attempt: 2, retryAt: 1_000 }, 1_000)).toEqual({ text: "Retrying now… (attempt 2)" });
    expect(retryText({ attempt: 3 }, 0)).toEqual({ text: "Retrying… (attempt 3)" });
    expect(retryText({}, 0)).toEqual({ text: "Retrying…" });
  });

  it("shows the running reply's retry, counting from when it was heard, and goes when it answers", () => {
    let now = 1_000;
    const t = new Timeline(() => now);
    t.loadTail(page([reply("1", "streaming", [], { retry: { attempt: 2, reason: "HTTP 503", retryInMs: 4_000 } })], 1));
    expect(t.banner).toEqual({ attempt: 2, reason: "HTTP 503", retryAt: 5_000 });
    now = 3_000;
    t.applyPatch(patch(2, { op: "update", item: "r:u:1", node: { kind: "reply", key: "r:u:1", state: "streaming", retry: { attempt: 2, reason: "HTTP 503", retryInMs: 4_000 } } }));
    expect(t.banner?.retryAt).toBe(5_000);
    t.applyPatch(patch(3, { op: "update", item: "r:u:1", node: { kind: "reply", key: "r:u:1", state: "streaming" } }));
    expect(t.banner).toBeUndefined();
  });
});

describe("a relief divider's audit", () => {
  const relief = (more: Partial<Extract<Item, { kind: "relief" }>> = {}): Item => ({
    kind: "relief", key: "c:9", level: "compact", reason: "manual", phase: "finished", tokensBefore: 9_000, tokensAfter: 2_000,
    summarizer: "structured", audit: "e9", ...more,
  });
  const audit = { id: "e9", at: "2026-01-01T00:00:00Z", level: "compact", tokensBefore: 9_000, tokensAfter: 2_000, summary: "S" } as const;
  const divider = (t: Timeline) => {
    const row = t.rows.find((r) => r.key === "c:9");
    if (row?.kind !== "compaction") throw new Error("no divider");
    return row;
  };

  it("is asked for once when the divider opens, and drawn as the server serves it", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([user("1", "hi"), relief()], 1));
    expect(divider(t)).toMatchObject({ audit: "e9", expanded: undefined, auditState: undefined });
    expect(t.wantedAudits()).toEqual([]); // closed: nothing asked
    t.settle();
    t.toggleAudit("c:9", true);
    expect(t.wantedAudits()).toEqual(["e9"]);
    expect(t.wantedAudits()).toEqual([]); // asked already
    expect(t.dirty.has("c:9")).toBe(true);
    expect(divider(t)).toMatchObject({ expanded: true, auditState: { state: "loading" } });
    t.settle();
    t.setAudit("e9", { audit });
    expect(t.dirty.has("c:9")).toBe(true);
    expect(divider(t).auditState).toEqual({ state: "ready", audit });
    t.toggleAudit("c:9", false);
    expect(divider(t).expanded).toBeUndefined();
    expect(t.wantedAudits()).toEqual([]);
  });

  it("a refusal is held as one (no retry loop), and another session forgets audits", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([relief()], 1));
    t.toggleAudit("c:9", true);
    t.wantedAudits();
    t.setAudit("e9", { error: "no such step" });
    expect(divider(t).auditState).toEqual({ state: "failed", message: "no such step" });
    expect(t.wantedAudits()).toEqual([]);
    t.reset();
    t.loadTail(page([relief()], 1));
    expect(divider(t)).toMatchObject({ expanded: undefined, auditState: undefined });
  });

  it("shows the step undone from the server's patch, and asks for the audit again", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([relief()], 1));
    t.toggleAudit("c:9", true);
    t.wantedAudits();
    t.setAudit("e9", { audit });
    t.settle();
    expect(divider(t).undoneBy).toBeUndefined();
    // An undo declined (it would not fit): the divider is drawn again, still standing.
    t.undoSettled("e9");
    expect(t.dirty.has("c:9")).toBe(true);
    expect(divider(t).undoneBy).toBeUndefined();
    t.settle();
    expect(t.applyPatch(patch(2, { op: "update", item: "c:9", node: relief({ undoneBy: "e12" }) }))).toBe("applied");
    expect(t.dirty.has("c:9")).toBe(true);
    expect(divider(t)).toMatchObject({ undoneBy: "e12", expanded: true });
    // The held audit predates the undo: it is asked again, and the fresh one is drawn.
    expect(t.wantedAudits()).toEqual(["e9"]);
    t.setAudit("e9", { audit: { ...audit, undoneBy: "e12" } });
    expect(t.wantedAudits()).toEqual([]);
    expect(divider(t).auditState).toMatchObject({ state: "ready", audit: { undoneBy: "e12" } });
  });
});

describe("pins", () => {
  const pinOf = (row: Row | undefined) => (row?.kind === "user" || row?.kind === "assistant" ? row.pin : undefined);
  const rowAt = (t: Timeline, key: string) => t.rows.find((r) => r.key === key);
  const card = (t: Timeline, key: string, index: number) => {
    const part = assistant(t, key).parts[index];
    if (part?.kind !== "tool") throw new Error("no tool card");
    return part;
  };
  const read = tool("r:u:1/0.0", "read", "done", { resultEntryId: "e3" });
  const pinnedHi: Item = { kind: "user", key: "u:1", entryId: "1", text: "hi", steer: false, pinned: true };
  const answered = () => reply("1", "done", [read, textPart("r:u:1/0.1", "It reads well.")], { entryId: "e4" });

  it("carries the entry ids the transcript gives, not pinned until the server says so", () => {
    const t = new Timeline(() => 0);
    const child: SubagentCard = {
      kind: "subagent", key: "k", id: "w1", agent: "worker", state: "completed", prompt: "p",
      items: [reply("c", "done", [tool("c/0", "read", "done", { resultEntryId: "c9" })])],
    };
    const running = tool("r:u:1/0.2", "bash", "running"); // no result stored yet: nothing to pin
    t.loadTail(page([user("1", "hi"), reply("1", "done", [read, textPart("r:u:1/0.1", "ok"), running, tool("r:u:1/0.3", "task", "done", { subagents: [child] })], { entryId: "e4" })], 1));
    expect(pinOf(rowAt(t, "u:1"))).toEqual({ entryId: "1", pinned: false });
    expect(pinOf(rowAt(t, "r:u:1"))).toEqual({ entryId: "e4", pinned: false });
    expect(card(t, "r:u:1", 0).pin).toEqual({ entryId: "e3", pinned: false });
    expect(card(t, "r:u:1", 2).pin).toBeUndefined();
    expect(card(t, "r:u:1", 3).children?.[0]?.parts[0]).not.toHaveProperty("pin"); // a subagent's result is not ours
    // A reply still streaming has no stored message: no pin.
    t.applyPatch(patch(2, append(user("2", "more")), append(reply("2", "streaming"))));
    expect(pinOf(rowAt(t, "r:u:2"))).toBeUndefined();
  });

  it("a pin asked makes the button wait; the server's patch draws it pinned; the answer ends the wait", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([user("1", "hi"), answered()], 1));
    t.settle();
    t.pinRequested("e3", "r:u:1", "pin");
    expect(t.dirty.has("r:u:1")).toBe(true);
    expect(card(t, "r:u:1", 0).pin).toEqual({ entryId: "e3", pinned: false, asking: "pin" }); // asked, not pinned
    expect(t.pinPending("e3")).toBe(true);
    t.settle();
    expect(t.applyPatch(patch(2, { op: "update", item: "r:u:1", node: { kind: "tool", key: read.key, toolCallId: read.toolCallId, name: "read", args: "{}", status: "done", resultEntryId: "e3", pinned: true } }))).toBe("applied");
    expect(card(t, "r:u:1", 0).pin).toEqual({ entryId: "e3", pinned: true, asking: "pin" });
    t.pinSettled("e3");
    expect(t.pinPending("e3")).toBe(false);
    expect(t.dirty.has("r:u:1")).toBe(true);
    expect(card(t, "r:u:1", 0).pin).toEqual({ entryId: "e3", pinned: true });
    // The message and the reply, the same way.
    t.pinRequested("1", "u:1", "pin");
    t.applyPatch(patch(3, { op: "update", item: "u:1", node: pinnedHi }));
    t.pinSettled("1");
    expect(pinOf(rowAt(t, "u:1"))).toEqual({ entryId: "1", pinned: true });
    t.applyPatch(patch(4, { op: "update", item: "r:u:1", node: { kind: "reply", key: "r:u:1", state: "done", entryId: "e4", pinned: true } }));
    expect(pinOf(rowAt(t, "r:u:1"))).toEqual({ entryId: "e4", pinned: true });
    expect(card(t, "r:u:1", 0).pin?.pinned).toBe(true); // the reply's patch leaves its card's pin
  });

  it("unpin: the patch without `pinned` draws it unpinned; a refused pin leaves the row as it was", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([pinnedHi, answered()], 1));
    expect(pinOf(rowAt(t, "u:1"))?.pinned).toBe(true);
    t.pinRequested("1", "u:1", "unpin");
    expect(pinOf(rowAt(t, "u:1"))).toEqual({ entryId: "1", pinned: true, asking: "unpin" });
    t.applyPatch(patch(2, { op: "update", item: "u:1", node: user("1", "hi") }));
    t.pinSettled("1");
    expect(pinOf(rowAt(t, "u:1"))).toEqual({ entryId: "1", pinned: false });
    // Refused (a turn was running): no patch, only the answer.
    t.settle();
    t.pinRequested("e4", "r:u:1", "pin");
    t.settle();
    t.pinSettled("e4");
    expect(t.dirty.has("r:u:1")).toBe(true);
    expect(pinOf(rowAt(t, "r:u:1"))).toEqual({ entryId: "e4", pinned: false });
    t.settle();
    t.pinSettled("e4"); // answered twice: nothing more to redraw
    expect(t.dirty.has("r:u:1")).toBe(false);
  });

  it("another session forgets the pins on their way", () => {
    const t = new Timeline(() => 0);
    t.loadTail(page([user("1", "hi")], 1));
    t.pinRequested("1", "u:1", "pin");
    t.reset();
    t.loadTail(page([user("1", "hi")], 1));
    expect(pinOf(rowAt(t, "u:1"))?.asking).toBeUndefined();
  });
});
