/**
 * Coalescing of server notifications before they cross into the webview.
 *
 * A model streams hundreds of deltas a second; one `postMessage` each is what makes chat
 * panels fall seconds behind. Notifications are queued and sent at most once per
 * `intervalMs` as one `notices` message: consecutive transcript patches merged into one (their
 * text appends to a part joined), state-like notices (context, checkpoints) keeping only
 * their latest value.
 *
 * Pure: the clock comes in as a `Timer`, so tests drive it by hand.
 */
import type { Op } from "../transcript";
import type { Notice, PatchNotice } from "../webviewProtocol";

export interface Timer {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/** Notices that describe a state, not an event: only the newest matters. */
const LATEST_WINS = new Set<Notice["kind"]>(["context", "checkpoints"]);

/** Ops in order, consecutive text appends to one part merged (as the server does). */
export function mergeOps(ops: readonly Op[]): Op[] {
  const out: Op[] = [];
  for (const op of ops) {
    const last = out[out.length - 1];
    if (op.op === "text" && last?.op === "text" && last.key === op.key) out[out.length - 1] = { ...last, text: last.text + op.text };
    else out.push(op);
  }
  return out;
}

/** Two patches of one session as one: the later one's `seq`; what came before a reset is
 * read again anyway, so a reset drops it. */
function mergePatches(a: PatchNotice, b: PatchNotice): PatchNotice {
  let reset = b.ops.length - 1;
  while (reset >= 0 && b.ops[reset]!.op !== "reset") reset -= 1;
  const ops = reset >= 0 ? b.ops.slice(reset) : mergeOps([...a.ops, ...b.ops]);
  return { ...b, ops };
}

/** Adds `notice` to `queue`, merging it into what is there when it can. */
export function coalesceInto(queue: Notice[], notice: Notice): void {
  const last = queue[queue.length - 1];
  if (notice.kind === "patch" && last?.kind === "patch" && last.sessionId === notice.sessionId) {
    queue[queue.length - 1] = mergePatches(last, notice);
    return;
  }
  if (LATEST_WINS.has(notice.kind)) {
    const earlier = queue.findIndex((n) => n.kind === notice.kind);
    if (earlier >= 0) queue.splice(earlier, 1);
  }
  queue.push(notice);
}

export function coalesce(notices: readonly Notice[]): Notice[] {
  const queue: Notice[] = [];
  for (const notice of notices) coalesceInto(queue, notice);
  return queue;
}

export class Coalescer {
  private queue: Notice[] = [];
  private handle: unknown = undefined;

  constructor(
    private readonly send: (notices: Notice[]) => void,
    private readonly timer: Timer,
    private readonly intervalMs = 16,
  ) {}

  push(notice: Notice): void {
    coalesceInto(this.queue, notice);
    if (this.handle === undefined) {
      this.handle = this.timer.set(() => {
        this.handle = undefined;
        this.flush();
      }, this.intervalMs);
    }
  }

  /** Sends what is queued now (also used before a reply that must come after them). */
  flush(): void {
    if (this.handle !== undefined) {
      this.timer.clear(this.handle);
      this.handle = undefined;
    }
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    this.send(batch);
  }

  /** Drops what is queued (the page went away; it reads the transcript again). */
  discard(): void {
    if (this.handle !== undefined) this.timer.clear(this.handle);
    this.handle = undefined;
    this.queue = [];
  }

  get pending(): number {
    return this.queue.length;
  }
}
