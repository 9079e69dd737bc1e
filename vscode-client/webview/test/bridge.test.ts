import { describe, expect, it } from "vitest";
import { PanelBridge, rewindArguments } from "../../src/panel/bridge";
import { LiveTurn } from "../../src/panel/coalescer";
import { parseToPage, type ToPage } from "../../src/webviewProtocol";
import { FakeClient, FakeEditor, ManualTimer } from "./fakes";

function setup() {
  const client = new FakeClient();
  const editor = new FakeEditor();
  const timer = new ManualTimer();
  const warnings: string[] = [];
  const bridge = new PanelBridge(client, editor, { warn: (m) => warnings.push(m) }, timer);
  const posted: ToPage[] = [];
  bridge.attach((m) => posted.push(m));
  const settle = () => new Promise((resolve) => setTimeout(resolve, 0));
  return { client, editor, timer, warnings, bridge, posted, settle };
}

describe("PanelBridge: notifications into the page", () => {
  it("forwards the server's notifications, coalesced into one message per flush", () => {
    const { client, timer, posted } = setup();
    client.notify("memento/turn", { turnId: "t", state: "started" });
    for (const delta of ["Hel", "lo", "!"]) client.notify("memento/stream", { turnId: "t", stream: "text", delta });
    client.notify("memento/context", { tokens: 5, contextWindow: 10, percent: 50, stablePrefixTokens: 2 });
    expect(posted).toEqual([]);
    timer.fire();
    expect(posted).toEqual([{ type: "notices", notices: [
      { kind: "turn", turnId: "t", state: "started" },
      { kind: "stream", turnId: "t", stream: "text", delta: "Hello!" },
      { kind: "context", tokens: 5, contextWindow: 10, percent: 50, stablePrefixTokens: 2 },
    ] }]);
  });

  it("forwards a subagent's state and its own turn events, tagged, for the page to nest", () => {
    const { client, timer, posted, warnings } = setup();
    client.notify("memento/turn", { turnId: "t", state: "started" });
    const child = { subagentId: "explore", parentTurnId: "t" };
    client.notify("memento/subagent", { id: "explore", agent: "explore", state: "running", prompt: "look", isolation: "none", parentTurnId: "t", parentToolCallId: "c1", tokens: 0, sessionPath: "/x" });
    client.notify("memento/turn", { turnId: "c", state: "started", ...child });
    client.notify("memento/stream", { turnId: "c", stream: "text", delta: "child ", ...child });
    client.notify("memento/stream", { turnId: "c", stream: "text", delta: "text", ...child });
    client.notify("memento/stream", { turnId: "t", stream: "text", delta: "parent text" });
    timer.fire();
    expect(warnings).toEqual([]);
    expect(posted).toEqual([{ type: "notices", notices: [
      { kind: "turn", turnId: "t", state: "started" },
      { kind: "subagent", id: "explore", agent: "explore", state: "running", prompt: "look", isolation: "none", parentTurnId: "t", parentToolCallId: "c1", tokens: 0 },
      { kind: "turn", turnId: "c", state: "started", ...child },
      { kind: "stream", turnId: "c", stream: "text", delta: "child text", ...child },
      { kind: "stream", turnId: "t", stream: "text", delta: "parent text" },
    ] }]);
  });

  it("a card's Stop aborts that subagent alone", async () => {
    const { client, bridge, settle } = setup();
    client.answers["memento/subagent/abort"] = () => ({ aborted: true });
    await bridge.receive({ type: "abortSubagent", id: "worker-2" });
    await settle();
    expect(client.requests).toEqual([{ method: "memento/subagent/abort", param: { id: "worker-2" } }]);
  });

  it("drops a malformed notification with a warning, and goes on", () => {
    const { client, timer, posted, warnings } = setup();
    client.notify("memento/stream", { turnId: "t", stream: "text" });
    client.notify("memento/stream", { turnId: "t", stream: "text", delta: "ok" });
    timer.fire();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/notice.delta: expected a string/);
    expect(posted).toHaveLength(1);
  });

  it("queues nothing while no page listens", () => {
    const { client, bridge, timer, posted } = setup();
    bridge.attach(undefined);
    client.notify("memento/stream", { turnId: "t", stream: "text", delta: "lost" });
    timer.fire();
    expect(posted).toEqual([]);
  });

  it("sends a reopened page the running turn with the history tail", async () => {
    const { client, bridge, posted, settle } = setup();
    client.notify("memento/turn", { turnId: "t", state: "started" });
    client.notify("memento/stream", { turnId: "t", stream: "text", delta: "partial" });
    bridge.attach(undefined);
    const reopened: ToPage[] = [];
    bridge.attach((m) => reopened.push(m));
    client.answers["memento/history"] = () => ({
      entries: [{ id: "a", type: "message" }, "junk"], nextCursor: null, runningTurn: { turnId: "t", entryId: "a" },
    });
    await bridge.receive({ type: "history", requestId: 7, limit: 100, tail: true });
    await settle();
    expect(reopened).toEqual([{
      type: "history", requestId: 7, entriesJson: '[{"id":"a","type":"message"}]', tail: true,
      running: { turnId: "t", entryId: "a", notices: [
        { kind: "turn", turnId: "t", state: "started" }, { kind: "stream", turnId: "t", stream: "text", delta: "partial" },
      ] },
    }]);
    expect(parseToPage(reopened[0])).toEqual(reopened[0]);
    expect(posted).toEqual([]);
    // An older page, or no turn running: no live part.
    await bridge.receive({ type: "history", requestId: 8, limit: 100, cursor: "5", tail: false });
    client.notify("memento/turn", { turnId: "t", state: "finished" });
    await bridge.receive({ type: "history", requestId: 9, limit: 100, tail: true });
    await settle();
    const pages = reopened.slice(1).filter((m) => m.type === "history");
    expect(pages.map((m) => [m.requestId, m.running])).toEqual([[8, undefined], [9, undefined]]);
  });

  it("passes the page's relief steps on with the server's figures", async () => {
    const { client, bridge, posted: pages } = setup();
    const step = { id: "c", at: "2026-12-01T10:00:00Z", level: "compact", reason: "manual", tokensBefore: 2_012, tokensAfter: 1_530, summarizer: "model" };
    client.answers["memento/history"] = () => ({ entries: [{ id: "c", type: "compaction", tokensBefore: 446 }], relief: { c: step } });
    await bridge.receive({ type: "history", requestId: 3, limit: 100, tail: false });
    const page = pages.find((m) => m.type === "history");
    expect(page && parseToPage(page)).toMatchObject({ relief: [{ id: "c", level: "compact", tokensBefore: 2_012, tokensAfter: 1_530 }] });
  });

  it("gives a retry's countdown to a reopened page as what is left of it", async () => {
    let now = 1000;
    const live = new LiveTurn(() => now);
    live.record({ kind: "turn", turnId: "t", state: "started" });
    live.record({ kind: "turn", turnId: "t", state: "retrying", attempt: 2, reason: "rate limited", retryInMs: 5000 });
    now += 3000;
    expect(live.snapshot()[1]).toEqual({ kind: "turn", turnId: "t", state: "retrying", attempt: 2, reason: "rate limited", retryInMs: 2000 });
    now += 9000;
    expect(live.snapshot()[1]).toMatchObject({ retryInMs: 0 });
  });

  it("keeps a subagent's notices in the running turn a reopened page replays, without taking it over", () => {
    const live = new LiveTurn(() => 0);
    const child = { subagentId: "explore", parentTurnId: "t" };
    live.record({ kind: "turn", turnId: "t", state: "started" });
    live.record({ kind: "subagent", id: "explore", agent: "explore", state: "running", prompt: "p", parentTurnId: "t" });
    live.record({ kind: "turn", turnId: "c", state: "started", ...child });
    live.record({ kind: "stream", turnId: "c", stream: "text", delta: "hi", ...child });
    live.record({ kind: "turn", turnId: "c", state: "finished", ...child });
    live.record({ kind: "subagent", id: "other", agent: "explore", state: "running", prompt: "p", parentTurnId: "older" });
    expect(live.running).toBe("t");
    expect(live.snapshot().map((n) => [n.kind, "subagentId" in n ? n.subagentId : n.kind === "subagent" ? n.id : undefined])).toEqual([
      ["turn", undefined], ["subagent", "explore"], ["turn", "explore"], ["stream", "explore"], ["turn", "explore"],
    ]);
    live.record({ kind: "turn", turnId: "t", state: "finished" });
    expect(live.running).toBeUndefined();
  });

  it("follows a TTSR retry with the rule's reminder from the session", async () => {
    const { client, timer, posted, settle } = setup();
    client.answers["memento/history"] = () => ({ entries: [
      { type: "custom_message", customType: "ttsr-injection", content: "old" },
      { type: "custom_message", customType: "ttsr-injection", content: "<system-interrupt>\nwhy\n\nUse logging.\n</system-interrupt>" },
      { type: "ttsr_injection", injectedRules: ["no-print"] },
    ] });
    client.notify("memento/turn", { turnId: "t", state: "retrying", rules: ["no-print"], attempt: 2 });
    await settle();
    timer.fire();
    expect(posted[0]).toEqual({ type: "notices", notices: [
      { kind: "turn", turnId: "t", state: "retrying", rules: ["no-print"], attempt: 2 },
      { kind: "reminder", turnId: "t", rules: ["no-print"], text: "<system-interrupt>\nwhy\n\nUse logging.\n</system-interrupt>" },
    ] });
  });

  it("lists checkpoints when the page is ready and when the server says they changed", async () => {
    const { client, timer, posted, bridge, settle } = setup();
    const checkpoint = { id: "c1", label: "x", createdAt: "2026-01-01T00:00:00Z", entryId: "e1", files: ["a.py"] };
    client.answers["memento/checkpoint/list"] = () => ({ checkpoints: [checkpoint] });
    await bridge.receive({ type: "ready" });
    client.notify("memento/checkpoints", {});
    await settle();
    timer.fire();
    expect(posted).toEqual([{ type: "notices", notices: [{ kind: "checkpoints", checkpoints: [checkpoint] }] }]);
  });
});

