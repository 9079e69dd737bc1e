// Method, notification and command names of Memento's LSP surface: the same constants, with
// the same names, as server/memento/lsp/protocol.py. A pytest test and a vitest test compare
// the two files, so a rename on either side fails both suites.

export const PROMPT = "memento/prompt";
export const ABORT = "memento/abort";
export const STEER = "memento/steer";
export const HISTORY = "memento/history";
export const TRANSCRIPT = "memento/transcript";
export const TRANSCRIPT_PATCH = "memento/transcript/patch";
export const SESSION_LIST = "memento/session/list";
export const SESSION_NEW = "memento/session/new";
export const SESSION_OPEN = "memento/session/open";
export const CONTEXT = "memento/context";
export const MODE = "memento/mode";
export const STREAM = "memento/stream";
export const TURN = "memento/turn";
export const TOOL = "memento/tool";
export const CONTEXT_NOTIFICATION = "memento/context";
export const MODE_NOTIFICATION = "memento/mode";
export const SESSION_NOTIFICATION = "memento/session";
export const CMD_ABORT = "memento.abort";
export const COMPACT = "memento/compact";
export const COMPACTION_NOTIFICATION = "memento/compaction";
export const COMPACTION_LIST = "memento/compaction/list";
export const CMD_COMPACT = "memento.compact";
export const ADVISOR_NOTIFICATION = "memento/advisor";
export const ADVISOR_TOGGLE = "memento/advisor/toggle";
export const CMD_ADVISOR_APPLY = "memento.advisor.apply";
export const CMD_ADVISOR_DISMISS = "memento.advisor.dismiss";
export const CMD_ADVISOR_TO_RULE = "memento.advisor.toRule";
export const CHECKPOINT_LIST = "memento/checkpoint/list";
export const CHECKPOINT_PREVIEW = "memento/checkpoint/preview";
export const CHECKPOINT_FILE = "memento/checkpoint/file";
export const CHECKPOINTS_NOTIFICATION = "memento/checkpoints";
export const CMD_CHECKPOINT_CREATE = "memento.checkpoint.create";
export const CMD_CHECKPOINT_REWIND = "memento.checkpoint.rewind";
export const CMD_CHECKPOINT_UNDO_REWIND = "memento.checkpoint.undoRewind";
export const SETTINGS = "memento/settings";
export const TRUST = "memento/trust";
export const RULES_LIST = "memento/rules/list";
export const ACTIVE_DOCUMENT = "memento/activeDocument";
export const OMFG = "memento/omfg";
export const CMD_OMFG = "memento.omfg";
export const SUBAGENT_LIST = "memento/subagent/list";
export const SUBAGENT_ABORT = "memento/subagent/abort";
export const SUBAGENT_NOTIFICATION = "memento/subagent";
