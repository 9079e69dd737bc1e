-- Writing into the chat buffer: lines replaced or text appended (modifiable only meanwhile),
-- marked lines (extmarks: line highlight, sign, status text), and the chat windows' folds
-- (regions the chat keeps, read by 'foldexpr'). Windows whose cursor is on the last line
-- follow what is written; the others stay where they are.
local api = vim.api

local M = {}

M.ns = api.nvim_create_namespace('memento.chat')

--- kind → { highlight group, sign }
M.KINDS = {
  user = { 'MementoChatUser', '▌' },
  assistant = { 'MementoChatAssistant', '▌' },
  tool = { 'MementoChatTool', '⚙' },
  tool_error = { 'MementoChatToolError', '✗' },
  retry = { 'MementoChatRetry', '↻' },
  compaction = { 'MementoChatCompaction', '≡' },
  advisor = { 'MementoChatAdvisor', '◆' },
  steer = { 'MementoChatSteer', '↳' },
  subagent = { 'MementoChatSubagent', '↳' },
  note = { 'MementoChatNote', '⟲' },
  mode = { 'MementoChatMode', '⇄' },
  error = { 'MementoChatError', '✗' },
}

--- buf → a function returning its fold regions { {first, last, kind} } sorted by first row.
local regions_of = {}

--- Windows showing the buffer with the cursor on its last line (or in a closed fold reaching it).
local function followers(buf)
  local last = api.nvim_buf_line_count(buf)
  local found = {}
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local row = api.nvim_win_get_cursor(win)[1]
    if row < last then
      row = api.nvim_win_call(win, function()
        local fold_end = vim.fn.foldclosedend(row)
        return fold_end == -1 and row or fold_end
      end)
    end
    if row >= last then
      table.insert(found, win)
    end
  end
  return found
end

--- Change the buffer (modifiable only meanwhile); windows that followed the end still do.
function M.edit(buf, change)
  if not api.nvim_buf_is_valid(buf) then
    return
  end
  local follow = followers(buf)
  vim.bo[buf].modifiable = true
  local ok, problem = pcall(change, buf)
  vim.bo[buf].modifiable = false
  local last = api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    if api.nvim_win_is_valid(win) then
      api.nvim_win_set_cursor(win, { last, 0 })
    end
  end
  if not ok then
    error(problem, 0)
  end
end

--- Append `text` where the buffer ends (its first line continues the last line).
function M.append(buf, text)
  M.edit(buf, function()
    local row = api.nvim_buf_line_count(buf) - 1
    local col = #api.nvim_buf_get_lines(buf, row, row + 1, true)[1]
    api.nvim_buf_set_text(buf, row, col, row, col, vim.split(text, '\n', { plain = true }))
  end)
end

--- Mark line `row` as `kind` (highlight, sign); `status` is shown at its end.
function M.mark(buf, row, kind, status, id)
  local spec = M.KINDS[kind]
  return api.nvim_buf_set_extmark(buf, M.ns, row, 0, {
    id = id,
    line_hl_group = spec[1],
    sign_text = spec[2],
    sign_hl_group = spec[1],
    virt_text = status and { status } or nil,
    virt_text_pos = 'eol',
  })
end

-- -- folds -------------------------------------------------------------------------------
function M.folds(buf, regions)
  regions_of[buf] = regions
end

local function region_at(regions, row)
  local low, high = 1, #regions
  while low <= high do
    local middle = math.floor((low + high) / 2)
    local region = regions[middle]
    if row < region[1] then
      high = middle - 1
    elseif row > region[2] then
      low = middle + 1
    else
      return region
    end
  end
end

local function regions_here(buf)
  local regions = regions_of[buf]
  return regions and regions() or {}
end

--- 'foldexpr' of chat windows: a fold per region (thinking, a tool card's details).
function M.foldexpr()
  local row = vim.v.lnum - 1
  local region = region_at(regions_here(api.nvim_get_current_buf()), row)
  if not region then
    return '0'
  end
  return row == region[1] and '>1' or '1'
end

local FOLD_LABELS = { thinking = 'thinking', card = 'details', summary = 'summary' }

--- 'foldtext' of chat windows.
function M.foldtext()
  local first = vim.fn.getline(vim.v.foldstart)
  local count = vim.v.foldend - vim.v.foldstart + 1
  local region = region_at(regions_here(api.nvim_get_current_buf()), vim.v.foldstart - 1)
  local label = region and FOLD_LABELS[region[3]] or 'more'
  if region and region[3] == 'card' then
    return ('    ▸ %s · %d lines'):format(label, count)
  end
  return ('%s  ▸ %s · %d lines'):format(first, label, count)
end

function M.forget(buf)
  regions_of[buf] = nil
end

return M
