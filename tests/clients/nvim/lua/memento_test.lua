-- Helpers for Lua scripts that drive a real headless Neovim against `memento lsp`.
-- Stock vim.lsp only (no plugin); every wait has a timeout; `M.run` turns any error into
-- a non-zero exit with the error in the observations. See ../README.md.
local M = {}

local function read_json(path)
  local file = assert(io.open(path, 'r'), 'cannot read ' .. path)
  local text = file:read('*a')
  file:close()
  return vim.json.decode(text, { luanil = { object = true, array = true } })
end

M.config = read_json(assert(os.getenv('MEMENTO_NVIM_CONFIG'), 'MEMENTO_NVIM_CONFIG is not set'))
M.params = M.config.params or {}
M.observations = {}
--- Server-to-client notifications by method, in arrival order.
M.notifications = {}
M.client = nil

local RECORDED = {
  'memento/turn',
  'memento/transcript/patch',
  'memento/context',
  'memento/checkpoints',
  'memento/compaction',
  'window/showMessage',
  'window/logMessage',
}

function M.observe(key, value)
  M.observations[key] = value == nil and vim.NIL or value
end

local function write_observations()
  local file = assert(io.open(M.config.out, 'w'))
  file:write(vim.json.encode(M.observations))
  file:close()
end

--- Wait until `predicate()` is true, processing events meanwhile; an error after `timeout_ms`.
function M.wait(what, timeout_ms, predicate)
  if not vim.wait(timeout_ms, predicate, 10) then
    error(('timed out after %d ms waiting for %s'):format(timeout_ms, what), 2)
  end
end

--- Start `memento lsp` for the workspace with stock vim.lsp (default flags: a 150 ms
--- didChange debounce). `opts.init_options` defaults to the harness's; `opts.settings` is
--- sent by Neovim in a didChangeConfiguration right after initialize; `opts.encodings`
--- replaces the position encodings Neovim offers (utf-8, utf-16, utf-32: the server picks
--- the first).
function M.start(opts)
  opts = opts or {}
  local handlers = {}
  for _, method in ipairs(RECORDED) do
    M.notifications[method] = {}
    handlers[method] = function(_, result)
      table.insert(M.notifications[method], result)
    end
  end
  local id = vim.lsp.start({
    name = 'memento',
    cmd = { M.config.python, '-m', 'memento', 'lsp' },
    root_dir = M.config.workspace,
    init_options = opts.init_options or M.config.init_options,
    settings = opts.settings,
    capabilities = opts.encodings and { general = { positionEncodings = opts.encodings } } or nil,
    handlers = handlers,
  }, { bufnr = opts.bufnr, reuse_client = function() return false end })
  assert(id, 'vim.lsp.start returned no client')
  M.wait('the server to initialize', 30000, function()
    local client = vim.lsp.get_client_by_id(id)
    return client ~= nil and client.initialized == true
  end)
  M.client = assert(vim.lsp.get_client_by_id(id))
  return M.client
end

--- Edit a workspace file in a buffer attached to the client; returns the buffer.
function M.open(relative)
  vim.cmd.edit(vim.fn.fnameescape(M.config.workspace .. '/' .. relative))
  local buf = vim.api.nvim_get_current_buf()
  if not vim.lsp.buf_is_attached(buf, M.client.id) then
    vim.lsp.buf_attach_client(buf, M.client.id)
  end
  return buf
end

--- A request, answered synchronously: result, error.
function M.request(method, params, timeout_ms)
  local response, problem = M.client:request_sync(method, params, timeout_ms or 15000, 0)
  if response == nil then
    error(('no answer to %s: %s'):format(method, tostring(problem)), 2)
  end
  return response.result, response.err
end

function M.execute(command, arguments, timeout_ms)
  return M.request('workspace/executeCommand', { command = command, arguments = arguments }, timeout_ms)
end

--- Send a prompt and wait for its turn to end; returns the final memento/turn params.
function M.turn(text, timeout_ms)
  local result, err = M.request('memento/prompt', { text = text })
  assert(err == nil, 'memento/prompt failed: ' .. vim.inspect(err))
  local turn_id = result.turnId
  local ended
  M.wait('turn ' .. turn_id .. ' to end', timeout_ms or 30000, function()
    for _, turn in ipairs(M.notifications['memento/turn']) do
      if turn.turnId == turn_id and (turn.state == 'finished' or turn.state == 'error' or turn.state == 'aborted') then
        ended = turn
        return true
      end
    end
    return false
  end)
  return ended
end

-- -- the plugin (nvim/) ------------------------------------------------------------------
--- User autocmds the plugin fired (`Memento*`), in order: { pattern, data }.
M.events = {}
--- vim.notify messages: { message, level }.
M.messages = {}
--- vim.ui.select calls: { prompt, kind, items (as format_item shows them) }.
M.selects = {}
--- What went to print() (stock vim.lsp echoes some things that way): one string a call.
M.printed = {}

