-- :MementoMcp in a real Neovim: the servers listed, a repository server trusted after its
-- definition was shown, and an MCP tool whose policy is ask answered through Neovim's own
-- permission prompt (window/showMessageRequest → vim.ui.select), as bash is.
-- params: file, prompt
local t = require('memento_test')

t.run(function()
  local p = t.params
  t.plugin()
  t.stub_select(function(items)
    for _, wanted in ipairs({ 'Trust and start', 'Allow once' }) do
      for _, item in ipairs(items) do
        local title = type(item) == 'table' and item.title or item
        if title == wanted then
          return item
        end
      end
    end
  end)
  t.plugin_open(p.file)
  local chat = t.plugin_chat()
  vim.cmd('MementoMcp')
  t.wait('the MCP list', 60000, function()
    return vim.fn.bufnr('memento://mcp') ~= -1
  end)
  t.observe('listed', t.lines(vim.fn.bufnr('memento://mcp')))
  vim.cmd('MementoMcp trust repo-clock')
  t.wait('the trust', 60000, function()
    return t.said('MCP server repo-clock is')
  end)
  vim.cmd('MementoMcp')
  t.wait('the list again', 60000, function()
    return table.concat(t.lines(vim.fn.bufnr('memento://mcp')), '\n'):find('repo%-clock%*%* running') ~= nil
  end)
  t.observe('after', t.lines(vim.fn.bufnr('memento://mcp')))
  vim.cmd('MementoPrompt ' .. p.prompt)
  t.observe('turn', t.wait_event('MementoTurnFinished', 60000))
  t.observe('selects', t.selects)
  t.observe('chat', t.lines(chat.buf))
  t.observe('messages', vim.tbl_map(function(m)
    return m.message
  end, t.messages))
end)
