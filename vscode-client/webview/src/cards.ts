/**
 * The small things of the timeline: tool cards, advisor cards, compaction dividers, notes,
 * TTSR marks and the "Restore to here" menu. Each returns fresh DOM for a row's data; buttons
 * carry `data-action` and the main module handles their clicks in one delegated listener.
 */
import { auditDocument } from "../../src/reliefAudit";
import type { CheckpointItem } from "../../src/webviewProtocol";
import { button, el } from "./dom";
import { renderMarkdown } from "./markdown";
import { pinButton, pinMark } from "./pins";
import {
  EDIT_TOOLS,
  formatTokens,
  toolTarget,
  type AdvisorRow,
  type CompactionRow,
  type NoteRow,
  type ToolPart,
  type TtsrMark,
} from "./rows";

const STATUS_TEXT: Record<ToolPart["status"], string> = {
  streaming: "preparing",
  pending: "waiting",
  running: "running",
  done: "done",
  error: "failed",
  cancelled: "cancelled",
};

/** `diffBase`: the checkpoint an edit's Diff compares the file with (none: the file alone);
 * `rowKey`: the item whose row holds the card (its Pin waits on that row). */
export function toolCard(part: ToolPart, diffBase: string | undefined, rowKey?: string): HTMLElement {
  const target = toolTarget(part.args);
  const isEdit = EDIT_TOOLS.has(part.name) && target !== undefined;
  const summary = el(
    "summary",
    { "aria-label": `Tool ${part.label ?? part.name}${target ? ` on ${target}` : ""}, ${STATUS_TEXT[part.status]}${part.pin?.pinned ? ", pinned" : ""}` },
    el("span", { class: "tool-name" }, part.label ?? part.name),
    target !== undefined ? el("span", { class: "tool-target", title: target }, target) : undefined,
    el(
      "span",
      { class: `tool-status status-${part.status}` },
      part.status === "running" && part.progress ? `${STATUS_TEXT.running} ${part.progress}` : STATUS_TEXT[part.status],
    ),
    part.pin?.pinned ? pinMark("📌", "Pinned: every relief step keeps its result word for word") : undefined,
  );
  const body = el("div", { class: "tool-body" });
  if (part.args !== "") body.append(el("pre", { class: "tool-args" }, prettyArgs(part.args)));
  if (part.output !== undefined) body.append(el("pre", { class: "tool-output" }, part.output));
  if (part.outputTruncated) body.append(el("p", { class: "tool-note" }, "The start of the output: all of it shows when the turn ends."));
  const actions = el("div", { class: "card-actions" });
  if (isEdit) {
    actions.append(
      button("Diff", `Open the diff of ${target}`, "open-diff", {
        "data-path": target,
        "data-checkpoint": diffBase,
      }),
    );
  }
  if (target !== undefined && part.name !== "bash") {
    actions.append(button("Open", `Open ${target}`, "open-file", { "data-path": target }));
  }
  if (part.pin !== undefined && rowKey !== undefined) {
    actions.append(pinButton(part.pin, `the result of ${part.label ?? part.name}${target ? ` on ${target}` : ""}`, rowKey));
  }
  return el(
    "details",
    { class: `card tool-card status-${part.status}`, "data-tool": part.name, "data-call": part.id },
    summary,
    body,
    actions.childElementCount > 0 ? actions : undefined,
  );
}

function prettyArgs(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args; // still streaming
  }
}

export function ttsrMark(mark: TtsrMark): HTMLElement {
  const names = mark.rules.join(", ");
  const reminder = mark.reminder ?? "the rule's reminder is on its way";
  return el(
    "div",
    {
      class: "ttsr-mark",
      role: "note",
      tabindex: 0,
      title: reminder,
      "aria-label": `Rewritten: the answer broke rule ${names}. Reminder: ${reminder}`,
    },
    el("span", { class: "ttsr-icon", "aria-hidden": "true" }, "↺"),
    `rewritten: rule ${names}`,
  );
}

const SEVERITY_LABEL = { nit: "Nit", concern: "Concern", blocker: "Blocker" } as const;
const RESOLVED_LABEL = { apply: "applied", dismiss: "dismissed", toRule: "made a rule" } as const;

export function advisorCard(row: AdvisorRow): HTMLElement {
  const where = row.path === undefined ? undefined : `${row.path}${row.line === undefined ? "" : `:${row.line}`}`;
  const actions = el(
    "div",
    { class: "card-actions" },
    button("Apply", "Apply the advisor's note", "advisor-apply", { "data-note": row.noteId }),
    button("Dismiss", "Dismiss the advisor's note", "advisor-dismiss", { "data-note": row.noteId }),
    button("Make rule", "Make a rule from the advisor's note", "advisor-toRule", { "data-note": row.noteId }),
  );
  if (row.resolved !== undefined) for (const b of actions.querySelectorAll("button")) b.disabled = true;
  return el(
    "section",
    { class: `card advisor-card severity-${row.severity}${row.resolved ? " resolved" : ""}`, "aria-label": `Advisor ${row.severity}` },
    el(
      "header",
      { class: "card-head" },
      el("span", { class: "advisor-severity" }, `Advisor · ${SEVERITY_LABEL[row.severity]}`),
      where !== undefined ? button(where, `Open ${where}`, "open-file", { "data-path": row.path, "data-line": row.line, class: "link" }) : undefined,
      row.resolved !== undefined ? el("span", { class: "advisor-resolved" }, RESOLVED_LABEL[row.resolved]) : undefined,
    ),
    el("p", { class: "advisor-note" }, row.note),
    actions,
  );
}

