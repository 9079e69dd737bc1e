-- An advisor note's code actions that need the editor, run from stock
-- vim.lsp.buf.code_action(): "make a rule" shows the candidate rule and saves it once you
-- say so; "rewind to the checkpoint before this work" asks first, naming the files, as
-- :MementoRewind does.
-- params: file, prompt, rule_line, rewind_line (1-based lines of the two notes)
local t = require('memento_test')
local api = vim.api

local function pick(wanted)
  return function(items, opts, shown)
    local title = wanted[opts.kind]
    for i, line in ipairs(shown) do
      if title and line:find(title, 1, true) then
        return items[i]
      end
    end
  end
end

t.run(function()
  local p = t.params
  t.plugin()
  local buf, win = t.plugin_open(p.file), api.nvim_get_current_win()
  t.request('memento/prompt', { text = p.prompt })
  t.wait_event('MementoTurnFinished', 30000)
  t.wait('both advisor notes', 30000, function()
    return #vim.diagnostic.get(buf) == 2
  end)
  t.observe('edited', t.text(buf))

  -- Make a rule: the candidate opens in a view, a confirmation saves it.
  t.stub_select(pick({ codeaction = 'make a rule', ['memento.confirm'] = 'Save rule' }))
  api.nvim_win_set_cursor(win, { p.rule_line, 0 })
  vim.lsp.buf.code_action()
  t.wait('the rule saved', 30000, function()
    return t.said('rule saved to')
  end)
  local view = vim.tbl_filter(function(b)
    return api.nvim_buf_get_name(b):find('^memento://omfg/') ~= nil
  end, api.nvim_list_bufs())[1]
  t.observe('rule_view', { name = api.nvim_buf_get_name(view), lines = t.lines(view) })
  t.observe('rule_selects', t.selects)

  -- Rewind: the plugin's confirmation, not a rewind straight away.
  t.selects = {}
  api.nvim_set_current_win(win)
  t.stub_select(pick({ codeaction = 'rewind', ['memento.rewind'] = 'Conversation and files' }))
  api.nvim_win_set_cursor(win, { p.rewind_line, 0 })
  vim.lsp.buf.code_action()
  t.wait('the rewind', 15000, function()
    return t.said('Rewound')
  end)
  t.observe('rewind_selects', t.selects)
  t.observe('restored', t.text(buf))
  t.observe('modified', vim.bo[buf].modified)
  t.observe('errors', t.errors())
end)
