/**
 * The subagent cards under a `task` tool card: one collapsible card per child, its element
 * kept while the child lives (so an open card stays open as it streams), redrawn when what
 * its card says changed. A collapsed card shows the child's state and what it is doing; its
 * body (prompt, the child's text and tool calls, result) is drawn only while it is open.
 * A live child has its own Stop (`data-action="abort-subagent"`, handled in `main.ts`).
 */
import { toolCard } from "./cards";
import { LIVE_STATES, childTail, type ChildCard } from "./rows";
import { button, el } from "./dom";
import { renderMarkdown } from "./markdown";

const STATUS: Record<ChildCard["state"], string> = {
  queued: "queued",
  running: "running",
  completed: "done",
  failed: "failed",
  aborted: "stopped",
};

interface CardView {
  readonly element: HTMLElement;
  readonly details: HTMLDetailsElement;
  card: ChildCard;
  /** What the drawn card said (cards are drawn afresh from the transcript on each change). */
  drawn: string;
  /** The body is behind the card's state (it was collapsed when the card changed). */
  stale: boolean;
}

export class ChildList {
  readonly element: HTMLElement = el("div", { class: "subagents", role: "group", "aria-label": "Subagents of this task" });
  private readonly views = new Map<string, CardView>();

  update(cards: readonly ChildCard[]): void {
    const wanted = new Set(cards.map((c) => c.id));
    for (const [id, view] of this.views) {
      if (wanted.has(id)) continue;
      view.element.remove();
      this.views.delete(id);
    }
    cards.forEach((card, index) => {
      let view = this.views.get(card.id);
      if (view === undefined) {
        view = createCardView(card);
        this.views.set(card.id, view);
      } else if (view.card !== card && view.drawn !== JSON.stringify(card)) {
        view.card = card;
        draw(view);
      }
      if (this.element.children[index] !== view.element) this.element.insertBefore(view.element, this.element.children[index] ?? null);
    });
  }
}

function createCardView(card: ChildCard): CardView {
  const details = el("details", { class: "child-details" });
  const view: CardView = { element: el("section", { class: "card child-card" }), details, card, drawn: "", stale: true };
  details.addEventListener("toggle", () => {
    if (details.open && view.stale) drawBody(view);
  });
  view.element.append(details);
  draw(view);
  return view;
}

function draw(view: CardView): void {
  const { card, details } = view;
  const live = LIVE_STATES.has(card.state);
  const status = STATUS[card.state];
  view.element.className = `card child-card state-${card.state}`;
  view.element.dataset["subagent"] = card.id;
  view.element.setAttribute("aria-label", `Subagent ${card.id} (${card.agent}), ${status}`);
  view.element.setAttribute("aria-busy", String(live));
  const tail = live ? childTail(card) : "";
  const activity = card.activity === status ? "" : card.activity;
  const detail = live ? [activity, tail].filter((s) => s !== "").join(" · ") : outcome(card);
  const summary = el(
    "summary",
    { "aria-label": `Subagent ${card.id}, agent ${card.agent}, ${status}${detail ? `: ${detail}` : ""}. Show its work` },
    el("span", { class: "child-agent" }, card.agent),
    card.id !== card.agent ? el("span", { class: "child-id" }, card.id) : undefined,
    el("span", { class: `child-status status-${card.state}` }, status),
    detail !== "" ? el("span", { class: "child-activity", title: detail }, detail) : undefined,
  );
  const old = details.querySelector(":scope > summary");
  if (old !== null) old.replaceWith(summary);
  else details.prepend(summary);
  const stop = view.element.querySelector(":scope > .child-stop");
  if (live && stop === null) {
    view.element.append(button("Stop", `Stop subagent ${card.id}`, "abort-subagent", { "data-subagent": card.id, class: "child-stop" }));
  } else if (!live) {
    stop?.remove();
  }
  view.drawn = JSON.stringify(card);
  view.stale = true;
  if (details.open) drawBody(view);
}

function outcome(card: ChildCard): string {
  const merge = card.merge === undefined ? "" : `merge ${card.merge}`;
  const error = card.state === "failed" && card.error !== undefined ? card.error.split("\n")[0] ?? "" : "";
  return [merge, error].filter((s) => s !== "").join(" · ");
}

function drawBody(view: CardView): void {
  const { card, details } = view;
  const body = el("div", { class: "child-body" });
  if (card.prompt !== "") body.append(el("p", { class: "child-prompt" }, el("span", { class: "child-label" }, "Task: "), card.prompt));
  for (const part of card.parts) {
    if (part.kind === "tool") body.append(toolCard(part, undefined));
    else if (part.kind === "thinking") body.append(el("div", { class: "child-thinking" }, part.text));
    else {
      const text = el("div", { class: "markdown child-text" });
      text.innerHTML = renderMarkdown(part.text);
      body.append(text);
    }
  }
  if (card.result !== undefined) {
    body.append(el("div", { class: "child-label" }, "Result"), el("pre", { class: "child-result" }, card.result));
  }
  if (card.error !== undefined && card.state !== "completed") body.append(el("p", { class: "child-error", role: "alert" }, card.error));
  if (body.childElementCount === 0) body.append(el("p", { class: "child-empty" }, LIVE_STATES.has(card.state) ? "Nothing yet." : "No result."));
  const old = details.querySelector(":scope > .child-body");
  if (old !== null) old.replaceWith(body);
  else details.append(body);
  view.stale = false;
}
