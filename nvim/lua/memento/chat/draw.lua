-- How each transcript item reads in the chat buffer, as lines: "## You" and the prompt,
-- "## Memento" and the reply's parts (text; thinking quoted and folded; tool cards with
-- their details folded and a line per subagent; TTSR marks and errors), dividers for relief
-- steps, advisor notes, steering and rewinds. Pure: an item in, its drawing out; the chat
-- (`transcript.lua`) puts drawings in the buffer.
--
-- A drawing: { lines, marks = { {row, kind, status} }, folds = { {first, last, kind} },
-- cards = { {row, last, part} }, children = { {row, card} }, tail = key, item = the item }, rows
-- relative to the item's first line. `tail` names the text or thinking part its last line ends, when
-- text appended to that part is text appended to the buffer (streaming stays an append).
local cards = require('memento.chat.cards')
local format = require('memento.format')

local M = {}

M.STATUS = {
  streaming = { 'working…', 'MementoChatRunning' },
  done = { '✓ done', 'MementoChatDone' },
  aborted = { '⏹ stopped', 'MementoChatStopped' },
  error = { '✗ failed', 'MementoChatFailed' },
}

local TOOL_STATUS = {
  streaming = { '…', 'MementoChatRunning' },
  pending = { '…', 'MementoChatRunning' },
  running = { 'running…', 'MementoChatRunning' },
  done = { '✓', 'MementoChatDone' },
  error = { '✗ failed', 'MementoChatFailed' },
  cancelled = { 'not run', 'MementoChatStopped' },
}

local CHILD_STATUS = {
  queued = { 'queued', 'MementoChatRunning' },
  running = { 'working…', 'MementoChatRunning' },
  completed = { '✓ done', 'MementoChatDone' },
  failed = { '✗ failed', 'MementoChatFailed' },
  aborted = { '⏹ stopped', 'MementoChatStopped' },
}
local TAIL = 60
local PINNED = '📌 pinned'

local function split(text)
  return vim.split(text or '', '\n', { plain = true })
end

local function given(value)
  return value ~= nil and value ~= vim.NIL
end

--- Thinking as a quote, line by line (streamed text is quoted the same way: `quote_more`).
function M.quote(text)
  return '> ' .. text:gsub('\n', '\n> ')
end

function M.quote_more(text)
  return (text:gsub('\n', '\n> '))
end

-- -- a drawing being built --------------------------------------------------------------
local Drawing = {}
Drawing.__index = Drawing

local function new()
  return setmetatable({ lines = {}, marks = {}, folds = {}, cards = {}, children = {} }, Drawing)
end

--- Lines of their own; returns the first row.
function Drawing:add(lines, blank)
  if blank and #self.lines > 0 then
    table.insert(self.lines, '')
  end
  local first = #self.lines
  vim.list_extend(self.lines, lines)
  return first
end

function Drawing:marked(text, kind, status, blank)
  local row = self:add({ text }, blank)
  table.insert(self.marks, { row, kind, status })
  return row
end

-- -- the lines of the marks --------------------------------------------------------------
local LEVELS = { prune = 'pruned stale tool results', shake = 'shook out heavy blocks', compact = 'compacted the context' }
local STARTED = { prune = 'pruning stale tool results', shake = 'shaking out heavy blocks', compact = 'compacting the context' }

--- A relief step's divider (its fields as the transcript's relief item has them).
function M.relief_text(step)
  if step.phase == 'started' then
    return ('── %s… (%s tokens) ──'):format(STARTED[step.level] or 'compacting', format.tokens(step.tokensBefore))
  end
  if step.phase == 'failed' then
    return ('── compaction failed: %s ──'):format(given(step.error) and step.error or 'unknown error')
  end
  if step.phase == 'skipped' then
    return ('── %s ──'):format(given(step.why) and step.why or ('not applied: ' .. (STARTED[step.level] or 'compacting') .. ' would not relieve the context'))
  end
  local after = given(step.tokensAfter) and format.tokens(step.tokensAfter) or '?'
  if given(step.undoes) then
    return ('── undone: %s (%s), %s → %s tokens ──'):format(LEVELS[step.level] or 'compacted', step.undoes, format.tokens(step.tokensBefore), after)
  end
  local undone = given(step.undoneBy) and ' (undone)' or ''
  local by = ''
  if step.level == 'compact' then
    if step.summarizer == 'structured' then
      by = ' (summary built by code)'
    elseif step.summarizer == 'provider' then
      by = given(step.provider) and (' (summary by the provider, %s)'):format(step.provider) or ' (summary by the provider)'
    else
      by = ' (summary by the model)'
    end
  end
  return ('── %s: %s → %s tokens%s%s ──'):format(LEVELS[step.level] or 'compacted', format.tokens(step.tokensBefore), after, by, undone)
