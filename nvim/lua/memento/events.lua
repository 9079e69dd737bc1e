-- The server's memento/* notifications: into the status, the chat (the transcript's
-- patches), and User autocmds.
-- ($/progress, diagnostics, applyEdit and window/showMessageRequest are Neovim's own.)
local chat = require('memento.chat')
local status = require('memento.status')

local M = {}

local function draw(client_id, fn)
  local target = chat.get(client_id, true)
  if target then
    fn(target)
  end
end

--- The context meter of the session now active (a session reopened at start, or switched
--- to, says nothing of its size until its next request: ask).
local function read_context(client_id)
  local client = vim.lsp.get_client_by_id(client_id)
  if not client then
    return
  end
  local state = status.state(client_id)
  local session, known = state.session, state.context
  require('memento.client').request(client, 'memento/context', nil, function(err, result)
    -- Not over what came since (another session, or the figures of a request).
    local now = status.state(client_id)
    if not err and result and now.session == session and now.context == known then
      status.on_context(client_id, result)
      status.fire('MementoContext', vim.tbl_extend('force', result, { client_id = client_id }))
    end
  end)
end

local TURN_EVENTS = {
  started = 'MementoTurnStarted',
  retrying = 'MementoTurnRetrying',
  finished = 'MementoTurnFinished',
  aborted = 'MementoTurnFinished',
  error = 'MementoTurnFinished',
}

M.handlers = {
  ['memento/transcript/patch'] = function(params, client_id)
    draw(client_id, function(c)
      c:patch(params)
    end)
  end,
  ['memento/turn'] = function(params, client_id)
    if params.subagentId then
      return -- a subagent's turn: its card in the transcript shows it
    end
    status.on_turn(client_id, params)
    local target = params.state ~= 'started' and params.state ~= 'retrying' and chat.get(client_id, false)
    if target then
      target:turn_ended()
    end
    status.fire(TURN_EVENTS[params.state] or 'MementoTurnFinished', vim.tbl_extend('force', params, { client_id = client_id }))
  end,
  ['memento/tool'] = function(params, client_id)
    if params.subagentId then
      return
    end
    status.fire('MementoTool', vim.tbl_extend('force', params, { client_id = client_id }))
  end,
  ['memento/subagent'] = function(params, client_id)
    status.fire('MementoSubagent', vim.tbl_extend('force', params, { client_id = client_id }))
  end,
  ['memento/context'] = function(params, client_id)
    status.on_context(client_id, params)
    status.fire('MementoContext', vim.tbl_extend('force', params, { client_id = client_id }))
  end,
  ['memento/compaction'] = function(params, client_id)
    status.on_compaction(client_id, params)
    local data = vim.tbl_extend('force', params, { client_id = client_id })
    status.fire(params.phase == 'started' and 'MementoCompacting' or 'MementoCompacted', data)
  end,
  ['memento/advisor'] = function(params, client_id)
    status.fire('MementoAdvisorNote', vim.tbl_extend('force', params, { client_id = client_id }))
  end,
  ['memento/checkpoints'] = function(_, client_id)
    status.fire('MementoCheckpoints', { client_id = client_id })
  end,
  ['memento/mode'] = function(params, client_id)
    local known = status.state(client_id).mode
    status.on_mode(client_id, params.mode)
    if known ~= nil and known ~= params.mode then
      draw(client_id, function(c)
        c:note('⇄ ' .. (status.MODES[params.mode] or params.mode), 'mode')
      end)
    end
    status.fire('MementoMode', { mode = params.mode, client_id = client_id })
  end,
  ['memento/session'] = function(params, client_id)
    status.on_session(client_id, params)
    local target = chat.get(client_id, false)
    if target then
      target:session_changed(params.id)
    end
    read_context(client_id)
    status.fire('MementoSession', { id = params.id, client_id = client_id })
  end,
}

--- A server answered initialize: its mode (a server without memento/mode is left at act)
--- and its context meter.
function M.ready(client)
  require('memento.client').request(client, 'memento/mode', nil, function(err, result)
    if not err and result and result.mode and status.state(client.id).mode == nil then
      status.on_mode(client.id, result.mode)
    end
  end)
  read_context(client.id)
end

function M.exited(client_id, code)
  local target = chat.get(client_id, false)
  if target then
    target:note(('✗ the server stopped (exit code %s)'):format(tostring(code)), 'error')
    chat.forget(client_id)
  end
  status.forget(client_id)
  vim.cmd.redrawstatus({ bang = true })
end

return M
