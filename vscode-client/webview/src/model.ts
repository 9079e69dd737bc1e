/**
 * The page's state: the server's transcript (pages read, patches applied), the rows drawn
 * from it, checkpoints, the context series. Pure (no DOM): pages, patches and notices go in,
 * the set of changed rows comes out, and the view redraws only those, once per frame.
 */
import type { Item, Patch, TranscriptPage } from "../../src/transcript";
import type { CheckpointItem, Notice } from "../../src/webviewProtocol";
import { rowOf } from "./itemRows";
import type { ReliefAudit } from "../../src/protocol";
import { assistantRow, type AssistantRow, type AuditState, type PinAction, type Row } from "./rows";
import { Transcript, TranscriptError } from "./transcript";

export interface Banner {
  attempt?: number;
  reason?: string;
  retryAt?: number;
}

/** The retrying banner's words at `now`, and in how long they change (the countdown). The
 * server may say why and when, or neither. */
export function retryText(banner: Banner, now: number): { text: string; nextMs?: number } {
  const seconds = banner.retryAt === undefined ? undefined : Math.max(0, Math.ceil((banner.retryAt - now) / 1000));
  const when = seconds === undefined ? "…" : seconds > 0 ? ` in ${seconds}s…` : " now…";
  const attempt = banner.attempt === undefined ? "" : ` (attempt ${banner.attempt})`;
  const text = `Retrying${when}${attempt}${banner.reason ? ` — ${banner.reason}` : ""}`;
  return seconds !== undefined && seconds > 0 ? { text, nextMs: banner.retryAt! - now - (seconds - 1) * 1000 } : { text };
}

export interface ContextState {
  tokens: number;
  contextWindow: number;
  percent: number;
  stablePrefixTokens: number;
  /** Where the window came from, in the server's words ("learned from overflow"). */
  windowOrigin?: string;
}

/** What a patch asks of the page: nothing more, or to read the transcript again. */
export type PatchEffect = "applied" | "skipped" | "reload";

export class Timeline {
  olderCursor: string | undefined;
  hasOlder = false;
  sessionId: string | undefined;
  /** The `seq` the copy is at: patches at or below it are in it already. */
  seq = -1;
  context: ContextState | undefined;
  checkpoints = new Map<string, CheckpointItem>();
  /** Bumped whenever what the context view shows may have changed. */
  contextVersion = 0;

  private transcript = new Transcript();
  private isStructural = true;
  private readonly changedRows = new Set<string>();
  private drawn: Row[] = [];
  private readonly byKey = new Map<string, Row>();
  private readonly versions = new Map<string, number>();
  /** Items changed since the rows were drawn (all of them: `restructure`). */
  private readonly changed = new Set<string>();
  private restructure = true;
  /** The conversation's turn is running, as `memento/turn` says (before its reply shows). */
  private turnRunning = false;
  private replyStreaming: string | undefined;
  private retry: { key: string; attempt: number; banner: Banner } | undefined;
  private readonly progress = new Map<string, string>();
  private readonly resolved = new Map<string, "apply" | "dismiss" | "toRule">();
  /** Relief dividers open on their audit (item keys), and the audits asked or served (ids). */
  private readonly expanded = new Set<string>();
  private readonly audits = new Map<string, AuditState>();
  /** Pins and unpins asked, not answered yet, by entry id: what was asked, and the item whose
   * row shows it. */
  private readonly pinning = new Map<string, { action: PinAction; key: string }>();
  /** A prompt the server refused: said under the timeline until the next item comes. */
  private refused: AssistantRow | undefined;
  /** A reset or an op that did not fit: patches wait for the page read again. */
  private stale = false;
  /** The last patch that asked for a new read: a page of its session older than it is stale. */
  private staleAt: { sessionId: string; seq: number } | undefined;
  private restoreAt = new Map<string, string>();
  private diffAt = new Map<string, string>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Another session (or the same one rewound): nothing of the old one stays. */
  reset(): void {
    this.transcript = new Transcript();
    this.byKey.clear();
    this.sessionId = undefined;
    this.seq = -1;
    this.olderCursor = undefined;
    this.hasOlder = false;
    this.refused = undefined;
    this.turnRunning = false;
    this.progress.clear();
    this.expanded.clear();
    this.audits.clear();
    this.pinning.clear();
    this.restructure = true;
    this.contextVersion += 1;
  }