end

local function names(rules)
  return table.concat(
    vim.tbl_map(function(rule)
      return '`' .. rule .. '`'
    end, rules),
    ', '
  )
end

function M.ttsr_text(part)
  local rules = part.rules or {}
  local which = ('%s %s'):format(#rules == 1 and 'rule' or 'rules', names(rules))
  if not part.interrupted then
    return ('↻ %s reminded the agent'):format(which)
  end
  if #rules == 0 then
    return ('↻ %s: the reply was dropped and asked for again'):format(given(part.reason) and part.reason or 'a rule fired')
  end
  return ('↻ %s fired: the reply was dropped and asked for again'):format(which)
end

local function retry_text(retry)
  local delay = given(retry.retryInMs) and (' in %d s'):format(math.ceil(retry.retryInMs / 1000)) or ''
  return ('↻ %s: retrying%s (attempt %d)'):format(retry.reason or 'the request failed', delay, retry.attempt or 2)
end

local function advisor_text(note)
  local where = ''
  if given(note.path) then
    where = (' %s%s'):format(note.path, given(note.line) and (':' .. note.line) or '')
  end
  local text = tostring(note.note or ''):gsub('%s*\n%s*', ' ')
  return ('◆ advisor (%s)%s: %s'):format(note.severity or 'note', where, text)
end

-- -- subagents ----------------------------------------------------------------------------
local function live(state)
  return state == 'queued' or state == 'running'
end

local function flat(text)
  return (text:gsub('%s+', ' '))
end

--- What a running child is doing, from its own newest items.
local function activity(card)
  if card.state == 'queued' then
    return 'queued', ''
  end
  local items = card.items or {}
  local last = items[#items]
  if not last then
    return 'starting', ''
  end
  if last.kind ~= 'reply' then
    return 'waiting for the model', ''
  end
  local part = (last.parts or {})[#last.parts or 0]
  if not part then
    return 'waiting for the model', ''
  end
  if part.kind == 'text' then
    local text = flat(part.text or '')
    return 'writing', vim.fn.strcharpart(text, math.max(0, vim.fn.strchars(text) - TAIL))
  elseif part.kind == 'thinking' then
    return 'thinking', ''
  elseif part.kind == 'tool' and (part.status == 'running' or part.status == 'pending') then
    return 'running ' .. part.name, ''
  end
  return 'waiting for the model', ''
end

--- A subagent's line under its `task` card, and its status.
function M.child_line(card)
  local line = ('  ↳ %s (%s)'):format(card.id, card.agent)
  if live(card.state) then
    local doing, tail = activity(card)
    return line .. ' ' .. doing .. (tail ~= '' and (' · ' .. tail) or ''), CHILD_STATUS[card.state]
  end
  local merge = given(card.merge) and (' · merge ' .. card.merge) or ''
  local why = (given(card.error) and card.state == 'failed') and (' · ' .. card.error:gsub('\n.*', '')) or ''
  return line .. ' ' .. card.state .. merge .. why, CHILD_STATUS[card.state]
end

-- -- tool cards ---------------------------------------------------------------------------
--- A tool part's arguments, once complete (nil while they stream or when they are not JSON).
function M.arguments(part)
  if part.status == 'streaming' or not given(part.args) or part.args == '' then
    return nil
  end
  local ok, decoded = pcall(vim.json.decode, part.args, { luanil = { object = true, array = true } })
  return ok and type(decoded) == 'table' and decoded or nil
end

--- `running · 3/60 · indexing`: a running tool's status with its last progress report.
function M.tool_status(part)
  local status = TOOL_STATUS[part.status] or TOOL_STATUS.pending
  local report = part.progress
  if part.status ~= 'running' or not given(report) then
    return status
  end
  local done = ('%g'):format(report.progress)
  if given(report.total) then
    done = done .. ('/%g'):format(report.total)
  end
  local said = given(report.message) and (' · ' .. flat(report.message)) or ''
  return { 'running · ' .. done .. said, status[2] }
end

local function tool_name(part)
  if given(part.server) then
    return part.server .. ' › ' .. (given(part.serverTool) and part.serverTool or part.name)
  end
  return part.name
end

function Drawing:tool(part, blank)
  local arguments = M.arguments(part)
  local header = cards.header_text({ name = tool_name(part), arguments = arguments })
  local failed = part.status == 'error'
  local status = M.tool_status(part)
  if given(part.pinned) and part.pinned then
    status = { status[1] .. ' · ' .. PINNED, status[2] }
  end
  local row = self:marked(header, failed and 'tool_error' or 'tool', status, blank)
  local details = part.status ~= 'streaming' and cards.argument_lines(arguments) or {}
  if given(part.output) and part.output ~= '' then
    vim.list_extend(details, cards.fenced(failed and 'error' or 'output', part.output))
  end
  if #details > 0 then
    local first = self:add(details, false)
    table.insert(self.folds, { first, #self.lines - 1, 'card' })
  end
  table.insert(self.cards, { row, #self.lines - 1, part })
  for _, card in ipairs(part.subagents or {}) do
    local text, status = M.child_line(card)
    local child = self:marked(text, 'subagent', status, false)
    table.insert(self.children, { child, card })
  end
end

-- -- items -----------------------------------------------------------------------------------
function Drawing:part(part, blank)
  if part.kind == 'text' then
    self:add(split(part.text), blank)
    return part.key
  elseif part.kind == 'thinking' then
    local first = self:add(split(M.quote(part.text or '')), blank)
    table.insert(self.folds, { first, #self.lines - 1, 'thinking', part.key })
    return part.key
  elseif part.kind == 'tool' then
    self:tool(part, blank)
  elseif part.kind == 'ttsr' then
    self:marked(M.ttsr_text(part), 'retry', nil, blank)
  elseif part.kind == 'error' then
    self:marked('✗ ' .. tostring(part.message):gsub('\n', ' '), 'error', nil, blank)
  end
end

function Drawing:reply(item, turn)
  local first = true
  if not turn.continued then
    local status = M.STATUS[turn.state or item.state] or M.STATUS.done
    if given(item.pinned) and item.pinned then
      status = { status[1] .. ' · ' .. PINNED, status[2] }
    end
    self:marked('## Memento', 'assistant', status, false)
  end
  local tail
  for _, part in ipairs(item.parts or {}) do
    local before = #self.lines
    tail = self:part(part, not first)
    first = first and #self.lines == before
  end
  if given(item.retry) then
    self:marked(retry_text(item.retry), 'retry', nil, true)
    tail = nil
  end
  self.tail = tail
end

function Drawing:user(item)
  if item.steer then
    local lines = split(item.text)
    lines[1] = '↳ ' .. lines[1]
    local row = self:add(lines, false)
    table.insert(self.marks, { row, 'steer', { 'steering', 'MementoChatSteer' } })
  else
    local pinned = given(item.pinned) and item.pinned and { PINNED, 'MementoChatPinned' } or nil
    self:marked('## You', 'user', pinned, false)
    self:add(split(item.text), false)
  end
end

--- The drawing of top-level `item` (no lines: an item the chat does not show). A reply's
--- `turn`: `continued` when it goes on after a steer (no header of its own), and the `state`
--- its header shows (the state of the turn's last reply).
function M.item(item, turn)
  local d = new()
  d.item = item
  local kind = item.kind
  if kind == 'user' then
    d:user(item)
  elseif kind == 'reply' then
    d:reply(item, turn or {})
  elseif kind == 'relief' then
    -- The light prune after each turn is housekeeping: the chat does not show it.
    if item.reason ~= 'turn' then
      d:marked(M.relief_text(item), 'compaction', nil, false)
    end
  elseif kind == 'advisor' then
    d:marked(advisor_text(item), 'advisor', nil, false)
  elseif kind == 'rewind' then
    d:marked('⟲ rewound: what the abandoned path did', 'note', nil, false)
    if given(item.summary) and item.summary ~= '' then
      local first = d:add(split(item.summary), false)
      table.insert(d.folds, { first, #d.lines - 1, 'summary' })
    end
  end
  -- checkpoints: :MementoCheckpoint lists them; the chat does not draw them.
  return d
end

--- A line the chat adds of its own (a mode switch, the server stopping): not transcript.
function M.note(text, kind, status)
  local d = new()
  local lines = split(text)
  local row = d:add(lines, false)
  table.insert(d.marks, { row, kind, status })
  return d
end


return M
