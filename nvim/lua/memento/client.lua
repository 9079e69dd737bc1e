-- The language client: one `memento lsp` per workspace root, started with vim.lsp.start for
-- file buffers under it (or with no buffer, for :MementoChat in an empty editor); requests,
-- commands and settings pushes; `memento/activeDocument` when a file comes to the front.
local async = require('memento.async')
local config = require('memento.config')

local M = {}

M.NAME = 'memento'

--- root → client id, for clients still initializing (vim.lsp.get_clients skips those).
local started = {}
local ready_callbacks = {}
local last_active = {}

--- Notification handlers: method → function(params, client_id); filled by memento.events.
M.handlers = {}
--- Called with (client) after initialize, and (client_id, code) when a server exits.
M.on_ready, M.on_exit = nil, nil

--- Call a client method (`client:request(...)`).
function M.call(client, method, ...)
  return client[method](client, ...)
end

local function normalize(path)
  return (vim.fs.normalize(vim.fn.fnamemodify(path, ':p')):gsub('(.)/$', '%1'))
end

--- The workspace root for a buffer: root_dir(bufnr), else the nearest root marker, else the
--- working directory when the file is under it (or the buffer has no file).
function M.root_for(bufnr)
  local opts = config.options
  if opts.root_dir then
    local root = opts.root_dir(bufnr)
    return root and normalize(root) or nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  local cwd = normalize(vim.fn.getcwd())
  if name == '' or vim.bo[bufnr].buftype ~= '' then
    return normalize(vim.fs.root(cwd, opts.root_markers) or cwd)
  end
  local root = vim.fs.root(bufnr, opts.root_markers)
  if root then
    return normalize(root)
  end
  local file = normalize(name)
  if vim.startswith(file, cwd .. '/') then
    return cwd
  end
end

--- Clients asked to stop: until they exit, vim.lsp still lists them as running.
local stopping = {}

local function alive(id)
  local client = id and vim.lsp.get_client_by_id(id)
  if client and not stopping[client.id] and not M.call(client, 'is_stopped') then
    return client
  end
end

function M.for_root(root)
  return alive(started[root])
end

--- Stop a server and forget it at once: a buffer opened while it shuts down starts a new
--- one instead of attaching to it.
function M.stop(client)
  stopping[client.id] = true
  for key, id in pairs(started) do
    if id == client.id then
      started[key] = nil
    end
  end
  M.call(client, 'stop')
end

--- Every running Memento client.
function M.all()
  local found = {}
  for _, id in pairs(started) do
    local client = alive(id)
    if client then
      table.insert(found, client)
    end
  end
  return found
end

--- `workspace/applyEdit` as stock Neovim applies it, without its `print('Workspace edit',
--- label)`: the server labels each edit for editors with a labelled undo stack (VS Code),
--- and Neovim would echo it on every agent edit, rewind and undo.
local function apply_edit(_, params, ctx)
  local client = assert(vim.lsp.get_client_by_id(ctx.client_id))
  local ok, err = pcall(vim.lsp.util.apply_workspace_edit, params.edit, client.offset_encoding)
  return { applied = ok, failureReason = not ok and tostring(err) or nil }
end

local function client_config(root, cmd)
  local opts = config.options
  local settings = opts.settings or {}
  local handlers = { ['workspace/applyEdit'] = apply_edit }
  for method, handler in pairs(M.handlers) do
    handlers[method] = function(_, params, ctx)
      handler(params, ctx.client_id)
    end
  end
  return {
    name = M.NAME,
    cmd = cmd,
    root_dir = root,
    init_options = {
      memento = next(settings) and vim.deepcopy(settings) or vim.empty_dict(),
      workspaceTrusted = opts.workspace_trusted,
    },
    -- No `settings` here: Neovim would push them again in a didChangeConfiguration right
    -- after initialize, and the server would say they came from there. They are the
    -- client's settings from on_init on (for workspace/configuration answers).
    handlers = handlers,
    commands = require('memento.actions').commands,
    on_init = function(client)
      -- The settings as they are now (a configure() before initialize included).
      if next(config.options.settings or {}) then
        client.settings = { memento = vim.deepcopy(config.options.settings) }
      end
      for _, callback in ipairs(ready_callbacks[client.id] or {}) do
        callback()
      end
      ready_callbacks[client.id] = nil
      if M.on_ready then
        M.on_ready(client)
      end
    end,
    on_exit = function(code, _, client_id)
      stopping[client_id] = nil
      for key, id in pairs(started) do
        if id == client_id then
          started[key] = nil
        end
      end
      vim.schedule(function()
        if M.on_exit then
          M.on_exit(client_id, code)
        end
      end)
    end,
  }
end

local function reuse(client, conf)
  return client.name == M.NAME
    and alive(client.id) ~= nil
    and client.root_dir ~= nil
    and normalize(client.root_dir) == conf.root_dir
end

local told = {}

