// @vitest-environment jsdom
// The page's inline start (`early.ts`) and the channel that takes over from it (`api.ts`).
import { afterEach, describe, expect, it } from "vitest";
import { Channel } from "../src/api";
import { PAGE, startEarly, type VsCodeApi } from "../src/early";

type Global = typeof globalThis & { acquireVsCodeApi?: () => VsCodeApi };

function fakeApi(): VsCodeApi & { posted: unknown[] } {
  const posted: unknown[] = [];
  return { posted, postMessage: (m) => void posted.push(m), getState: () => ({ draft: "kept" }), setState: () => {} };
}

/** Resolves once `count` more messages have reached the window (jsdom posts them as tasks). */
function delivered(count: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const on = (): void => {
      if (++seen < count) return;
      window.removeEventListener("message", on);
      resolve();
    };
    window.addEventListener("message", on);
  });
}

afterEach(() => {
  delete (globalThis as Global).acquireVsCodeApi;
  window.__mementoEarly = undefined;
});

describe("the inline start", () => {
  it("asks for the transcript and sessions at once, and the channel gets what came before it listened, in order", async () => {
    const api = fakeApi();
    (globalThis as Global).acquireVsCodeApi = () => {
      throw new Error("VS Code gives its API out once: the channel must take the inline start's");
    };
    startEarly(api);
    expect(api.posted).toEqual([
      { type: "ready" },
      { type: "transcript", requestId: 1, limit: PAGE },
      { type: "listSessions", requestId: 2 },
    ]);
    // The extension answers while the page's script is still loading.
    const early = delivered(3);
    window.postMessage({ type: "sessions", requestId: 2, sessions: [] }, "*");
    window.postMessage({ type: "bogus" }, "*");
    window.postMessage({ type: "showContext" }, "*");
    await early;

    const channel = new Channel();
    expect(channel.earlyTail).toBe(1);
    expect(channel.requestId()).toBe(3);
    expect(channel.state.draft).toBe("kept");
    const received: unknown[] = [];
    channel.listen((message) => received.push(message));
    expect(received).toEqual([{ type: "sessions", requestId: 2, sessions: [] }, { type: "showContext" }]);

    const later = delivered(1);
    window.postMessage({ type: "showContext" }, "*");
    await later;
    expect(received).toHaveLength(3); // live, once: the inline start no longer keeps them
    expect(window.__mementoEarly).toBeUndefined();
    channel.post({ type: "abort" });
    expect(api.posted.at(-1)).toEqual({ type: "abort" });
  });

  it("is not needed: without it the channel takes the API itself and nothing was asked", () => {
    const api = fakeApi();
    (globalThis as Global).acquireVsCodeApi = () => api;
    const channel = new Channel();
    expect(channel.earlyTail).toBeUndefined();
    expect(channel.requestId()).toBe(1);
    expect(api.posted).toEqual([]);
  });
});
