-- :checkhealth memento as a user runs it: after setup(), with no file open (so the check
-- starts a server of its own and stops it again), then with a server command that is not
-- there, then with one that exits at once. Each report's lines are recorded.
-- params: missing (a command name), dead (a command that exits)
local t = require('memento_test')

local function report()
  vim.cmd('checkhealth memento')
  local lines = t.lines(vim.api.nvim_get_current_buf())
  vim.cmd('bwipeout!')
  return lines
end

t.run(function()
  local memento = t.plugin()
  t.observe('healthy', report())
  t.observe('clients_after', vim.tbl_map(function(client)
    return client:is_stopped()
  end, vim.lsp.get_clients({ name = 'memento' })))
  local config = require('memento.config')
  config.options.cmd = { t.params.missing }
  t.observe('missing', report())
  config.options.cmd = t.params.dead
  t.observe('dead', report())
  t.observe('status', memento.status())
end)
