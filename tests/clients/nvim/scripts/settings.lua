-- The usual Neovim setup: provider settings in init_options and a partial `settings` table,
-- which Neovim sends as didChangeConfiguration right after initialize (and serves to
-- workspace/configuration). Observes a turn and the effective settings.
local t = require('memento_test')

t.run(function()
  t.start({ settings = t.params.settings })
  local ended = t.turn('hello')
  -- The reply as the transcript holds it: the newest item, its text parts.
  local page, page_err = t.request('memento/transcript', { limit = 1 })
  assert(page_err == nil, vim.inspect(page_err))
  local reply = page.items[1]
  assert(reply.kind == 'reply', vim.inspect(reply))
  local text = {}
  for _, part in ipairs(reply.parts) do
    if part.kind == 'text' then
      table.insert(text, part.text)
    end
  end
  t.observe('turn', ended)
  t.observe('text', table.concat(text))
  local settings, err = t.request('memento/settings', {})
  assert(err == nil, vim.inspect(err))
  t.observe('settings', settings)
  t.observe('context', (t.request('memento/context', nil)))
end)
