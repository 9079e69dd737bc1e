-- Glob rules follow the buffer in front: the plugin sends memento/activeDocument when a file
-- buffer is entered. Open the two files (the second one opened last), go back to the first,
-- prompt; then enter the second, prompt again.
-- params: files (two), prompts (two)
local t = require('memento_test')

--- A prompt sent as is (the chat stays closed); the `n`th turn's end.
local function turn(text, n)
  t.request('memento/prompt', { text = text })
  return t.wait_event('MementoTurnFinished', 30000, n)
end

t.run(function()
  local p = t.params
  t.plugin()
  local first = t.plugin_open(p.files[1])
  vim.cmd.edit(t.config.workspace .. '/' .. p.files[2])
  local second = vim.api.nvim_get_current_buf()
  t.wait('both files attached', 10000, function()
    return vim.lsp.buf_is_attached(first, t.client.id) and vim.lsp.buf_is_attached(second, t.client.id)
  end)
  vim.cmd.buffer(first)
  t.observe('first', turn(p.prompts[1], 1))
  vim.cmd.buffer(second)
  t.observe('second', turn(p.prompts[2], 2))
  t.observe('rules', (t.request('memento/rules/list', nil)))
end)