describe("PanelBridge: the page's requests", () => {
  it("sends a prompt and answers with its turn id, after any queued notices", async () => {
    const { client, bridge, posted } = setup();
    client.answers["memento/prompt"] = () => ({ turnId: "t9" });
    client.notify("memento/context", { tokens: 1, contextWindow: 2, percent: 50, stablePrefixTokens: 0 });
    await bridge.receive({ type: "prompt", requestId: 3, text: "hello" });
    expect(client.requests.at(-1)).toEqual({ method: "memento/prompt", param: { text: "hello" } });
    expect(posted.map((m) => m.type)).toEqual(["notices", "prompted"]);
    expect(posted[1]).toEqual({ type: "prompted", requestId: 3, turnId: "t9" });
  });

  it("runs advisor actions and rewinds through the server's commands", async () => {
    const { client, bridge, posted } = setup();
    client.answers["workspace/executeCommand"] = (param) => ((param as { command: string }).command === "memento.checkpoint.rewind" ? { restored: ["a.py"], conflicts: [] } : null);
    await bridge.receive({ type: "advisor", action: "toRule", noteId: "n1" });
    await bridge.receive({ type: "rewind", checkpointId: "c1", mode: "conversation" });
    expect(client.requests).toEqual([
      { method: "workspace/executeCommand", param: { command: "memento.advisor.toRule", arguments: [{ noteId: "n1" }] } },
      { method: "workspace/executeCommand", param: { command: "memento.checkpoint.rewind", arguments: [rewindArguments("c1", "conversation")] } },
    ]);
    expect(posted).toEqual([{ type: "sessionChanged" }, { type: "rewound", restored: ["a.py"], conflicts: [] }]);
  });

  it("maps the three rewind choices", () => {
    for (const mode of ["all", "conversation", "files"] as const) {
      expect(rewindArguments("c", mode)).toEqual({ checkpointId: "c", mode });
    }
  });

  it("opens diffs and files in the editor", async () => {
    const { bridge, editor } = setup();
    await bridge.receive({ type: "openDiff", path: "src/a.py", checkpointId: "c1" });
    await bridge.receive({ type: "openFile", path: "src/a.py", line: 4 });
    expect(editor.calls).toEqual([["diff", "src/a.py", "c1"], ["file", "src/a.py", 4]]);
  });

  it("answers a failed request with `failed`, and ignores a malformed message", async () => {
    const { client, bridge, posted, warnings } = setup();
    client.answers["memento/session/open"] = () => {
      throw new Error("session is locked");
    };
    await bridge.receive({ type: "openSession", requestId: 4, id: "s2" });
    await bridge.receive({ type: "openSession", requestId: 5 });
    expect(posted).toEqual([{ type: "failed", requestId: 4, op: "openSession", message: "session is locked" }]);
    expect(warnings[0]).toMatch(/message.id: expected a string/);
  });
});
