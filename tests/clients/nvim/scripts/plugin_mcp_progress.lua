-- An MCP tool's progress in a real Neovim: the running tool card's status says how far the
-- server got, updated in place, and the finished card says done.
-- params: file, prompt, card (the start of the tool card's line)
local t = require('memento_test')

--- The statuses of the tool cards whose line starts with `card`, and how many such lines.
local function card_statuses(buf, card)
  local lines, found = t.lines(buf), {}
  local ns = require('memento.chat.writer').ns
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    local line = lines[mark[2] + 1] or ''
    if vim.startswith(line, card) and mark[4].virt_text then
      table.insert(found, mark[4].virt_text[1][1])
    end
  end
  return found
end

t.run(function()
  local p = t.params
  t.plugin()
  t.plugin_open(p.file)
  local chat = t.plugin_chat()
  vim.cmd('MementoPrompt ' .. p.prompt)
  local seen, cards = {}, 0
  t.wait('the second progress report on the card', 60000, function()
    local statuses = card_statuses(chat.buf, p.card)
    cards = math.max(cards, #statuses)
    for _, status in ipairs(statuses) do
      if seen[#seen] ~= status then
        table.insert(seen, status)
      end
    end
    return vim.tbl_contains(statuses, 'running · 2/3')
  end)
  t.observe('turn', t.wait_event('MementoTurnFinished', 60000))
  t.observe('seen', seen)
  t.observe('cards', cards)
  t.observe('final', card_statuses(chat.buf, p.card))
end)
