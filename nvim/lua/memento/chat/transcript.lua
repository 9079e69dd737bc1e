-- The chat buffer as a drawing of the session's transcript: a block of lines per top-level
-- item (`draw.lua`), one blank line between blocks. A page draws every block; a patch's ops
-- change the chat's copy (`model.lua`) and redraw the blocks of the items they touched,
-- except that text appended to the part a block ends with is appended to the buffer (a
-- streamed reply costs an append per delta, never a redraw), and a subagent's own items
-- only rewrite its line under its `task` card. The chat also adds lines of its own (a mode
-- switch, the server stopping): blocks that are not transcript items.
local api = vim.api
local draw = require('memento.chat.draw')
local model = require('memento.chat.model')
local writer = require('memento.chat.writer')

local M = {}

local Transcript = {}
Transcript.__index = Transcript

function M.new(buf)
  local self = setmetatable({ buf = buf, model = model.new(), blocks = {}, by_key = {}, version = 0, notes = 0 }, Transcript)
  writer.folds(buf, function()
    return self:regions()
  end)
  return self
end

-- -- blocks -------------------------------------------------------------------------------
local function size(drawing)
  return drawing and #drawing.lines or 0
end

--- Block `index`'s first row, and whether a block with lines comes before it.
function Transcript:start(index)
  local row, before = 0, false
  for i = 1, index - 1 do
    local n = size(self.blocks[i].drawing)
    if n > 0 then
      row, before = row + n + 1, true
    end
  end
  return row, before
end

function Transcript:lines_after(index)
  for i = index + 1, #self.blocks do
    if size(self.blocks[i].drawing) > 0 then
      return true
    end
  end
  return false
end

function Transcript:index_of(block)
  for index, candidate in ipairs(self.blocks) do
    if candidate == block then
      return index
    end
  end
end

--- Put `drawing` in place of block `index`'s lines (marks and folds with it).
function Transcript:place(index, drawing)
  local block = self.blocks[index]
  local row, before = self:start(index)
  local after = self:lines_after(index)
  local old, new = size(block.drawing), size(drawing)
  block.drawing = drawing
  self.version = self.version + 1 -- the fold regions: known before the lines are
  writer.edit(self.buf, function(buf)
    if old > 0 then
      api.nvim_buf_clear_namespace(buf, writer.ns, row, row + old)
    end
    if old > 0 and new > 0 then
      api.nvim_buf_set_lines(buf, row, row + old, true, drawing.lines)
    elseif new > 0 then
      if after then
        api.nvim_buf_set_lines(buf, row, row, true, vim.list_extend(vim.list_slice(drawing.lines), { '' }))
      elseif before then
        api.nvim_buf_set_lines(buf, row - 1, row - 1, true, vim.list_extend({ '' }, drawing.lines))
      else
        api.nvim_buf_set_lines(buf, 0, -1, true, drawing.lines)
      end
    elseif old > 0 then
      if after then
        api.nvim_buf_set_lines(buf, row, row + old + 1, true, {})
      elseif before then
        api.nvim_buf_set_lines(buf, row - 1, row + old, true, {})
      else
        api.nvim_buf_set_lines(buf, 0, -1, true, { '' })
      end
    end
  end)
  for _, mark in ipairs(drawing and drawing.marks or {}) do
    writer.mark(self.buf, row + mark[1], mark[2], mark[3])
  end
  self.version = self.version + 1
end

