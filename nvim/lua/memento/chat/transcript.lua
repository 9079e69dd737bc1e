-- The conversation as the chat buffer shows it: "## You" and "## Memento" sections, text and
-- thinking blocks (thinking folded), tool cards (a header with the call's status; arguments
-- and output folded below it), and marked lines for TTSR retries, compaction dividers,
-- advisor notes, steering and errors. Live events and memento/history entries both draw
-- through these operations, so a reloaded chat reads like the live one.
local format = require('memento.format')
local MODES = require('memento.status').MODES
local Writer = require('memento.chat.writer')
local cards = require('memento.chat.cards')

local M = {}

M.STATUS = {
  running = { 'working…', 'MementoChatRunning' },
  finished = { '✓ done', 'MementoChatDone' },
  aborted = { '⏹ stopped', 'MementoChatStopped' },
  error = { '✗ failed', 'MementoChatFailed' },
  streaming = { '…', 'MementoChatRunning' },
  tool_running = { 'running…', 'MementoChatRunning' },
  tool_done = { '✓', 'MementoChatDone' },
  tool_failed = { '✗ failed', 'MementoChatFailed' },
  pending = { 'not run', 'MementoChatStopped' },
}

local Transcript = {}
Transcript.__index = Transcript

function M.new(buf)
  return setmetatable({ w = Writer.new(buf), turns = {}, cards = {} }, Transcript)
end

function Transcript:reset()
  self.w:clear()
  self.turns, self.cards, self.block, self.turn, self.step, self.compacting = {}, {}, nil, nil, nil, nil
  self.after_header = false
end

local function split(text)
  return vim.split(text or '', '\n', { plain = true })
end

-- -- sections and blocks ---------------------------------------------------------------
function Transcript:end_block()
  self.w:flush()
  if self.w.open_fold then
    self.w:fold_extend(self.w.open_fold, (self.w:end_pos()))
    self.w.open_fold = nil
  end
  self.block = nil
end

--- "## You" and the prompt; returns the row of its first line (to fill in a placeholder).
function Transcript:user(text)
  self:end_block()
  local header = self.w:lines({ '## You' }, true)
  self.w:mark(header, 'user')
  local first = self.w:lines(split(text), false)
  self.after_header = false
  return first
end

--- Replace the placeholder line at `row` with the prompt's text.
function Transcript:fill(row, text)
  local lines = split(text)
  self.w:set_line(row, lines[1])
  if #lines > 1 then
    self.w:insert_below(row, vim.list_slice(lines, 2))
  end
end

--- "## Memento": the reply to a prompt (its status at the end of the line).
function Transcript:assistant(turn_id, state)
  self:end_block()
  local row = self.w:lines({ '## Memento' }, true)
  self.turns[turn_id] = { mark = self.w:mark(row, 'assistant', M.STATUS[state or 'running']) }
  self.turn = turn_id
  self.after_header = true
  self:step_here()
end

--- The next model request starts here: a TTSR retry drops what is written after it.
function Transcript:step_here()
  self.step = self.w:position_mark()
  self.step_after_header = self.after_header
end

--- A marked line of its own (right under a header, else after a blank line).
function Transcript:marked(text, kind, status)
  self:end_block()
  local row = self.w:lines({ text }, not self.after_header)
  self.after_header = false
  return self.w:mark(row, kind, status)
end

function Transcript:begin_block(kind)
  self.w:separate(not self.after_header)
  self.after_header = false
  self.block = { kind = kind }
  if kind == 'thinking' then
    -- The fold first, then its first line: 'foldexpr' sees the line as the fold's start.
    local row = self.w:end_pos()
    self.w.open_fold = self.w:fold(row, row, 'thinking')
    self.w:append('> ')
  end
end

--- Streamed text or thinking, appended as it comes.
function Transcript:stream(kind, text)
  if text == nil or text == '' then
    return
  end
  if not self.block or self.block.kind ~= kind then
    self:end_block()
    self:begin_block(kind)
  end
  if kind == 'thinking' then
    text = text:gsub('\n', '\n> ')
  end
  self.w:queue(text)
end

