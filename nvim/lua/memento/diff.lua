-- :MementoDiff: a file against a checkpoint's copy of it, in a diff split in a new tab. On a
-- tool card in the chat, the file the call edited against the checkpoint taken before it;
-- in a file, that file against the newest checkpoint it changed since (or the one named).
local api = vim.api
local async = require('memento.async')
local client_mod = require('memento.client')
local views = require('memento.views')

local M = {}

local function entry_calls(entry, call_id)
  local message = entry.type == 'message' and entry.message or nil
  if not message then
    return false
  end
  if message.role == 'toolResult' then
    return message.toolCallId == call_id
  end
  for _, block in ipairs(message.role == 'assistant' and type(message.content) == 'table' and message.content or {}) do
    if type(block) == 'table' and block.type == 'toolCall' and block.id == call_id then
      return true
    end
  end
  return false
end

--- Inside async.run: the checkpoint taken before tool call `call_id` ran (the checkpoint
--- entry nearest before its result on the active path), or nil.
function M.checkpoint_before(server, call_id)
  local cursor, seen = nil, false
  repeat
    local page = client_mod.ask(server, 'memento/history', { limit = 500, cursor = cursor }, 'cannot read the history')
    local entries = page.entries or {}
    for index = #entries, 1, -1 do
      local entry = entries[index]
      if seen and entry.type == 'checkpoint' and entry.checkpointId then
        return entry.checkpointId
      end
      seen = seen or entry_calls(entry, call_id)
    end
    cursor = page.nextCursor
  until not cursor
  if not seen then
    async.fail('Memento: that tool call is no longer in the conversation (rewound?)')
  end
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
    local path = type(card.arguments) == 'table' and card.arguments.path or nil
    if type(path) ~= 'string' then
      async.fail(('Memento: this %s call names no file'):format(card.name), vim.log.levels.WARN)
    end
    local server = vim.lsp.get_client_by_id(chat.client_id)
    if not server then
      async.fail('Memento: the server is not running')
    end
    local checkpoint = M.checkpoint_before(server, card.id)
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
