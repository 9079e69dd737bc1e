-- Documents of every shape in buffers, one turn that edits them all, and each buffer's text as
-- Neovim would write it; then the diagnostics on lines with astral characters, and the code
-- actions on them, as the server sent them (`user_data.lsp`) and as Neovim placed them.
-- params: encoding, files (edited), lint (files whose diagnostics to read), sources (how
-- many diagnostics each of those waits for), action (file, line: code actions to ask for)
local t = require('memento_test')

t.run(function()
  local p = t.params
  t.start({ encodings = { p.encoding } })
  t.observe('encoding', t.client.offset_encoding)
  local bufs = {}
  for _, name in ipairs(p.files) do
    bufs[name] = t.open(name)
  end
  local ended = t.turn('go', 120000)
  t.observe('state', ended.state)
  local texts = {}
  for name, buf in pairs(bufs) do
    texts[name] = t.file_text(buf)
  end
  t.observe('texts', texts)

  local diagnostics = {}
  for name, count in pairs(p.lint) do
    local buf = t.open(name)
    t.wait(count .. ' diagnostics on ' .. name, 30000, function()
      return #vim.diagnostic.get(buf) >= count
    end)
    diagnostics[name] = {}
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      local line = vim.api.nvim_buf_get_lines(buf, d.lnum, d.lnum + 1, false)[1]
      table.insert(diagnostics[name], {
        source = d.source,
        range = d.user_data.lsp.range,
        placed = { d.lnum, d.col, d.end_lnum, d.end_col },
        end_line_bytes = #vim.api.nvim_buf_get_lines(buf, d.end_lnum, d.end_lnum + 1, false)[1],
        line = line,
      })
    end
  end
  t.observe('diagnostics', diagnostics)

  local buf = bufs[p.action.file] or t.open(p.action.file)
  local position = { line = p.action.line, character = 0 }
  local actions = t.request('textDocument/codeAction', {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    range = { start = position, ['end'] = position },
    context = { diagnostics = {} },
  })
  local ranges = {}
  for _, action in ipairs(actions or {}) do
    for _, d in ipairs(action.diagnostics or {}) do
      table.insert(ranges, d.range)
    end
  end
  t.observe('action_ranges', ranges)
end)
