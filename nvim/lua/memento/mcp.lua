-- :MementoMcp: the MCP servers (state, source, tools, prompts), restart, trust and untrust.
local async = require('memento.async')
local client_mod = require('memento.client')

local M = {}
local ask, choose = client_mod.ask_here, async.confirm

--- :MementoMcp [restart|trust|untrust NAME]: the MCP servers (state, source, tools, prompts);
--- trusting a repository's server shows its definition first.
function M.run(verb, name)
  local views = require('memento.views')
  if verb == nil then
    local result = ask('memento/mcp/list', { start = true }, 'cannot list the MCP servers')
    M.last = result.servers
    return views.show('memento://mcp', views.mcp_lines(result))
  end
  if name == nil then
    async.fail(('Memento: :MementoMcp %s NAME'):format(verb))
  end
  local servers = ask('memento/mcp/list', { start = false }, 'cannot list the MCP servers').servers
  local server
  for _, item in ipairs(servers) do
    if item.name == name then
      server = item
    end
  end
  if server == nil then
    async.fail(('Memento: no MCP server %s'):format(name))
  end
  local result
  if verb == 'restart' then
    result = ask('memento/mcp/restart', { name = name }, 'cannot restart ' .. name)
  elseif verb == 'trust' then
    local question = ('Trust the MCP server %s defined in %s? It starts, receives what the agent sends it, and its tools '
      .. 'are offered to the model. Its definition: %s'):format(name, server.path or server.source, server.definition:gsub('%s+', ' '))
    if not choose(question, 'Trust and start') then
      return
    end
    result = ask('memento/mcp/trust', { name = name, trusted = true, digest = server.digest }, 'cannot trust ' .. name)
  elseif verb == 'untrust' then
    result = ask('memento/mcp/trust', { name = name, trusted = false }, 'cannot untrust ' .. name)
  else
    async.fail(('Memento: :MementoMcp %s? (restart, trust or untrust)'):format(verb))
  end
  vim.notify(('Memento: MCP server %s is %s.'):format(result.name, result.state))
  return result
end

--- Server names for completion (from the last list; no request while typing).
function M.names(lead)
  local names = {}
  for _, server in ipairs(M.last or {}) do
    if vim.startswith(server.name, lead) then
      table.insert(names, server.name)
    end
  end
  return names
end

return M
