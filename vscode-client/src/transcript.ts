// The transcript's wire types (`memento/transcript`, `memento/transcript/patch`), generated
// from the server's models by `python -m tests.clients.transcript_contract --write`; do not edit.
// protocol/transcript.schema.json is the same contract as a JSON Schema.

export type Item = UserItem | ReplyItem | ReliefItem | AdvisorItem | CheckpointItem | RewindItem;
export type Part = TextPart | ThinkingPart | ToolPart | TtsrPart | ErrorPart;
export type TranscriptNode = UserItem | ReplyItem | ReliefItem | AdvisorItem | CheckpointItem | RewindItem | TextPart | ThinkingPart | ToolPart | TtsrPart | ErrorPart | SubagentCard;
export type Op = AppendOp | UpdateOp | TextOp | RemoveOp | ResetOp;

/** The fields that hold a node's children: only `append` and `remove` change them. */
export const CHILDREN = ["parts", "subagents", "items"] as const;

export interface AdvisorItem {
  kind: "advisor";
  key: string;
  noteId: string;
  note: string;
  severity: "nit" | "concern" | "blocker";
  channel: string;
  path?: string;
  line?: number;
  endLine?: number;
}

export interface AppendOp {
  op: "append";
  item: string;
  parent?: string;
  node: UserItem | ReplyItem | ReliefItem | AdvisorItem | CheckpointItem | RewindItem | TextPart | ThinkingPart | ToolPart | TtsrPart | ErrorPart | SubagentCard;
}

/** A checkpoint was taken here (`memento.checkpoint.rewind {checkpointId}` returns to it). */
export interface CheckpointItem {
  kind: "checkpoint";
  key: string;
  checkpointId: string;
  label: string;
}

/** The context the reply's last model request carried, as the provider counted it. */
export interface ContextFigures {
  tokens: number;
  stablePrefixTokens: number;
}

/** A model request or the turn failed here. */
export interface ErrorPart {
  kind: "error";
  key: string;
  message: string;
}

/** `memento/transcript/patch`: ops to apply in order. */
export interface Patch {
  sessionId: string;
  seq: number;
  ops: (AppendOp | UpdateOp | TextOp | RemoveOp | ResetOp)[];
}

/** A step of context relief: a compaction, prune or shake, with the meter's figures. */
export interface ReliefItem {
  kind: "relief";
  key: string;
  level: "prune" | "shake" | "compact";
  reason?: string;
  phase: "started" | "finished" | "failed" | "skipped";
  tokensBefore: number;
  tokensAfter?: number;
  summarizer?: "model" | "structured" | "provider";
  provider?: string;
  summary?: string;
  error?: string;
  why?: string;
  transient?: boolean;
  audit?: string;
  undoneBy?: string;
  undoes?: string;
}

export interface RemoveOp {
  op: "remove";
  item: string;
  key: string;
}

/** What the agent answered to a user item: text, thinking, tool calls and marks, in order. */
export interface ReplyItem {
  kind: "reply";
  key: string;
  state: "streaming" | "done" | "aborted" | "error";
  parts: (TextPart | ThinkingPart | ToolPart | TtsrPart | ErrorPart)[];
  retry?: RetryBanner;
  context?: ContextFigures;
  entryId?: string;
  pinned?: boolean;
}

/** A `ReplyItem` less its `parts` (an `update`'s node). */
export interface ReplyItemFields {
  kind: "reply";
  key: string;
  state: "streaming" | "done" | "aborted" | "error";
  retry?: RetryBanner;
  context?: ContextFigures;
  entryId?: string;
  pinned?: boolean;
}

/** The transcript was replaced (another session, a rewind): read it again. */
export interface ResetOp {
  op: "reset";
}

/** The provider failed and the request goes out again (live only: gone once it answers). */
export interface RetryBanner {
  attempt: number;
  reason: string;
  retryInMs?: number;
}

/** The conversation was rewound here; `summary` says what the abandoned path did. */
export interface RewindItem {
  kind: "rewind";
  key: string;
  summary: string;
}

/** A child the `task` call started, with the child's own transcript. */
export interface SubagentCard {
  kind: "subagent";
  key: string;
  id: string;
  agent: string;
  state: "queued" | "running" | "completed" | "failed" | "aborted";
  prompt: string;
  error?: string;
  merge?: "applied" | "failed" | "skipped";
  result?: string;
  items: (UserItem | ReplyItem | ReliefItem | AdvisorItem | CheckpointItem | RewindItem)[];
}

/** A `SubagentCard` less its `items` (an `update`'s node). */
export interface SubagentCardFields {
  kind: "subagent";
  key: string;
  id: string;
  agent: string;
  state: "queued" | "running" | "completed" | "failed" | "aborted";
  prompt: string;
  error?: string;
  merge?: "applied" | "failed" | "skipped";
  result?: string;
}

export interface TextOp {
  op: "text";
  item: string;
  key: string;
  text: string;
}

export interface TextPart {
  kind: "text";
  key: string;
  text: string;
}

export interface ThinkingPart {
  kind: "thinking";
  key: string;
  text: string;
}

export interface ToolPart {
  kind: "tool";
  key: string;
  toolCallId: string;
  name: string;
  server?: string;
  serverTool?: string;
  args: string;
  target?: string;
  status: "streaming" | "pending" | "running" | "done" | "error" | "cancelled";
  output?: string;
  outputTruncated?: boolean;
  resultEntryId?: string;
  pinned?: boolean;
  diff?: string;
  progress?: ToolProgressLine;
  subagents: SubagentCard[];
}

/** A `ToolPart` less its `subagents` (an `update`'s node). */
export interface ToolPartFields {
  kind: "tool";
  key: string;
  toolCallId: string;
  name: string;
  server?: string;
  serverTool?: string;
  args: string;
  target?: string;
  status: "streaming" | "pending" | "running" | "done" | "error" | "cancelled";
  output?: string;
  outputTruncated?: boolean;
  resultEntryId?: string;
  pinned?: boolean;
  diff?: string;
  progress?: ToolProgressLine;
}

/** How far a running tool got, as it reported (an MCP server's `notifications/progress`). */
export interface ToolProgressLine {
  progress: number;
  total?: number;
  message?: string;
}

/** `memento/transcript`: top-level items, oldest first unless asked otherwise. */
export interface TranscriptPage {
  sessionId: string;
  seq: number;
  items: (UserItem | ReplyItem | ReliefItem | AdvisorItem | CheckpointItem | RewindItem)[];
  nextCursor?: string;
}

/** `memento/transcript`: a page of the session's transcript (`core.transcript.TranscriptPage`). */
export interface TranscriptParams {
  cursor?: string;
  limit: number;
  newestFirst: boolean;
}

/** A TTSR rule fired: the reply was stopped and asked again, or reminded after it ended. */
export interface TtsrPart {
  kind: "ttsr";
  key: string;
  rules: string[];
  interrupted: boolean;
  reason?: string;
  attempt?: number;
  reminder?: string;
  discarded?: string;
}

export interface UpdateOp {
  op: "update";
  item: string;
  node: UserItem | ReplyItemFields | ReliefItem | AdvisorItem | CheckpointItem | RewindItem | TextPart | ThinkingPart | ToolPartFields | TtsrPart | ErrorPart | SubagentCardFields;
}

/** What the user typed: a prompt, or a message sent while the agent was using tools. */
export interface UserItem {
  kind: "user";
  key: string;
  entryId: string;
  text: string;
  steer: boolean;
  pinned?: boolean;
}