-- -- tool cards ----------------------------------------------------------------------------
function Transcript:card(call_id, name)
  local card = self.cards[call_id]
  if card then
    return card
  end
  self:end_block()
  self.w:separate(not self.after_header)
  self.after_header = false
  card = { id = call_id, name = name or 'tool', args = '', turn = self.turn }
  local row = self.w:lines({ cards.header_text(card) }, false)
  card.header = self.w:mark(row, 'tool', M.STATUS.streaming)
  card.last = vim.api.nvim_buf_set_extmark(self.w.buf, Writer.ns, row, 0, {})
  self.cards[call_id] = card
  return card
end

--- Lines at the end of a card (its details fold grows to hold them).
function Transcript:card_lines(card, lines)
  if #lines == 0 then
    return
  end
  local row = self.w:position(card.last)
  local first = card.fold and self.w:fold_range(card.fold) or row + 1
  local last = self.w:insert_below(row, lines, { first, 'card' })
  if card.fold then
    self.w:fold_extend(card.fold, last)
  else
    card.fold = self.w:fold(first, last, 'card')
  end
  vim.api.nvim_buf_set_extmark(self.w.buf, Writer.ns, last, 0, { id = card.last })
end

--- The model streams a call's arguments (JSON, in pieces).
function Transcript:tool_delta(call_id, name, delta)
  local card = self:card(call_id, name)
  card.args = card.args .. (delta or '')
end

