// The shapes of Memento's requests, results and notifications as the extension uses them
// (camelCase on the wire; the models are in server/memento/lsp/protocol.py).

/** Tokens a provider reported, for one request or all of its requests on the active path. */
export interface UsageFigures {
  provider: string;
  /** Input tokens the prompt cache neither read nor wrote. */
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  requests: number;
  /** Share of the prompt read from the provider's cache. */
  cacheReadPercent: number;
}

export interface ContextParams {
  tokens: number;
  contextWindow: number;
  percent: number;
  stablePrefixTokens: number;
  /** Governance relieves the context above this; absent when compaction is off. */
  thresholdTokens?: number;
  /** What the provider reported for the newest request (absent: none yet). */
  lastUsage?: UsageFigures;
  /** Each provider's reported usage over the session's active path. */
  usage?: UsageFigures[];
  /** Where `contextWindow` came from: the settings, the server's own API, a refusal that named it, or the default. */
  windowSource?: "settings" | "server" | "overflow" | "default";
  /** The same in words ("server /props n_ctx", "learned from overflow", "catalog default"). */
  windowOrigin?: string;
}

/** Who wrote a compaction's summary: the summary model, code, or the provider itself. */
export type SummaryAuthor = "model" | "structured" | "provider";

export type CompactionLevel = "prune" | "shake" | "compact";

export interface CompactionParams {
  /** `skipped`: the step would not have made the context smaller; nothing changed. */
  phase: "started" | "finished" | "failed" | "skipped";
  level: CompactionLevel;
  reason: "threshold" | "overflow" | "manual";
  tokensBefore: number;
  tokensAfter?: number;
  summarizer?: SummaryAuthor;
  /** The provider that wrote the summary itself (`summarizer` "provider"). */
  provider?: string;
  error?: string;
  /** `skipped`: why, with the figures. */
  why?: string;
}

export interface CompactionItem {
  id: string;
  at: string;
  level: CompactionLevel;
  reason?: string;
  tokensBefore: number;
  tokensAfter?: number;
  summarizer?: SummaryAuthor;
  /** The provider that wrote the summary itself (`summarizer` "provider"). */
  provider?: string;
  summary?: string;
  entries?: number;
  /** The undo that took the step back (`memento/relief/undo`). */
  undoneBy?: string;
}

/** One entry of the context as a relief step found it (`memento/relief/audit`). */
export interface AuditEntry {
  entryId: string;
  role: string;
  tokens: number;
  preview: string;
  tool?: string;
  file?: string;
}

/** What a prune or shake took out of one entry. */
export interface AuditEdit {
  entryId: string;
  kind: "toolResult" | "block";
  role: string;
  tool?: string;
  file?: string;
  tokens: number;
  chars: number;
  replacement: string;
  preview: string;
  restored?: boolean;
}

/** `memento/relief/audit`: one relief step in full, as the server reads it back. */
export interface ReliefAudit {
  id: string;
  at: string;
  level: CompactionLevel | "undo";
  reason?: string;
  tokensBefore: number;
  tokensAfter?: number;
  summarizer?: SummaryAuthor;
  model?: string;
  provider?: string;
  summary?: string;
  previousSummary?: boolean;
  summarized?: AuditEntry[];
  kept?: AuditEntry[];
  cut?: { firstKeptEntryId: string; keepRecentTokens?: number; splitTurn: boolean; why: string };
  edits?: AuditEdit[];
  readFiles?: string[];
  modifiedFiles?: string[];
  carried?: AuditEntry[];
  undoes?: string;
  undoneBy?: string;
}

/** `memento/relief/undo`: done, or refused with the figures and what to leave out. */
export interface ReliefUndoResult {
  undone: boolean;
  tokensBefore: number;
  tokensAfter: number;
  undoId?: string;
  why?: string;
  window?: number;
  threshold?: number;
  needed?: number;
  droppable?: AuditEntry[];
}

export interface CompactionListResult {
  compactions: CompactionItem[];
}

