-- The chat's own keys on what the server drew: `gp` on a tool card pins its result, <CR> on
-- the compaction line opens the step's audit, `u` there undoes it and the chat's line then
-- reads undone (the server's patch); `gp` on a reply pins it. Keys on lines they do not act
-- on say so.
-- params: file, prompts (four: the first reads the file)
local t = require('memento_test')
local api = vim.api

local turns = 0
local function turn(text)
  turns = turns + 1
  require('memento').prompt(text)
  t.wait_event('MementoTurnFinished', 30000, turns)
end

local function press(keys)
  api.nvim_feedkeys(api.nvim_replace_termcodes(keys, true, false, true), 'x', false)
end

--- The status drawn at the end of each marked line: { line, status }.
local function statuses(buf)
  local found = {}
  for _, mark in ipairs(api.nvim_buf_get_extmarks(buf, require('memento.chat.writer').ns, 0, -1, { details = true })) do
    local virt = mark[4].virt_text
    if virt then
      table.insert(found, { t.lines(buf)[mark[2] + 1], virt[1][1] })
    end
  end
  return found
end

--- Press `keys` and wait for the next message; returns it.
local function said(keys)
  local count = #t.messages
  press(keys)
  t.wait(keys .. ' to answer', 30000, function()
    return #t.messages > count
  end)
  return t.messages[#t.messages].message
end

t.run(function()
  local p = t.params
  t.plugin()
  t.plugin_open(p.file)
  local chat = t.plugin_chat()
  turn(p.prompts[1])
  local win = vim.fn.win_findbuf(chat.buf)[1]
  api.nvim_set_current_win(win)

  api.nvim_win_set_cursor(win, { t.row_of(chat.buf, '^## Memento'), 0 })
  t.observe('open_elsewhere', said('<CR>'))
  api.nvim_win_set_cursor(win, { t.row_of(chat.buf, '^⚙ read'), 0 })
  t.observe('pinned', said('gp'))
  t.wait('the card marked pinned', 10000, function()
    return vim.iter(statuses(chat.buf)):any(function(s)
      return s[2]:find('pinned', 1, true) ~= nil
    end)
  end)
  t.observe('pins', (t.request('memento/pins', nil)).pins)
  t.observe('pinned_marks', statuses(chat.buf))

  turn(p.prompts[2])
  -- The reply is pinned after the next turn: a pin record right before a turn's first message
  -- makes the cut there split that turn (pi's cut point), one more summary request.
  turn(p.prompts[3])
  api.nvim_set_current_win(win)
  api.nvim_win_set_cursor(win, { t.row_of(chat.buf, '^Plan noted'), 0 })
  t.observe('pinned_reply', said('gp'))
  t.wait('the reply marked pinned', 10000, function()
    return #vim.tbl_filter(function(s)
      return s[2]:find('pinned', 1, true) ~= nil
    end, statuses(chat.buf)) == 2
  end)
  t.observe('pinned_reply_marks', statuses(chat.buf))
  vim.cmd('MementoCompact')
  t.wait('the divider', 30000, function()
    return t.has(chat.buf, '── compacted the context:')
  end)
  api.nvim_set_current_win(win)
  api.nvim_win_set_cursor(win, { t.row_of(chat.buf, '^── compacted the context:'), 0 })
  t.observe('pin_elsewhere', said('gp'))
  turn(p.prompts[4])
  t.observe('compacted_chat', t.lines(chat.buf))

  api.nvim_set_current_win(win)
  api.nvim_win_set_cursor(win, { t.row_of(chat.buf, '^── compacted the context:'), 0 })
  press('<CR>')
  t.wait('the audit', 10000, function()
    return api.nvim_buf_get_name(0):find('memento://relief/', 1, true) ~= nil
  end)
  local audit = api.nvim_get_current_buf()
  t.observe('audit', t.lines(audit))
  t.observe('audit_id', api.nvim_buf_get_name(audit):match('memento://relief/(%x+)$'))
  t.observe('undone', said('u'))
  t.wait('the audit drawn again', 10000, function()
    return t.has(audit, '- Undone by: ')
  end)
  t.observe('audit_after', t.lines(audit))
  t.wait('the chat line undone', 10000, function()
    return t.has(chat.buf, '(undone) ──')
  end)
  t.observe('undone_chat', t.lines(chat.buf))
  turn(p.prompts[1] .. ' again')
  t.observe('errors', t.errors())
end)
