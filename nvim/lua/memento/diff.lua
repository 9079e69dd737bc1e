-- :MementoDiff: a file against a checkpoint's copy of it, in a diff split in a new tab. On a
-- tool card in the chat, the file the call edited against the checkpoint taken before it;
-- in a file, that file against the newest checkpoint it changed since (or the one named).
local api = vim.api
local async = require('memento.async')
local client_mod = require('memento.client')
local views = require('memento.views')

local M = {}

local function holds_call(item, call_id)
  for _, part in ipairs(item.kind == 'reply' and item.parts or {}) do
    if part.kind == 'tool' and part.toolCallId == call_id then
      return true
    end
  end
  return false
end

--- The checkpoint taken before tool call `call_id` ran, in `items` (a transcript, oldest
--- first): the turn's own (taken before its first edit, so drawn after the reply that holds
--- the call, before the next prompt), else the newest one before that reply. nil when there
--- is none; false when the call is not in the transcript.
function M.checkpoint_in(items, call_id)
  local at
  for index, item in ipairs(items) do
    if holds_call(item, call_id) then
      at = index
    end
  end
  if not at then
    return false
  end
  for index = at + 1, #items do
    local item = items[index]
    if item.kind == 'user' and not item.steer then
      break
    end
    if item.kind == 'checkpoint' then
      return item.checkpointId
    end
  end
  for index = at - 1, 1, -1 do
    if items[index].kind == 'checkpoint' then
      return items[index].checkpointId
    end
  end
end

--- Inside async.run: the checkpoint taken before tool call `call_id` ran, or nil.
function M.checkpoint_before(server, call_id)
  local page = client_mod.ask(server, 'memento/transcript', { limit = 1000 }, 'cannot read the transcript')
  local found = M.checkpoint_in(page.items or {}, call_id)
  if found == false then
    async.fail('Memento: that tool call is no longer in the conversation (rewound?)')
  end
  return found
end

--- Inside async.run: open `path` (workspace-relative) against checkpoint `checkpoint_id`.
function M.open(server, checkpoint_id, path)
  local result = client_mod.ask(
    server,
    'memento/checkpoint/file',
    { checkpointId = checkpoint_id, path = path },
    'cannot read the checkpoint'
  )
  if result.binary then
    async.fail(('Memento: %s is not text at checkpoint %s'):format(path, checkpoint_id))
  end
  local lines = vim.split(result.exists and result.content or '', '\n', { plain = true })
  if lines[#lines] == '' then
    table.remove(lines)
  end
  vim.cmd.tabnew(vim.fn.fnameescape(server.root_dir .. '/' .. path))
  local file_win, file_buf = api.nvim_get_current_win(), api.nvim_get_current_buf()
  vim.cmd('leftabove vnew')
  local buf = api.nvim_get_current_buf()
  local name = ('memento://checkpoint/%s/%s'):format(checkpoint_id, path)
  local old = views.named(name)
  if old then
    api.nvim_buf_delete(old, { force = true })
  end
  api.nvim_buf_set_name(buf, name)
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = 'nofile', 'wipe', false
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = vim.bo[file_buf].filetype
  vim.b[buf].memento_checkpoint = { id = checkpoint_id, path = path, exists = result.exists }
  vim.cmd.diffthis()
  api.nvim_win_call(file_win, function()
    vim.cmd.diffthis()
  end)
  return buf, file_buf
end

--- On a tool card in the chat.
function M.card()
  async.run(function()
    local chat = require('memento.chat').for_buffer(api.nvim_get_current_buf())
    if not chat then
      async.fail('Memento: not in a Memento chat')
    end
    local card = chat.t:card_at(api.nvim_win_get_cursor(0)[1] - 1)
    if not card then
      async.fail('Memento: the cursor is not on a tool card', vim.log.levels.WARN)
    end
    local arguments = require('memento.chat.draw').arguments(card)
    local path = arguments and arguments.path or nil
    if type(path) ~= 'string' then
      async.fail(('Memento: this %s call names no file'):format(card.name), vim.log.levels.WARN)
    end
    local server = vim.lsp.get_client_by_id(chat.client_id)
    if not server then
      async.fail('Memento: the server is not running')
    end
    local checkpoint = M.checkpoint_before(server, card.toolCallId)
    if not checkpoint then
      async.fail('Memento: there is no checkpoint before that call (are checkpoints off?)', vim.log.levels.WARN)
    end
    M.open(server, checkpoint, path)
  end)
end

--- In a file: against `checkpoint_id`, or the newest checkpoint it changed since.
function M.file(checkpoint_id)
  async.run(function()
    local server = client_mod.need()
    local name = vim.fs.normalize(api.nvim_buf_get_name(0))
    local root = server.root_dir
    if name == '' or not vim.startswith(name, root .. '/') then
      async.fail('Memento: this buffer is not a file of the workspace')
    end
    local path = name:sub(#root + 2)
    if not checkpoint_id then
      local list = client_mod.ask(server, 'memento/checkpoint/list', nil, 'cannot list the checkpoints')
      for _, item in ipairs(list.checkpoints or {}) do
        if vim.tbl_contains(item.files or {}, path) then
          checkpoint_id = item.id
          break
        end
      end
      checkpoint_id = checkpoint_id or (list.checkpoints and list.checkpoints[1] and list.checkpoints[1].id)
      if not checkpoint_id then
        async.fail('Memento: this session has no checkpoints yet.', vim.log.levels.INFO)
      end
    end
    M.open(server, checkpoint_id, path)
  end)
end

return M
