-- :MementoMode ask|act: the server's memento/mode, the statusline saying "ask", a marked line
-- in the chat, User MementoMode; a turn in ask mode changes no file.
-- params: file, prompt
local t = require('memento_test')

t.run(function()
  local p = t.params
  local memento = t.plugin()
  local buf = t.plugin_open(p.file)
  local chat = t.plugin_chat()
  t.wait('the mode the server starts in', 10000, function()
    return memento.state().mode ~= nil
  end)
  t.observe('initial', memento.state().mode)

  vim.cmd('MementoMode ask')
  t.wait_event('MementoMode', 10000)
  t.wait('the notice', 10000, function()
    return t.said('ask mode')
  end)
  t.observe('status_ask', memento.status())
  t.observe('server_mode', t.request('memento/mode', nil))
  vim.cmd('MementoPrompt ' .. p.prompt)
  t.observe('turn', t.wait_event('MementoTurnFinished', 30000))
  t.observe('text', t.text(buf))
  vim.cmd('MementoMode')
  t.wait('the mode said', 10000, function()
    return #t.messages >= 2
  end)

  vim.cmd('MementoMode act')
  t.wait_event('MementoMode', 10000, 2)
  -- The notice follows the request's answer, which may come after the notification.
  t.wait('the act notice', 10000, function()
    return t.said('act mode')
  end)
  t.observe('status_act', memento.status())
  t.observe('events', t.fired('MementoMode'))
  t.observe('messages', vim.tbl_map(function(m)
    return m.message
  end, t.messages))
  t.observe('chat', t.lines(chat.buf))
  -- An error message echoed while a command runs is an exception in a script: caught here.
  pcall(vim.cmd, 'MementoMode sideways')
  t.observe('refused', t.said(':MementoMode sideways? (ask or act)'))
end)
