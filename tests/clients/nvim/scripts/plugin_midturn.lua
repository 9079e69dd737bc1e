-- A chat made while a turn runs (closed and opened again mid-turn) is drawn from
-- memento/transcript, which holds the running turn: its prompt and its tool card show once,
-- and the live turn goes on in place (stopped with :MementoStop).
-- params: file, prompt
local t = require('memento_test')

local function count(buf, text)
  local n = 0
  for _, line in ipairs(t.lines(buf)) do
    if line == text then
      n = n + 1
    end
  end
  return n
end

t.run(function()
  local p = t.params
  t.plugin()
  t.plugin_open(p.file)
  vim.cmd('MementoPrompt ' .. p.prompt)
  local first = require('memento.chat').get(t.client.id)
  t.wait('the partial reply', 30000, function()
    return first ~= nil and t.has(first.buf, 'partial answer')
  end)
  first:discard()

  local chat = t.plugin_chat()
  t.wait('the history drawn', 15000, function()
    return t.has(chat.buf, p.prompt) and t.has(chat.buf, '⚙ read')
  end)
  t.observe('during', t.lines(chat.buf))
  t.observe('prompts', count(chat.buf, p.prompt))
  t.observe('cards', #vim.tbl_filter(function(line)
    return vim.startswith(line, '⚙ read')
  end, t.lines(chat.buf)))
  vim.cmd('MementoStop')
  t.observe('ended', t.wait_event('MementoTurnFinished', 15000))
  t.wait('the header says stopped', 10000, function()
    for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(chat.buf, require('memento.chat.writer').ns, 0, -1, { details = true })) do
      if mark[4].line_hl_group == 'MementoChatAssistant' and mark[4].virt_text[1][1] == '⏹ stopped' then
        return true
      end
    end
    return false
  end)
  t.observe('after', t.lines(chat.buf))
  t.observe('errors', t.errors())
end)
