/**
 * The virtualized timeline: only the rows near the viewport are in the DOM, in normal flow
 * between two fillers that stand for the rows above and below.
 *
 * Nothing here reads layout after writing it. A row's height comes from a ResizeObserver
 * (after the browser's own layout, before paint) and until then from an estimate; positions
 * are prefix sums over those heights. So a streaming reply grows in place with no script
 * positioning, and the only layout script can cause is the one setting the scroll position
 * needs after the fillers moved — a layout the frame needs anyway.
 *
 * Follows the stream only while the reader is at the bottom; scrolling up stops following,
 * coming back to the bottom resumes it. When rows above the reader change (an older page on
 * top, a row measured taller than its estimate) the row under the reader stays in place.
 * Reaching the top asks for the next older page.
 */
import { estimateHeight, type Row } from "./rows";
import { createView, type RowContext, type RowView } from "./views";

const BOTTOM_SLACK = 24; // px: this close to the end still counts as "at the bottom"
const OVERSCAN = 1; // viewports of rows kept mounted above and below the visible ones

export class TimelineList {
  private rows: Row[] = [];
  private positions = new Map<string, number>(); // row key → index
  private range: [number, number] = [0, -1]; // the mounted rows
  private readonly heights = new Map<string, number>(); // measured, by row key
  private readonly estimates = new WeakMap<Row, { version: number; width: number; height: number }>();
  private offsets = new Float64Array(1); // offsets[i]: top of row i; offsets[n]: the total
  private offsetsValid = true;
  private readonly views = new Map<string, RowView>(); // the mounted rows
  private readonly keyOf = new WeakMap<Element, string>();
  private readonly before: HTMLElement;
  private readonly after: HTMLElement;
  private readonly resizes: ResizeObserver;
  private viewport = 0;
  private width = 0;
  private scrollTop = 0; // where the list wants to be
  private shownTop = 0; // where the scroller is, as far as we know (never read after a write)
  private following = true;
  private redraw = 0;
  /** Called when the first row comes near the viewport (load the previous page). */
  onTop: () => void = () => {};

  constructor(
    private readonly scroller: HTMLElement,
    private readonly spacer: HTMLElement,
    private readonly context: RowContext,
  ) {
    this.before = spacer.appendChild(filler());
    this.after = spacer.appendChild(filler());
    this.viewport = scroller.clientHeight;
    this.width = scroller.clientWidth;
    this.resizes = new ResizeObserver((entries) => this.measured(entries));
    this.resizes.observe(scroller);
    scroller.addEventListener("scroll", () => this.onScroll(), { passive: true });
  }

  /** New rows (or new order, with `structural`); `dirty` rows redraw in place. Call once a
   * frame, before layout: every write of the frame happens here. */
  setRows(rows: Row[], structural: boolean, dirty: ReadonlySet<string>): void {
    if (structural) {
      const anchor = this.following ? undefined : this.anchor();
      this.rows = rows.slice(); // the model's array grows between frames; the list draws what it was given
      this.positions = new Map(rows.map((row, index) => [row.key, index]));
      this.offsetsValid = false;
      // The reader's row keeps its place on screen, whatever came or went above it.
      if (anchor !== undefined) this.keep(anchor);
    }
    for (const key of dirty) {
      const index = this.positions.get(key) ?? -1;
      const row = rows[index];
      if (row === undefined) continue;
      this.rows[index] = row; // a changed row is a new object (the model draws it afresh)
      const view = this.views.get(key);
      if (view !== undefined && row.version !== view.version) view.update(row, this.context);
    }
    this.render();
  }

  scrollToEnd(): void {
    this.following = true;
    this.render();
  }

  /** Redraws every mounted row (e.g. the checkpoints moved). */
  refreshAll(): void {
    for (const [key, view] of this.views) {
      const row = this.rows[this.positions.get(key) ?? -1];
      if (row !== undefined) view.update(row, this.context);
    }
  }

  private onScroll(): void {
    const top = this.scroller.scrollTop; // layout is clean in a scroll event: no cost
    this.shownTop = top;
    if (Math.abs(top - this.scrollTop) < 1) return; // our own write coming back
    const { scrollHeight, clientHeight } = this.scroller;
    if (scrollHeight - top - clientHeight <= BOTTOM_SLACK) this.following = true;
    else if (top < this.scrollTop) this.following = false; // the reader went up
    this.scrollTop = top;
    this.render();
  }

  /** ResizeObserver: the browser laid out the viewport or rows; heights are now known. */
  private measured(entries: readonly ResizeObserverEntry[]): void {
    const anchor = this.following ? undefined : this.anchor();
    let changed = false;
    for (const entry of entries) {
      if (entry.target === this.scroller) {
        this.viewport = entry.contentRect.height;
        if (Math.abs(entry.contentRect.width - this.width) > 0.5) {
          this.width = entry.contentRect.width;
          // Rows wrap differently now: the mounted ones report their new heights; the others
          // are estimated again until they mount.
          for (const key of this.heights.keys()) if (!this.views.has(key)) this.heights.delete(key);
        }
        changed = true;
        continue;
      }
      const key = this.keyOf.get(entry.target);
      const height = entry.borderBoxSize[0]?.blockSize;
      if (key === undefined || height === undefined || !this.views.has(key)) continue;
      if (this.heights.get(key) !== height) {
        this.heights.set(key, height);
        changed = true;
      }
    }
    if (!changed) return;
    this.offsetsValid = false;
    if (anchor !== undefined) this.keep(anchor);
    this.place();
    // Rows now needed on screen mount before this frame paints; the margin around it waits
    // for the next frame.
    const [first, last] = this.range;
    const covered = this.offset(first) <= this.scrollTop && (last >= this.rows.length - 1 || this.offset(last + 1) >= this.scrollTop + this.viewport);
    if (!covered) this.render();
    else if (this.redraw === 0) this.redraw = requestAnimationFrame(() => this.render());
  }