--- Load the plugin as a user's config does: on the runtimepath, plugin/memento.lua sourced,
--- setup() with the harness's server command and its init_options as the settings (the
--- plugin sends them as initializationOptions). `opts` is merged into setup()'s options.
--- Records User autocmds, vim.notify messages and print() calls.
function M.plugin(opts)
  vim.opt.rtp:prepend(M.config.plugin_dir)
  vim.cmd.runtime('plugin/memento.lua')
  vim.api.nvim_create_autocmd('User', {
    pattern = 'Memento*',
    callback = function(args)
      table.insert(M.events, { pattern = args.match, data = args.data or vim.NIL })
    end,
  })
  local print_ = print
  _G.print = function(...)
    table.insert(M.printed, table.concat(vim.tbl_map(tostring, { ... }), ' '))
    return print_(...)
  end
  local notify = vim.notify
  vim.notify = function(message, level, extra)
    table.insert(M.messages, { message = message, level = level or vim.NIL })
    return notify(message, level, extra)
  end
  local memento = require('memento')
  memento.setup(vim.tbl_deep_extend('force', {
    cmd = { M.config.python, '-m', 'memento', 'lsp' },
    settings = M.config.init_options,
  }, opts or {}))
  return memento
end

--- Wait for the plugin's server (started for the current buffer) to initialize; sets t.client.
function M.plugin_client(timeout_ms)
  M.wait('the plugin to start the server', timeout_ms or 30000, function()
    local client = require('memento').client()
    return client ~= nil and client.initialized == true
  end)
  M.client = require('memento').client()
  return M.client
end

--- Edit a workspace file as a user does (the plugin attaches it, starting the server) and
--- wait for the server; returns the buffer.
function M.plugin_open(relative)
  vim.cmd.edit(vim.fn.fnameescape(M.config.workspace .. '/' .. relative))
  M.plugin_client()
  return vim.api.nvim_get_current_buf()
end

--- :MementoChat; returns the chat (its `buf` and `input`).
function M.plugin_chat()
  vim.cmd('MementoChat')
  return require('memento.chat').get(M.client.id)
end

--- The User events named `pattern` recorded so far (their data).
function M.fired(pattern)
  local found = {}
  for _, event in ipairs(M.events) do
    if event.pattern == pattern then
      table.insert(found, event.data)
    end
  end
  return found
end

--- Wait until `count` User events `pattern` have fired; returns the last one's data.
function M.wait_event(pattern, timeout_ms, count)
  M.wait(pattern, timeout_ms or 30000, function()
    return #M.fired(pattern) >= (count or 1)
  end)
  local found = M.fired(pattern)
  return found[#found]
end

--- Replace vim.ui.select: `answer(items, opts, shown)` returns the item to choose (nil:
--- dismiss); each call is recorded in t.selects. The callback is called at once.
function M.stub_select(answer)
  vim.ui.select = function(items, opts, on_choice)
    opts = opts or {}
    local shown = {}
    for _, item in ipairs(items) do
      table.insert(shown, opts.format_item and opts.format_item(item) or tostring(item))
    end
    table.insert(M.selects, { prompt = opts.prompt or vim.NIL, kind = opts.kind or vim.NIL, items = shown })
    local chosen = answer(items, opts, shown)
    local index = nil
    for i, item in ipairs(items) do
      if item == chosen then
        index = i
      end
    end
    on_choice(chosen, index)
  end
end

--- Lines of a buffer.
function M.lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- Whether the buffer's text contains `text` (plain).
function M.has(buf, text)
  return table.concat(M.lines(buf), '\n'):find(text, 1, true) ~= nil
end

--- The last (1-based) row of `buf` whose line matches the Lua `pattern`, or nil.
function M.row_of(buf, pattern)
  local found
  for row, line in ipairs(M.lines(buf)) do
    if line:find(pattern) then
      found = row
    end
  end
  return found
end

--- Whether a vim.notify message so far contains `text` (plain).
function M.said(text)
  for _, m in ipairs(M.messages) do
    if m.message:find(text, 1, true) then
      return true
    end
  end
  return false
end

--- The vim.notify messages at ERROR level.
function M.errors()
  return vim.tbl_filter(function(m)
    return m.level == vim.log.levels.ERROR
  end, M.messages)
end

--- The buffer's text as the user sees it (with its final newline).
function M.text(buf)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  return table.concat(lines, '\n') .. (vim.bo[buf].eol and '\n' or '')
end

--- The buffer's text as Neovim writes it: its lines joined by the file format's line break,
--- with the byte-order mark ('bomb') and the final line break ('eol') it has ('fixeol' aside).
function M.file_text(buf)
  local sep = ({ dos = '\r\n', unix = '\n', mac = '\r' })[vim.bo[buf].fileformat]
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), sep)
  return (vim.bo[buf].bomb and '\239\187\191' or '') .. text .. (vim.bo[buf].eol and sep or '')
end

--- Run the script body; record an error and exit non-zero if it fails, else write the
--- observations and quit (stopping the server).
function M.run(body)
  local ok, problem = xpcall(body, debug.traceback)
  if not ok then
    M.observations.error = tostring(problem)
  end
  write_observations()
  if M.client ~= nil then
    M.client:stop()
    vim.wait(5000, function()
      return M.client:is_stopped()
    end, 10)
  end
  vim.cmd(ok and 'qall!' or 'cquit! 1')
end

return M
