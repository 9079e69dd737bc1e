import { describe, expect, it } from "vitest";
import { coalesce, Coalescer, type Timer } from "../../src/panel/coalescer";
import type { Op } from "../../src/transcript";
import type { Notice } from "../../src/webviewProtocol";

const textOp = (delta: string, key = "r/0.0"): Op => ({ op: "text", item: "r", key, text: delta });
const patch = (seq: number, ops: Op[], sessionId = "s"): Notice => ({ kind: "patch", sessionId, seq, ops });
/** One patch of one text append: a streamed delta. */
const text = (delta: string, key = "r/0.0", seq = 1): Notice => patch(seq, [textOp(delta, key)]);
const context = (tokens: number): Notice => ({ kind: "context", tokens, contextWindow: 100, percent: tokens, stablePrefixTokens: 0 });

class ManualTimer implements Timer {
  callbacks = new Map<number, () => void>();
  private next = 1;
  set(callback: () => void): unknown {
    const id = this.next++;
    this.callbacks.set(id, callback);
    return id;
  }
  clear(handle: unknown): void {
    this.callbacks.delete(handle as number);
  }
  fire(): void {
    const pending = [...this.callbacks.values()];
    this.callbacks.clear();
    for (const callback of pending) callback();
  }
}

describe("coalesce", () => {
  it("merges consecutive patches into one, their text appends to one part joined, at the last seq", () => {
    expect(coalesce([text("a", "r/0.0", 1), text("b", "r/0.0", 2), text("c", "r/0.0", 3)])).toEqual([text("abc", "r/0.0", 3)]);
  });

  it("keeps appends to different parts apart, in order", () => {
    const thinking = textOp("hm", "r/0.0");
    const merged = coalesce([patch(1, [thinking]), text("a", "r/0.1", 2), text("{", "r/0.2", 3), text("b", "r/0.1", 4)]);
    expect(merged).toEqual([patch(4, [thinking, textOp("a", "r/0.1"), textOp("{", "r/0.2"), textOp("b", "r/0.1")])]);
  });

  it("does not merge text across another op (order is meaning: a TTSR retry removes what came before)", () => {
    const remove: Op = { op: "remove", item: "r", key: "r/0.0" };
    expect(coalesce([text("bad", "r/0.0", 1), patch(2, [remove]), text("good", "r/0.0", 3)])).toEqual([
      patch(3, [textOp("bad"), remove, textOp("good")]),
    ]);
  });

  it("keeps only what follows a reset (the page reads the transcript again anyway)", () => {
    expect(coalesce([text("a", "r/0.0", 1), patch(2, [textOp("b"), { op: "reset" }, textOp("c", "x/0.0")])])).toEqual([
      patch(2, [{ op: "reset" }, textOp("c", "x/0.0")]),
    ]);
  });

  it("does not merge patches of two sessions", () => {
    expect(coalesce([text("a"), patch(1, [textOp("b")], "other")])).toHaveLength(2);
  });

  it("keeps only the newest context", () => {
    expect(coalesce([context(1), text("a"), context(2), context(3)])).toEqual([text("a"), context(3)]);
  });
});

describe("Coalescer", () => {
  it("sends one batch per interval, however many notices arrive", () => {
    const timer = new ManualTimer();
    const sent: Notice[][] = [];
    const coalescer = new Coalescer((batch) => sent.push(batch), timer);
    for (let i = 0; i < 500; i += 1) coalescer.push(text("x", "r/0.0", i + 1));
    expect(sent).toEqual([]);
    expect(timer.callbacks.size).toBe(1);
    timer.fire();
    expect(sent).toEqual([[text("x".repeat(500), "r/0.0", 500)]]);
    coalescer.push(text("y"));
    timer.fire();
    expect(sent).toHaveLength(2);
  });

  it("flushes at once on demand and cancels the timer", () => {
    const timer = new ManualTimer();
    const sent: Notice[][] = [];
    const coalescer = new Coalescer((batch) => sent.push(batch), timer);
    coalescer.push(text("a"));
    coalescer.flush();
    expect(sent).toEqual([[text("a")]]);
    expect(timer.callbacks.size).toBe(0);
    coalescer.flush();
    expect(sent).toHaveLength(1);
  });

  it("discards what is queued when the page goes away", () => {
    const timer = new ManualTimer();
    const sent: Notice[][] = [];
    const coalescer = new Coalescer((batch) => sent.push(batch), timer);
    coalescer.push(text("a"));
    coalescer.discard();
    timer.fire();
    expect(sent).toEqual([]);
    expect(coalescer.pending).toBe(0);
  });
});
