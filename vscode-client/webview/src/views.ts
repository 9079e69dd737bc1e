/**
 * One view per timeline row, its element kept for the row's life in the DOM (the list
 * measures it). A view redraws only when its row's version moved; a streaming answer keeps
 * one incremental markdown renderer per text part, so it touches only its growing last
 * block, and a settled answer is rendered once, whole.
 */
import type { CheckpointItem } from "../../src/webviewProtocol";
import { ChildList } from "./childViews";
import { advisorCard, compactionDivider, noteRow, restoreControl, toolCard, ttsrMark } from "./cards";
import { button, el } from "./dom";
import { pinControls } from "./pins";
import type { LazyHighlighter } from "./highlight";
import { IncrementalMarkdown, renderSettled } from "./markdown";
import type { AssistantRow, Part, Row } from "./rows";

export interface RowContext {
  /** The checkpoint whose "Restore to here" the row carries. */
  checkpointFor(row: Row): CheckpointItem | undefined;
  /** The checkpoint a reply's edits diff against (its id). */
  diffBaseFor(row: Row): string | undefined;
  /** Colours the code blocks of settled messages as they come into view. */
  readonly highlighter?: LazyHighlighter;
}

export interface RowView {
  readonly element: HTMLElement;
  version: number;
  update(row: Row, context: RowContext): void;
}

export function createView(row: Row, context: RowContext): RowView {
  const view = row.kind === "assistant" ? new AssistantView() : new PlainView();
  view.update(row, context);
  return view;
}

/** Rows that change rarely: their content redrawn whole. */
class PlainView implements RowView {
  readonly element: HTMLElement = el("article");
  version = -1;

  update(row: Row, context: RowContext): void {
    this.element.className = `row row-${row.kind}`;
    this.element.dataset["key"] = row.key;
    const checkpoint = context.checkpointFor(row);
    this.element.replaceChildren(...plainContent(row), ...(checkpoint === undefined ? [] : [restoreControl(checkpoint)]));
    this.version = row.version;
  }
}

function plainContent(row: Row): Node[] {
  switch (row.kind) {
    case "user":
      return [
        el(
          "div",
          { class: "row-head" },
          el("span", { class: "who", "aria-hidden": "true" }, row.steer ? "You (steering)" : "You"),
          ...(row.pin === undefined ? [] : pinControls(row.pin, "this message", row.key)),
        ),
        el("div", { class: "user-text" }, row.text),
      ];
    case "advisor":
      return [advisorCard(row)];
    case "compaction":
      return [compactionDivider(row)];
    case "note":
      return [noteRow(row)];
    case "assistant":
      return [];
  }
}

type PartView =
  | { kind: "text"; element: HTMLElement; markdown?: IncrementalMarkdown; source: string }
  | { kind: "thinking"; element: HTMLDetailsElement; body: HTMLElement; source: string }
  | { kind: "tool"; element: HTMLElement; card: HTMLElement; key: string; children?: ChildList };

class AssistantView implements RowView {
  readonly element: HTMLElement;
  private readonly body: HTMLElement;
  private readonly footer: HTMLElement;
  private readonly head: HTMLElement;
  private readonly who: HTMLElement;
  private pinKey = "";
  private parts: PartView[] = [];
  private footerKey = "";
  private marksKey = "";
  version = -1;

  constructor() {
    this.element = el("article", { class: "row row-assistant" });
    this.body = el("div", { class: "assistant-body" });
    this.footer = el("div", { class: "row-footer" });
    this.who = el("span", { class: "who", "aria-hidden": "true" }, "Memento");
    this.head = el("div", { class: "row-head" }, this.who);
    this.element.append(this.head, this.body, this.footer);
  }

  update(row: Row, context: RowContext): void {
    if (row.kind !== "assistant") return;
    const streaming = row.state === "streaming";
    if (this.element.dataset["state"] !== row.state) {
      this.element.dataset["key"] = row.key;
      this.element.dataset["state"] = row.state;
      this.element.setAttribute("aria-busy", String(streaming));
    }
    // A retry dropped parts: forget their views.
    while (this.parts.length > row.parts.length) this.parts.pop()!.element.remove();
    // Only the last part can still grow: a part before it is finished.
    const last = row.parts.length - 1;
    row.parts.forEach((part, index) => this.updatePart(index, part, streaming && index === last, context, row));
    this.placeMarks(row);
    this.updatePin(row);
    this.updateFooter(row, context);
    this.version = row.version;
  }