--- Add a block at the end for `key`, drawn as `drawing`.
function Transcript:push(key, drawing)
  local block = { key = key }
  table.insert(self.blocks, block)
  self.by_key[key] = block
  self:place(#self.blocks, drawing)
end

-- -- a turn steered: its replies ---------------------------------------------------------
--- The position of top-level `key` in the transcript (searched from the end: the items that
--- change are the newest).
function Transcript:position(key)
  local items = self.model.items
  for index = #items, 1, -1 do
    if items[index].key == key then
      return index
    end
  end
end

--- The next item from `index` in `step` (-1, 1) that is not a checkpoint (the chat does not
--- draw checkpoints, which a turn takes before its first edit).
local function near(items, index, step)
  index = index + step
  while items[index] and items[index].kind == 'checkpoint' do
    index = index + step
  end
  return items[index] and index or nil
end

--- The reply a steer at `from` (searched in `step`) separates from the reply at `from`.
local function across_steer(items, from, step)
  local steer = near(items, from, step)
  if not steer or items[steer].kind ~= 'user' or not items[steer].steer then
    return nil
  end
  local reply = near(items, steer, step)
  return reply and items[reply].kind == 'reply' and reply or nil
end

--- A reply that goes on after a steer is part of the turn of the reply before the steer:
--- the turn's first reply (its header) and its last one (whose state the header shows).
function Transcript:turn_of(index)
  local items = self.model.items
  local first, last = index, index
  while across_steer(items, first, -1) do
    first = across_steer(items, first, -1)
  end
  while across_steer(items, last, 1) do
    last = across_steer(items, last, 1)
  end
  return first, last
end

function Transcript:drawing(item, index)
  if item.kind ~= 'reply' then
    return draw.item(item)
  end
  index = index or self:position(item.key)
  local first, last = self:turn_of(index)
  local items = self.model.items
  return draw.item(item, { continued = first ~= index, state = items[last].state })
end

--- After `key` changed: the header of its turn's first reply, when another reply's state or a
--- steer changed what it shows.
function Transcript:redraw_turn(key)
  local index = self:position(key)
  local item = index and self.model.items[index]
  if not item or not (item.kind == 'reply' or item.kind == 'user' and item.steer) then
    return
  end
  local reply = item.kind == 'reply' and index or near(self.model.items, index, -1)
  if not reply or self.model.items[reply].kind ~= 'reply' then
    return
  end
  local first = self:turn_of(reply)
  local head = self.model.items[first]
  if first ~= index and self.by_key[head.key] then
    self:place(self:index_of(self.by_key[head.key]), self:drawing(head, first))
  end
end

function Transcript:redraw(key)
  local block = self.by_key[key]
  local item = self.model:get(key)
  if block and item then
    self:place(self:index_of(block), self:drawing(item))
  elseif block then -- the item was removed
    local index = self:index_of(block)
    self:place(index, nil)
    table.remove(self.blocks, index)
    self.by_key[key] = nil
  elseif item then
    self:push(key, self:drawing(item))
  end
end

--- Fold regions of the buffer { {first, last, kind} }, by first row (cached per change).
function Transcript:regions()
  if self.cache_version ~= self.version then
    local found, row = {}, 0
    for _, block in ipairs(self.blocks) do
      local drawing = block.drawing
      local n = size(drawing)
      if n > 0 then
        for _, fold in ipairs(drawing.folds) do
          table.insert(found, { row + fold[1], row + fold[2], fold[3] })
        end
        row = row + n + 1
      end
    end
    self.cache, self.cache_version = found, self.version
  end
  return self.cache
end

-- -- the transcript -----------------------------------------------------------------------
--- Draw a page (oldest first) in place of everything; `header`: a note above it. One write
--- for the whole page (a long session's first paint).
function Transcript:show(items, header)
  self.model:reset(items)
  self.blocks, self.by_key = {}, {}
  local lines, marks = {}, {}
  local function add(key, drawing)
    local block = { key = key, drawing = drawing }
    table.insert(self.blocks, block)
    self.by_key[key] = block
    if #drawing.lines == 0 then
      return
    end
    if #lines > 0 then
      table.insert(lines, '')
    end
    for _, mark in ipairs(drawing.marks) do
      table.insert(marks, { #lines + mark[1], mark[2], mark[3] })
    end
    vim.list_extend(lines, drawing.lines)
  end
  if header then
    self.notes = self.notes + 1
    add(('note:%d'):format(self.notes), draw.note(header, 'note'))
  end
  for index, item in ipairs(items) do
    add(item.key, self:drawing(item, index))
  end
  self.version = self.version + 1
  writer.edit(self.buf, function(buf)
    api.nvim_buf_clear_namespace(buf, writer.ns, 0, -1)
    api.nvim_buf_set_lines(buf, 0, -1, true, #lines > 0 and lines or { '' })
  end)
  for _, mark in ipairs(marks) do
    writer.mark(self.buf, mark[1], mark[2], mark[3])
  end
end

--- Whether `block` is the last one with lines (what is appended to it ends the buffer).
function Transcript:at_end(block)
  for i = #self.blocks, 1, -1 do
    local candidate = self.blocks[i]
    if candidate == block then
      return true
    end
    if size(candidate.drawing) > 0 then
      return false
    end
  end
  return false
end

--- Text appended to the part a block ends with: appended to the buffer.
function Transcript:append_tail(block, op)
  local drawing = block.drawing
  if not drawing or drawing.tail ~= op.key or not self:at_end(block) then
    return false
  end
  local part = self.model:get(op.key)
  local text = part.kind == 'thinking' and draw.quote_more(op.text) or op.text
  local added = select(2, text:gsub('\n', ''))
  for _ = 1, added do
    table.insert(drawing.lines, '')
  end
  local fold = drawing.folds[#drawing.folds]
  local grows = fold and fold[4] == op.key and added > 0
  if grows then
    fold[2] = fold[2] + added
  end
  if added > 0 then
    -- Only the end of the buffer moved: the regions before it stay (no rebuild per delta).
    local current = self.cache_version == self.version
    self.version = self.version + 1
    if current then
      self.cache_version = self.version
      if grows then
        local last = self.cache[#self.cache]
        last[2] = last[2] + added
      end
    end
  end
  writer.append(self.buf, text)
  return true
end

--- A subagent's own items changed: rewrite its line under the `task` card.
function Transcript:child_changed(block, card)
  for _, child in ipairs(block.drawing and block.drawing.children or {}) do
    if child[2] == card then
      local text, status = draw.child_line(card)
      local row = self:start(self:index_of(block)) + child[1]
      writer.edit(self.buf, function(buf)
        api.nvim_buf_clear_namespace(buf, writer.ns, row, row + 1)
        api.nvim_buf_set_lines(buf, row, row + 1, true, { text })
      end)
      writer.mark(self.buf, row, 'subagent', status)
      return true
    end
  end
  return false
end

--- Apply one op of a patch and draw what it changed; false when this copy cannot follow it
--- (a reset, or a node it does not hold): the page must be read again.
function Transcript:apply(op)
  if op.op == 'reset' then
    return false
  end
  local item = self.model:apply(op)
  if not item then
    return false
  end
  local block = self.by_key[item]
  if block and op.op == 'text' then
    local node = self.model:get(op.key)
    if node.kind == 'tool' and node.status == 'streaming' then
      return true -- arguments are drawn once complete
    end
    if self:append_tail(block, op) then
      return true
    end
  end
  local key = op.op == 'append' and op.node.key or op.op == 'update' and op.node.key or op.key
  local card = block and self.model:card_of(op.op == 'append' and op.parent or key)
  local own = op.op ~= 'remove' and (op.op ~= 'append' or op.node.kind ~= 'subagent')
  if card and own and self:child_changed(block, card) then
    return true
  end
  self:redraw(item)
  if op.op ~= 'text' then
    self:redraw_turn(item)
  end
  return true
end

--- A line of the chat's own at the end (not an item of the transcript); returns its key.
function Transcript:note(text, kind, status)
  self.notes = self.notes + 1
  local key = ('note:%d'):format(self.notes)
  self:push(key, draw.note(text, kind, status))
  return key
end

--- Take a line of the chat's own away.
function Transcript:drop(key)
  if self.by_key[key] and not self.model:get(key) then
    self:redraw(key)
  end
end

-- -- what is under the cursor -----------------------------------------------------------
--- The tool part whose card holds (0-based) `row`, if any.
function Transcript:card_at(row)
  local start = 0
  for _, block in ipairs(self.blocks) do
    local n = size(block.drawing)
    if n > 0 then
      if row < start + n then
        for _, card in ipairs(block.drawing.cards) do
          if start + card[1] <= row and row <= start + card[2] then
            return card[3]
          end
        end
        return nil
      end
      start = start + n + 1
    end
  end
end

--- The transcript item whose block holds (0-based) `row`, if any (not the chat's own lines).
function Transcript:item_at(row)
  local start = 0
  for _, block in ipairs(self.blocks) do
    local n = size(block.drawing)
    if n > 0 then
      if row < start + n then
        return block.drawing.item
      end
      start = start + n + 1
    end
  end
end

--- The running subagent whose line is (0-based) `row`, if any: its id.
function Transcript:child_at(row)
  local start = 0
  for _, block in ipairs(self.blocks) do
    local n = size(block.drawing)
    if n > 0 then
      for _, child in ipairs(row < start + n and block.drawing.children or {}) do
        local card = child[2]
        if start + child[1] == row and (card.state == 'queued' or card.state == 'running') then
          return card.id
        end
      end
      start = start + n + 1
    end
  end
end

return M
