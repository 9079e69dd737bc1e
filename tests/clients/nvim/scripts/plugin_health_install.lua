-- :checkhealth memento with the plugin's default command (no `cmd` in setup()), in whatever
-- environment the test gives Neovim: a `memento` installed by `uv tool install` off PATH,
-- or none at all. Records the report's lines and the command the plugin chose.
local t = require('memento_test')

t.run(function()
  t.plugin()
  local config = require('memento.config')
  config.options.cmd = nil
  t.observe('command', config.command())
  vim.cmd('checkhealth memento')
  t.observe('report', t.lines(vim.api.nvim_get_current_buf()))
end)
