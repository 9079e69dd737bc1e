-- The plugin's scenario, as a user goes through it: open a file, :MementoChat, send a prompt
-- from the input, the reply streams into the chat; the advisor's note is a diagnostic on the
-- file (]d, open_float, vim.lsp.buf.code_action() and Dismiss, all stock); :MementoCheckpoint;
-- a turn edits the file; :MementoRewind through vim.ui.select puts it back; the statusline.
-- The server command is one string, as a user writes it in setup() (`:help memento`).
-- params: file, before, prompts (two), note, checkpoint (label)
local t = require('memento_test')
local api = vim.api

t.run(function()
  local p = t.params
  local memento = t.plugin({ cmd = vim.fn.shellescape(t.config.python) .. ' -m memento lsp' })
  vim.cmd.edit(t.config.workspace .. '/' .. p.file)
  local file_buf, file_win = api.nvim_get_current_buf(), api.nvim_get_current_win()
  t.plugin_client()

  -- The chat: a markdown scratch buffer in a split with the input below it.
  vim.cmd('MementoChat')
  local chat = require('memento.chat').get(t.client.id)
  local chat_win = vim.fn.win_findbuf(chat.buf)[1]
  t.observe('chat_buffer', {
    name = api.nvim_buf_get_name(chat.buf),
    filetype = vim.bo[chat.buf].filetype,
    buftype = vim.bo[chat.buf].buftype,
    modifiable = vim.bo[chat.buf].modifiable,
    windows = #api.nvim_tabpage_list_wins(0),
    in_input = api.nvim_get_current_buf() == chat.input,
  })

  -- Typed in the input, sent with <CR>; the reply streams in, the chat window follows it.
  api.nvim_buf_set_lines(chat.input, 0, -1, false, { p.prompts[1] })
  api.nvim_feedkeys(vim.keycode('<CR>'), 'mx', false)
  local first = t.wait_event('MementoTurnFinished', 30000)
  t.wait('the reply in the chat', 5000, function()
    return t.has(chat.buf, 'it counts.')
  end)
  t.observe('first_turn', first)
  t.observe('chat_after_first', t.lines(chat.buf))
  t.observe('input_after_send', t.lines(chat.input))
  t.observe('followed', api.nvim_win_get_cursor(chat_win)[1] == api.nvim_buf_line_count(chat.buf))
  t.observe('status', memento.status())
  t.observe('context', (t.request('memento/context', nil)))

  -- The advisor's note: a plain diagnostic on the file.
  t.wait('the advisor diagnostic', 30000, function()
    return #vim.diagnostic.get(file_buf) > 0
  end)
  local diagnostic = vim.diagnostic.get(file_buf)[1]
  t.observe('diagnostic', { message = diagnostic.message, source = diagnostic.source, lnum = diagnostic.lnum, severity = diagnostic.severity })
  t.wait_event('MementoAdvisorNote', 15000)
  t.observe('advisor_events', t.fired('MementoAdvisorNote'))
  api.nvim_set_current_win(file_win)
  api.nvim_win_set_cursor(file_win, { 1, 0 })
  vim.cmd.normal(']d')
  t.observe('after_jump', api.nvim_win_get_cursor(file_win)[1])
  local float_buf = vim.diagnostic.open_float()
  t.observe('float', float_buf and t.lines(float_buf) or vim.NIL)
  vim.cmd('fclose!')
  t.stub_select(function(items, opts, shown)
    for i, title in ipairs(shown) do
      if title:find('dismiss') then
        return items[i]
      end
    end
  end)
  vim.lsp.buf.code_action()
  t.wait('Dismiss to clear the diagnostic', 15000, function()
    return #vim.diagnostic.get(file_buf) == 0
  end)
  t.observe('code_actions', t.selects[#t.selects])

  -- A checkpoint, then a turn that edits the file (through applyEdit).
  vim.cmd('MementoCheckpoint ' .. p.checkpoint)
  t.wait('the checkpoint', 15000, function()
    return t.said('checkpoint')
  end)
  vim.cmd('MementoPrompt ' .. p.prompts[2])
  t.wait_event('MementoTurnFinished', 30000, 2)
  t.wait('the edit in the buffer', 5000, function()
    return t.text(file_buf) ~= p.before
  end)
  t.observe('edited', t.text(file_buf))
  t.observe('chat_after_edit', t.lines(chat.buf))
  local card_row = t.row_of(chat.buf, '^⚙ edit')
  t.observe('card_folded', api.nvim_win_call(chat_win, function()
    return vim.fn.foldclosed(card_row + 1) == card_row + 1
  end))

  -- :MementoRewind: the picker, then the confirmation naming the file and the choices.
  t.selects = {}
  t.stub_select(function(items, opts, shown)
    if opts.kind == 'memento.checkpoint' then
      for i, line in ipairs(shown) do
        if line:find(p.checkpoint, 1, true) then
          return items[i]
        end
      end
    elseif opts.kind == 'memento.rewind' then
      return items[1]
    end
  end)
  vim.cmd('MementoRewind')
  t.wait('the rewind', 15000, function()
    return t.said('Rewound')
  end)
  t.observe('rewind_selects', t.selects)
  t.observe('restored', t.text(file_buf))
  t.observe('restored_modified', vim.bo[file_buf].modified)
  t.wait('the chat redrawn from the rewound history', 10000, function()
    return not t.has(chat.buf, '⚙ edit')
  end)
  t.observe('chat_after_rewind', t.lines(chat.buf))

  vim.cmd('MementoUndoRewind')
  t.wait('the undo', 15000, function()
    return t.text(file_buf) ~= p.before
  end)
  t.observe('after_undo', t.text(file_buf))
  t.observe('final_status', memento.status())
  t.observe('final_context', (t.request('memento/context', nil)))
  t.observe('turn_events', vim.tbl_map(function(event)
    return { event.pattern, event.data.state }
  end, vim.tbl_filter(function(event)
    return vim.startswith(event.pattern, 'MementoTurn')
  end, t.events)))
  t.observe('errors', t.errors())
  t.observe('printed', t.printed)
end)
