-- Writing into the chat buffer: appends at the end (streamed text is coalesced and written
-- in vim.schedule), marked lines (extmarks: line highlight, sign, status text), insertions
-- below a card's last line, and fold regions (read by the chat window's foldexpr). Windows
-- whose cursor is on the last line follow what is written; the others stay where they are.
local api = vim.api

local M = {}

M.ns = api.nvim_create_namespace('memento.chat')
M.fold_ns = api.nvim_create_namespace('memento.chat.folds')

--- kind → { highlight group, sign }
M.KINDS = {
  user = { 'MementoChatUser', '▌' },
  assistant = { 'MementoChatAssistant', '▌' },
  tool = { 'MementoChatTool', '⚙' },
  tool_error = { 'MementoChatToolError', '✗' },
  retry = { 'MementoChatRetry', '↻' },
  compaction = { 'MementoChatCompaction', '≡' },
  advisor = { 'MementoChatAdvisor', '◆' },
  steer = { 'MementoChatSteer', '↳' },
  subagent = { 'MementoChatSubagent', '↳' },
  note = { 'MementoChatNote', '⟲' },
  mode = { 'MementoChatMode', '⇄' },
  error = { 'MementoChatError', '✗' },
}

local writers = {}

local Writer = {}
Writer.__index = Writer

function M.new(buf)
  local self = setmetatable(
    { buf = buf, queued = {}, scheduled = false, folds = {}, fold_version = 0, marks = {} },
    Writer
  )
  writers[buf] = self
  return self
end

function M.get(buf)
  return writers[buf]
end

function Writer:valid()
  return api.nvim_buf_is_valid(self.buf)
end

--- Windows showing the buffer with the cursor on its last line (or in a closed fold reaching it).
local function followers(buf)
  local last = api.nvim_buf_line_count(buf)
  local found = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local row = api.nvim_win_get_cursor(win)[1]
    if row < last then
      row = api.nvim_win_call(win, function()
        local fold_end = vim.fn.foldclosedend(row)
        return fold_end == -1 and row or fold_end
      end)
    end
    if row >= last then
      table.insert(found, win)
    end
  end
  return found
end

--- Change the buffer (modifiable only meanwhile); windows that followed the end still do.
function Writer:edit(change)
  if not self:valid() then
    return
  end
  local buf = self.buf
  local follow = followers(buf)
  vim.bo[buf].modifiable = true
  local ok, problem = pcall(change, buf)
  vim.bo[buf].modifiable = false
  local last = api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    if api.nvim_win_is_valid(win) then
      api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
  if not ok then
    error(problem, 0)
  end
end

--- The end of the buffer: row, column (0-based).
function Writer:end_pos()
  local count = api.nvim_buf_line_count(self.buf)
  return count - 1, #api.nvim_buf_get_lines(self.buf, count - 1, count, true)[1]
end

function Writer:is_empty()
  return api.nvim_buf_line_count(self.buf) == 1 and api.nvim_buf_get_lines(self.buf, 0, 1, true)[1] == ''
end

local function put(self, text)
  local row, col = self:end_pos()
  api.nvim_buf_set_text(self.buf, row, col, row, col, vim.split(text, '\n', { plain = true }))
end

--- Stream `text` onto the end of the buffer: coalesced, written in vim.schedule.
function Writer:queue(text)
  table.insert(self.queued, text)
  if not self.scheduled then
    self.scheduled = true
    vim.schedule(function()
      self:flush()
    end)
  end
end

--- Write what is queued now (before anything else is written).
function Writer:flush()
  self.scheduled = false
  if #self.queued == 0 or not self:valid() then
    self.queued = {}
    return
  end
  local text = table.concat(self.queued)
  self.queued = {}
  self:edit(function()
    put(self, text)
  end)
end

--- Append text at the end now.
function Writer:append(text)
  self:flush()
  self:edit(function()
    put(self, text)
  end)
end

