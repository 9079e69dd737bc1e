-- Steering and stopping from the chat. The bash permission prompt comes through Neovim's own
-- window/showMessageRequest handler as a vim.ui.select; while the turn waits there, a
-- message typed in the chat input is sent as a steer. Then a turn that streams and hangs is
-- stopped with :MementoStop.
-- params: file, prompts (two), steer
local t = require('memento_test')
local api = vim.api

t.run(function()
  local p = t.params
  local memento = t.plugin()
  t.plugin_open(p.file)
  local chat = t.plugin_chat()

  local steered_before_answer
  t.stub_select(function(items, opts)
    if opts.kind ~= 'lsp_message' then
      return nil
    end
    api.nvim_buf_set_lines(chat.input, 0, -1, false, { p.steer })
    chat:send_input()
    t.wait('the steer in the chat', 10000, function()
      return t.has(chat.buf, '↳ ' .. p.steer)
    end)
    steered_before_answer = memento.status()
    for _, item in ipairs(items) do
      if item.title == 'Allow once' then
        return item
      end
    end
  end)
  vim.cmd('MementoPrompt ' .. p.prompts[1])
  local ended = t.wait_event('MementoTurnFinished', 30000)
  t.observe('first', ended)
  t.observe('permission', t.selects[1])
  t.observe('status_while_asking', steered_before_answer)
  t.observe('input_after_steer', t.lines(chat.input))

  -- A turn that streams and then hangs: the partial reply is there, :MementoStop ends it.
  vim.cmd('MementoPrompt ' .. p.prompts[2])
  t.wait('the partial reply', 15000, function()
    return t.has(chat.buf, 'partial answer')
  end)
  t.observe('status_running', memento.status())
  vim.cmd('MementoStop')
  local stopped = t.wait_event('MementoTurnFinished', 15000, 2)
  t.observe('stopped', stopped)
  t.observe('status_after', memento.status())
  t.observe('chat', t.lines(chat.buf))
  local headers = {}
  for _, mark in ipairs(api.nvim_buf_get_extmarks(chat.buf, require('memento.chat.writer').ns, 0, -1, { details = true })) do
    if mark[4].line_hl_group == 'MementoChatAssistant' then
      table.insert(headers, mark[4].virt_text[1][1])
    end
  end
  t.observe('headers', headers)
  vim.cmd('MementoStop')
  t.wait('the idle stop to say so', 10000, function()
    return t.said('no turn is running')
  end)
end)
