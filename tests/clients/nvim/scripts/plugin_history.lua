-- A conversation drawn live, then drawn again from memento/transcript when the chat buffer is
-- made anew: thinking folded, a TTSR retry marked (the dropped text gone), a tool card, a
-- compaction divider (with its User events, LspProgress and the statusline meanwhile).
-- params: file, prompts (three), compact_instructions
local t = require('memento_test')
local api = vim.api

local function marks(buf)
  local found = {}
  local ns = require('memento.chat.writer').ns
  for _, mark in ipairs(api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    local details = mark[4]
    if details.line_hl_group then
      table.insert(found, {
        line = api.nvim_buf_get_lines(buf, mark[2], mark[2] + 1, false)[1],
        group = details.line_hl_group,
        status = details.virt_text and details.virt_text[1][1] or vim.NIL,
      })
    end
  end
  return found
end

local function folds(win, buf)
  return api.nvim_win_call(win, function()
    local found, row = {}, 1
    while row <= api.nvim_buf_line_count(buf) do
      local last = vim.fn.foldclosedend(row)
      if last ~= -1 then
        table.insert(found, { row, last, vim.fn.foldtextresult(row) })
        row = last + 1
      else
        row = row + 1
      end
    end
    return found
  end)
end

t.run(function()
  local p = t.params
  local memento = t.plugin()
  t.plugin_open(p.file)
  local chat = t.plugin_chat()

  local progress = {}
  api.nvim_create_autocmd('LspProgress', {
    callback = function(args)
      local value = args.data.params.value
      table.insert(progress, { kind = value.kind, title = value.title or vim.NIL })
    end,
  })
  local during = {}
  api.nvim_create_autocmd('User', {
    pattern = 'MementoCompacting',
    callback = function()
      table.insert(during, memento.status())
    end,
  })

  for i, prompt in ipairs(p.prompts) do
    vim.cmd('MementoPrompt ' .. prompt)
    local ended = t.wait_event('MementoTurnFinished', 30000, i)
    assert(ended.state == 'finished', vim.inspect(ended))
  end
  t.observe('retrying', t.fired('MementoTurnRetrying'))
  vim.cmd('MementoCompact ' .. p.compact_instructions)
  t.wait_event('MementoCompacted', 30000)
  t.wait('the compaction divider', 10000, function()
    return table.concat(t.lines(chat.buf), '\n'):find('compacted the context:') ~= nil
  end)
  t.wait('the compaction progress to end', 10000, function()
    return #vim.tbl_filter(function(v) return v.kind == 'end' end, progress) > 0
  end)
  t.observe('progress', progress)
  t.observe('status_during', during)
  t.observe('compacting', t.fired('MementoCompacting'))
  t.observe('compacted', t.fired('MementoCompacted'))

  local chat_win = vim.fn.win_findbuf(chat.buf)[1]
  t.observe('live', t.lines(chat.buf))
  t.observe('live_marks', marks(chat.buf))
  t.observe('live_folds', folds(chat_win, chat.buf))

  -- The buffer wiped and made anew: drawn from memento/transcript.
  vim.cmd('bwipeout! ' .. chat.buf .. ' ' .. chat.input)
  vim.cmd('MementoChat')
  local again = require('memento.chat').get(t.client.id)
  assert(again.buf ~= chat.buf, 'a new chat buffer')
  t.wait('the history drawn', 10000, function()
    return again.loading == nil and api.nvim_buf_line_count(again.buf) > 1
  end)
  local again_win = vim.fn.win_findbuf(again.buf)[1]
  t.observe('history', t.lines(again.buf))
  t.observe('history_marks', marks(again.buf))
  t.observe('history_folds', folds(again_win, again.buf))
end)
