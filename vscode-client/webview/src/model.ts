/**
 * The page's state: the timeline rows, the live turn, checkpoints, the context series.
 * Pure (no DOM): notices and history pages go in, the set of changed rows comes out, and the
 * view redraws only those, once per animation frame.
 */
import { childNotice, type CheckpointItem, type ChildNotice, type Notice, type NoticeOf, type ReliefStep, type RunningTurn } from "../../src/webviewProtocol";
import { applyChildNotice, childFromInfo, mergeChildren, type ChildCard } from "./children";
import { entriesToRows, joinPages, resumedRow, takeRunningTurn } from "./history";
import { appendText, assistantRow, reminderText, type AssistantRow, type CompactionRow, type Row, type ToolPart } from "./rows";

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

export class Timeline {
  rows: Row[] = [];
  /** Rows added or removed since the view last looked (the list must re-index). */
  structural = true;
  /** Keys of rows whose content changed since the view last looked. */
  readonly dirty = new Set<string>();
  olderCursor: string | undefined;
  hasOlder = false;
  running: string | undefined;
  banner: Banner | undefined;
  context: ContextState | undefined;
  checkpoints = new Map<string, CheckpointItem>();
  /** Bumped whenever what the context view shows may have changed. */
  contextVersion = 0;
  private liveCompaction = 0;
  /** The prompt entry of a running turn that began before the first page loaded. */
  private resuming: string | undefined;
  /** The subagents heard live this session, by id (their cards outlive the live rows). */
  private readonly children = new Map<string, ChildCard>();

  constructor(private readonly now: () => number = Date.now) {}

  reset(): void {
    this.rows = [];
    this.structural = true;
    this.olderCursor = undefined;
    this.hasOlder = false;
    this.banner = undefined;
    this.children.clear();
    this.contextVersion += 1;
  }

  private touch(row: Row): void {
    row.version += 1;
    this.dirty.add(row.key);
  }

  private add(row: Row): void {
    this.rows.push(row);
    this.structural = true;
    this.contextVersion += 1;
  }

  /** The newest page of history. Rows already shown that are older than the page stay
   * (the user may be reading them); the live turn stays after it while it runs. A page
   * read while a turn runs (`running`: the page opened mid-turn) shows that turn once, live:
   * its stored steps make way for the steps its notices bring again. */
  loadTail(
    entries: Record<string, unknown>[],
    nextCursor: string | undefined,
    running?: RunningTurn,
    relief?: readonly ReliefStep[],
  ): void {
    let rows = this.withChildren(entriesToRows(entries, relief));
    let live = this.running === undefined ? [] : this.rows.filter((r) => r.entryIds.length === 0);
    let taken: Row[] = [];
    if (running !== undefined) {
      ({ kept: rows, taken } = takeRunningTurn(rows, running.entryId));
      live = [];
      this.running = undefined;
      this.resuming = running.entryId === undefined || rows.length > 0 ? undefined : running.entryId;
    }
    let older: Row[] = [];
    const anchor = rows.findIndex((r) => r.kind !== "assistant");
    const anchorId = rows[anchor]?.entryIds[0];
    const at = anchorId === undefined ? -1 : this.rows.findIndex((r) => r.entryIds.includes(anchorId));
    if (nextCursor !== undefined && at >= 0) {
      older = this.rows.slice(0, at).filter((r) => r.entryIds.length > 0);
      rows.splice(0, anchor);
    } else {
      this.olderCursor = nextCursor;
      this.hasOlder = nextCursor !== undefined;
    }
    if (running === undefined) adoptLiveKeys(this.rows, rows);
    this.rows = [...older, ...rows, ...live];
    this.structural = true;
    this.contextVersion += 1;
    if (running !== undefined) {
      const row = resumedRow(running.turnId, taken);
      row.retryText = this.rows.findLast((r) => r.kind === "user")?.text;
      this.rows.push(row, ...taken.filter((r) => r.kind !== "assistant"));
      for (const notice of running.notices) this.apply(notice);
    }
  }

