-- Read-only views in a split: the effective settings and their sources, the rules, the
-- session's compactions (with their summaries), a /omfg candidate rule.
local api = vim.api
local format = require('memento.format')

local M = {}

--- The buffer named `name` (a memento:// scratch buffer), if there is one.
function M.named(name)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_get_name(buf) == name then
      return buf
    end
  end
end

--- Show `lines` in a scratch buffer named `name` (reused), in a split.
function M.show(name, lines, filetype)
  local buf = M.named(name)
  if not buf then
    buf = api.nvim_create_buf(false, true)
    api.nvim_buf_set_name(buf, name)
    vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = 'nofile', 'hide', false
  end
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = filetype or 'markdown'
  local win = vim.fn.win_findbuf(buf)[1]
  if win then
    api.nvim_set_current_win(win)
  else
    vim.cmd('botright split')
    api.nvim_win_set_buf(0, buf)
  end
  vim.keymap.set('n', 'q', '<Cmd>close<CR>', { buffer = buf, nowait = true, silent = true })
  return buf
end

local function flatten(value, prefix, out)
  if type(value) == 'table' and not vim.islist(value) and next(value) ~= nil then
    local keys = vim.tbl_keys(value)
    table.sort(keys)
    for _, key in ipairs(keys) do
      flatten(value[key], prefix == '' and key or (prefix .. '.' .. key), out)
    end
  else
    table.insert(out, { prefix, value })
  end
  return out
end

function M.settings_lines(result)
  local lines = { '# Memento: effective settings', '' }
  table.insert(lines, ('- workspace trusted: %s'):format(result.workspaceTrusted and 'yes' or 'no'))
  for _, which in ipairs({ 'user', 'workspace' }) do
    if result.files and result.files[which] then
      table.insert(lines, ('- %s file: %s'):format(which, result.files[which]))
    end
  end
  if result.ignoredKeys and #result.ignoredKeys > 0 then
    table.insert(lines, '- ignored (set by the untrusted workspace file): ' .. table.concat(result.ignoredKeys, ', '))
  end
  for _, problem in ipairs(result.problems or {}) do
    table.insert(lines, '- problem: ' .. problem)
  end
  table.insert(lines, '')
  table.insert(lines, '| setting | value | from |')
  table.insert(lines, '|---|---|---|')
  for _, item in ipairs(flatten(result.settings or {}, '', {})) do
    local value = type(item[2]) == 'string' and item[2] or vim.json.encode(item[2] == nil and vim.NIL or item[2])
    table.insert(lines, ('| %s | `%s` | %s |'):format(item[1], value:gsub('|', '\\|'), (result.sources or {})[item[1]] or 'default'))
  end
  return lines
end

function M.rules_lines(result)
  local lines = { '# Memento: rules', '' }
  for _, rule in ipairs(result.rules or {}) do
    local extra = {}
    if rule.globs and #rule.globs > 0 then
      table.insert(extra, 'globs ' .. table.concat(rule.globs, ', '))
    end
    if rule.attached and #rule.attached > 0 then
      table.insert(extra, 'attached by ' .. table.concat(rule.attached, ', '))
    end
    if (rule.fired or 0) > 0 then
      table.insert(extra, ('fired %d×'):format(rule.fired))
    end
    table.insert(lines, ('- **%s** (%s, %s) %s%s'):format(rule.name, rule.bucket, rule.engine, rule.path, #extra > 0 and (' — ' .. table.concat(extra, '; ')) or ''))
    if rule.description then
      table.insert(lines, '  ' .. rule.description:gsub('\n', ' '))
    end
  end
  return lines
end

function M.mcp_lines(result)
  local lines = { '# Memento: MCP servers', '' }
  for _, server in ipairs(result.servers or {}) do
    local trust = server.repository and (server.trusted and ', trusted' or ', NOT TRUSTED (:MementoMcp trust ' .. server.name .. ')') or ''
    table.insert(lines, ('- **%s** %s (%s: %s%s)'):format(server.name, server.state, server.source, server.path or 'Memento settings', trust))
    if server.error then
      table.insert(lines, '  ' .. server.error)
    end
    for _, tool in ipairs(server.tools or {}) do
      table.insert(lines, ('  - tool `%s` %s'):format(tool.name, tool.policy))
    end
    for _, prompt in ipairs(server.prompts or {}) do
      table.insert(lines, ('  - prompt `%s` %s'):format(prompt.command, table.concat(prompt.arguments or {}, ' ')))
    end
  end
  for _, problem in ipairs(result.problems or {}) do
    table.insert(lines, '- ' .. problem)
  end
  if #lines == 2 then
    table.insert(lines, 'No MCP servers: add them to mcp.servers, .vscode/mcp.json, .mcp.json or .cursor/mcp.json.')
  end
  return lines
end

function M.compactions_lines(result)
  local draw = require('memento.chat.draw')
  local lines = { '# Memento: context relief in this session (newest first)', '' }
  local now = os.time()
  for _, item in ipairs(result.compactions or {}) do
    local params = vim.tbl_extend('force', item, { phase = 'finished' })
    local text = draw.relief_text(params):gsub('^── ', ''):gsub(' ──$', '')
    local undone = item.undoneBy and ' · undone' or ''
    table.insert(lines, ('## %s — %s%s%s [%s]'):format(format.relative_time(item.at, now), text, item.reason and (' (' .. item.reason .. ')') or '', undone, item.id))
    if item.summary then
      table.insert(lines, '')
      vim.list_extend(lines, vim.split(item.summary, '\n', { plain = true }))
    end
    table.insert(lines, '')
  end
  if #(result.compactions or {}) == 0 then
    table.insert(lines, 'No prune, shake or compaction yet.')
  else
    table.insert(lines, '<CR> on a step opens its audit; :MementoUndoCompaction [id] undoes one.')
  end
  return lines
end

--- The step id of the `## … [id]` heading at or above `row` (1-based) of a compactions view.
function M.step_at(lines, row)
  for i = row, 1, -1 do
    local id = (lines[i] or ''):match('^## .*%[(%x+)%]$')
    if id then
      return id
    end
  end
  return nil
end

local function cell(text)
  return (tostring(text or ''):gsub('\n', ' '))
end

local function about(entry)
  if entry.tool then
    return entry.file and (entry.tool .. ' ' .. entry.file) or entry.tool
  end
  return entry.role
end

local function entry_rows(lines, title, list)
  if not list or #list == 0 then
    return
  end
  table.insert(lines, ('## %s (%d)'):format(title, #list))
  for _, e in ipairs(list) do
    table.insert(lines, ('- %s  %s, %s tokens: %s'):format(e.entryId, about(e), format.thousands(e.tokens), cell(e.preview)))
  end
  table.insert(lines, '')
end

--- The audit of one relief step (memento/relief/audit), drawn field by field.
function M.audit_lines(audit)
  local after = audit.tokensAfter and format.thousands(audit.tokensAfter) or '?'
  local lines = {
    ('# %s %s at %s'):format(audit.level == 'undo' and 'Undo' or audit.level, audit.id, audit.at),
    '',
    ('- Tokens: %s → %s'):format(format.thousands(audit.tokensBefore), after),
  }
  if audit.reason then
    table.insert(lines, '- Reason: ' .. audit.reason)
  end
  if audit.summarizer then
    table.insert(lines, ('- Summary by: %s%s'):format(audit.summarizer, (audit.model or audit.provider) and (' (' .. (audit.model or audit.provider) .. ')') or ''))
  end
  if audit.undoes then
    table.insert(lines, '- Undoes: ' .. audit.undoes)
  end
  if audit.undoneBy then
    table.insert(lines, '- Undone by: ' .. audit.undoneBy .. ' (the context is as it was before this step)')
  end
  if audit.cut then
    table.insert(lines, ('- Cut at %s: %s'):format(audit.cut.firstKeptEntryId, audit.cut.why))
  end
  if audit.readFiles and #audit.readFiles > 0 then
    table.insert(lines, '- Files read: ' .. table.concat(audit.readFiles, ', '))
  end
  if audit.modifiedFiles and #audit.modifiedFiles > 0 then
    table.insert(lines, '- Files modified: ' .. table.concat(audit.modifiedFiles, ', '))
  end
  table.insert(lines, '')
  entry_rows(lines, 'Summarised', audit.summarized)
  if audit.edits and #audit.edits > 0 then
    table.insert(lines, ('## Taken out (%d)'):format(#audit.edits))
    for _, e in ipairs(audit.edits) do
      table.insert(lines, ('- %s  %s, %s tokens → %s%s'):format(e.entryId, about(e), format.thousands(e.tokens), cell(e.replacement), e.restored and ' (brought back)' or ''))
    end
    table.insert(lines, '')
  end
  entry_rows(lines, 'Kept verbatim', audit.kept)
  entry_rows(lines, 'Carried across by the memory', audit.carried)
  if audit.summary then
    table.insert(lines, '## Summary')
    table.insert(lines, '')
    vim.list_extend(lines, vim.split(audit.summary, '\n', { plain = true }))
  end
  return lines
end

return M
