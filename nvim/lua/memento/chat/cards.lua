-- How a tool call reads in the chat: the card's header line ("⚙ edit `a.py`") and its
-- arguments as fenced markdown (a diff for an edit, the content of a write, the command).
local M = {}

local function split(text)
  return vim.split(text or '', '\n', { plain = true })
end

local function summary(args)
  if type(args) ~= 'table' then
    return nil
  end
  local value = args.path or args.command or args.pattern or args.query or args.url
  if type(value) ~= 'string' then
    return nil
  end
  value = value:gsub('\n.*', ' …')
  return #value > 80 and value:sub(1, 77) .. '…' or value
end

function M.header_text(card)
  local about = summary(card.arguments)
  return ('⚙ %s%s'):format(card.name, about and (' `' .. about .. '`') or '')
end

--- A fence longer than any run of backticks in `text`.
local function fence(text)
  local longest = 2
  for run in text:gmatch('`+') do
    longest = math.max(longest, #run)
  end
  return string.rep('`', longest + 1)
end

function M.fenced(info, text)
  local bar = fence(text)
  local lines = { bar .. info }
  vim.list_extend(lines, split(text))
  table.insert(lines, bar)
  return lines
end

local function value_text(value)
  return type(value) == 'string' and value or vim.json.encode(value)
end

--- The call's arguments as lines: a diff for an edit, the content of a write, the command.
function M.argument_lines(args)
  if type(args) ~= 'table' then
    return {}
  end
  if type(args.oldText) == 'string' and type(args.newText) == 'string' then
    local diff = {}
    for _, line in ipairs(split(args.oldText)) do
      table.insert(diff, '-' .. line)
    end
    for _, line in ipairs(split(args.newText)) do
      table.insert(diff, '+' .. line)
    end
    return M.fenced('diff', table.concat(diff, '\n'))
  end
  if type(args.content) == 'string' then
    local extension = type(args.path) == 'string' and args.path:match('%.([%w_]+)$') or ''
    return M.fenced(vim.filetype.match({ filename = 'x.' .. extension }) or '', args.content)
  end
  if type(args.command) == 'string' then
    return M.fenced('sh', args.command)
  end
  local keys = vim.tbl_keys(args)
  table.sort(keys)
  local lines = {}
  for _, key in ipairs(keys) do
    table.insert(lines, ('%s: %s'):format(key, value_text(args[key])))
  end
  return #lines > 0 and M.fenced('', table.concat(lines, '\n')) or {}
end

return M
