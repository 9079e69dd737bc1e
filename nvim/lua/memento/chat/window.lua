-- The chat's windows: the transcript in a split (right, left, bottom) or a float, with the
-- input below it; the transcript window folds thinking and tool output and starts at the
-- end, so it follows the stream.
local api = vim.api
local config = require('memento.config')

local M = {}

local function size(share, total)
  return share > 1 and math.floor(share) or math.max(10, math.floor(total * share))
end

function M.windows(chat)
  local chat_win = vim.fn.win_findbuf(chat.buf)[1]
  local input_win = vim.fn.win_findbuf(chat.input)[1]
  return chat_win, input_win
end

local function chat_window_options(win)
  local wo = vim.wo[win]
  wo.wrap, wo.linebreak, wo.number, wo.relativenumber = true, true, false, false
  wo.signcolumn, wo.conceallevel, wo.spell = 'yes:1', 2, false
  wo.foldmethod = 'expr'
  wo.foldexpr = "v:lua.require'memento.chat.writer'.foldexpr()"
  wo.foldtext = "v:lua.require'memento.chat.writer'.foldtext()"
  wo.foldlevel, wo.foldenable, wo.foldcolumn = 0, true, '0'
end

--- Show the chat (and its input); `focus_input` puts the cursor in the input.
function M.open(chat, focus_input)
  local opts = config.options.chat
  local chat_win, input_win = M.windows(chat)
  if not chat_win then
    local last = api.nvim_buf_line_count(chat.buf)
    if opts.layout == 'float' then
      local width = size(opts.width, vim.o.columns)
      local height = size(opts.height, vim.o.lines)
      local col = math.floor((vim.o.columns - width) / 2)
      local row = math.floor((vim.o.lines - height - opts.input_height - 4) / 2)
      chat_win = api.nvim_open_win(chat.buf, true, {
        relative = 'editor', row = row, col = col, width = width, height = height,
        border = 'rounded', title = ' Memento ', style = 'minimal',
      })
      input_win = api.nvim_open_win(chat.input, false, {
        relative = 'editor', row = row + height + 2, col = col, width = width, height = opts.input_height,
        border = 'rounded', title = ' prompt ', style = 'minimal',
      })
    else
      local split = ({ right = 'botright vsplit', left = 'topleft vsplit', bottom = 'botright split' })[opts.layout]
      vim.cmd(split or 'botright vsplit')
      chat_win = api.nvim_get_current_win()
      api.nvim_win_set_buf(chat_win, chat.buf)
      if opts.layout == 'bottom' then
        api.nvim_win_set_height(chat_win, size(opts.height, vim.o.lines))
      else
        api.nvim_win_set_width(chat_win, size(opts.width, vim.o.columns))
        vim.wo[chat_win].winfixwidth = true
      end
      vim.cmd('belowright ' .. opts.input_height .. 'split')
      input_win = api.nvim_get_current_win()
      api.nvim_win_set_buf(input_win, chat.input)
      vim.wo[input_win].winfixheight = true
      vim.wo[input_win].number, vim.wo[input_win].relativenumber = false, false
    end
    chat_window_options(chat_win)
    api.nvim_win_set_cursor(chat_win, { last, 0 }) -- at the end: it follows the stream
  elseif not input_win then
    api.nvim_set_current_win(chat_win)
    vim.cmd('belowright ' .. opts.input_height .. 'split')
    input_win = api.nvim_get_current_win()
    api.nvim_win_set_buf(input_win, chat.input)
  end
  api.nvim_set_current_win(focus_input and input_win or chat_win)
  return chat_win, input_win
end

function M.close(chat)
  for _, win in ipairs({ M.windows(chat) }) do
    if api.nvim_win_is_valid(win) and #api.nvim_list_wins() > 1 then
      api.nvim_win_close(win, false)
    end
  end
end

function M.visible(chat)
  return (M.windows(chat)) ~= nil
end

return M
