// The extension side of the benchmarks, in a SharedWorker (its own thread, as the extension
// host is its own process): the real `PanelBridge` and `Coalescer` in front of a scripted
// language client that answers `memento/transcript` the way the server pages it, and sends
// `memento/transcript/patch` notifications (a text append each) at a given rate. The page's stand-in for VS Code
// (`host-page.js`) relays what this posts into the page as VS Code's webview host does.
//
// A SharedWorker so that it is running, its session made up, before the page is navigated
// to (`common.mjs` starts it from a page of its own and keeps that page open): in VS Code the
// extension host and the server are up, and the session is in the server, when the panel
// opens. Each page that connects gets a bridge of its own, as each webview does.
import { bigHistory } from "../webview/e2e/fixtures.mjs";
import { PanelBridge } from "../src/panel/bridge";
import type { PanelClient } from "../src/panel/host";
import type { Item, Op, TranscriptPage } from "../src/transcript";

type Json = Record<string, unknown>;
/** Stream `deltas` at `rate` a second, through the coalescer or (`coalesce: false`, the worst
 * case) each in a message of its own. */
type StreamCommand = { bench: "stream"; turnId: string; deltas: string[]; rate: number; coalesce: boolean };

// The session: `?messages=N` in the worker's URL, made up once, when the worker starts.
const items: Item[] = bigHistory(Number(new URLSearchParams(location.search).get("messages") ?? 0));
const position = new Map(items.map((item, index) => [item.key, index]));
const SESSION = "bench";
let seq = 0;

/** `memento/transcript` as the server answers it: `limit` items before `cursor` (a key). */
function transcriptPage(param: { cursor?: string; limit?: number }): TranscriptPage {
  const end = param.cursor === undefined ? items.length : (position.get(param.cursor) ?? items.length);
  const start = Math.max(0, end - (param.limit ?? 100));
  const page: TranscriptPage = { sessionId: SESSION, seq, items: items.slice(start, end) };
  if (start > 0) page.nextCursor = items[start]!.key;
  return page;
}

/** One page's extension side, on its own port. */
function connect(port: MessagePort): void {
  const handlers = new Map<string, (params: unknown) => void>();
  const client: PanelClient = {
    async sendRequest<R>(method: string, param: unknown): Promise<R> {
      switch (method) {
        case "memento/transcript":
          return transcriptPage(param as { cursor?: string; limit?: number }) as R;
        case "memento/checkpoint/list":
          return { checkpoints: [] } as R;
        case "memento/session/list":
          return { sessions: [{ id: "s1", path: "/s1.jsonl", title: "Benchmark", updatedAt: new Date().toISOString() }] } as R;
        default:
          return {} as R;
      }
    },
    onNotification(method, handler) {
      handlers.set(method, handler);
      return { dispose: () => handlers.delete(method) };
    },
  };
  const bridge = new PanelBridge(client, { openDiff: async () => {}, openFile: async () => {} }, console, {
    set: (callback, ms) => setTimeout(callback, ms),
    clear: (handle) => clearTimeout(handle as number),
  });
  bridge.attach((message) => port.postMessage(message));
  const notify = (method: string, params: Json): void => handlers.get(method)?.(params);
  const say = (what: string): void => port.postMessage({ bench: what, at: performance.timeOrigin + performance.now() });

  /** Sends `deltas` as the server would (a patch of one text append each), `rate` a second,
   * then says so to the page. */
  function stream({ turnId, deltas, rate, coalesce }: StreamCommand): void {
    const reply = `r:${turnId}`;
    const part = `${reply}/0.0`;
    const patch = (ops: Op[]): Json => ({ sessionId: SESSION, seq: ++seq, ops });
    const send = coalesce
      ? (ops: Op[]) => notify("memento/transcript/patch", patch(ops))
      : (ops: Op[]) => port.postMessage({ type: "notices", notices: [{ kind: "patch", ...patch(ops) }] });
    const delta = (text: string): void => send([{ op: "text", item: reply, key: part, text }]);
    notify("memento/turn", { turnId, state: "started" });
    send([
      { op: "append", item: reply, node: { kind: "reply", key: reply, state: "streaming", parts: [] } },
      { op: "append", item: reply, parent: reply, node: { kind: "text", key: part, text: "" } },
    ]);
    const started = performance.now();
    let sent = 0;
    const step = (): void => {
      const due = Math.min(deltas.length, Math.floor(((performance.now() - started) * rate) / 1000) + 1);
      while (sent < due) delta(deltas[sent++]!);
      // Wake when the next delta is due, as a server's notifications would arrive.
      if (sent < deltas.length) setTimeout(step, Math.max(0, started + (sent * 1000) / rate - performance.now()));
      else setTimeout(() => say("streamed"), 20); // after the coalescer's last flush (16 ms)
    };
    step();
  }

  // With `everything` (the page's first message, from its URL), the page's first tail
  // request waits for the `everything` command, which answers it with the whole session in
  // one message (the worst case).
  let everything = false;
  let held: Json | undefined;
  port.onmessage = (event: MessageEvent<unknown>) => {
    const data = event.data as Json;
    if (data["bench"] === "hello") everything = data["everything"] === true;
    else if (data["bench"] === "stream") stream(data as StreamCommand);
    else if (data["bench"] === "everything") {
      say("everything");
      void bridge.receive({ ...held, limit: items.length });
    } else if (everything && held === undefined && data["type"] === "transcript" && data["cursor"] === undefined) {
      held = data;
      say("held");
    } else void bridge.receive(data);
  };
  say("ready");
}

(self as unknown as { onconnect: (event: MessageEvent) => void }).onconnect = (event) => connect(event.ports[0]!);
