-- Neovim restarted in the same workspace: the server reopens the last session, and the chat
-- shows its conversation as soon as it is opened, the statusline its context meter.
-- params: file, prompt (nil: the second start, which sends nothing)
local t = require('memento_test')

t.run(function()
  local p = t.params
  local memento = t.plugin()
  t.plugin_open(p.file)
  if p.prompt then
    vim.cmd('MementoPrompt ' .. p.prompt)
    t.observe('turn', t.wait_event('MementoTurnFinished', 30000))
  else
    -- The session reopened, then the meter's figures for it (MementoContext, as statuslines
    -- hear it; the server counts a reopened session off its event loop, so a first answer
    -- may still be the empty session's).
    t.wait('the meter of the session reopened', 15000, function()
      local reopened = false
      for _, event in ipairs(t.events) do
        reopened = reopened or event.pattern == 'MementoSession'
        if reopened and event.pattern == 'MementoContext' and event.data.tokens > 0 then
          return true
        end
      end
      return false
    end)
  end
  t.observe('status', memento.status())
  t.observe('meter_tokens', require('memento.status').data(t.client.id).context.tokens)
  t.observe('server_tokens', t.request('memento/context', nil).tokens)
  local chat = t.plugin_chat()
  t.wait('the conversation drawn', 10000, function()
    return chat.loading == nil and t.has(chat.buf, '## Memento')
  end)
  t.observe('chat', t.lines(chat.buf))
end)