--- The client for `root`, started when there is none; attaches `bufnr` when given. Nil when
--- the `cmd` option cannot be used (said once).
function M.start(root, bufnr)
  local existing = M.for_root(root)
  if existing then
    if bufnr and not vim.lsp.buf_is_attached(bufnr, existing.id) then
      vim.lsp.buf_attach_client(bufnr, existing.id)
    end
    return existing
  end
  local cmd, why = config.command()
  if not cmd then
    if not told[why] then
      told[why] = true
      vim.notify('Memento: ' .. why, vim.log.levels.ERROR)
    end
    return nil
  end
  local conf = client_config(root, cmd)
  local id
  if bufnr then
    id = vim.lsp.start(conf, { bufnr = bufnr, reuse_client = reuse })
  else
    id = vim.lsp.start(conf, { attach = false })
  end
  if id then
    started[root] = id
  end
  return alive(id)
end

local function wanted(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return false
  end
  if vim.api.nvim_buf_get_name(bufnr) == '' then
    return false
  end
  local filetypes = config.options.filetypes
  return filetypes == nil or vim.tbl_contains(filetypes, vim.bo[bufnr].filetype)
end

--- Attach a file buffer to its workspace's server (starting it), if it belongs to one.
function M.attach(bufnr)
  if not wanted(bufnr) then
    return
  end
  local root = M.root_for(bufnr)
  if root then
    M.start(root, bufnr)
  end
end

--- The client the user means now: the current buffer's (the chat's own, a file's), else the
--- one for the working directory, else any; `start` starts one for the working directory.
function M.current(start)
  local bufnr = vim.api.nvim_get_current_buf()
  local owner = alive(vim.b[bufnr].memento_client)
  if owner then
    return owner
  end
  for _, attached in ipairs(vim.lsp.get_clients({ bufnr = bufnr, name = M.NAME })) do
    if alive(attached.id) then
      return attached
    end
  end
  local root = M.root_for(bufnr)
  local found = root and M.for_root(root) or M.all()[1]
  if found or not start or not root then
    return found
  end
  return M.start(root)
end

--- Run `callback` once the client answered initialize.
function M.when_ready(client, callback)
  if client.initialized then
    callback()
  else
    ready_callbacks[client.id] = ready_callbacks[client.id] or {}
    table.insert(ready_callbacks[client.id], callback)
  end
end

--- A request; `callback(err, result)`. Nothing is lost before initialize: it waits for it.
function M.request(client, method, params, callback)
  M.when_ready(client, function()
    local ok = M.call(client, 'request', method, params, function(err, result)
      callback(err, result)
    end)
    if not ok then
      callback({ message = 'the Memento server is not running' }, nil)
    end
  end)
end

--- Inside async.run: `result, err`.
function M.await(client, method, params)
  local err, result = async.await(function(done)
    M.request(client, method, params, done)
  end)
  return result, err
end

--- Inside async.run: the result, or the command fails with "Memento: <what>: <why>".
function M.ask(client, method, params, what)
  local result, err = M.await(client, method, params)
  if err then
    async.fail(('Memento: %s: %s'):format(what, err.message or vim.inspect(err)))
  end
  return result
end

--- Inside async.run: `ask` of the server `client_id` names (a chat's), else of the current
--- buffer's (started if need be).
function M.ask_here(method, params, what, client_id)
  local client = client_id and vim.lsp.get_client_by_id(client_id) or M.need()
  return M.ask(client, method, params, what)
end

--- `workspace/executeCommand` with its single argument object.
function M.execute(client, command, argument, what)
  return M.ask(client, 'workspace/executeCommand', { command = command, arguments = { argument or vim.empty_dict() } }, what)
end

--- Inside async.run: the current client, started for the working directory if need be.
function M.need()
  local client = M.current(true)
  if not client then
    async.fail('Memento: no server for this buffer (call require("memento").setup() and open a file)')
  end
  return client
end

function M.notify(client, method, params)
  return M.call(client, 'notify', method, params)
end

--- Merge a JSON merge patch (vim.NIL removes a key) into a settings table.
local function merge_patch(target, patch)
  for key, value in pairs(patch) do
    if value == vim.NIL then
      target[key] = nil
    elseif type(value) == 'table' and not vim.islist(value) and type(target[key]) == 'table' then
      merge_patch(target[key], value)
    else
      target[key] = vim.deepcopy(value)
    end
  end
  return target
end

--- Push a partial change of the settings to every server: only the keys named change
--- (vim.NIL removes one from the editor's layer); workspace/configuration answers follow.
function M.configure(patch)
  merge_patch(config.options.settings, patch)
  for _, client in ipairs(M.all()) do
    client.settings = client.settings or {}
    client.settings.memento = merge_patch(client.settings.memento or {}, patch)
    M.when_ready(client, function()
      M.notify(client, 'workspace/didChangeConfiguration', { settings = { memento = patch } })
    end)
  end
end

--- `memento/activeDocument` when a file attached to a server comes to the front.
function M.focus(bufnr)
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr, name = M.NAME })) do
    local uri = vim.uri_from_bufnr(bufnr)
    if last_active[client.id] ~= uri then
      last_active[client.id] = uri
      M.notify(client, 'memento/activeDocument', { uri = uri })
    end
  end
end

return M
