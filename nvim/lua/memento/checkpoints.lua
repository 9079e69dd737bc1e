-- :MementoCheckpoint, :MementoRewind (a vim.ui.select over the checkpoints, then a
-- confirmation: the ways back the server offers, each with what it does), :MementoUndoRewind. Buffers the rewind
-- restored reload; the chat is redrawn when the conversation moved.
local async = require('memento.async')
local client_mod = require('memento.client')
local format = require('memento.format')

local M = {}

local KINDS = {
  auto = "before the agent's edits",
  manual = 'by hand',
  rewind = 'before a rewind',
  exploration = 'exploration',
}

M.CHOICES = {
  all = 'Conversation and files',
  conversation = 'Conversation only',
  files = 'Files only',
  overwrite = 'Conversation and files, overwriting my edits',
}

function M.label(item)
  return vim.trim(item.label or '') ~= '' and item.label or ('Checkpoint ' .. item.id)
end

--- "before the refactoring — 5 minutes ago · by hand — 1 file changed since: a.py"
function M.describe(item, now)
  local when = format.relative_time(item.createdAt, now)
  local kind = KINDS[item.kind or 'manual'] or item.kind
  local files = item.files or {}
  local changed = #files > 0 and (format.plural(#files, 'file') .. ' changed since: ' .. format.file_list(files))
    or 'no files changed since'
  return ('%s — %s · %s — %s'):format(M.label(item), when, kind, changed)
end

--- The title of a way back the server offers (`memento/checkpoint/preview` choices).
function M.title(choice)
  if choice.force then
    return M.CHOICES.overwrite
  end
  return M.CHOICES[choice.mode] or choice.mode
end

--- The confirmation: the question, and the server's ways back, each saying what it does
--- ("Files only: puts back a.py; the conversation stays as it is").
function M.question(item, preview, now)
  local question = ('Rewind to “%s” (%s)?'):format(M.label(item), format.relative_time(item.createdAt, now))
  local choices = {}
  for _, choice in ipairs(preview.choices or {}) do
    table.insert(choices, {
      title = ('%s: %s'):format(M.title(choice), choice.effect),
      mode = choice.mode,
      force = choice.force == true,
    })
  end
  return question, choices
end

function M.report(result, mode)
  local parts = { mode == 'files' and 'Files rewound' or mode == 'conversation' and 'Conversation rewound' or 'Rewound' }
  local restored, conflicts = result.restored or {}, result.conflicts or {}
  if mode ~= 'conversation' then
    table.insert(parts, #restored > 0 and ('restored ' .. format.file_list(restored)) or 'no file needed restoring')
  end
  if #conflicts > 0 then
    table.insert(parts, 'left as you changed them: ' .. format.file_list(conflicts))
  end
  return table.concat(parts, '; ') .. '.'
end

local function buffer_for(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.api.nvim_buf_get_name(buf) == path then
      return buf
    end
  end
end

local function read(path)
  local file = io.open(path, 'rb')
  if not file then
    return nil
  end
  local data = file:read('*a')
  file:close()
  return data
end

--- Restored files: a buffer the server changed through the editor that now matches the
--- disk is no longer "modified"; one it wrote on disk is read again (unless you changed it).
function M.reload(server, paths)
  for _, relative in ipairs(paths or {}) do
    local path = vim.fs.normalize(server.root_dir .. '/' .. relative)
    local buf = buffer_for(path)
    if buf then
      local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
      local text = table.concat(lines, '\n') .. (vim.bo[buf].eol and '\n' or '')
      if vim.bo[buf].modified and read(path) == text then
        vim.bo[buf].modified = false
      elseif not vim.bo[buf].modified then
        local autoread = vim.bo[buf].autoread
        vim.bo[buf].autoread = true
        vim.cmd.checktime(buf)
        vim.bo[buf].autoread = autoread
      end
    end
  end
end

local function after(server, result, mode)
  M.reload(server, result.restored)
  if mode ~= 'files' then
    local chat = require('memento.chat').get(server.id, false)
    if chat then
      chat:load()
    end
  end
end

function M.create(label)
  async.run(function()
    local server = client_mod.need()
    label = vim.trim(label or '')
    local result = client_mod.execute(
      server,
      'memento.checkpoint.create',
      label ~= '' and { label = label } or nil,
      'cannot create a checkpoint'
    )
    vim.notify(('Memento: checkpoint %s created.'):format(label ~= '' and ('“' .. label .. '”') or result.id))
  end)
end

--- Pick a checkpoint (or take `checkpoint_id`), confirm, rewind; `server` defaults to the
--- current buffer's.
function M.rewind(checkpoint_id, server)
  async.run(function()
    server = server or client_mod.need()
    local now = os.time()
    local list = client_mod.ask(server, 'memento/checkpoint/list', nil, 'cannot list the checkpoints')
    local item
    for _, candidate in ipairs(list.checkpoints or {}) do
      if candidate.id == checkpoint_id then
        item = candidate
      end
    end
    if checkpoint_id and not item then
      async.fail(('Memento: there is no checkpoint %s in this session.'):format(checkpoint_id))
    end
    if not item then
      if #(list.checkpoints or {}) == 0 then
        async.fail('Memento: this session has no checkpoints yet.', vim.log.levels.INFO)
      end
      item = async.select(list.checkpoints, {
        prompt = 'Memento: rewind to checkpoint',
        kind = 'memento.checkpoint',
        format_item = function(candidate)
          return M.describe(candidate, now)
        end,
      })
      if not item then
        return
      end
    end
    local preview = client_mod.ask(server, 'memento/checkpoint/preview', { checkpointId = item.id }, 'cannot preview the rewind')
    local question, choices = M.question(item, preview, now)
    local choice = async.select(choices, {
      prompt = question,
      kind = 'memento.rewind',
      format_item = function(candidate)
        return candidate.title
      end,
    })
    if not choice then
      return
    end
    local result = client_mod.execute(
      server,
      'memento.checkpoint.rewind',
      { checkpointId = item.id, mode = choice.mode, force = choice.force },
      'cannot rewind'
    )
    after(server, result, choice.mode)
    vim.notify('Memento: ' .. M.report(result, choice.mode) .. ' :MementoUndoRewind undoes it.')
  end)
end

function M.undo()
  async.run(function()
    local server = client_mod.need()
    local result = client_mod.execute(server, 'memento.checkpoint.undoRewind', nil, 'cannot undo the rewind')
    after(server, result, result.mode or 'all')
    vim.notify('Memento: rewind undone. ' .. M.report(result, result.mode or 'all'))
  end)
end

return M