  /** An older page, put before what is shown. Returns how many rows were added on top. */
  prependPage(entries: Record<string, unknown>[], nextCursor: string | undefined, relief?: readonly ReliefStep[]): number {
    const before = this.rows.length;
    let older = this.withChildren(entriesToRows(entries, relief));
    const live = this.rows.find((r): r is AssistantRow => r.kind === "assistant" && r.turnId === this.running);
    if (this.resuming !== undefined && live !== undefined) {
      // The running turn began before the first page: its earlier steps are in this one.
      const { kept, taken } = takeRunningTurn(older, this.resuming);
      const earlier = resumedRow(live.turnId ?? "", taken);
      live.entryIds = [...earlier.entryIds, ...live.entryIds];
      live.orphans = { ...earlier.orphans, ...live.orphans };
      this.rows = [...taken.filter((r) => r.kind !== "assistant"), ...this.rows];
      if (kept.length > 0) this.resuming = undefined;
      older = kept;
    }
    this.rows = older.length === 0 ? this.rows : joinPages(older, this.rows);
    this.olderCursor = nextCursor;
    this.hasOlder = nextCursor !== undefined;
    this.structural = true;
    this.contextVersion += 1;
    return this.rows.length - before;
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

  /** The user's own message, shown at once (before the server answers). */
  addPrompt(text: string, steer = false): void {
    this.add({ kind: "user", key: `prompt:${this.rows.length}:${this.now()}`, version: 0, entryIds: [], text, steer });
  }

  private liveTurn(turnId: string): AssistantRow {
    const found = this.rows.findLast((r): r is AssistantRow => r.kind === "assistant" && r.turnId === turnId);
    if (found !== undefined) return found;
    const row = assistantRow(`turn:${turnId}`, turnId);
    row.state = "streaming";
    row.retryText = this.rows.findLast((r) => r.kind === "user")?.text;
    this.add(row);
    return row;
  }

  apply(notice: Notice): void {
    const child = childNotice(notice);
    if (child !== undefined) return this.onChildNotice(child);
    switch (notice.kind) {
      case "turn":
        return this.onTurn(notice);
      case "stream": {
        const row = this.liveTurn(notice.turnId);
        this.banner = undefined;
        if (notice.stream === "tool") {
          const id = notice.toolCallId ?? "";
          const part = row.parts.find((p) => p.kind === "tool" && p.id === id);
          if (part?.kind === "tool") part.args += notice.delta;
          else row.parts.push({ kind: "tool", id, name: notice.toolName ?? "tool", args: notice.delta, status: "streaming" });
        } else {
          appendText(row, notice.stream, notice.delta);
        }
        return this.touch(row);
      }
      case "tool": {
        const row = this.liveTurn(notice.turnId);
        let part = row.parts.find((p) => p.kind === "tool" && p.id === notice.toolCallId);
        if (part === undefined) {
          part = { kind: "tool", id: notice.toolCallId, name: notice.toolName, args: "", status: "running" };
          row.parts.push(part);
        }
        if (part.kind === "tool") {
          part.status = notice.state === "started" ? "running" : notice.isError ? "error" : "done";
          if (notice.server !== undefined) part.label = `${notice.server} › ${notice.serverTool ?? notice.toolName}`;
          const stored = row.orphans?.[part.id];
          if (stored !== undefined) part.output = stored.output;
          else if (notice.output !== undefined) [part.output, part.outputTruncated] = [notice.output, notice.outputTruncated];
          if (notice.state === "finished") mergeChildren(part, this.children);
        }
        if (notice.state === "finished") row.stepStart = row.parts.length;
        return this.touch(row);
      }
      case "toolProgress": {
        const row = this.liveTurn(notice.turnId);
        const part = row.parts.find((p) => p.kind === "tool" && p.id === notice.toolCallId);
        if (part?.kind !== "tool" || part.status !== "running") return;
        const done = notice.total !== undefined ? `${notice.progress}/${notice.total}` : `${notice.progress}`;
        part.progress = notice.message ? `${done} · ${notice.message}` : done;
        return this.touch(row);
      }
      case "reminder": {
        const row = this.liveTurn(notice.turnId);
        const mark = row.marks.findLast((m) => m.rules.some((r) => notice.rules.includes(r)));
        if (mark !== undefined) mark.reminder = reminderText(notice.text);
        return this.touch(row);
      }
      case "context": {
        this.context = notice;
        this.contextVersion += 1;
        const row = this.running === undefined ? undefined : this.liveTurn(this.running);
        if (row !== undefined) row.context = { tokens: notice.tokens, stable: notice.stablePrefixTokens };
        return;
      }
      case "compaction":
        return this.onCompaction(notice);
      case "advisor": {
        const key = `advisor:${notice.noteId}`;
        if (this.rows.some((r) => r.key === key)) return;
        return this.add({ ...notice, kind: "advisor", key, version: 0, entryIds: [] });
      }
      case "subagent":
        return this.onSubagent(notice);
      case "checkpoints":
        this.checkpoints = new Map(notice.checkpoints.filter((c) => c.entryId !== undefined).map((c) => [c.entryId!, c]));
        for (const row of this.rows) if (row.entryIds.some((id) => this.checkpoints.has(id))) this.touch(row);
        return;
    }
  }

  private onTurn(notice: NoticeOf<"turn">): void {
    const row = this.liveTurn(notice.turnId);
    switch (notice.state) {
      case "started":
        this.running = notice.turnId;
        row.state = "streaming";
        break;
      case "retrying":
        if (notice.rules?.length) {
          // TTSR: the server dropped the partial answer of this request; so do we.
          row.parts.splice(row.stepStart);
          row.marks.push({ rules: notice.rules, attempt: notice.attempt, at: row.parts.length });
        } else {
          this.banner = {
            attempt: notice.attempt,
            reason: notice.reason ?? notice.error,
            retryAt: notice.retryInMs === undefined ? undefined : this.now() + notice.retryInMs,
          };
        }
        break;
      default:
        if (this.running === notice.turnId) this.running = undefined;
        this.banner = undefined;
        row.state = notice.state === "finished" ? "done" : notice.state;
        if (notice.error !== undefined) row.error = notice.error;
        for (const part of row.parts) if (part.kind === "tool" && part.status === "streaming") part.status = "running";
    }
    this.touch(row);
  }

  /** Stored rows with the cards of the subagents heard live under their `task` calls. */
  private withChildren(rows: Row[]): Row[] {
    if (this.children.size === 0) return rows;
    for (const row of rows) {
      if (row.kind !== "assistant") continue;
      for (const part of row.parts) if (part.kind === "tool" && part.name === "task") mergeChildren(part, this.children);
    }
    return rows;
  }

  /** The `task` part a child nests under, and its row: the call it names, or else a task
   * card made for it in its parent's turn (the call is not drawn yet). */
  private taskPart(card: ChildCard, parentTurnId: string | undefined, create: boolean): { row: AssistantRow; part: ToolPart } | undefined {
    for (let i = this.rows.length - 1; i >= 0; i -= 1) {
      const row = this.rows[i]!;
      if (row.kind !== "assistant") continue;
      const part = row.parts.find((p): p is ToolPart => p.kind === "tool" && (p.id === card.parentToolCallId || (p.children?.includes(card) ?? false)));
      if (part !== undefined) return { row, part };
    }
    const turnId = parentTurnId ?? this.running;
    if (!create || turnId === undefined) return undefined;
    const row = this.liveTurn(turnId);
    const part: ToolPart = { kind: "tool", id: card.parentToolCallId ?? `task:${card.id}`, name: "task", args: "", status: "running" };
    row.parts.push(part);
    return { row, part };
  }

  private onSubagent(info: NoticeOf<"subagent">): void {
    const card = childFromInfo(info, this.children.get(info.id));
    this.children.set(info.id, card);
    const found = this.taskPart(card, info.parentTurnId, true);
    if (found === undefined) return;
    const { row, part } = found;
    if (!(part.children ?? []).includes(card)) part.children = [...(part.children ?? []).filter((c) => c.id !== card.id), card];
    this.touch(row);
  }

  private onChildNotice(notice: ChildNotice): void {
    const card = this.children.get(notice.subagentId ?? "");
    if (card === undefined) return; // its announcement comes first; one missed is not drawn
    applyChildNotice(card, notice);
    const found = this.taskPart(card, undefined, false);
    if (found !== undefined) this.touch(found.row);
  }

  private onCompaction(notice: NoticeOf<"compaction">): void {
    let row = this.rows.findLast((r): r is CompactionRow => r.kind === "compaction" && r.phase === "started" && r.level === notice.level && r.entryIds.length === 0);
    if (row === undefined) {
      row = { kind: "compaction", key: `compaction:${this.liveCompaction++}`, version: 0, entryIds: [], level: notice.level, phase: notice.phase, tokensBefore: notice.tokensBefore };
      this.add(row);
    }
    Object.assign(row, { phase: notice.phase, tokensBefore: notice.tokensBefore, tokensAfter: notice.tokensAfter, summarizer: notice.summarizer, provider: notice.provider, error: notice.error, why: notice.why });
    this.contextVersion += 1;
    this.touch(row);
  }

  checkpointFor(row: Row): CheckpointItem | undefined {
    for (const id of row.entryIds) {
      const checkpoint = this.checkpoints.get(id);
      if (checkpoint !== undefined) return checkpoint;
    }
    return undefined;
  }

  /** The server refused a prompt: say so under it, with the retry action. */
  failPrompt(message: string): void {
    const row = assistantRow(`failed:${this.rows.length}:${this.now()}`);
    row.state = "error";
    row.error = message;
    row.retryText = this.rows.findLast((r) => r.kind === "user")?.text;
    this.add(row);
  }

  /** Marks an advisor note acted upon (the card keeps its place, greyed). */
  resolveNote(noteId: string, action: "apply" | "dismiss" | "toRule"): void {
    const row = this.rows.find((r) => r.kind === "advisor" && r.noteId === noteId);
    if (row?.kind === "advisor") {
      row.resolved = action;
      this.touch(row);
    }
  }

  /** The view took note of every change. */
  settle(): void {
    this.structural = false;
    this.dirty.clear();
  }
}

/**
 * The stored rows that take over from rows drawn live (the prompt, the turn, a compaction)
 * take their keys, in order: their views stay and redraw only what differs, so the end of a
 * turn does not redraw it (nor fold its open cards).
 */
function adoptLiveKeys(shown: readonly Row[], stored: Row[]): void {
  const known = new Set(shown.map((r) => r.key));
  const live = shown.filter((r) => /^(prompt|turn|compaction):/.test(r.key));
  let next = 0;
  for (const row of stored) {
    const drawn = live[next];
    if (drawn === undefined) return;
    if (known.has(row.key) || row.kind !== drawn.kind || (row.kind === "user" && drawn.kind === "user" && row.text !== drawn.text)) continue;
    row.key = drawn.key;
    row.version = drawn.version + 1;
    next += 1;
  }
}
