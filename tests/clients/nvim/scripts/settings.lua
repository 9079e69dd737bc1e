-- The usual Neovim setup: provider settings in init_options and a partial `settings` table,
-- which Neovim sends as didChangeConfiguration right after initialize (and serves to
-- workspace/configuration). Observes a turn and the effective settings.
local t = require('memento_test')

t.run(function()
  t.start({ settings = t.params.settings })
  local ended = t.turn('hello')
  local text = {}
  for _, delta in ipairs(t.notifications['memento/stream']) do
    if delta.turnId == ended.turnId and delta.stream == 'text' then
      table.insert(text, delta.delta)
    end
  end
  t.observe('turn', ended)
  t.observe('text', table.concat(text))
  local settings, err = t.request('memento/settings', {})
  assert(err == nil, vim.inspect(err))
  t.observe('settings', settings)
  t.observe('context', (t.request('memento/context', nil)))
end)