  /** Rows added or removed since the view last looked (the list must re-index). */
  get structural(): boolean {
    this.sync();
    return this.isStructural;
  }

  /** Keys of rows whose content changed since the view last looked. */
  get dirty(): ReadonlySet<string> {
    this.sync();
    return this.changedRows;
  }

  /** The items of the pages read, as the patches left them. */
  get items(): readonly Item[] {
    return this.transcript.items;
  }

  /** The rows to draw, oldest first. */
  get rows(): Row[] {
    this.sync();
    return this.drawn;
  }

  get running(): boolean {
    this.sync();
    return this.turnRunning || this.replyStreaming !== undefined;
  }

  get banner(): Banner | undefined {
    this.sync();
    return this.retry?.banner;
  }

  /** The newest page (`memento/transcript`): the copy starts again from it. False when the
   * page was read before a reset heard since (it is drawn, and must be read again). */
  loadTail(page: TranscriptPage): boolean {
    this.transcript = new Transcript(page.items);
    this.byKey.clear(); // the page's copy is newer than every row drawn
    this.stale = page.sessionId === this.staleAt?.sessionId && page.seq < this.staleAt.seq;
    this.sessionId = page.sessionId;
    this.seq = page.seq;
    this.olderCursor = page.nextCursor;
    this.hasOlder = page.nextCursor !== undefined;
    this.refused = undefined;
    this.restructure = true;
    this.contextVersion += 1;
    return !this.stale;
  }

  /** An older page, put before what is shown. */
  prependPage(page: TranscriptPage): void {
    if (page.sessionId !== this.sessionId) return; // read before a reset: the new tail says
    this.transcript.put(page.items, "start");
    this.olderCursor = page.nextCursor;
    this.hasOlder = page.nextCursor !== undefined;
    this.restructure = true;
    this.contextVersion += 1;
  }

  /** `memento/transcript/patch`, in order. A patch the copy holds already is skipped; one it
   * cannot take (a reset, another session, an op that does not fit) asks for a new read. */
  applyPatch(patch: Patch): PatchEffect {
    if (this.sessionId === undefined || this.stale) return "skipped"; // the page being read holds it
    if (patch.sessionId !== this.sessionId || patch.ops.some((op) => op.op === "reset")) return this.reload(patch);
    if (patch.seq <= this.seq) return "skipped";
    try {
      for (const op of patch.ops) {
        const top = this.transcript.apply(op);
        if (top === undefined) continue;
        if (op.op === "append" && op.parent === undefined) {
          this.restructure = true;
          this.refused = undefined;
        } else if (op.op === "remove" && op.key === top) {
          this.restructure = true;
        } else {
          this.changed.add(top);
        }
      }
    } catch (error) {
      if (error instanceof TranscriptError) return this.reload(patch);
      throw error;
    }
    this.seq = patch.seq;
    return "applied";
  }

  private reload(patch: Patch): PatchEffect {
    this.stale = true;
    this.staleAt = { sessionId: patch.sessionId, seq: patch.seq };
    return "reload";
  }

  /** Context tokens per turn, oldest first, with compactions marked (the context chart). */
  series(): { tokens: number; stable: number; compaction: boolean }[] {
    const points: { tokens: number; stable: number; compaction: boolean }[] = [];
    for (const row of this.rows) {
      if (row.kind === "assistant" && row.context !== undefined) points.push({ ...row.context, compaction: false });
      else if (row.kind === "compaction" && row.level === "compact" && row.phase === "finished") {
        points.push({ tokens: row.tokensAfter ?? row.tokensBefore, stable: 0, compaction: true });
      }
    }
    return points;
  }

  /** The notifications the transcript does not hold: the turn's life (for Stop and Steer
   * before its reply shows), a tool's progress, the context meter, the checkpoint list. */
  apply(notice: Notice): void {
    switch (notice.kind) {
      case "turn":
        if (notice.subagentId !== undefined) return;
        if (notice.state === "started") this.turnRunning = true;
        else if (notice.state !== "retrying") {
          this.turnRunning = false;
          this.progress.clear();
        }
        return;
      case "toolProgress": {
        const done = notice.total !== undefined ? `${notice.progress}/${notice.total}` : `${notice.progress}`;
        this.progress.set(notice.toolCallId, notice.message ? `${done} · ${notice.message}` : done);
        const owner = this.transcript.items.findLast((item) => item.kind === "reply");
        if (owner !== undefined) this.changed.add(owner.key);
        return;
      }
      case "context":
        this.context = notice;
        this.contextVersion += 1;
        return;
      case "checkpoints":
        this.checkpoints = new Map(notice.checkpoints.map((c) => [c.id, c]));
        return;
    }
  }

