// Checkpoints as the tree, the quick pick and the rewind confirmation show them.

import { fileList, plural, relativeTime } from "./format";
import type { PickItem } from "./ports";
import type { CheckpointItem, CheckpointPreviewResult, RewindMode } from "./protocol";

const KINDS: Record<string, string> = {
  auto: "before the agent's edits",
  manual: "by hand",
  rewind: "before a rewind",
  exploration: "exploration",
};

export function checkpointLabel(item: CheckpointItem): string {
  return item.label.trim() || `Checkpoint ${item.id}`;
}

export function checkpointDescription(item: CheckpointItem, now: Date): string {
  return [relativeTime(item.createdAt, now), KINDS[item.kind ?? "manual"] ?? item.kind].join(" · ");
}

export function changedFiles(item: CheckpointItem): string {
  return item.files.length ? `${plural(item.files.length, "file")} changed since: ${fileList(item.files)}` : "no files changed since";
}

export function rewindPickItems(items: CheckpointItem[], now: Date): PickItem<CheckpointItem>[] {
  return items.map((item) => ({
    label: checkpointLabel(item),
    description: checkpointDescription(item, now),
    detail: changedFiles(item),
    value: item,
  }));
}

export interface RewindChoice {
  title: string;
  mode: RewindMode;
  force: boolean;
}

export const CHOICES = {
  all: "Conversation and Files",
  conversation: "Conversation Only",
  files: "Files Only",
  overwrite: "Conversation and Files, Overwriting My Edits",
} as const;

export interface RewindQuestion {
  message: string;
  detail: string;
  choices: RewindChoice[];
}

/** The confirmation: what would change, and the rewinds that would change anything. */
export function rewindQuestion(item: CheckpointItem, preview: CheckpointPreviewResult, now: Date): RewindQuestion {
  const by = (action: string) => preview.files.filter((f) => f.action === action).map((f) => f.path);
  const restore = by("restore");
  const conflicts = by("conflict");
  const unavailable = by("unavailable");
  const lines: string[] = [];
  lines.push(restore.length ? `Files that will change: ${restore.join(", ")}.` : "No file will change.");
  if (conflicts.length) lines.push(`Changed by you too, left as they are: ${conflicts.join(", ")}.`);
  if (unavailable.length) lines.push(`Cannot be put back: ${unavailable.join(", ")}.`);
  lines.push(
    preview.movesConversation
      ? `The conversation goes back to that point: ${plural(preview.messagesDropped, "message")} after it leave the context (a summary says what they did).`
      : "The conversation is already at that point.",
  );
  const choices: RewindChoice[] = [{ title: CHOICES.all, mode: "all", force: false }];
  if (preview.movesConversation) choices.push({ title: CHOICES.conversation, mode: "conversation", force: false });
  if (restore.length || conflicts.length) choices.push({ title: CHOICES.files, mode: "files", force: false });
  if (conflicts.length) choices.push({ title: CHOICES.overwrite, mode: "all", force: true });
  return {
    message: `Rewind to “${checkpointLabel(item)}” (${relativeTime(item.createdAt, now)})?`,
    detail: lines.join("\n"),
    choices,
  };
}

export function rewindReport(restored: string[], conflicts: string[], mode: RewindMode): string {
  const parts = [
    mode === "files" ? "Files rewound" : mode === "conversation" ? "Conversation rewound" : "Rewound",
  ];
  if (mode !== "conversation") parts.push(restored.length ? `restored ${fileList(restored)}` : "no file needed restoring");
  if (conflicts.length) parts.push(`left as you changed them: ${fileList(conflicts)}`);
  return `${parts.join("; ")}.`;
}
