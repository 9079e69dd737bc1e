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

/** The confirmation: the server's ways back, each with what it really does (a line of the
 * detail per button: "Files Only: puts back a.py; the conversation stays as it is."). */
export function rewindQuestion(item: CheckpointItem, preview: CheckpointPreviewResult, now: Date): RewindQuestion {
  const choices = preview.choices.map((c) => ({
    title: c.force ? CHOICES.overwrite : CHOICES[c.mode],
    mode: c.mode,
    force: c.force ?? false,
    effect: c.effect,
  }));
  return {
    message: `Rewind to “${checkpointLabel(item)}” (${relativeTime(item.createdAt, now)})?`,
    detail: choices.map((c) => `${c.title}: ${c.effect}.`).join("\n"),
    choices: choices.map(({ title, mode, force }) => ({ title, mode, force })),
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
