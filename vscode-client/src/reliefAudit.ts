// The audit of a relief step as a read-only markdown document: a drawing of the server's
// `memento/relief/audit` answer, field by field (nothing here is computed).

import type { AuditEdit, AuditEntry, ReliefAudit } from "./protocol";

const n = (value: number): string => value.toLocaleString("en-US");

function about(entry: AuditEntry | AuditEdit): string {
  if (entry.tool) return entry.file ? `${entry.tool} \`${entry.file}\`` : entry.tool;
  return entry.role;
}

// Columns are not aligned (`---:`): markdown-it would write inline styles, which the chat
// panel's content policy refuses.
const cell = (text: string): string => text.replace(/\|/g, "\\|").replace(/\n/g, " ");

function entries(title: string, list: AuditEntry[] | undefined): string[] {
  if (!list?.length) return [];
  return [
    `## ${title} (${list.length})`,
    "",
    "| entry | what | tokens | starts with |",
    "|---|---|---|---|",
    ...list.map((e) => `| ${e.entryId} | ${cell(about(e))} | ${n(e.tokens)} | ${cell(e.preview)} |`),
    "",
  ];
}

function edits(list: AuditEdit[] | undefined): string[] {
  if (!list?.length) return [];
  return [
    `## Taken out (${list.length})`,
    "",
    "| entry | what | tokens | now reads | |",
    "|---|---|---|---|---|",
    ...list.map(
      (e) =>
        `| ${e.entryId} | ${cell(about(e))} | ${n(e.tokens)} | ${cell(e.replacement)} | ${e.restored ? "brought back" : ""} |`,
    ),
    "",
  ];
}

export function auditDocument(audit: ReliefAudit): string {
  const after = audit.tokensAfter === undefined ? "?" : n(audit.tokensAfter);
  const lines = [`# ${audit.level === "undo" ? "Undo" : audit.level} ${audit.id} at ${audit.at}`, ""];
  lines.push(`- Tokens: ${n(audit.tokensBefore)} → ${after}`);
  if (audit.reason) lines.push(`- Reason: ${audit.reason}`);
  if (audit.summarizer) lines.push(`- Summary by: ${audit.summarizer}${audit.model ? ` (${audit.model})` : audit.provider ? ` (${audit.provider})` : ""}`);
  if (audit.undoes) lines.push(`- Undoes: ${audit.undoes}`);
  if (audit.undoneBy) lines.push(`- Undone by: ${audit.undoneBy} (the context is as it was before this step)`);
  if (audit.cut) lines.push(`- Cut at ${audit.cut.firstKeptEntryId}: ${audit.cut.why}`);
  if (audit.previousSummary) lines.push("- An earlier summary was folded into this one");
  if (audit.readFiles?.length) lines.push(`- Files read: ${audit.readFiles.join(", ")}`);
  if (audit.modifiedFiles?.length) lines.push(`- Files modified: ${audit.modifiedFiles.join(", ")}`);
  lines.push("");
  lines.push(...entries("Summarised", audit.summarized), ...edits(audit.edits));
  lines.push(...entries("Kept verbatim", audit.kept), ...entries("Carried across by the memory", audit.carried));
  if (audit.summary) lines.push("## Summary", "", audit.summary, "");
  return lines.join("\n");
}