--- The call runs: its arguments are complete (given, or as streamed). `label`: what the card
--- calls it instead of its name (an MCP tool's `server › tool`).
function Transcript:tool_started(call_id, name, arguments, label)
  local card = self:card(call_id, name)
  if card.started then
    return
  end
  card.started = true
  card.name = label or card.name
  if arguments == nil and card.args ~= '' then
    local ok, decoded = pcall(vim.json.decode, card.args, { luanil = { object = true, array = true } })
    arguments = ok and decoded or nil
  end
  card.arguments = arguments
  self.w:set_line(self.w:position(card.header), cards.header_text(card))
  self.w:remark(card.header, 'tool', M.STATUS.tool_running)
  self:card_lines(card, cards.argument_lines(arguments))
end

function Transcript:tool_finished(call_id, name, is_error, output)
  local card = self:card(call_id, name)
  if not card.started then
    self:tool_started(call_id, name)
  end
  self:tool_output(call_id, is_error, output)
  card.finished, card.is_error = true, is_error
  self.w:remark(card.header, is_error and 'tool_error' or 'tool', M.STATUS[is_error and 'tool_failed' or 'tool_done'])
  self:step_here()
end

--- A call's result, shown once in its card (folded with the arguments).
function Transcript:tool_output(call_id, is_error, output)
  local card = self.cards[call_id]
  if card and not card.output and output and output ~= '' then
    card.output = true
    self:card_lines(card, cards.fenced(is_error and 'error' or 'output', output))
  end
end

--- Calls of `turn_id` that finished with no result shown (a server that does not send it).
function Transcript:without_output(turn_id)
  local ids = {}
  for id, card in pairs(self.cards) do
    if card.turn == turn_id and card.finished and not card.output then
      ids[id] = card
    end
  end
  return ids
end

--- The card under (0-based) `row`, if any.
function Transcript:card_at(row)
  local best, best_row
  for _, card in pairs(self.cards) do
    local first = self.w:position(card.header)
    local last = self.w:position(card.last)
    if first and first <= row and row <= last and (not best_row or first > best_row) then
      best, best_row = card, first
    end
  end
  return best
end

-- -- marked lines --------------------------------------------------------------------------
local function names(rules)
  return table.concat(
    vim.tbl_map(function(rule)
      return '`' .. rule .. '`'
    end, rules),
    ', '
  )
end

--- A retry. TTSR (`rules`): the partial reply of this request is dropped (when `drop`), as the
--- server dropped it. Otherwise the provider resends a failed request (`reason`, `retryInMs`).
function Transcript:retry(params, drop)
  self:end_block()
  local rules = params.rules or {}
  local text
  if #rules > 0 then
    if drop and self.step then
      local row, col = self.w:position(self.step)
      for id, card in pairs(self.cards) do
        if card.turn == self.turn and (self.w:position(card.header) or -1) > row then
          self.cards[id] = nil
        end
      end
      self.w:truncate(row, col)
      self.after_header = self.step_after_header
    end
    text = ('↻ %s %s fired: the reply was dropped and asked for again'):format(#rules == 1 and 'rule' or 'rules', names(rules))
  else
    local delay = params.retryInMs and (' in %d s'):format(math.ceil(params.retryInMs / 1000)) or ''
    text = ('↻ %s: retrying%s (attempt %d)'):format(params.reason or 'the request failed', delay, params.attempt or 2)
  end
  self:marked(text, 'retry')
  self:step_here()
end

function Transcript:turn_end(turn_id, state, error)
  self:end_block()
  for _, card in pairs(self.cards) do
    if card.turn == turn_id and not card.finished then
      if not card.started then
        self:tool_started(card.id, card.name)
      end
      self.w:remark(card.header, 'tool', M.STATUS.pending)
    end
  end
  local turn = self.turns[turn_id]
  if turn then
    self.w:remark(turn.mark, 'assistant', M.STATUS[state] or M.STATUS.finished)
  end
  if error and error ~= '' then
    self:marked('✗ ' .. error:gsub('\n', ' '), 'error')
  end
  if self.turn == turn_id then
    self.turn, self.step = nil, nil
  end
end

local LEVELS = { prune = 'pruned stale tool results', shake = 'shook out heavy blocks', compact = 'compacted the context' }
local STARTED = { prune = 'pruning stale tool results', shake = 'shaking out heavy blocks', compact = 'compacting the context' }

function M.compaction_text(params)
  local what = LEVELS[params.level] or 'compacted'
  if params.phase == 'started' then
    return ('── %s… (%s tokens) ──'):format(STARTED[params.level] or 'compacting', format.tokens(params.tokensBefore))
  end
  if params.phase == 'failed' then
    return ('── compaction failed: %s ──'):format(params.error or 'unknown error')
  end
  if params.phase == 'skipped' then
    return ('── %s ──'):format(params.why or ('not applied: ' .. (STARTED[params.level] or 'compacting') .. ' would not relieve the context'))
  end
  local after = params.tokensAfter and format.tokens(params.tokensAfter) or '?'
  local by = ''
  if params.level == 'compact' then
    if params.summarizer == 'structured' then
      by = ' (summary built by code)'
    elseif params.summarizer == 'provider' then
      by = params.provider and (' (summary by the provider, %s)'):format(params.provider) or ' (summary by the provider)'
    else
      by = ' (summary by the model)'
    end
  end
  return ('── %s: %s → %s tokens%s ──'):format(what, format.tokens(params.tokensBefore), after, by)
end

--- A relief step: a divider (a started one is rewritten when it ends).
function Transcript:compaction(params)
  self:end_block()
  local text = M.compaction_text(params)
  if params.phase ~= 'started' and self.compacting then
    self.w:set_line(self.w:position(self.compacting), text)
    self.compacting = nil
    return
  end
  local mark = self:marked(text, 'compaction')
  if params.phase == 'started' then
    self.compacting = mark
  end
end

function Transcript:advisor(note)
  self:end_block()
  local where = ''
  if note.path then
    where = (' %s%s'):format(note.path, note.line and (':' .. note.line) or '')
  end
  local text = tostring(note.note or ''):gsub('%s*\n%s*', ' ')
  self:marked(('◆ advisor (%s)%s: %s'):format(note.severity or 'note', where, text), 'advisor')
end

function Transcript:steer(text)
  self:end_block()
  local lines = split(text)
  lines[1] = '↳ ' .. lines[1]
  local first = self.w:lines(lines, not self.after_header)
  self.after_header = false
  self.w:mark(first, 'steer', { 'steering', 'MementoChatSteer' })
end

--- A marked title with a folded body (the summary of a rewound path).
function Transcript:note(title, body)
  local mark = self:marked(title, 'note')
  if body and body ~= '' then
    local row = self.w:position(mark)
    local last = self.w:insert_below(row, split(body), { row + 1, 'summary' })
    self.w:fold(row + 1, last, 'summary')
  end
  return mark
end

function Transcript:mode(mode)
  self:marked('⇄ ' .. (MODES[mode] or mode), 'mode')
end

function Transcript:error_line(text)
  self:marked('✗ ' .. text, 'error')
end

return M
