-- :checkhealth memento as a user runs it: after setup(), with no file open (so the check
-- starts a server of its own and stops it again); with the command as one string, as
-- `:help memento` allows (a quoted program path with a space in it); with a string that
-- cannot be split; with a server command that is not there, and with one that exits at
-- once; then after a file started the server and configure() pushed a change. Each report's
-- lines are recorded, and how the plugin splits the strings in params.split.
-- params: missing (a command name), dead (a command that exits), spaced (a program path
-- with a space), file, split (strings)
local t = require('memento_test')

local function report()
  vim.cmd('checkhealth memento')
  local lines = t.lines(vim.api.nvim_get_current_buf())
  vim.cmd('bwipeout!')
  return lines
end

t.run(function()
  local p = t.params
  local memento = t.plugin()
  local config = require('memento.config')
  t.observe('healthy', report())
  t.observe('clients_after', vim.tbl_map(function(client)
    return client:is_stopped()
  end, vim.lsp.get_clients({ name = 'memento' })))

  local list = config.options.cmd
  config.options.cmd = vim.fn.shellescape(p.spaced) .. ' -m memento lsp'
  t.observe('string_cmd', config.options.cmd)
  t.observe('string', report())
  config.options.cmd = "'" .. p.spaced .. ' -m memento lsp'
  t.observe('unsplittable', report())
  t.observe('split', vim.tbl_map(function(text)
    local words, why = config.split(text)
    return words or { error = why }
  end, p.split))

  config.options.cmd = { p.missing }
  t.observe('missing', report())
  config.options.cmd = p.dead
  t.observe('dead', report())

  config.options.cmd = list
  t.plugin_open(p.file)
  memento.configure({ compaction = { estimator = 'chars4' } })
  t.wait('the pushed setting', 10000, function()
    local result, err = t.request('memento/settings', nil)
    assert(result, vim.inspect(err))
    return result.sources['compaction.estimator'] == 'didChangeConfiguration'
  end)
  t.observe('configured', report())
  -- What Neovim answers if the server asks (workspace/configuration): setup()'s and configure()'s.
  local answer = vim.lsp.handlers['workspace/configuration'](nil, { items = { { section = 'memento' } } }, { client_id = t.client.id })
  t.observe('pulled', answer[1])
end)
