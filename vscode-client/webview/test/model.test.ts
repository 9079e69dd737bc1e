import { describe, expect, it } from "vitest";
import { conversation } from "../e2e/fixtures.mjs";
import { entriesToRows } from "../src/history";
import { Timeline } from "../src/model";

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

  it("skips entries it cannot read instead of failing", () => {
    const rows = entriesToRows([{ type: "message" }, { id: "x", type: "message", message: "no" }, { id: "y", type: "weird" }]);
    expect(rows).toEqual([]);
  });
});

describe("Timeline", () => {
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

  it("a finished turn is replaced by its stored entries on the next tail sync", () => {
    const t = new Timeline(() => 0);
    t.loadTail(conversation(2), undefined);
    t.addPrompt("Question 2: how does part 2 work?");
    t.apply({ kind: "turn", turnId: "t", state: "started" });
    t.apply({ kind: "stream", turnId: "t", stream: "text", delta: "Answer 2." });
    t.apply({ kind: "turn", turnId: "t", state: "finished" });
    t.loadTail(conversation(3), undefined);
    expect(t.rows.map((r) => r.key)).toEqual(entriesToRows(conversation(3)).map((r) => r.key));
  });
});
