import { describe, expect, it } from "vitest";
import { parseFromPage, parseNotice, parseToPage, parseTranscriptPage, ProtocolError } from "../../src/webviewProtocol";

describe("messages from the page", () => {
  it("accepts each kind and drops unknown fields", () => {
    expect(parseFromPage({ type: "prompt", requestId: 1, text: "hi", extra: true })).toEqual({ type: "prompt", requestId: 1, text: "hi" });
    expect(parseFromPage({ type: "rewind", checkpointId: "c", mode: "files" })).toEqual({ type: "rewind", checkpointId: "c", mode: "files" });
    expect(parseFromPage({ type: "transcript", requestId: 2, limit: 50, cursor: "u:1" })).toEqual({ type: "transcript", requestId: 2, limit: 50, cursor: "u:1" });
    expect(parseFromPage({ type: "abort" })).toEqual({ type: "abort" });
  });

  it("rejects a bad message with the field named", () => {
    expect(() => parseFromPage({ type: "rewind", checkpointId: "c", mode: "everything" })).toThrow(/message.mode: expected all \| conversation \| files/);
    expect(() => parseFromPage({ type: "prompt", requestId: "1", text: "x" })).toThrow(/message.requestId: expected a number, got string/);
    expect(() => parseFromPage({ type: "runShell", command: "rm -rf /" })).toThrow(ProtocolError);
    expect(() => parseFromPage("prompt")).toThrow(/message: expected an object, got string/);
    expect(() => parseFromPage(null)).toThrow(ProtocolError);
  });
});

describe("messages to the page", () => {
  it("checks each notice inside a batch", () => {
    const ok = { type: "notices", notices: [{ kind: "patch", sessionId: "s", seq: 2, ops: [{ op: "text", item: "r", key: "r/0.0", text: "a" }] }] };
    expect(parseToPage(ok)).toEqual(ok);
    const bad = { type: "notices", notices: [ok.notices[0], { kind: "turn", turnId: "t", state: "paused" }] };
    expect(() => parseToPage(bad)).toThrow(/message.notices\[1\].state/);
    const op = { type: "notices", notices: [{ kind: "patch", sessionId: "s", seq: 2, ops: [{ op: "splice" }] }] };
    expect(() => parseToPage(op)).toThrow(/message.notices\[0\].ops\[0\].op: expected append/);
  });

  it("reads the server's null as absent", () => {
    expect(parseNotice({ kind: "turn", turnId: "t", state: "finished", error: null })).toEqual({ kind: "turn", turnId: "t", state: "finished" });
  });

  it("rejects numbers that are not finite and oversized lists", () => {
    expect(() => parseNotice({ kind: "context", tokens: Number.NaN, contextWindow: 1, percent: 1, stablePrefixTokens: 0 })).toThrow(/tokens/);
    expect(() => parseToPage({ type: "transcript", requestId: 1, pageJson: [] })).toThrow(/pageJson: expected a string/);
    expect(() => parseNotice({ kind: "patch", sessionId: "s", seq: Number.POSITIVE_INFINITY, ops: [] })).toThrow(/seq/);
  });

  it("reads a transcript page from one JSON text, checked like the rest", () => {
    const page = { sessionId: "s", seq: 3, items: [{ kind: "user", key: "u:1", entryId: "1", text: "hi", steer: false }], nextCursor: "u:1" };
    expect(parseTranscriptPage(JSON.stringify(page))).toEqual(page);
    expect(parseTranscriptPage(JSON.stringify({ ...page, nextCursor: null }))).toEqual({ sessionId: "s", seq: 3, items: page.items });
    expect(() => parseTranscriptPage('[{"id":"a"}]')).toThrow(/pageJson: expected an object/);
    expect(() => parseTranscriptPage(JSON.stringify({ ...page, items: [3] }))).toThrow(/pageJson.items\[0\]: expected an object/);
    expect(() => parseTranscriptPage("[{")).toThrow(/pageJson: not JSON/);
  });
});
