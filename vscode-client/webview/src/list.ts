/**
 * The virtualized timeline: only the rows near the viewport are in the DOM, measured as they
 * render (@tanstack/virtual-core: framework-free, keyed measurements, and it keeps the row
 * under the reader in place when older rows are put on top).
 *
 * Follows the stream only while the reader is at the bottom; scrolling up stops following,
 * coming back to the bottom resumes it. Reaching the top asks for the next older page.
 */
import {
  elementScroll,
  observeElementOffset,
  observeElementRect,
  Virtualizer,
  type VirtualizerOptions,
} from "@tanstack/virtual-core";
import type { Row } from "./rows";
import { createView, type RowContext, type RowView } from "./views";

const BOTTOM_SLACK = 24; // px: this close to the end still counts as "at the bottom"

export class TimelineList {
  private rows: Row[] = [];
  private readonly views = new Map<string, RowView>();
  private readonly virtualizer: Virtualizer<HTMLElement, HTMLElement>;
  private readonly options: VirtualizerOptions<HTMLElement, HTMLElement>;
  private following = true;
  private lastScrollTop = 0;
  /** Called when the first row comes into view (load the previous page). */
  onTop: () => void = () => {};

  constructor(
    private readonly scroller: HTMLElement,
    private readonly spacer: HTMLElement,
    private readonly context: RowContext,
  ) {
    this.options = {
      count: 0,
      getScrollElement: () => scroller,
      estimateSize: (index) => estimate(this.rows[index]),
      getItemKey: (index) => this.rows[index]?.key ?? index,
      overscan: 6,
      anchorTo: "end",
      scrollToFn: elementScroll,
      observeElementRect,
      observeElementOffset,
      onChange: () => this.paint(),
    };
    this.virtualizer = new Virtualizer(this.options);
    this.virtualizer._didMount();
    scroller.addEventListener("scroll", () => this.onScroll(), { passive: true });
  }

  get atBottom(): boolean {
    const { scrollTop, scrollHeight, clientHeight } = this.scroller;
    return scrollHeight - scrollTop - clientHeight <= BOTTOM_SLACK;
  }

  get isFollowing(): boolean {
    return this.following;
  }

  private onScroll(): void {
    const top = this.scroller.scrollTop;
    if (top < this.lastScrollTop - 2 && !this.atBottom) this.following = false; // the reader went up
    else if (this.atBottom) this.following = true;
    this.lastScrollTop = top;
  }

  /** New rows (or new order): re-index, then draw. `dirty` rows redraw in place. */
  setRows(rows: Row[], structural: boolean, dirty: ReadonlySet<string>): void {
    const follow = this.following;
    this.rows = rows;
    if (structural) {
      this.virtualizer.setOptions({ ...this.options, count: rows.length });
      this.virtualizer._willUpdate();
    }
    for (const key of dirty) {
      const view = this.views.get(key);
      const row = view && rows.find((r) => r.key === key);
      if (view !== undefined && row !== undefined && row.version !== view.version) view.update(row, this.context);
    }
    this.paint();
    if (follow) this.scrollToEnd();
  }

  scrollToEnd(): void {
    if (this.rows.length === 0) return;
    this.virtualizer.scrollToIndex(this.rows.length - 1, { align: "end" });
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.lastScrollTop = this.scroller.scrollTop;
    this.following = true;
  }

  /** Redraws the checkpoint controls etc. of every mounted row (e.g. the checkpoints moved). */
  refreshAll(): void {
    for (const [key, view] of this.views) {
      const row = this.rows.find((r) => r.key === key);
      if (row !== undefined) view.update(row, this.context);
    }
  }

  private paint(): void {
    const items = this.virtualizer.getVirtualItems();
    this.spacer.style.height = `${this.virtualizer.getTotalSize()}px`;
    const seen = new Set<string>();
    const placed: HTMLElement[] = [];
    for (const item of items) {
      const row = this.rows[item.index];
      if (row === undefined) continue;
      seen.add(row.key);
      let view = this.views.get(row.key);
      if (view === undefined) {
        view = createView(row, this.context);
        this.views.set(row.key, view);
      } else if (view.version !== row.version) {
        view.update(row, this.context);
      }
      const element = view.element;
      element.dataset["index"] = String(item.index);
      element.style.transform = `translateY(${item.start}px)`;
      if (element.parentNode !== this.spacer) this.spacer.append(element);
      placed.push(element);
    }
    // Measure after every write: one layout for the frame, not one per row.
    for (const element of placed) this.virtualizer.measureElement(element);
    for (const [key, view] of this.views) {
      if (!seen.has(key)) {
        view.element.remove();
        this.views.delete(key);
      }
    }
    if (items[0]?.index === 0 && this.rows.length > 0) this.onTop();
  }

  /** Rows in the DOM right now (for tests and benchmarks). */
  get mounted(): number {
    return this.views.size;
  }
}

function estimate(row: Row | undefined): number {
  if (row === undefined) return 60;
  switch (row.kind) {
    case "user":
      return 40 + Math.min(400, Math.ceil(row.text.length / 60) * 18);
    case "assistant":
      return 60 + row.parts.reduce((sum, p) => sum + (p.kind === "tool" ? 36 : p.kind === "thinking" ? 28 : Math.min(1200, Math.ceil(p.text.length / 60) * 18)), 0);
    case "advisor":
      return 110;
    default:
      return 36;
  }
}
