-- The transcript's wire contract (`memento/transcript`, `memento/transcript/patch`): each node
-- and op kind with its fields, generated from the server's models by
-- `python -m tests.clients.transcript_contract --write`; do not edit. protocol/transcript.schema.json is the whole schema.
return {
  -- top-level items
  items = {
    ["user"] = { name = "UserItem", required = { "kind", "key", "entryId", "text", "steer" }, optional = { "pinned" } },
    ["reply"] = { name = "ReplyItem", required = { "kind", "key", "state", "parts" }, optional = { "retry", "context", "entryId", "pinned" } },
    ["relief"] = { name = "ReliefItem", required = { "kind", "key", "level", "phase", "tokensBefore" }, optional = { "reason", "tokensAfter", "summarizer", "provider", "summary", "error", "why", "transient", "audit", "undoneBy", "undoes" } },
    ["advisor"] = { name = "AdvisorItem", required = { "kind", "key", "noteId", "note", "severity", "channel" }, optional = { "path", "line", "endLine" } },
    ["checkpoint"] = { name = "CheckpointItem", required = { "kind", "key", "checkpointId", "label" }, optional = {} },
    ["rewind"] = { name = "RewindItem", required = { "kind", "key", "summary" }, optional = {} },
  },
  -- the parts of a reply
  parts = {
    ["text"] = { name = "TextPart", required = { "kind", "key", "text" }, optional = {} },
    ["thinking"] = { name = "ThinkingPart", required = { "kind", "key", "text" }, optional = {} },
    ["tool"] = { name = "ToolPart", required = { "kind", "key", "toolCallId", "name", "args", "status", "subagents" }, optional = { "server", "serverTool", "target", "output", "outputTruncated", "resultEntryId", "pinned", "diff", "progress" } },
    ["ttsr"] = { name = "TtsrPart", required = { "kind", "key", "rules", "interrupted" }, optional = { "reason", "attempt", "reminder", "discarded" } },
    ["error"] = { name = "ErrorPart", required = { "kind", "key", "message" }, optional = {} },
  },
  -- a `task` tool part's children
  cards = {
    ["subagent"] = { name = "SubagentCard", required = { "kind", "key", "id", "agent", "state", "prompt", "items" }, optional = { "error", "merge", "result" } },
  },
  ops = {
    ["append"] = { name = "AppendOp", required = { "op", "item", "node" }, optional = { "parent" } },
    ["update"] = { name = "UpdateOp", required = { "op", "item", "node" }, optional = {} },
    ["text"] = { name = "TextOp", required = { "op", "item", "key", "text" }, optional = {} },
    ["remove"] = { name = "RemoveOp", required = { "op", "item", "key" }, optional = {} },
    ["reset"] = { name = "ResetOp", required = { "op" }, optional = {} },
  },
  children = { "parts", "subagents", "items" },
}
