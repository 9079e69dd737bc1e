/**
 * Coalescing of server notifications before they cross into the webview.
 *
 * A model streams hundreds of deltas a second; one `postMessage` each is what makes chat
 * panels fall seconds behind. Notifications are queued and sent at most once per
 * `intervalMs` as one `notices` message, with consecutive deltas of the same stream merged
 * and state-like notices (context, checkpoints) keeping only their latest value.
 *
 * Pure: the clock comes in as a `Timer`, so tests drive it by hand.
 */
import { childNotice, type Notice, type NoticeOf } from "../webviewProtocol";

export interface Timer {
  set(callback: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/** Notices that describe a state, not an event: only the newest matters. */
const LATEST_WINS = new Set<Notice["kind"]>(["context", "checkpoints"]);

function sameStream(a: NoticeOf<"stream">, b: NoticeOf<"stream">): boolean {
  return a.turnId === b.turnId && a.stream === b.stream && a.toolCallId === b.toolCallId && a.subagentId === b.subagentId;
}

/** The parent's turn a notice belongs to: its own, or for a subagent's, the one that started it. */
function parentTurn(notice: Notice): string | undefined {
  if (notice.kind === "subagent") return notice.parentTurnId;
  if (!("turnId" in notice)) return undefined;
  return childNotice(notice)?.parentTurnId ?? notice.turnId;
}

/** Adds `notice` to `queue`, merging it into what is there when it can. */
export function coalesceInto(queue: Notice[], notice: Notice): void {
  const last = queue[queue.length - 1];
  if (notice.kind === "stream" && last?.kind === "stream" && sameStream(last, notice)) {
    queue[queue.length - 1] = { ...last, delta: last.delta + notice.delta };
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

  /** Drops what is queued (the page went away; it reloads from history). */
  discard(): void {
    if (this.handle !== undefined) this.timer.clear(this.handle);
    this.handle = undefined;
    this.queue = [];
  }

  get pending(): number {
    return this.queue.length;
  }
}

/**
 * The running turn's notices so far, coalesced, so a page that (re)opens mid-turn shows the
 * partial answer: history holds only what the session has stored.
 */
export class LiveTurn {
  private turnId: string | undefined;
  private notices: Notice[] = [];
  private readonly heardAt = new WeakMap<Notice, number>();

  constructor(private readonly now: () => number = Date.now) {}

  record(notice: Notice): void {
    const child = notice.kind === "subagent" || childNotice(notice) !== undefined;
    if (notice.kind === "turn" && notice.state === "started" && !child) {
      this.turnId = notice.turnId;
      this.notices = [notice];
      return;
    }
    if (this.turnId === undefined || parentTurn(notice) !== this.turnId) return;
    if (notice.kind === "turn" && notice.state !== "retrying" && !child) {
      this.turnId = undefined;
      this.notices = [];
      return;
    }
    if (notice.kind === "turn" && notice.retryInMs !== undefined) this.heardAt.set(notice, this.now());
    coalesceInto(this.notices, notice);
  }

  get running(): string | undefined {
    return this.turnId;
  }

  /** The notices so far; a retry's countdown is what is left of it now. */
  snapshot(): Notice[] {
    return this.notices.map((notice) => {
      const heard = this.heardAt.get(notice);
      if (heard === undefined || notice.kind !== "turn" || notice.retryInMs === undefined) return notice;
      return { ...notice, retryInMs: Math.max(0, notice.retryInMs - (this.now() - heard)) };
    });
  }
}
