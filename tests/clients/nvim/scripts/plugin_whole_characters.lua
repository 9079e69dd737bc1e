-- A reply whose characters outside the BMP the provider cut in two (each half a lone \udXXX
-- escape in its own event): the chat shows it whole, live and drawn again from history.
-- params: file, prompt, text, thought
local t = require('memento_test')

t.run(function()
  local p = t.params
  t.plugin()
  t.plugin_open(p.file)
  local chat = t.plugin_chat()
  vim.cmd('MementoPrompt ' .. p.prompt)
  t.observe('ended', t.wait_event('MementoTurnFinished', 30000))
  t.wait('the reply in the chat', 10000, function()
    return t.has(chat.buf, p.text)
  end)
  t.observe('live', t.lines(chat.buf))
  chat:discard()
  local again = t.plugin_chat()
  t.wait('the reply drawn from history', 10000, function()
    return t.has(again.buf, p.text)
  end)
  t.observe('history', t.lines(again.buf))
  t.observe('errors', t.errors())
end)
