-- :MementoCompact as a user meets it on a short conversation: nothing old enough yet (it
-- says why), then a summary that would not make the context smaller (not applied, the chat's
-- divider and the message say why), then a compaction that applies: the message, the live
-- divider and the divider drawn again from the transcript give the server's figures.
-- Then :MementoCompactions opens the compaction's audit and :MementoUndoCompaction undoes it.
-- params: file, prompts (four)
local t = require('memento_test')
local api = vim.api

local turns = 0
local function turn(text)
  turns = turns + 1
  require('memento').prompt(text)
  t.wait_event('MementoTurnFinished', 30000, turns)
end

local function compact(count)
  vim.cmd('MementoCompact')
  t.wait(':MementoCompact to answer', 30000, function()
    return #t.messages >= count
  end)
  return t.messages[#t.messages].message
end

t.run(function()
  local p = t.params
  t.plugin()
  t.plugin_open(p.file)
  local chat = t.plugin_chat()
  turn(p.prompts[1])
  t.observe('nothing', compact(1))

  turn(p.prompts[2])
  t.observe('skipped', compact(2))
  t.observe('skipped_events', t.fired('MementoCompacted'))
  t.wait('the skipped divider', 10000, function()
    return t.has(chat.buf, '── not compacted:')
  end)
  t.observe('skipped_chat', t.lines(chat.buf))

  turn(p.prompts[3])
  t.observe('compacted', compact(3))
  t.wait('the divider', 10000, function()
    return t.has(chat.buf, '── compacted the context:')
  end)
  t.observe('live', t.lines(chat.buf))
  t.observe('listed', (t.request('memento/compaction/list', nil)).compactions)
  t.observe('context', (t.request('memento/context', nil)))

  vim.cmd('bwipeout! ' .. chat.buf .. ' ' .. chat.input)
  vim.cmd('MementoChat')
  local again = require('memento.chat').get(t.client.id)
  t.wait('the history drawn', 10000, function()
    return again.loading == nil and api.nvim_buf_line_count(again.buf) > 1
  end)
  t.observe('history', t.lines(again.buf))

  -- :MementoCompactions, <CR> on the compaction: its audit; then undo it.
  vim.cmd('MementoCompactions')
  t.wait('the compactions view', 10000, function()
    return api.nvim_buf_get_name(0):find('memento://compactions', 1, true) ~= nil
  end)
  local list = api.nvim_get_current_buf()
  api.nvim_win_set_cursor(0, { t.row_of(list, '^## .*compacted the context'), 0 })
  api.nvim_feedkeys(api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  t.wait('the audit', 10000, function()
    return api.nvim_buf_get_name(0):find('memento://relief/', 1, true) ~= nil
  end)
  t.observe('audit', t.lines(0))
  local id = api.nvim_buf_get_name(0):match('memento://relief/(%x+)$')
  local said = #t.messages
  vim.cmd('MementoUndoCompaction ' .. id)
  t.wait(':MementoUndoCompaction to answer', 10000, function()
    return #t.messages > said
  end)
  t.observe('undone', t.messages[#t.messages].message)
  t.observe('listed_after_undo', (t.request('memento/compaction/list', nil)).compactions)
  turn(p.prompts[4])
  t.observe('errors', t.errors())
end)
