-- The chat's window stays where the user moved it while a reply streams; `gd` on an edit's
-- tool card opens the diff against the checkpoint before the edit; :MementoSession new
-- starts an empty chat, :MementoSession (the picker) goes back to the first session.
-- params: file, prompts (two)
local t = require('memento_test')
local api = vim.api

t.run(function()
  local p = t.params
  t.plugin()
  t.plugin_open(p.file)
  local chat = t.plugin_chat()
  local chat_win = vim.fn.win_findbuf(chat.buf)[1]

  vim.cmd('MementoPrompt ' .. p.prompts[1])
  t.wait_event('MementoTurnFinished', 30000)
  local card_row = t.row_of(chat.buf, '^⚙ edit')

  -- The user reads the card while the next reply streams: the window stays on it.
  api.nvim_set_current_win(chat_win)
  api.nvim_win_set_cursor(chat_win, { card_row, 0 })
  vim.cmd('MementoPrompt ' .. p.prompts[2])
  t.wait_event('MementoTurnFinished', 30000, 2)
  t.observe('cursor_after_stream', api.nvim_win_get_cursor(chat_win)[1] == card_row)
  t.observe('card_row', card_row)
  t.observe('lines_after_stream', api.nvim_buf_line_count(chat.buf))

  -- gd on the card: a diff tab, the checkpoint's copy against the file.
  api.nvim_set_current_win(chat_win)
  api.nvim_win_set_cursor(chat_win, { card_row, 0 })
  local tabs = #api.nvim_list_tabpages()
  api.nvim_feedkeys('gd', 'mx', false)
  t.wait('the diff tab', 15000, function()
    return #api.nvim_list_tabpages() > tabs
  end)
  local diff = {}
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    local buf = api.nvim_win_get_buf(win)
    table.insert(diff, { name = api.nvim_buf_get_name(buf), diff = vim.wo[win].diff, text = t.text(buf) })
  end
  t.observe('diff', diff)
  vim.cmd.tabclose()

  -- Sessions: a new one (the chat starts empty), then back to the first through the picker.
  vim.cmd('MementoSession new')
  t.wait('the new session', 15000, function()
    return t.said('new session')
  end)
  t.wait('the chat emptied', 10000, function()
    return not t.has(chat.buf, p.prompts[1])
  end)
  t.observe('chat_new_session', t.lines(chat.buf))
  t.stub_select(function(items, opts, shown)
    for i, line in ipairs(shown) do
      if opts.kind == 'memento.session' and line:find(p.prompts[1], 1, true) then
        return items[i]
      end
    end
  end)
  vim.cmd('MementoSession')
  t.wait('the first session back in the chat', 15000, function()
    return t.has(chat.buf, p.prompts[1])
  end)
  t.observe('session_select', t.selects[#t.selects])
  t.observe('chat_first_session', t.lines(chat.buf))
  t.observe('errors', t.errors())
end)