const capitalized = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

export function compactionDivider(row: CompactionRow): HTMLElement {
  const after = row.tokensAfter === undefined ? "…" : formatTokens(row.tokensAfter);
  const by = row.level !== "compact" ? row.level === "prune" ? "stale tool output pruned" : "bulky blocks shaken out"
    : row.summarizer === "structured" ? "summary by code" : row.summarizer === "model" ? "summary by the model"
    : row.summarizer === "provider" ? `summary by the provider${row.provider ? ` (${row.provider})` : ""}` : "summary";
  const text =
    row.phase === "started" ? `Compacting the context (${row.level})…`
    : row.phase === "failed" ? `Compaction failed: ${row.error ?? "unknown error"}`
    : row.phase === "skipped" ? capitalized(row.why ?? `not applied: the ${row.level} would not make the context smaller`)
    : `${formatTokens(row.tokensBefore)} → ${after} tokens, ${by}`;
  if (row.audit !== undefined && row.phase === "finished") return auditDivider(row, text);
  const label = el("span", { class: "divider-label" }, text);
  if (row.summary === undefined || row.summary === "") {
    return el("div", { class: `divider compaction level-${row.level} phase-${row.phase}`, role: "separator", "aria-label": text }, label);
  }
  const body = el("div", { class: "divider-summary markdown" });
  body.innerHTML = renderMarkdown(row.summary);
  return el(
    "details",
    { class: `divider compaction level-${row.level} phase-${row.phase}` },
    el("summary", { "aria-label": `${text}. Show the summary` }, label),
    body,
  );
}

/** A finished step with an audit: the divider opens on the audit as the server serves it,
 * with "Undo" while the step stands. Undone or not is the transcript's word (`undoneBy`). */
function auditDivider(row: CompactionRow, text: string): HTMLElement {
  const what = row.undoes !== undefined ? `Undo of ${row.undoes}` : text;
  const said = row.undoneBy !== undefined ? `${what} · undone` : what;
  const id = row.audit!;
  const body = el("div", { class: "divider-audit" });
  const state = row.auditState;
  if (state === undefined || state.state === "loading") body.append(el("p", { class: "audit-loading" }, "Loading the audit…"));
  else if (state.state === "failed") body.append(el("p", { class: "audit-failed", role: "alert" }, `No audit: ${state.message}`));
  else {
    const document = el("div", { class: "divider-summary markdown" });
    document.innerHTML = renderMarkdown(auditDocument(state.audit));
    body.append(document);
  }
  if (row.undoneBy === undefined) {
    body.append(el("div", { class: "card-actions" }, button("Undo", `Undo ${row.level === "compact" ? "this compaction" : `this ${row.level}`}`, "undo-relief", { "data-audit": id })));
  } else {
    body.append(el("p", { class: "audit-undone" }, `Undone by ${row.undoneBy}: the context is as it was before this step.`));
  }
  return el(
    "details",
    { class: `divider compaction audited level-${row.level} phase-${row.phase}${row.undoneBy ? " undone" : ""}`, open: row.expanded === true, "data-audit": id },
    el(
      "summary",
      { "aria-label": `${said}. ${row.expanded ? "Hide" : "Show"} the audit`, "data-action": "toggle-audit", "data-key": row.key },
      el("span", { class: "divider-label" }, said),
    ),
    body,
  );
}

export function noteRow(row: NoteRow): HTMLElement {
  const body = el("div", { class: "divider-summary markdown" });
  body.innerHTML = renderMarkdown(row.body);
  return el("details", { class: "divider note" }, el("summary", {}, el("span", { class: "divider-label" }, row.title)), body);
}

/** "Restore to here": the three rewind choices, and which files would change. */
export function restoreControl(checkpoint: CheckpointItem): HTMLElement {
  const files = checkpoint.files.length === 0 ? "no file changed since" : `files put back: ${checkpoint.files.join(", ")}`;
  const choice = (label: string, mode: string, aria: string): HTMLElement =>
    button(label, aria, "rewind", { "data-checkpoint": checkpoint.id, "data-mode": mode, role: "menuitem" });
  return el(
    "details",
    { class: "restore" },
    el("summary", { "aria-label": `Restore to here (checkpoint ${checkpoint.label || checkpoint.id})` }, "Restore to here"),
    el(
      "div",
      { class: "restore-menu", role: "menu", "aria-label": "Restore" },
      choice("Conversation and files", "all", "Restore the conversation and the files to here"),
      choice("Conversation only", "conversation", "Restore the conversation only to here"),
      choice("Files only", "files", "Restore the files only to here"),
      el("p", { class: "restore-files" }, files),
    ),
  );
}
