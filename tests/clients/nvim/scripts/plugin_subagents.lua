-- Subagents in the chat: each child is a line under the `task` card, live while it runs;
-- its own text never enters the parent's transcript; the stop key on a child's line stops
-- that child alone; drawn again from the transcript, the children's final lines are back.
-- params: file, prompt
local t = require('memento_test')
local api = vim.api

t.run(function()
  local p = t.params
  local memento = t.plugin()
  t.plugin_open(p.file)
  local chat = t.plugin_chat()
  vim.cmd('MementoPrompt ' .. p.prompt)
  local ok, err = pcall(t.wait, 'the quick child done and the slow one waiting', 60000, function()
    return t.has(chat.buf, '↳ edit-a (edit-a) completed')
      and t.has(chat.buf, '↳ slow (slow) waiting for the model')
  end)
  if not ok then
    error(('%s\nthe chat:\n%s'):format(err, table.concat(t.lines(chat.buf), '\n')))
  end
  t.observe('live', t.lines(chat.buf))
  local marks = {}
  for _, mark in ipairs(api.nvim_buf_get_extmarks(chat.buf, require('memento.chat.writer').ns, 0, -1, { details = true })) do
    if mark[4].line_hl_group == 'MementoChatSubagent' then
      table.insert(marks, { line = t.lines(chat.buf)[mark[2] + 1], status = mark[4].virt_text[1][1] })
    end
  end
  t.observe('marks', marks)
  -- The cursor on the slow child's line, then the stop key's action.
  local win = chat:windows()
  api.nvim_set_current_win(win)
  api.nvim_win_set_cursor(win, { t.row_of(chat.buf, '↳ slow'), 0 })
  memento.stop()
  local ended = t.wait_event('MementoTurnFinished', 30000)
  t.observe('ended', ended)
  t.wait('the parent answer', 10000, function()
    return t.has(chat.buf, 'One child was stopped.')
  end)
  t.observe('chat', t.lines(chat.buf))
  t.observe('subagent_events', t.fired('MementoSubagent'))
  -- The chat made anew from memento/transcript: each child's final line under its task card.
  vim.cmd('bwipeout! ' .. chat.buf .. ' ' .. chat.input)
  vim.cmd('MementoChat')
  local again = require('memento.chat').get(t.client.id)
  t.wait('the history drawn', 10000, function()
    return again.loading == nil and t.has(again.buf, 'One child was stopped.')
  end)
  t.observe('history', t.lines(again.buf))
end)