  /** The first row on screen and how far the viewport's top is into it. */
  private anchor(): { key: string; shift: number } | undefined {
    if (this.rows.length === 0) return undefined;
    const index = this.indexAt(this.scrollTop);
    const row = this.rows[index];
    return row === undefined ? undefined : { key: row.key, shift: this.offset(index) - this.scrollTop };
  }

  private keep(anchor: { key: string; shift: number }): void {
    const index = this.positions.get(anchor.key);
    if (index !== undefined) this.scrollTop = Math.max(0, this.offset(index) - anchor.shift);
  }

  /** Mounts the rows in range, unmounts the others, sizes the fillers, scrolls. */
  private render(): void {
    if (this.redraw !== 0) cancelAnimationFrame(this.redraw);
    this.redraw = 0;
    const count = this.rows.length;
    if (this.following) this.scrollTop = Math.max(0, this.offset(count) - this.viewport);
    // Rows coming on screen all at once (the first rows, a jump of the scrollbar) are drawn
    // alone; the margin around them comes a frame later.
    let first = count === 0 ? 0 : this.indexAt(this.scrollTop);
    let last = count === 0 ? -1 : this.indexAt(this.scrollTop + this.viewport);
    const [shownFirst, shownLast] = this.range;
    if (count > 0 && (first > shownLast || last < shownFirst)) {
      this.redraw = requestAnimationFrame(() => this.render());
    } else if (count > 0) {
      first = this.indexAt(this.scrollTop - this.viewport * OVERSCAN);
      last = this.indexAt(this.scrollTop + this.viewport * (1 + OVERSCAN));
    }
    const wanted = new Set<string>();
    for (let i = first; i <= last; i += 1) wanted.add(this.rows[i]!.key);
    for (const [key, view] of this.views) {
      if (wanted.has(key)) continue;
      this.resizes.unobserve(view.element);
      view.element.remove();
      this.views.delete(key);
    }
    let cursor: ChildNode = this.before.nextSibling ?? this.after;
    for (let i = first; i <= last; i += 1) {
      const row = this.rows[i]!;
      let view = this.views.get(row.key);
      if (view === undefined) {
        view = createView(row, this.context);
        this.views.set(row.key, view);
        this.keyOf.set(view.element, row.key);
        this.resizes.observe(view.element, { box: "border-box" });
      } else if (view.version !== row.version) {
        view.update(row, this.context);
      }
      if (view.element === cursor) cursor = cursor.nextSibling ?? this.after;
      else this.spacer.insertBefore(view.element, cursor);
    }
    this.range = [first, last];
    this.place();
    if (first === 0 && count > 0) this.onTop();
  }

  /** Fillers for the rows that are not mounted, and the scroll position. */
  private place(): void {
    const [first, last] = this.range;
    const total = this.offset(this.rows.length);
    setHeight(this.before, this.offset(first));
    setHeight(this.after, total - this.offset(last + 1));
    if (this.following) this.scrollTop = Math.max(0, total - this.viewport);
    if (Math.abs(this.shownTop - this.scrollTop) >= 1) {
      this.scroller.scrollTop = this.scrollTop;
      this.shownTop = this.scrollTop;
    }
  }

  private height(row: Row): number {
    const measured = this.heights.get(row.key);
    if (measured !== undefined) return measured;
    let estimate = this.estimates.get(row);
    if (estimate === undefined || estimate.version !== row.version || estimate.width !== this.width) {
      estimate = { version: row.version, width: this.width, height: estimateHeight(row, this.width) };
      this.estimates.set(row, estimate);
    }
    return estimate.height;
  }

  private offset(index: number): number {
    if (!this.offsetsValid) {
      const n = this.rows.length;
      if (this.offsets.length < n + 1) this.offsets = new Float64Array(Math.max(n + 1, this.offsets.length * 2));
      for (let i = 0; i < n; i += 1) this.offsets[i + 1] = this.offsets[i]! + this.height(this.rows[i]!);
      this.offsetsValid = true;
    }
    return this.offsets[Math.max(0, Math.min(index, this.rows.length))]!;
  }

  /** The row at `y` (clamped to the first and last row). */
  private indexAt(y: number): number {
    let low = 0;
    let high = this.rows.length - 1;
    this.offset(0);
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (this.offsets[mid]! <= y) low = mid;
      else high = mid - 1;
    }
    return low;
  }
}

function filler(): HTMLElement {
  const element = document.createElement("div");
  element.className = "timeline-filler";
  element.setAttribute("aria-hidden", "true");
  return element;
}

function setHeight(element: HTMLElement, px: number): void {
  const value = `${Math.max(0, Math.round(px))}px`;
  if (element.style.height !== value) element.style.height = value;
}
