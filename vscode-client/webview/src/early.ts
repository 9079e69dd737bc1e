/**
 * The page's first moves, made before its stylesheet and its script have loaded: `boot.ts`,
 * put inline in the page's head by the extension (under the page's nonce), takes VS Code's
 * API, asks for the newest page of the transcript and the session list, and keeps what arrives until
 * the page's script takes over (`Channel`). The answer is on its way while panel.js is
 * fetched and compiled, instead of being asked for after.
 */
import type { FromPage } from "../../src/webviewProtocol";

/** Items in a transcript page. */
export const PAGE = 200;

export interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}

/** What the inline start did: the API it took (VS Code gives it out once), the messages
 * that came in since, and the ids it used. */
export interface EarlyStart {
  readonly api: VsCodeApi;
  readonly messages: unknown[];
  readonly tailRequest: number;
  readonly sessionsRequest: number;
  readonly nextId: number;
  stop(): void;
}

declare global {
  interface Window {
    __mementoEarly?: EarlyStart;
  }
}

export function startEarly(api: VsCodeApi): void {
  const messages: unknown[] = [];
  const keep = (event: MessageEvent<unknown>): void => void messages.push(event.data);
  window.addEventListener("message", keep);
  const post = (message: FromPage): void => api.postMessage(message);
  post({ type: "ready" });
  post({ type: "transcript", requestId: 1, limit: PAGE });
  post({ type: "listSessions", requestId: 2 });
  window.__mementoEarly = { api, messages, tailRequest: 1, sessionsRequest: 2, nextId: 3, stop: () => window.removeEventListener("message", keep) };
}

/** The inline start's work, handed over once (undefined when the page started without it). */
export function takeEarly(): EarlyStart | undefined {
  const early = window.__mementoEarly;
  window.__mementoEarly = undefined;
  return early;
}
