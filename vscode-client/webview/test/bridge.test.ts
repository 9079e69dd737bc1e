import { describe, expect, it } from "vitest";
import { PanelBridge, rewindArguments } from "../../src/panel/bridge";
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

const patch = (seq: number, ...ops: unknown[]) => ({ sessionId: "s", seq, ops });
const text = (key: string, delta: string) => ({ op: "text", item: "r", key, text: delta });

describe("PanelBridge: notifications into the page", () => {
  it("forwards transcript patches and the turn's notices, coalesced into one message per flush", () => {
    const { client, timer, posted } = setup();
    client.notify("memento/turn", { turnId: "t", state: "started" });
    client.notify("memento/transcript/patch", patch(3, { op: "append", item: "r", node: { kind: "reply", key: "r", state: "streaming", parts: [] } }));
    for (const [seq, delta] of [[4, "Hel"], [5, "lo"], [6, "!"]] as const) client.notify("memento/transcript/patch", patch(seq, text("r/0.0", delta)));
    client.notify("memento/context", { tokens: 5, contextWindow: 10, percent: 50, stablePrefixTokens: 2 });
    expect(posted).toEqual([]);
    timer.fire();
    expect(posted).toEqual([{ type: "notices", notices: [
      { kind: "turn", turnId: "t", state: "started" },
      { kind: "patch", ...patch(6, { op: "append", item: "r", node: { kind: "reply", key: "r", state: "streaming", parts: [] } }, text("r/0.0", "Hello!")) },
      { kind: "context", tokens: 5, contextWindow: 10, percent: 50, stablePrefixTokens: 2 },
    ] }]);
  });

  it("no longer listens to memento/stream nor memento/history for the chat", () => {
    const { client } = setup();
    expect([...client.handlers.keys()].sort()).toEqual([
      "memento/checkpoints", "memento/context", "memento/tool/progress", "memento/transcript/patch", "memento/turn",
    ]);
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
    client.notify("memento/transcript/patch", { sessionId: "s", seq: 1, ops: [{ op: "splice" }] });
    client.notify("memento/transcript/patch", patch(2, text("r/0.0", "ok")));
    timer.fire();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/notice.ops\[0\].op: expected append \| update/);
    expect(posted).toEqual([{ type: "notices", notices: [{ kind: "patch", ...patch(2, text("r/0.0", "ok")) }] }]);
  });

  it("queues nothing while no page listens", () => {
    const { client, bridge, timer, posted } = setup();
    bridge.attach(undefined);
    client.notify("memento/transcript/patch", patch(1, text("r/0.0", "lost")));
    timer.fire();
    expect(posted).toEqual([]);
  });

  it("reads the transcript for the page, after the patches the server sent before it", async () => {
    const { client, bridge, posted, settle } = setup();
    const page = { sessionId: "s", seq: 7, items: [{ kind: "user", key: "u:1", entryId: "1", text: "hi", steer: false }], nextCursor: "u:1" };
    client.answers["memento/transcript"] = () => page;
    client.notify("memento/transcript/patch", patch(7, { op: "append", item: "u:1", node: page.items[0] }));
    await bridge.receive({ type: "transcript", requestId: 7, limit: 100 });
    await bridge.receive({ type: "transcript", requestId: 8, limit: 100, cursor: "u:1" });
    await settle();
    expect(client.requests).toEqual([
      { method: "memento/transcript", param: { cursor: undefined, limit: 100, newestFirst: false } },
      { method: "memento/transcript", param: { cursor: "u:1", limit: 100, newestFirst: false } },
    ]);
    expect(posted.map((m) => m.type)).toEqual(["notices", "transcript", "transcript"]);
    expect(posted[1]).toEqual({ type: "transcript", requestId: 7, pageJson: JSON.stringify(page) });
    expect(parseToPage(posted[1])).toEqual(posted[1]);
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

  it("asks the server for a relief step's audit and hands the page its answer", async () => {
    const { client, bridge, posted } = setup();
    const audit = { id: "e9", at: "2026-01-01T00:00:00Z", level: "compact", tokensBefore: 9, summary: "S" };
    client.answers["memento/relief/audit"] = () => audit;
    await bridge.receive({ type: "audit", requestId: 3, id: "e9" });
    expect(client.requests).toContainEqual({ method: "memento/relief/audit", param: { id: "e9" } });
    expect(posted).toEqual([{ type: "audit", requestId: 3, id: "e9", audit }]);
    expect(parseToPage(posted[0])).toEqual(posted[0]);
  });

  it("a refused audit comes back as `failed` naming the request", async () => {
    const { client, bridge, posted } = setup();
    client.answers["memento/relief/audit"] = () => {
      throw new Error("unknown relief step e7");
    };
    await bridge.receive({ type: "audit", requestId: 4, id: "e7" });
    expect(posted).toEqual([{ type: "failed", requestId: 4, op: "audit", message: "unknown relief step e7" }]);
  });

  it("undo goes to the editor's relief undo (the Compactions view's, with its 'does not fit' choice)", async () => {
    const { client, bridge, editor, posted } = setup();
    await bridge.receive({ type: "undoRelief", id: "e9" });
    expect(editor.calls).toEqual([["undoRelief", "e9"]]);
    expect(posted).toEqual([{ type: "undoSettled", id: "e9" }]);
    expect(client.requests.filter((r) => r.method.startsWith("memento/relief"))).toEqual([]);
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

describe("PanelBridge: pins", () => {
  it("Pin and Unpin go to memento/pin and memento/unpin with the entry id; the page hears when each is over", async () => {
    const { client, bridge, posted } = setup();
    client.answers["memento/pin"] = () => ({ pin: { kind: "entry", target: "e3", what: "read result", entryId: "e3" }, pins: [] });
    client.answers["memento/unpin"] = () => ({ unpinned: true, pins: [] });
    await bridge.receive({ type: "pin", entryId: "e3" });
    await bridge.receive({ type: "unpin", entryId: "u1" });
    expect(client.requests).toEqual([
      { method: "memento/pin", param: { entryId: "e3" } },
      { method: "memento/unpin", param: { entryId: "u1" } },
    ]);
    expect(posted).toEqual([{ type: "pinSettled", entryId: "e3" }, { type: "pinSettled", entryId: "u1" }]);
    for (const message of posted) expect(parseToPage(message)).toEqual(message);
  });

  it("a refused pin: the button stops waiting, and the page is told why", async () => {
    const { client, bridge, posted } = setup();
    client.answers["memento/pin"] = () => {
      throw new Error("a turn is running; pin when it has finished");
    };
    await bridge.receive({ type: "pin", entryId: "e3" });
    expect(posted).toEqual([
      { type: "pinSettled", entryId: "e3" },
      { type: "failed", requestId: undefined, op: "pin", message: "a turn is running; pin when it has finished" },
    ]);
  });

  it("a pin without its entry id is refused before the server", async () => {
    const { client, bridge, posted, warnings } = setup();
    await bridge.receive({ type: "pin" });
    expect(client.requests).toEqual([]);
    expect(posted).toEqual([]);
    expect(warnings[0]).toMatch(/entryId/);
  });
});
