-- The provider's figures in a real Neovim: the statusline says how much of the newest prompt
-- the provider's cache read, and a compaction the provider wrote itself says so in the chat
-- divider and in :MementoCompactions.
-- params: file, prompts (two)
local t = require('memento_test')

t.run(function()
  local p = t.params
  local memento = t.plugin()
  t.plugin_open(p.file)
  local chat = t.plugin_chat()
  for i, prompt in ipairs(p.prompts) do
    vim.cmd('MementoPrompt ' .. prompt)
    local ended = t.wait_event('MementoTurnFinished', 30000, i)
    assert(ended.state == 'finished', vim.inspect(ended))
  end
  t.wait('the cache share in the statusline', 10000, function()
    return memento.status():find('cached') ~= nil
  end)
  t.observe('status', memento.status())
  vim.cmd('MementoCompact')
  t.wait_event('MementoCompacted', 30000)
  t.wait('the compaction divider', 10000, function()
    return table.concat(t.lines(chat.buf), '\n'):find('compacted the context:') ~= nil
  end)
  t.observe('chat', t.lines(chat.buf))
  vim.cmd('MementoCompactions')
  t.wait('the compactions view', 10000, function()
    return vim.api.nvim_buf_get_name(0):find('memento://compactions', 1, true) ~= nil
  end)
  t.observe('compactions', t.lines(0))
end)
