-- Acting on what the cursor is on in the chat: a stored relief step's line opens its audit
-- (where it can be undone); a message or a tool card is pinned. The chat sends the id the
-- server's item carries and draws what the server then patches (an undone step's line).
local api = vim.api
local async = require('memento.async')

local M = {}

local function given(value)
  return value ~= nil and value ~= vim.NIL
end

--- Inside async.run: the chat whose buffer is current and the cursor's (0-based) row.
local function here()
  local chat = require('memento.chat').for_buffer(api.nvim_get_current_buf())
  if not chat then
    async.fail('Memento: not in a Memento chat')
  end
  return chat, api.nvim_win_get_cursor(0)[1] - 1
end

--- On a prune, shake or compaction line: open the step's audit (`u` there undoes it).
function M.open()
  async.run(function()
    local chat, row = here()
    local item = chat.t:item_at(row)
    if not item or item.kind ~= 'relief' then
      async.fail('Memento: the cursor is not on a prune, shake or compaction line', vim.log.levels.WARN)
    end
    if not given(item.audit) then
      async.fail('Memento: this step was not stored (it failed, was skipped or is still running): no audit', vim.log.levels.WARN)
    end
    require('memento.relief').audit(item.audit, chat.client_id)
  end)
end

--- The entry a pin takes for the (0-based) `row`: a tool card's result, one of your
--- messages, or a reply (the model message its text ends with).
function M.entry_at(t, row)
  local card = t:card_at(row)
  if card then
    if not given(card.resultEntryId) then
      return nil, 'this tool call has no result yet: nothing to pin'
    end
    return card.resultEntryId
  end
  local item = t:item_at(row)
  if item and item.kind == 'user' then
    return item.entryId
  end
  if item and item.kind == 'reply' then
    if not given(item.entryId) then
      return nil, 'this reply has no text stored yet: nothing to pin'
    end
    return item.entryId -- the message its text ends with
  end
  return nil, 'the cursor is not on a message or a tool card'
end

--- On a message or a tool card: pin it (kept word for word through every relief step).
function M.pin()
  async.run(function()
    local chat, row = here()
    local entry, why = M.entry_at(chat.t, row)
    if not entry then
      async.fail('Memento: ' .. why, vim.log.levels.WARN)
    end
    require('memento.relief').pin_entry(entry, chat.client_id)
  end)
end

return M
