-- What each server last said about itself: the context size, a relief step running, the turn
-- running. require("memento").status() formats it for statuslines; User autocmds announce
-- changes (for lualine, fidget.nvim, heirline…).
local format = require('memento.format')

local M = {}

local states = {}

function M.state(client_id)
  states[client_id] = states[client_id] or {}
  return states[client_id]
end

function M.forget(client_id)
  states[client_id] = nil
end

function M.running(client_id)
  return M.state(client_id).turn ~= nil
end

local redraw_pending = false

local function redraw()
  if not redraw_pending then
    redraw_pending = true
    vim.schedule(function()
      redraw_pending = false
      vim.cmd.redrawstatus({ bang = true })
    end)
  end
end

--- `User <pattern>` with `data` (see :help memento-events).
function M.fire(pattern, data)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false, data = data })
end

function M.on_turn(client_id, params)
  local state = M.state(client_id)
  if params.state == 'started' or params.state == 'retrying' then
    state.turn = { id = params.turnId, state = params.state, reason = params.reason, rules = params.rules }
  elseif state.turn and state.turn.id == params.turnId then
    state.turn = nil
  end
  redraw()
end

function M.on_context(client_id, params)
  M.state(client_id).context = params
  redraw()
end

function M.on_compaction(client_id, params)
  local state = M.state(client_id)
  state.compaction = params.phase == 'started' and params or nil
  state.last_compaction = params.phase ~= 'started' and params or state.last_compaction
  redraw()
end

M.MODES = {
  ask = 'ask mode: read-only, the agent changes no file',
  act = 'act mode: the agent may change files',
}

function M.on_mode(client_id, mode)
  M.state(client_id).mode = mode
  redraw()
end

function M.on_session(client_id, params)
  local state = M.state(client_id)
  state.session, state.turn, state.compaction = params.id, nil, nil
  redraw()
end

local PHASES = { prune = 'pruning', shake = 'shaking', compact = 'compacting' }

--- A copy of a server's state: { context = memento/context params, compaction = the step
--- running (memento/compaction params) or nil, turn = { id, state } or nil, session = id,
--- mode = 'ask' | 'act' }.
function M.data(client_id)
  return vim.deepcopy(states[client_id] or {})
end

--- "Memento 12.3k/128k (9.6%) · window: catalog default · 95.8% cached · ask · compacting ·
--- working" (the window's origin unless the user's settings gave it; the share of the newest
--- request's prompt the provider's cache read, as the server reported it)
function M.text(client_id)
  local state = states[client_id]
  if not state then
    return 'Memento'
  end
  local parts = { 'Memento' }
  local context = state.context
  if context then
    local percent = tonumber(context.percent) or 0
    table.insert(
      parts,
      ('%s/%s (%s%%)'):format(
        format.tokens(context.tokens),
        format.tokens(context.contextWindow),
        percent < 10 and ('%.1f'):format(percent) or ('%.0f'):format(percent)
      )
    )
  end
  local extra = {}
  -- Where the window came from, as the server says it, unless it is the user's own setting.
  if context and context.windowOrigin and context.windowSource ~= 'settings' then
    table.insert(extra, 'window: ' .. context.windowOrigin)
  end
  local last = context and context.lastUsage
  if type(last) == 'table' and (tonumber(last.cacheRead) or 0) > 0 then
    table.insert(extra, ('%s%% cached'):format(last.cacheReadPercent))
  end
  if state.mode == 'ask' then
    table.insert(extra, 'ask')
  end
  if state.compaction then
    table.insert(extra, PHASES[state.compaction.level] or 'compacting')
  end
  if state.turn then
    table.insert(extra, state.turn.state == 'retrying' and 'retrying' or 'working')
  end
  if #extra > 0 then
    return table.concat(parts, ' ') .. ' · ' .. table.concat(extra, ' · ')
  end
  return table.concat(parts, ' ')
end

return M