--- Make the next write start a line of its own, after a blank line when `blank`.
function Writer:separate(blank)
  self:flush()
  if self:is_empty() then
    return
  end
  local row, col = self:end_pos()
  local before = row > 0 and api.nvim_buf_get_lines(self.buf, row - 1, row, true)[1] or ''
  if col > 0 then
    self:append(blank and '\n\n' or '\n')
  elseif blank and before ~= '' then
    self:append('\n')
  end
end

--- Append whole lines (on lines of their own); returns the first and last row.
function Writer:lines(lines, blank)
  self:separate(blank)
  local first = (self:end_pos())
  self:append(table.concat(lines, '\n'))
  return first, (self:end_pos())
end

--- Insert lines below `row`; returns the last row inserted. `fold` (first row, kind) makes
--- the lines part of a fold region that starts at that row: known before the lines are
--- (Neovim evaluates 'foldexpr' for the lines as they are inserted).
function Writer:insert_below(row, lines, fold)
  self:flush()
  if fold then
    self.pending = { fold[1], row + #lines, fold[2] }
    self.fold_version = self.fold_version + 1
  end
  self:edit(function(buf)
    api.nvim_buf_set_lines(buf, row + 1, row + 1, true, lines)
  end)
  self.pending = nil
  self.fold_version = self.fold_version + 1
  return row + #lines
end

--- Replace line `row`; the marks on it stay on it.
function Writer:set_line(row, text)
  self:flush()
  local on_row = api.nvim_buf_get_extmarks(self.buf, M.ns, { row, 0 }, { row, -1 }, {})
  self:edit(function(buf)
    api.nvim_buf_set_lines(buf, row, row + 1, true, { text })
  end)
  for _, mark in ipairs(on_row) do
    local spec = self.marks[mark[1]]
    if spec then
      self:mark(row, spec[1], spec[2], mark[1])
    else
      api.nvim_buf_set_extmark(self.buf, M.ns, row, 0, { id = mark[1] })
    end
  end
end

--- Delete from (row, col) to the end of the buffer, with the marks and folds in it.
function Writer:truncate(row, col)
  self:flush()
  local end_row, end_col = self:end_pos()
  for _, mark in ipairs(api.nvim_buf_get_extmarks(self.buf, M.ns, { row + 1, 0 }, -1, {})) do
    api.nvim_buf_del_extmark(self.buf, M.ns, mark[1])
  end
  for _, mark in ipairs(api.nvim_buf_get_extmarks(self.buf, M.fold_ns, { row, col }, -1, {})) do
    if mark[2] > row or mark[3] >= col then
      self:fold_delete(mark[1])
    end
  end
  self:edit(function(buf)
    api.nvim_buf_set_text(buf, row, col, end_row, end_col, { '' })
  end)
end

--- A position mark that text written at it goes after (to truncate from later).
function Writer:position_mark()
  self:flush()
  local row, col = self:end_pos()
  return api.nvim_buf_set_extmark(self.buf, M.ns, row, col, { right_gravity = false })
end

function Writer:position(id)
  local pos = api.nvim_buf_get_extmark_by_id(self.buf, M.ns, id, {})
  return pos[1], pos[2]
end

--- Mark line `row` as `kind` (highlight, sign); `status` is shown at its end.
function Writer:mark(row, kind, status, id)
  local spec = M.KINDS[kind]
  id = api.nvim_buf_set_extmark(self.buf, M.ns, row, 0, {
    id = id,
    line_hl_group = spec[1],
    sign_text = spec[2],
    sign_hl_group = spec[1],
    virt_text = status and { status } or nil,
    virt_text_pos = 'eol',
  })
  self.marks[id] = { kind, status }
  return id
end

--- Re-mark the line mark `id` is on (a new kind or status).
function Writer:remark(id, kind, status)
  local row = self:position(id)
  if row then
    self:mark(row, kind, status, id)
  end
end

-- -- folds -------------------------------------------------------------------------------
function Writer:fold(first, last, kind)
  -- Text written at the region's start (its first line, as it streams) stays inside it.
  local id = api.nvim_buf_set_extmark(self.buf, M.fold_ns, first, 0, { end_row = last, end_col = 0, right_gravity = false })
  self.folds[id] = kind
  self.fold_version = self.fold_version + 1
  return id
end

function Writer:fold_extend(id, last)
  local pos = api.nvim_buf_get_extmark_by_id(self.buf, M.fold_ns, id, {})
  if pos[1] then
    api.nvim_buf_set_extmark(self.buf, M.fold_ns, pos[1], 0, { id = id, end_row = last, end_col = 0, right_gravity = false })
    self.fold_version = self.fold_version + 1
  end
end

--- The first row of fold region `id`.
function Writer:fold_range(id)
  return api.nvim_buf_get_extmark_by_id(self.buf, M.fold_ns, id, {})[1]
end

function Writer:fold_delete(id)
  api.nvim_buf_del_extmark(self.buf, M.fold_ns, id)
  self.folds[id] = nil
  self.fold_version = self.fold_version + 1
end

function Writer:clear()
  self.queued, self.open_fold = {}, nil
  api.nvim_buf_clear_namespace(self.buf, M.ns, 0, -1)
  api.nvim_buf_clear_namespace(self.buf, M.fold_ns, 0, -1)
  self.folds, self.marks = {}, {}
  self.fold_version = self.fold_version + 1
  self:edit(function(buf)
    api.nvim_buf_set_lines(buf, 0, -1, true, { '' })
  end)
end

--- Fold regions sorted by first row: { {first, last, kind} }, cached per change.
function Writer:regions()
  local key = api.nvim_buf_get_changedtick(self.buf) .. ':' .. self.fold_version
  if self.cache_key ~= key then
    local found = {}
    local bottom = api.nvim_buf_line_count(self.buf) - 1
    for _, mark in ipairs(api.nvim_buf_get_extmarks(self.buf, M.fold_ns, 0, -1, { details = true })) do
      -- The block being streamed reaches the end of the buffer, whatever is written next.
      local last = mark[1] == self.open_fold and bottom or (mark[4].end_row or mark[2])
      if self.pending and self.pending[1] == mark[2] then
        last = math.max(last, self.pending[2])
      end
      table.insert(found, { mark[2], last, self.folds[mark[1]] })
    end
    if self.pending and not vim.iter(found):any(function(region)
      return region[1] == self.pending[1]
    end) then
      table.insert(found, self.pending)
    end
    table.sort(found, function(a, b)
      return a[1] < b[1]
    end)
    self.cache, self.cache_key = found, key
  end
  return self.cache
end

local function region_at(regions, row)
  local low, high = 1, #regions
  while low <= high do
    local middle = math.floor((low + high) / 2)
    local region = regions[middle]
    if row < region[1] then
      high = middle - 1
    elseif row > region[2] then
      low = middle + 1
    else
      return region
    end
  end
end

--- 'foldexpr' of chat windows: a fold per region (thinking, a tool card's details).
function M.foldexpr()
  local writer = writers[api.nvim_get_current_buf()]
  if not writer then
    return '0'
  end
  local row = vim.v.lnum - 1
  local region = region_at(writer:regions(), row)
  if not region then
    return '0'
  end
  return row == region[1] and '>1' or '1'
end

local FOLD_LABELS = { thinking = 'thinking', card = 'details', summary = 'summary' }

--- 'foldtext' of chat windows.
function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  local count = vim.v.foldend - vim.v.foldstart + 1
  local writer = writers[api.nvim_get_current_buf()]
  local region = writer and region_at(writer:regions(), vim.v.foldstart - 1)
  local label = region and FOLD_LABELS[region[3]] or 'more'
  if region and region[3] == 'card' then
    return ('    ▸ %s · %d lines'):format(label, count)
  end
  return ('%s  ▸ %s · %d lines'):format(first, label, count)
end

function M.forget(buf)
  writers[buf] = nil
end

return M