  /** The checkpoint a row offers "Restore to here" for. */
  checkpointFor(row: Row): CheckpointItem | undefined {
    this.sync();
    const id = this.restoreAt.get(row.key);
    return id === undefined ? undefined : this.checkpoints.get(id);
  }

  /** The checkpoint taken before a reply's edits (its diffs compare with it). */
  diffBaseFor(row: Row): string | undefined {
    this.sync();
    return this.diffAt.get(row.key);
  }

  /** The server refused a prompt: say so under the timeline, with the retry action. */
  failPrompt(message: string, text: string | undefined): void {
    const row = assistantRow(`refused:${this.now()}`);
    row.state = "error";
    row.error = message;
    row.retryText = text;
    this.refused = row;
    this.restructure = true;
  }

  /** Marks an advisor note acted upon (the card keeps its place, greyed). */
  resolveNote(noteId: string, action: "apply" | "dismiss" | "toRule"): void {
    this.resolved.set(noteId, action);
    const item = this.transcript.items.find((i) => i.kind === "advisor" && i.noteId === noteId);
    if (item !== undefined) this.changed.add(item.key);
  }

  /** A relief divider opened or closed on its audit. */
  toggleAudit(key: string, open: boolean): void {
    if (open) this.expanded.add(key);
    else this.expanded.delete(key);
    this.changed.add(key);
  }

  /** The audits to ask the server for: those of open dividers not held yet, and those held
   * that the transcript has moved on from (the step was undone, or its undo undone, since). */
  wantedAudits(): string[] {
    const wanted: string[] = [];
    for (const item of this.transcript.items) {
      if (item.kind !== "relief" || item.audit === undefined || !this.expanded.has(item.key)) continue;
      const held = this.audits.get(item.audit);
      const stale = held?.state === "ready" && (held.audit.undoneBy ?? undefined) !== item.undoneBy;
      if (held !== undefined && !stale) continue;
      this.audits.set(item.audit, { state: "loading" });
      this.changed.add(item.key);
      wanted.push(item.audit);
    }
    return wanted;
  }

  /** The server's answer for the audit `id` (or why there is none). */
  setAudit(id: string, answer: { audit: ReliefAudit } | { error: string }): void {
    this.audits.set(id, "audit" in answer ? { state: "ready", audit: answer.audit } : { state: "failed", message: answer.error });
    for (const item of this.transcript.items) if (item.kind === "relief" && item.audit === id) this.changed.add(item.key);
  }

  /** An undo of the step `id` is over: its divider is drawn again (Undo back, or undone). */
  undoSettled(id: string): void {
    for (const item of this.transcript.items) if (item.kind === "relief" && item.audit === id) this.changed.add(item.key);
  }

  /** A pin or unpin of `entryId` (shown on the item `key`'s row) was asked: its button waits.
   * Pinned or not stays the transcript's word (the server's patch). */
  pinRequested(entryId: string, key: string, action: PinAction): void {
    this.pinning.set(entryId, { action, key });
    this.changed.add(key);
  }

  /** A pin or unpin of `entryId` is on its way. */
  pinPending(entryId: string): boolean {
    return this.pinning.has(entryId);
  }

  /** The pin or unpin of `entryId` is over, done (its patch came first) or refused. */
  pinSettled(entryId: string): void {
    const asked = this.pinning.get(entryId);
    if (asked === undefined) return;
    this.pinning.delete(entryId);
    this.changed.add(asked.key);
  }

  /** The view took note of every change. */
  settle(): void {
    this.sync();
    this.isStructural = false;
    this.changedRows.clear();
  }

  // -- rows from items ----------------------------------------------------------------------