/** The meter's figures (the notifications and the Compactions view give the same). */
/** A pin in force (memento/pins): an entry of the conversation, or a file's latest read. */
export interface PinItem {
  kind: "entry" | "file";
  target: string;
  what: string;
  entryId?: string;
}

export interface PinsResult {
  pins: PinItem[];
  candidates?: { entryId: string; what: string }[];
}

export interface PinResult extends PinsResult {
  pin: PinItem;
}

export interface UnpinResult extends PinsResult {
  unpinned: boolean;
}

export interface CompactResult {
  tokensBefore: number;
  tokensAfter: number;
  /** A summary now stands for the older conversation. */
  compacted: boolean;
  /** Why nothing was compacted, with the figures. */
  why?: string;
}

export interface CheckpointItem {
  id: string;
  label: string;
  createdAt: string;
  entryId?: string;
  files: string[];
  messageCount?: number;
  kind?: string;
}

export interface CheckpointListResult {
  checkpoints: CheckpointItem[];
}

export type RewindMode = "all" | "conversation" | "files";

export interface CheckpointFilePlan {
  path: string;
  action: "restore" | "conflict" | "unchanged" | "unavailable";
}

/** A way back the server offers, with what it does in words. */
export interface RewindChoiceItem {
  mode: RewindMode;
  force?: boolean;
  effect: string;
}

export interface CheckpointPreviewResult {
  checkpointId: string;
  files: CheckpointFilePlan[];
  movesConversation: boolean;
  messagesDropped: number;
  /** The rewinds that would change anything, `all` first. */
  choices: RewindChoiceItem[];
}

export interface CheckpointRewindResult {
  restored: string[];
  conflicts: string[];
  mode?: RewindMode;
  checkpointId?: string;
  undoCheckpointId?: string;
}

export interface CheckpointFileResult {
  exists: boolean;
  content?: string;
  binary?: boolean;
}

export interface SessionItem {
  id: string;
  path: string;
  title?: string;
  updatedAt: string;
}

export interface SessionListResult {
  sessions: SessionItem[];
}

export interface SessionRef {
  id: string;
}

export interface PromptResult {
  turnId: string;
}

export interface AbortResult {
  aborted: boolean;
}

export interface ModeResult {
  mode: "ask" | "act";
}

export interface AdvisorToggleResult {
  enabled: boolean;
}

export interface OmfgRule {
  name: string;
  path?: string;
  content: string;
}

export interface OmfgResult {
  rule: OmfgRule | null;
  validated: boolean;
  attempts: number;
  feedback?: string[];
}

export interface TurnParams {
  turnId: string;
  state: "started" | "retrying" | "finished" | "aborted" | "error";
  rules?: string[];
  attempt?: number;
  error?: string;
}

export interface TrustResult {
  trusted: boolean;
  configPath: string;
  sha256?: string;
  ignoredKeys?: string[];
  /** Why it is not trusted, when it is not. */
  reason?: string;
}

export type McpPolicy = "allow" | "ask" | "deny";

export interface McpToolItem {
  name: string;
  modelName: string;
  description?: string;
  policy: McpPolicy;
}

export interface McpPromptItem {
  name: string;
  command: string;
  description?: string;
  arguments?: string[];
}

export interface McpServerItem {
  name: string;
  source: string;
  path?: string;
  repository: boolean;
  trusted: boolean;
  state: string;
  error?: string;
  transport?: string;
  target?: string;
  env?: string[];
  tools?: McpToolItem[];
  prompts?: McpPromptItem[];
  resources?: boolean;
  restarts?: number;
  digest: string;
  definition: string;
}

export interface McpListResult {
  servers: McpServerItem[];
  problems?: string[];
}

export interface McpChangedParams {
  message?: string;
}

export interface ModelPrepareResult {
  model: string;
  title: string;
  path: string;
  size: number;
  sha256: string;
  license: string;
  /** Whether the runtime that serves the model is there. */
  runtime: boolean;
  /** When it is not: how to get it. */
  runtimeHint?: string;
}
