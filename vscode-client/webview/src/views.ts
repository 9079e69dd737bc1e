/**
 * One view per timeline row. A view redraws only when its row's version moved; the
 * assistant view keeps one incremental markdown renderer per text part, so a streaming
 * answer touches only its growing last block.
 */
import type { CheckpointItem } from "../../src/webviewProtocol";
import { advisorCard, compactionDivider, noteRow, restoreControl, toolCard, ttsrMark } from "./cards";
import { button, el } from "./dom";
import { IncrementalMarkdown } from "./markdown";
import type { AssistantRow, Part, Row } from "./rows";

export interface RowContext {
  checkpointFor(row: Row): CheckpointItem | undefined;
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

function shell(row: Row): HTMLElement {
  const element = el("article", { class: `row row-${row.kind}`, "data-key": row.key });
  return element;
}

/** Rows that change rarely: redrawn whole. */
class PlainView implements RowView {
  element: HTMLElement = el("article");
  version = -1;

  update(row: Row, context: RowContext): void {
    const next = shell(row);
    next.append(...plainContent(row));
    const checkpoint = context.checkpointFor(row);
    if (checkpoint !== undefined) next.append(restoreControl(checkpoint));
    if (this.element.parentNode !== null) {
      next.style.transform = this.element.style.transform;
      next.dataset["index"] = this.element.dataset["index"];
      this.element.replaceWith(next);
    }
    this.element = next;
    this.version = row.version;
  }
}

function plainContent(row: Row): Node[] {
  switch (row.kind) {
    case "user":
      return [
        el("div", { class: "who", "aria-hidden": "true" }, row.steer ? "You (steering)" : "You"),
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
  | { kind: "text"; element: HTMLElement; markdown: IncrementalMarkdown; source: string }
  | { kind: "thinking"; element: HTMLDetailsElement; body: HTMLElement; source: string }
  | { kind: "tool"; element: HTMLElement; key: string };

class AssistantView implements RowView {
  readonly element: HTMLElement;
  private readonly body: HTMLElement;
  private readonly footer: HTMLElement;
  private parts: PartView[] = [];
  private footerKey = "";
  version = -1;

  constructor() {
    this.element = el("article", { class: "row row-assistant" });
    this.body = el("div", { class: "assistant-body" });
    this.footer = el("div", { class: "row-footer" });
    this.element.append(el("div", { class: "who", "aria-hidden": "true" }, "Memento"), this.body, this.footer);
  }

  update(row: Row, context: RowContext): void {
    if (row.kind !== "assistant") return;
    this.element.dataset["key"] = row.key;
    this.element.dataset["state"] = row.state;
    this.element.setAttribute("aria-busy", String(row.state === "streaming"));
    const streaming = row.state === "streaming";
    // A retry dropped parts: forget their views.
    while (this.parts.length > row.parts.length) this.parts.pop()!.element.remove();
    row.parts.forEach((part, index) => this.updatePart(index, part, streaming, context, row));
    this.placeMarks(row);
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
      if (view.source !== part.text || !streaming) view.markdown.update(part.text, !streaming);
      view.source = part.text;
    } else if (view.kind === "thinking" && part.kind === "thinking" && view.source !== part.text) {
      view.source = part.text;
      view.body.textContent = part.text;
    } else if (view.kind === "tool" && part.kind === "tool") {
      const checkpoint = context.checkpointFor(row);
      const key = `${part.status}\u0000${part.args.length}\u0000${part.output?.length ?? -1}\u0000${checkpoint?.id ?? ""}`;
      if (key !== view.key) {
        const open = (view.element as HTMLDetailsElement).open;
        const card = toolCard(part, checkpoint);
        (card as HTMLDetailsElement).open = open;
        view.element.replaceWith(card);
        view.element = card;
        view.key = key;
      }
    }
  }

  private createPart(part: Part): PartView {
    if (part.kind === "text") {
      const element = el("div", { class: "markdown" });
      return { kind: "text", element, markdown: new IncrementalMarkdown(element), source: "" };
    }
    if (part.kind === "thinking") {
      const body = el("div", { class: "thinking-body" });
      const element = el("details", { class: "thinking" }, el("summary", { "aria-label": "Show the model's thinking" }, "Thinking"), body);
      return { kind: "thinking", element, body, source: "" };
    }
    return { kind: "tool", element: el("div"), key: "" };
  }

  private placeMarks(row: AssistantRow): void {
    for (const old of this.body.querySelectorAll(":scope > .ttsr-mark")) old.remove();
    for (const mark of row.marks) {
      const before = this.parts[mark.at]?.element ?? null;
      this.body.insertBefore(ttsrMark(mark), before);
    }
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