  private sync(): void {
    if (!this.restructure && this.changed.size === 0) return;
    const items = this.transcript.items;
    if (this.restructure) {
      // Rows of items that did not change are kept as they are: their views stay.
      const kept = new Map(this.byKey);
      this.byKey.clear();
      this.drawn = [];
      let prompt: string | undefined;
      for (const item of items) {
        const old = this.changed.has(item.key) ? undefined : kept.get(item.key);
        if (old !== undefined) this.byKey.set(item.key, old);
        const row = old ?? this.draw(item, prompt);
        if (item.kind === "user") prompt = item.text;
        if (row !== undefined) this.drawn.push(row);
      }
      if (this.refused !== undefined) this.drawn.push(this.refused);
      this.placeCheckpoints(items);
      this.isStructural = true;
      this.restructure = false;
      this.contextVersion += 1;
    } else {
      for (const key of this.changed) {
        const old = this.byKey.get(key);
        if (old === undefined) continue;
        const at = this.drawn.indexOf(old, Math.max(0, this.drawn.length - 64)); // most changes are at the end
        const index = at >= 0 ? at : this.drawn.indexOf(old);
        const item = items.findLast((i) => i.key === key);
        const row = item === undefined ? undefined : this.draw(item, this.promptBefore(item));
        if (row !== undefined && index >= 0) this.drawn[index] = row;
        if (row?.kind === "assistant" && row.context !== undefined) this.contextVersion += 1;
      }
    }
    this.changed.clear();
    this.noteStreaming(items);
  }

  private draw(item: Item, prompt: string | undefined): Row | undefined {
    const version = (this.versions.get(item.key) ?? -1) + 1;
    const row = rowOf(item, version, {
      prompt, progress: this.progress, resolved: this.resolved, expanded: this.expanded, audits: this.audits, pinning: this.pinning,
    });
    if (row === undefined) return undefined;
    this.versions.set(item.key, version);
    this.byKey.set(item.key, row);
    this.changedRows.add(item.key);
    return row;
  }

  private promptBefore(item: Item): string | undefined {
    const items = this.transcript.items;
    for (let i = items.lastIndexOf(item) - 1; i >= 0; i -= 1) {
      const before = items[i]!;
      if (before.kind === "user") return before.text;
    }
    return undefined;
  }

  /** The running reply (the newest, while it streams) and its retry banner. */
  private noteStreaming(items: readonly Item[]): void {
    const last = items.findLast((item) => item.kind === "reply");
    const streaming = last?.kind === "reply" && last.state === "streaming" ? last : undefined;
    this.replyStreaming = streaming?.key;
    const retry = streaming?.retry;
    if (retry === undefined || streaming === undefined) {
      this.retry = undefined;
      return;
    }
    if (this.retry?.key === streaming.key && this.retry.attempt === retry.attempt) return;
    this.retry = {
      key: streaming.key,
      attempt: retry.attempt,
      banner: {
        attempt: retry.attempt,
        reason: retry.reason,
        retryAt: retry.retryInMs === undefined ? undefined : this.now() + retry.retryInMs,
      },
    };
  }

  /**
   * Where each checkpoint's controls go. A checkpoint item follows the reply of the turn it
   * was taken in, and holds the conversation as it was before that turn's prompt: "Restore to
   * here" goes on the row before that prompt (the prompt itself when it is the first), and
   * the turn's edits diff against it.
   */
  private placeCheckpoints(items: readonly Item[]): void {
    this.restoreAt = new Map();
    this.diffAt = new Map();
    let prompt = -1;
    let reply: string | undefined;
    items.forEach((item, index) => {
      if (item.kind === "user" && !item.steer) {
        prompt = index;
        reply = undefined;
      } else if (item.kind === "reply") {
        reply ??= item.key;
      } else if (item.kind === "checkpoint") {
        const before = this.rowBefore(items, prompt);
        if (before !== undefined) this.restoreAt.set(before, item.checkpointId);
        if (reply !== undefined && !this.diffAt.has(reply)) this.diffAt.set(reply, item.checkpointId);
      }
    });
  }

  private rowBefore(items: readonly Item[], prompt: number): string | undefined {
    if (prompt < 0) return undefined;
    for (let i = prompt - 1; i >= 0; i -= 1) if (items[i]!.kind !== "checkpoint") return items[i]!.key;
    return items[prompt]!.key;
  }
}
