-- The statusline says where the model's window came from, as the server reports it in
-- memento/context: here the server's own /props (the session asks it at start).
-- params: file
local t = require('memento_test')

t.run(function()
  local memento = t.plugin()
  t.plugin_open(t.params.file)
  t.wait('the window the server says', 20000, function()
    local context = memento.state().context
    return context and context.windowSource == 'server'
  end)
  t.observe('context', memento.state().context)
  t.observe('status', memento.status())
end)
