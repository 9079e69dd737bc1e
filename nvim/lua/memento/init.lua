-- Memento for Neovim: the agent's chat, checkpoints and status over plain LSP.
-- require("memento").setup({ cmd = …, settings = … }); see :help memento.
local client = require('memento.client')
local config = require('memento.config')
local events = require('memento.events')
local status = require('memento.status')

local M = {}

local HIGHLIGHTS = {
  MementoChatUser = 'Title',
  MementoChatAssistant = 'Title',
  MementoChatTool = 'Function',
  MementoChatToolError = 'DiagnosticError',
  MementoChatRetry = 'DiagnosticWarn',
  MementoChatCompaction = 'DiagnosticHint',
  MementoChatAdvisor = 'DiagnosticInfo',
  MementoChatSteer = 'Special',
  MementoChatSubagent = 'Special',
  MementoChatNote = 'Comment',
  MementoChatMode = 'DiagnosticHint',
  MementoChatError = 'DiagnosticError',
  MementoChatRunning = 'DiagnosticInfo',
  MementoChatDone = 'DiagnosticOk',
  MementoChatStopped = 'DiagnosticWarn',
  MementoChatFailed = 'DiagnosticError',
  MementoChatPinned = 'DiagnosticHint',
}

--- Start Memento for file buffers under a workspace root. Options: :help memento-setup.
function M.setup(opts)
  config.set(opts)
  -- Again here: a plugin manager that puts nvim/ on the runtimepath late never sources plugin/.
  require('memento.commands').define()
  for group, link in pairs(HIGHLIGHTS) do
    vim.api.nvim_set_hl(0, group, { link = link, default = true })
  end
  client.handlers = events.handlers
  client.on_exit = events.exited
  client.on_ready = events.ready
  local group = vim.api.nvim_create_augroup('memento', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'FileType' }, {
    group = group,
    callback = function(args)
      client.attach(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd({ 'BufEnter', 'FocusGained' }, {
    group = group,
    callback = function(args)
      client.focus(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd('LspAttach', {
    group = group,
    callback = function(args)
      local attached = vim.lsp.get_client_by_id(args.data.client_id)
      if attached and attached.name == client.NAME and args.buf == vim.api.nvim_get_current_buf() then
        client.focus(args.buf)
      end
    end,
  })
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) then
      client.attach(buf)
    end
  end
  M.did_setup = true
end

--- For statuslines: "Memento 12.3k/128k (9.6%) · ask · compacting · working"; "" with no server.
function M.status()
  local current = client.current(false)
  return current and status.text(current.id) or ''
end

--- The current server's state as a table (:help memento.state()).
function M.state()
  local current = client.current(false)
  return current and status.data(current.id) or {}
end

--- The current Memento client (vim.lsp.Client), if any.
function M.client()
  return client.current(false)
end

--- Push a partial change of the settings (only the keys named change; vim.NIL removes one).
function M.configure(patch)
  client.configure(patch)
end

--- Send a prompt (a steer while a turn runs); opens the chat unless chat.open_on_prompt = false.
function M.prompt(text)
  require('memento.async').run(function()
    local server = client.need()
    local chat = require('memento.chat').get(server.id, true)
    if config.options.chat.open_on_prompt and not chat:visible() then
      local win = vim.api.nvim_get_current_win()
      chat:open(false)
      vim.api.nvim_set_current_win(win)
    end
    chat:send(text)
  end)
end

--- Stop the running turn.
function M.stop()
  require('memento.async').run(function()
    local server = client.need()
    local chat = require('memento.chat').get(server.id, false)
    local child = chat and chat:child_here()
    if child then
      client.ask(server, 'memento/subagent/abort', { id = child }, 'cannot stop the subagent')
      return
    end
    local result = client.ask(server, 'memento/abort', nil, 'cannot stop the turn')
    if not result.aborted then
      vim.notify('Memento: no turn is running', vim.log.levels.INFO)
    end
  end)
end

--- Open (or close, toggle) the chat of the current server.
function M.chat(action)
  require('memento.async').run(function()
    local server = client.need()
    local chat = require('memento.chat').get(server.id, true)
    if action == 'close' or (action == 'toggle' and chat:visible()) then
      chat:close()
    else
      chat:open(true)
    end
  end)
end

return M
