import { describe, expect, it } from "vitest";
import { coalesce, Coalescer, LiveTurn, type Timer } from "../../src/panel/coalescer";
import type { Notice } from "../../src/webviewProtocol";

const text = (delta: string, turnId = "t1"): Notice => ({ kind: "stream", turnId, stream: "text", delta });
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
  it("merges consecutive deltas of one stream", () => {
    expect(coalesce([text("a"), text("b"), text("c")])).toEqual([text("abc")]);
  });

  it("keeps deltas of different streams, turns and tool calls apart, in order", () => {
    const thinking: Notice = { kind: "stream", turnId: "t1", stream: "thinking", delta: "hm" };
    const toolA: Notice = { kind: "stream", turnId: "t1", stream: "tool", delta: "{", toolCallId: "a" };
    const toolB: Notice = { kind: "stream", turnId: "t1", stream: "tool", delta: "{", toolCallId: "b" };
    expect(coalesce([text("a"), thinking, text("b"), toolA, toolB, text("c", "t2")])).toEqual([
      text("a"), thinking, text("b"), toolA, toolB, text("c", "t2"),
    ]);
  });

  it("does not merge deltas across another notice (order is meaning: a retry drops what came before)", () => {
    const retry: Notice = { kind: "turn", turnId: "t1", state: "retrying", rules: ["r"] };
    expect(coalesce([text("bad"), retry, text("good")])).toEqual([text("bad"), retry, text("good")]);
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
    for (let i = 0; i < 500; i += 1) coalescer.push(text("x"));
    expect(sent).toEqual([]);
    expect(timer.callbacks.size).toBe(1);
    timer.fire();
    expect(sent).toEqual([[text("x".repeat(500))]]);
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

describe("LiveTurn", () => {
  it("holds the running turn's notices, coalesced, and forgets them when it ends", () => {
    const live = new LiveTurn();
    const started: Notice = { kind: "turn", turnId: "t1", state: "started" };
    live.record(text("ignored before start"));
    live.record(started);
    live.record(text("a"));
    live.record(text("b"));
    live.record(text("other turn", "t0"));
    expect(live.snapshot()).toEqual([started, text("ab")]);
    expect(live.running).toBe("t1");
    live.record({ kind: "turn", turnId: "t1", state: "finished" });
    expect(live.snapshot()).toEqual([]);
    expect(live.running).toBeUndefined();
  });
});
