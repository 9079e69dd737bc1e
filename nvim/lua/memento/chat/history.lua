-- memento/history entries (pi session format v3, as stored) drawn through the transcript's
-- operations. Entries may come from pi, oh-my-pi or an older Memento, so every field is read
-- defensively: an entry that does not fit is skipped, never fatal.
local M = {}

local TTSR_INJECTION = 'ttsr-injection'

function M.text_of(content)
  if type(content) == 'string' then
    return content
  end
  local parts = {}
  for _, block in ipairs(type(content) == 'table' and content or {}) do
    if type(block) == 'table' and block.type == 'text' and type(block.text) == 'string' then
      table.insert(parts, block.text)
    end
  end
  return table.concat(parts)
end

local function number(value)
  return type(value) == 'number' and value or nil
end

local function str(value)
  return type(value) == 'string' and value or nil
end

local ENDED = { completed = true, failed = true, aborted = true }

--- The children a `task` call's stored result names (`{"results": [...]}`), as the
--- memento/subagent items of their final state (the chat's child lines).
function M.task_children(call_id, output)
  local ok, body = pcall(vim.json.decode, output or '', { luanil = { object = true, array = true } })
  local results = ok and type(body) == 'table' and body.results or nil
  local items = {}
  for _, result in ipairs(type(results) == 'table' and results or {}) do
    if type(result) == 'table' and str(result.id) and ENDED[result.status] then
      local merge = type(result.merge) == 'table' and result.merge or {}
      table.insert(items, {
        id = result.id,
        agent = str(result.agent) or 'agent',
        state = result.status,
        prompt = '',
        merge = str(merge.state),
        error = str(result.error),
        parentToolCallId = call_id,
      })
    end
  end
  return items
end

--- Draw `entries` (oldest first). `running` (memento/history's runningTurn) is the turn still
--- running: it stays open, under its live id, for the live events to continue. `children`
--- (the chat's child lines) gets each `task` call's children from its result. `relief`
--- (memento/history's, by entry id) gives each relief step's figures, as the live
--- memento/compaction gave them.
function M.render(transcript, entries, running, children, relief)
  relief = type(relief) == 'table' and relief or {}
  local turn, state, error
  local after_tools = false

  local function close()
    if turn then
      transcript:turn_end(turn, state, error)
    end
    turn, state, error = nil, nil, nil
  end

  local function open(id, live)
    close()
    turn, state = id, live and 'running' or 'finished'
    transcript:assistant(id, state)
  end

  for _, entry in ipairs(entries) do
    local kind, id = entry.type, entry.id
    local message = type(entry.message) == 'table' and entry.message or nil
    if kind == 'message' and message and message.role == 'user' then
      local text = M.text_of(message.content)
      if turn and after_tools then
        transcript:steer(text) -- delivered at a step boundary of the running turn
      else
        close()
        transcript:user(text)
        local live = running ~= nil and running.entryId == id
        open(live and running.turnId or ('entry:' .. tostring(id)), live)
      end
      after_tools = false
    elseif kind == 'message' and message and message.role == 'assistant' then
      if not turn then
        open('entry:' .. tostring(id))
      end
      local calls = false
      for _, block in ipairs(type(message.content) == 'table' and message.content or {}) do
        if type(block) == 'table' then
          if block.type == 'thinking' then
            transcript:stream('thinking', block.thinking)
          elseif block.type == 'text' then
            transcript:stream('text', block.text)
          elseif block.type == 'toolCall' and block.id then
            calls = true
            transcript:card(block.id, block.name)
            transcript:tool_started(block.id, block.name, type(block.arguments) == 'table' and block.arguments or nil)
          end
        end
      end
      if state == 'running' then -- the live events say how the running turn ends
        state = 'running'
      elseif message.stopReason == 'aborted' then
        state = 'aborted'
      elseif message.stopReason == 'error' then
        state, error = 'error', message.errorMessage
      end
      after_tools = false
      if not calls then
        transcript:end_block()
      end
    elseif kind == 'message' and message and message.role == 'toolResult' then
      if message.toolCallId then
        local output = M.text_of(message.content)
        transcript:tool_finished(message.toolCallId, message.toolName, message.isError == true, output)
        local card = transcript.cards[message.toolCallId]
        if children and card and card.name == 'task' then
          for _, info in ipairs(M.task_children(message.toolCallId, output)) do
            children:update(info)
          end
        end
      end
      -- A turn aborted mid-tools ends there: the next user message is a prompt, not a steer.
      after_tools = not (message.isError and M.text_of(message.content):find('abort'))
    elseif kind == 'custom_message' and entry.customType == TTSR_INJECTION then
      local details = type(entry.details) == 'table' and entry.details or {}
      local rules = vim.tbl_filter(function(rule)
        return type(rule) == 'string'
      end, type(details.rules) == 'table' and details.rules or {})
      if details.restated ~= true and #rules > 0 then
        transcript:retry({ rules = rules }, false)
      end
    elseif (kind == 'compaction' or kind == 'custom') and type(relief[id]) == 'table' then
      local step = relief[id]
      -- The light prune after each turn is housekeeping: the live chat does not show it either.
      if step.reason ~= 'turn' then
        transcript:compaction({
          phase = 'finished',
          level = step.level,
          tokensBefore = number(step.tokensBefore) or 0,
          tokensAfter = number(step.tokensAfter),
          summarizer = str(step.summarizer),
          provider = str(step.provider),
        })
      end
    elseif kind == 'branch_summary' then
      close()
      transcript:note('⟲ rewound: what the abandoned path did', type(entry.summary) == 'string' and entry.summary or '')
    elseif kind == 'advisor_note' then
      transcript:advisor(entry)
    end
  end
  if state == 'running' then
    transcript:end_block()
  else
    close()
  end
end

return M