  private updatePart(index: number, part: Part, streaming: boolean, context: RowContext, row: AssistantRow): void {
    let view = this.parts[index];
    if (view !== undefined && view.kind !== part.kind) {
      this.parts.splice(index).forEach((v) => v.element.remove());
      view = undefined;
    }
    if (view === undefined) {
      view = this.createPart(part);
      this.parts[index] = view;
      this.body.append(view.element);
    }
    if (view.kind === "text" && part.kind === "text") {
      if (streaming || view.markdown !== undefined) {
        // Streaming (or just finished streaming): grow in place, then settle what is drawn.
        view.markdown ??= new IncrementalMarkdown(view.element);
        if (view.source !== part.text || !streaming) view.markdown.update(part.text, !streaming);
        if (!streaming) view.markdown = undefined;
      } else if (view.source !== part.text) {
        view.element.innerHTML = renderSettled(part.text);
        context.highlighter?.watch(view.element);
      }
      view.source = part.text;
    } else if (view.kind === "thinking" && part.kind === "thinking" && view.source !== part.text) {
      view.source = part.text;
      view.body.textContent = part.text;
    } else if (view.kind === "tool" && part.kind === "tool") {
      const base = context.diffBaseFor(row);
      const pin = part.pin === undefined ? "" : `${part.pin.entryId}/${part.pin.pinned}/${part.pin.asking ?? ""}`;
      const key = `${part.status}\u0000${part.args.length}\u0000${part.output?.length ?? -1}\u0000${base ?? ""}\u0000${part.label ?? ""}\u0000${part.progress ?? ""}\u0000${pin}`;
      if (key !== view.key) {
        const open = (view.card as HTMLDetailsElement).open;
        const card = toolCard(part, base, row.key);
        (card as HTMLDetailsElement).open = open;
        view.card.replaceWith(card);
        view.card = card;
        view.key = key;
      }
      if (part.children !== undefined && part.children.length > 0) {
        if (view.children === undefined) {
          view.children = new ChildList();
          view.element.append(view.children.element);
        }
        view.children.update(part.children);
      }
    }
  }

  private createPart(part: Part): PartView {
    if (part.kind === "text") return { kind: "text", element: el("div", { class: "markdown" }), source: "" };
    if (part.kind === "thinking") {
      const body = el("div", { class: "thinking-body" });
      const element = el("details", { class: "thinking" }, el("summary", { "aria-label": "Show the model's thinking" }, "Thinking"), body);
      return { kind: "thinking", element, body, source: "" };
    }
    const card = el("div");
    return { kind: "tool", element: el("div", { class: "tool-part" }, card), card, key: "" };
  }

  private placeMarks(row: AssistantRow): void {
    const key = JSON.stringify(row.marks) + this.parts.length;
    if (key === this.marksKey) return;
    this.marksKey = key;
    for (const old of this.body.querySelectorAll(":scope > .ttsr-mark")) old.remove();
    for (const mark of row.marks) {
      const before = this.parts[mark.at]?.element ?? null;
      this.body.insertBefore(ttsrMark(mark), before);
    }
  }

  /** The reply's Pin, beside its name: redrawn only when the pin changes. */
  private updatePin(row: AssistantRow): void {
    const pin = row.pin;
    const key = pin === undefined ? "" : `${pin.entryId}/${pin.pinned}/${pin.asking ?? ""}`;
    if (key === this.pinKey) return;
    this.pinKey = key;
    this.head.replaceChildren(this.who, ...(pin === undefined ? [] : pinControls(pin, "this reply", row.key)));
  }

  private updateFooter(row: AssistantRow, context: RowContext): void {
    const checkpoint = context.checkpointFor(row);
    const key = `${row.state}\u0000${row.error ?? ""}\u0000${checkpoint?.id ?? ""}\u0000${checkpoint?.files.join(",") ?? ""}`;
    if (key === this.footerKey) return;
    this.footerKey = key;
    this.footer.replaceChildren();
    if (row.state === "error") {
      this.footer.append(el("div", { class: "turn-error", role: "alert" }, `Error: ${row.error ?? "the turn failed"}`));
      if (row.retryText !== undefined) this.footer.append(button("Retry", "Retry this prompt", "retry", { "data-text": row.retryText }));
    } else if (row.state === "aborted") {
      this.footer.append(el("div", { class: "turn-aborted" }, "Stopped"));
    }
    if (checkpoint !== undefined) this.footer.append(restoreControl(checkpoint));
  }
}
