// @vitest-environment jsdom
/** The Pin buttons as the page draws them from rows, and the intent a click on them posts. */
import { describe, expect, it } from "vitest";
import type { Item, ToolPart } from "../../src/transcript";
import { parseFromPage } from "../../src/webviewProtocol";
import { Timeline } from "../src/model";
import { pinIntent } from "../src/pins";
import { createView, type RowContext } from "../src/views";

const context: RowContext = { checkpointFor: () => undefined, diffBaseFor: () => undefined };
const read: ToolPart = { kind: "tool", key: "r:u:1/0.0", toolCallId: "c1", name: "read", args: '{"path": "src/a.py"}', status: "done", output: "x = 1", resultEntryId: "e3", subagents: [] };
const items = (pinned: { user?: boolean; reply?: boolean; tool?: boolean } = {}): Item[] => [
  { kind: "user", key: "u:1", entryId: "1", text: "hi", steer: false, pinned: pinned.user },
  { kind: "reply", key: "r:u:1", state: "done", entryId: "e4", pinned: pinned.reply, parts: [{ ...read, pinned: pinned.tool }, { kind: "text", key: "r:u:1/0.1", text: "ok" }] },
];

function draw(t: Timeline): HTMLElement {
  const root = document.createElement("div");
  for (const row of t.rows) root.append(createView(row, context).element);
  return root;
}

function timeline(page: Item[]): Timeline {
  const t = new Timeline(() => 0);
  t.loadTail({ sessionId: "s", seq: 1, items: page });
  return t;
}

/** What clicking `button` posts, as main.ts's listener reads it. */
const clicked = (button: HTMLElement) => pinIntent(button.dataset["action"], button.dataset);

describe("Pin in the panel", () => {
  it("a message, a reply and a tool card each have a Pin that posts their own entry id", () => {
    const root = draw(timeline(items()));
    const buttons = [...root.querySelectorAll<HTMLButtonElement>("button.pin-toggle")];
    expect(buttons.map((b) => [b.textContent, b.getAttribute("aria-label"), b.dataset["key"]])).toEqual([
      ["Pin", "Pin this message: every compaction keeps it word for word", "u:1"],
      ["Pin", "Pin this reply: every compaction keeps it word for word", "r:u:1"],
      ["Pin", "Pin the result of read on src/a.py: every compaction keeps it word for word", "r:u:1"],
    ]);
    const intents = buttons.map(clicked);
    expect(intents).toEqual([{ type: "pin", entryId: "1" }, { type: "pin", entryId: "e4" }, { type: "pin", entryId: "e3" }]);
    for (const intent of intents) expect(parseFromPage(intent)).toEqual(intent);
    expect(buttons.every((b) => b.tagName === "BUTTON" && b.type === "button" && !b.disabled)).toBe(true); // keyboard reachable
    expect(root.querySelector(".pin-mark")).toBeNull();
  });

  it("pinned rows (the server's `pinned`) show the mark and an Unpin that posts unpin", () => {
    const root = draw(timeline(items({ user: true, reply: true, tool: true })));
    const buttons = [...root.querySelectorAll<HTMLButtonElement>("button.pin-toggle")];
    expect(buttons.map((b) => b.textContent)).toEqual(["Unpin", "Unpin", "Unpin"]);
    expect(buttons.map(clicked)).toEqual([{ type: "unpin", entryId: "1" }, { type: "unpin", entryId: "e4" }, { type: "unpin", entryId: "e3" }]);
    expect(root.querySelectorAll(".row-head .pin-mark")).toHaveLength(2);
    expect(root.querySelector(".tool-card summary .pin-mark")).not.toBeNull();
    expect(root.querySelector(".tool-card summary")?.getAttribute("aria-label")).toMatch(/, pinned$/);
  });

  it("while the server answers, the button waits (disabled) and the row is not drawn pinned", () => {
    const t = timeline(items());
    t.pinRequested("1", "u:1", "pin");
    const root = draw(t);
    const button = root.querySelector<HTMLButtonElement>('[data-key="u:1"] button.pin-toggle');
    expect([button?.textContent, button?.disabled]).toEqual(["Pinning…", true]);
    expect(root.querySelector('[data-key="u:1"] .pin-mark')).toBeNull();
    // The server's patch came before its answer: pinned is drawn, the button still waits on the pin.
    t.applyPatch({ sessionId: "s", seq: 2, ops: [{ op: "update", item: "u:1", node: { kind: "user", key: "u:1", entryId: "1", text: "hi", steer: false, pinned: true } }] });
    const waiting = draw(t).querySelector<HTMLButtonElement>('[data-key="u:1"] button.pin-toggle');
    expect([waiting?.textContent, waiting?.disabled]).toEqual(["Pinning…", true]);
    t.pinSettled("1");
    const settled = draw(t).querySelector<HTMLButtonElement>('[data-key="u:1"] button.pin-toggle');
    expect([settled?.textContent, settled?.disabled]).toEqual(["Unpin", false]);
  });

  it("a redrawn reply view follows its pin (the card and the head)", () => {
    const t = timeline(items());
    const view = createView(t.rows[1]!, context);
    expect(view.element.querySelectorAll(".pin-mark")).toHaveLength(0);
    t.applyPatch({ sessionId: "s", seq: 2, ops: [
      { op: "update", item: "r:u:1", node: { kind: "reply", key: "r:u:1", state: "done", entryId: "e4", pinned: true } },
      { op: "update", item: "r:u:1", node: { kind: "tool", key: read.key, toolCallId: "c1", name: "read", args: read.args, status: "done", output: "x = 1", resultEntryId: "e3", pinned: true } },
    ] });
    view.update(t.rows[1]!, context);
    expect([...view.element.querySelectorAll("button.pin-toggle")].map((b) => b.textContent)).toEqual(["Unpin", "Unpin"]);
    expect(view.element.querySelectorAll(".pin-mark")).toHaveLength(2);
  });

  it("no intent from a button without an entry", () => {
    expect(pinIntent("pin", {})).toBeUndefined();
    expect(pinIntent("open-file", { entry: "e1" })).toBeUndefined();
  });
});
