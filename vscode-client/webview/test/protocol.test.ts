import { describe, expect, it } from "vitest";
import { parseEntries, parseFromPage, parseNotice, parseToPage, ProtocolError } from "../../src/webviewProtocol";

describe("messages from the page", () => {
  it("accepts each kind and drops unknown fields", () => {
    expect(parseFromPage({ type: "prompt", requestId: 1, text: "hi", extra: true })).toEqual({ type: "prompt", requestId: 1, text: "hi" });
    expect(parseFromPage({ type: "rewind", checkpointId: "c", mode: "files" })).toEqual({ type: "rewind", checkpointId: "c", mode: "files" });
    expect(parseFromPage({ type: "history", requestId: 2, limit: 50, tail: false, cursor: "10" })).toEqual({ type: "history", requestId: 2, limit: 50, tail: false, cursor: "10" });
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
    const ok = { type: "notices", notices: [{ kind: "stream", turnId: "t", stream: "text", delta: "a" }] };
    expect(parseToPage(ok)).toEqual(ok);
    const bad = { type: "notices", notices: [ok.notices[0], { kind: "stream", turnId: "t", stream: "video", delta: "a" }] };
    expect(() => parseToPage(bad)).toThrow(/message.notices\[1\].stream/);
  });

  it("reads the server's null as absent", () => {
    expect(parseNotice({ kind: "turn", turnId: "t", state: "finished", error: null })).toEqual({ kind: "turn", turnId: "t", state: "finished" });
  });

  it("rejects numbers that are not finite and oversized lists", () => {
    expect(() => parseNotice({ kind: "context", tokens: Number.NaN, contextWindow: 1, percent: 1, stablePrefixTokens: 0 })).toThrow(/tokens/);
    expect(() => parseToPage({ type: "history", requestId: 1, tail: true, entriesJson: [] })).toThrow(/entriesJson: expected a string/);
    expect(parseNotice({ kind: "compaction", phase: "skipped", level: "compact", reason: "manual", tokensBefore: 9, why: "not compacted" })).toMatchObject({ phase: "skipped", why: "not compacted" });
    expect(() => parseToPage({ type: "history", requestId: 1, tail: true, entriesJson: "[]", relief: [{ id: "c", level: "compact" }] })).toThrow(/relief\[0\].tokensBefore/);
  });

  it("reads a history page's entries from one JSON text, checked like the rest", () => {
    expect(parseEntries('[{"id":"a","type":"message"}]')).toEqual([{ id: "a", type: "message" }]);
    expect(() => parseEntries('{"id":"a"}')).toThrow(/entriesJson: expected an array/);
    expect(() => parseEntries('[{"id":"a"}, 3]')).toThrow(/entriesJson\[1\]: expected an object/);
    expect(() => parseEntries("[{")).toThrow(/entriesJson: not JSON/);
  });
});
