-- :MementoSession list | new | open {id}. The chat follows the switch (memento/session).
local async = require('memento.async')
local client_mod = require('memento.client')
local format = require('memento.format')

local M = {}

function M.describe(session, now)
  local title = vim.trim(session.title or '') ~= '' and session.title or session.id
  local line = ('%s — %s'):format(title:gsub('\n.*', ''), format.relative_time(session.updatedAt, now))
  if session.damaged then
    line = line .. ' — cannot be opened: ' .. session.damaged
  end
  return line
end

local function open(server, id)
  client_mod.ask(server, 'memento/session/open', { id = id }, 'cannot open the session')
  vim.notify(('Memento: session %s is the active one.'):format(id))
end

function M.run(action, id)
  async.run(function()
    local server = client_mod.need()
    if action == 'new' then
      local ref = client_mod.ask(server, 'memento/session/new', nil, 'cannot start a new session')
      vim.notify(('Memento: new session %s started.'):format(ref.id))
    elseif action == 'open' and id and id ~= '' then
      open(server, id)
    elseif action == nil or action == '' or action == 'list' or action == 'open' then
      local list = client_mod.ask(server, 'memento/session/list', nil, 'cannot list the sessions')
      local sessions = list.sessions or {}
      if #sessions == 0 then
        async.fail('Memento: there are no sessions for this workspace yet.', vim.log.levels.INFO)
      end
      local now = os.time()
      local chosen = async.select(sessions, {
        prompt = 'Memento: open session',
        kind = 'memento.session',
        format_item = function(session)
          return M.describe(session, now)
        end,
      })
      if chosen then
        open(server, chosen.id)
      end
    else
      async.fail(('Memento: :MementoSession %s? (list, new, open {id})'):format(action))
    end
  end)
end

--- Session ids for :MementoSession open <Tab> (a short synchronous request).
function M.complete_ids()
  local server = client_mod.current(false)
  if not server or not server.initialized then
    return {}
  end
  local response = client_mod.call(server, 'request_sync', 'memento/session/list', nil, 1000, 0)
  local ids = {}
  for _, session in ipairs(response and response.result and response.result.sessions or {}) do
    table.insert(ids, session.id)
  end
  return ids
end

return M
