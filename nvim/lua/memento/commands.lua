-- The :Memento* commands (plugin/memento.lua defines them; :help memento-commands).
local async = require('memento.async')
local client_mod = require('memento.client')
local format = require('memento.format')

local M = {}

local function memento()
  local plugin = require('memento')
  if not plugin.did_setup then
    plugin.setup({}) -- a command before setup(): the defaults
  end
  return plugin
end

--- `client_id`: the server to ask (the chat's); else the current buffer's.
local function ask(method, params, what, client_id)
  local client = client_id and vim.lsp.get_client_by_id(client_id) or client_mod.need()
  return client_mod.ask(client, method, params, what)
end

local function choose(question, yes)
  local answer = async.select({ yes, 'Cancel' }, { prompt = question, kind = 'memento.confirm' })
  return answer == yes
end

M.list = {
  MementoChat = {
    nargs = '?',
    complete = { 'open', 'close', 'toggle' },
    run = function(args)
      memento().chat(args.fargs[1] or 'open')
    end,
  },
  MementoPrompt = {
    nargs = '+',
    run = function(args)
      memento().prompt(args.args)
    end,
  },
  MementoStop = {
    run = function()
      memento().stop()
    end,
  },
  MementoSession = {
    nargs = '*',
    complete = function(lead, line)
      if line:match('^%S+%s+open%s') then
        return require('memento.sessions').complete_ids()
      end
      return { 'list', 'new', 'open' }
    end,
    run = function(args)
      memento()
      require('memento.sessions').run(args.fargs[1], args.fargs[2])
    end,
  },
  MementoCheckpoint = {
    nargs = '*',
    run = function(args)
      memento()
      require('memento.checkpoints').create(args.args)
    end,
  },
  MementoRewind = {
    nargs = '?',
    run = function(args)
      memento()
      require('memento.checkpoints').rewind(args.fargs[1])
    end,
  },
  MementoUndoRewind = {
    run = function()
      memento()
      require('memento.checkpoints').undo()
    end,
  },
  MementoDiff = {
    nargs = '?',
    run = function(args)
      memento()
      if require('memento.chat').for_buffer(vim.api.nvim_get_current_buf()) then
        require('memento.diff').card()
      else
        require('memento.diff').file(args.fargs[1])
      end
    end,
  },
  MementoCompact = {
    nargs = '*',
    run = function(args)
      memento()
      async.run(function()
        local instructions = vim.trim(args.args)
        local result = ask('memento/compact', instructions ~= '' and { instructions = instructions } or nil, 'cannot compact')
        vim.notify(M.compact_report(result))
      end)
    end,
  },
  MementoPin = {
    nargs = '?',
    complete = 'file',
    run = function(args)
      memento()
      async.run(function()
        M.pin(vim.trim(args.args))
      end)
    end,
  },
  MementoUnpin = {
    run = function()
      memento()
      async.run(function()
        M.unpin()
      end)
    end,
  },
  MementoPins = {
    run = function()
      memento()
      async.run(function()
        local listed = ask('memento/pins', nil, 'cannot list the pins')
        vim.notify(M.pins_report(listed.pins))
      end)
    end,
  },
  MementoCompactions = {
    nargs = '?',
    run = function(args)
      memento()
      async.run(function()
        if args.fargs[1] then
          M.audit(args.fargs[1])
        else
          M.compactions()
        end
      end)
    end,
  },
  MementoUndoCompaction = {
    nargs = '*',
    run = function(args)
      memento()
      async.run(function()
        M.undo_compaction(args.fargs[1], args.fargs[2])
      end)
    end,
  },
  MementoMode = {
    nargs = '?',
    complete = { 'ask', 'act' },
    run = function(args)
      memento()
      async.run(function()
        M.mode(args.fargs[1])
      end)
    end,
  },
  MementoAdvisor = {
    nargs = '?',
    complete = { 'on', 'off', 'toggle' },
    run = function(args)
      memento()
      async.run(function()
        local wanted = ({ on = true, off = false })[args.fargs[1] or 'toggle']
        -- The server says "Advisor on/off" itself (window/showMessage).
        ask('memento/advisor/toggle', wanted ~= nil and { enabled = wanted } or nil, 'cannot toggle the advisor')
      end)
    end,
  },
  MementoOmfg = {
    nargs = '+',
    run = function(args)
      memento()
      async.run(function()
        M.omfg(args.args)
      end)
    end,
  },
  MementoRules = {
    run = function()
      memento()
      async.run(function()
        local views = require('memento.views')
        views.show('memento://rules', views.rules_lines(ask('memento/rules/list', nil, 'cannot list the rules')))
      end)
    end,
  },
  MementoSettings = {
    run = function()
      memento()
      async.run(function()
        local views = require('memento.views')
        views.show('memento://settings', views.settings_lines(ask('memento/settings', nil, 'cannot read the settings')))
      end)
    end,
  },
  MementoTrust = {
    nargs = '?',
    complete = { 'revoke' },
    run = function(args)
      memento()
      async.run(function()
        M.trust(args.fargs[1] == 'revoke')
      end)
    end,
  },
  MementoMcp = {
    nargs = '*',
    complete = function(lead, line)
      if line:match('^%S+%s+%S+%s') then
        return M.mcp_names(lead)
      end
      return vim.tbl_filter(function(word)
        return vim.startswith(word, lead)
      end, { 'restart', 'trust', 'untrust' })
    end,
    run = function(args)
      memento()
      async.run(function()
        M.mcp(args.fargs[1], args.fargs[2])
      end)
    end,
  },
  MementoRestart = {
    run = function()
      memento()
      M.restart()
    end,
  },
  MementoLog = {
    run = function()
      vim.cmd.tabnew(vim.fn.fnameescape(vim.lsp.get_log_path()))
    end,
  },
}

local function pin_label(pin)
  return pin.kind == 'file' and (pin.target .. ': ' .. pin.what) or pin.what
end

--- :MementoPin [file]: a file, or a message or tool result picked from the latest ones.
function M.pin(file)
  local params
  if file ~= '' then
    params = { file = file }
  else
    local listed = ask('memento/pins', { candidates = true }, 'cannot list what to pin')
    local candidates = listed.candidates or {}
    if #candidates == 0 then
      vim.notify('Memento: nothing to pin yet.')
      return
    end
    local chosen = async.select(candidates, {
      prompt = 'Pin (kept word for word through every compaction)',
      format_item = function(item)
        return item.what
      end,
    })
    if not chosen then
      return
    end
    params = { entryId = chosen.entryId }
  end
  M.pin_with(params)
end

function M.pin_with(params, client_id)
  local result = ask('memento/pin', params, 'cannot pin', client_id)
  vim.notify('Memento: pinned ' .. (result.pin.kind == 'file' and result.pin.target or result.pin.what) .. '.')
end

--- Pin a message or a tool result by its entry (the chat's pin key).
function M.pin_entry(entry_id, client_id)
  M.pin_with({ entryId = entry_id }, client_id)
end

--- :MementoUnpin: pick one of the pins in force.
function M.unpin()
  local listed = ask('memento/pins', nil, 'cannot list the pins')
  if #(listed.pins or {}) == 0 then
    vim.notify('Memento: nothing is pinned.')
    return
  end
  local chosen = async.select(listed.pins, { prompt = 'Unpin', format_item = pin_label })
  if not chosen then
    return
  end
  local params = chosen.kind == 'file' and { file = chosen.target } or { entryId = chosen.target }
  ask('memento/unpin', params, 'cannot unpin')
  vim.notify('Memento: unpinned ' .. pin_label(chosen) .. '.')
end

--- What :MementoPins says.
function M.pins_report(pins)
  if #(pins or {}) == 0 then
    return 'Memento: nothing is pinned.'
  end
  local lines = { 'Memento: pinned —' }
  for _, pin in ipairs(pins) do
    table.insert(lines, '  ' .. pin_label(pin))
  end
  return table.concat(lines, '\n')
end

--- What :MementoCompact says: the server's figures, or its reason for compacting nothing.
function M.compact_report(result)
  local change = ('%s → %s tokens'):format(format.tokens(result.tokensBefore), format.tokens(result.tokensAfter))
  if result.compacted then
    return ('Memento: context compacted, %s.'):format(change)
  end
  local why = ('Memento: %s.'):format(result.why or 'nothing was compacted')
  return result.tokensAfter ~= result.tokensBefore and ('%s Context %s.'):format(why, change) or why
end

--- /omfg: a complaint becomes a candidate rule; you read it and save it, or not.
function M.omfg(complaint)
  local server = client_mod.need()
  M.review(client_mod.ask(server, 'memento/omfg', { complaint = complaint }, '/omfg failed'), server)
end

--- Inside async.run: a /omfg answer (a candidate rule) of `server` shown for reading, then
--- saved if you say so (asking again before replacing a rule of that name).
function M.review(result, server)
  local rule = result.rule
  if not rule then
    async.fail(('Memento: no usable rule came back (%d attempts). %s'):format(result.attempts or 0, table.concat(result.feedback or {}, ' ')))
  end
  require('memento.views').show('memento://omfg/' .. rule.name .. '.md', vim.split(rule.content, '\n', { plain = true }))
  local checked = result.validated and 'It matches the conversation that prompted it.'
    or ('It did not match the conversation that prompted it. ' .. table.concat(result.feedback or {}, ' '))
  if not choose(('Save the rule “%s”? %s'):format(rule.name, checked), 'Save rule') then
    return
  end
  local params = { rule = { name = rule.name, content = rule.content }, write = true }
  local saved, err = client_mod.await(server, 'memento/omfg', params)
  if err and tostring(err.message):find('exists') then
    if not choose(('Replace the existing rule “%s”?'):format(rule.name), 'Overwrite') then
      return
    end
    params.overwrite = true
    saved = client_mod.ask(server, 'memento/omfg', params, 'the rule was not saved')
  elseif err then
    async.fail('Memento: the rule was not saved: ' .. tostring(err.message))
  end
  vim.notify(('Memento: rule saved to %s.'):format(saved.rule and saved.rule.path or rule.name))
end

--- memento/mode: switch to `wanted` ('ask' or 'act'), or say which mode it is.
function M.mode(wanted)
  local modes = require('memento.status').MODES
  if wanted ~= nil and not modes[wanted] then
    async.fail(('Memento: :MementoMode %s? (ask or act)'):format(wanted))
  end
  local server = client_mod.need()
  local result = client_mod.ask(server, 'memento/mode', wanted and { mode = wanted } or nil, 'cannot set the mode')
  -- The status and the chat follow the memento/mode notification the change sends.
  vim.notify('Memento: ' .. (modes[result.mode] or result.mode) .. '.')
end

--- memento/trust: trust the workspace's .memento/config.toml as it is now, or revoke.
function M.trust(revoke)
  if not revoke then
    local question = "Trust this workspace's Memento settings? Memento will then apply the program, provider, "
      .. 'path and permission settings of .memento/config.toml as its content is now; a later change needs trust again.'
    if not choose(question, 'Trust') then
      return
    end
  end
  local result = ask('memento/trust', revoke and { revoke = true } or nil, 'the server did not record trust')
  if result.trusted then
    local still = result.ignoredKeys and #result.ignoredKeys > 0 and (' Still ignored: ' .. table.concat(result.ignoredKeys, ', ') .. '.') or ''
    vim.notify(('Memento: %s is trusted as it is now.%s'):format(result.configPath, still))
  else
    vim.notify(('Memento: %s is not trusted: %s.'):format(result.configPath, result.reason or 'the server did not say why'), vim.log.levels.WARN)
  end
  return result
end

--- :MementoMcp [restart|trust|untrust NAME]: the MCP servers (state, source, tools, prompts);
--- trusting a repository's server shows its definition first.
function M.mcp(verb, name)
  local views = require('memento.views')
  if verb == nil then
    local result = ask('memento/mcp/list', { start = true }, 'cannot list the MCP servers')
    M.last_mcp = result.servers
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
function M.mcp_names(lead)
  local names = {}
  for _, server in ipairs(M.last_mcp or {}) do
    if vim.startswith(server.name, lead) then
      table.insert(names, server.name)
    end
  end
  return names
end

--- Stop every server, then start them again for the buffers open.
function M.restart()
  local clients = client_mod.all()
  for _, server in ipairs(clients) do
    client_mod.stop(server)
  end
  local tries = 0
  local function again()
    tries = tries + 1
    for _, server in ipairs(clients) do
      if not client_mod.call(server, 'is_stopped') and tries < 100 then
        return vim.defer_fn(again, 50)
      end
    end
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) then
        client_mod.attach(buf)
      end
    end
  end
  again()
end

--- Define the commands.
function M.define()
  for name, spec in pairs(M.list) do
    local complete = spec.complete
    if type(complete) == 'table' then
      local words = complete
      complete = function(lead)
        return vim.tbl_filter(function(word)
          return vim.startswith(word, lead)
        end, words)
      end
    end
    vim.api.nvim_create_user_command(name, spec.run, { nargs = spec.nargs or 0, complete = complete, desc = 'Memento' })
  end
end

--- The relief steps of the session; <CR> on one opens its audit.
function M.compactions()
  local views = require('memento.views')
  local buf = views.show('memento://compactions', views.compactions_lines(ask('memento/compaction/list', nil, 'cannot list the compactions')))
  vim.keymap.set('n', '<CR>', function()
    local id = views.step_at(vim.api.nvim_buf_get_lines(buf, 0, -1, false), vim.api.nvim_win_get_cursor(0)[1])
    if id then
      async.run(function()
        M.audit(id)
      end)
    end
  end, { buffer = buf, nowait = true, silent = true, desc = 'Memento: open the audit of this step' })
end

--- The audit of one relief step (memento/relief/audit), in a buffer of its own; `u` there
--- undoes the step (as :MementoUndoCompaction does) and draws the audit again.
function M.audit(id, client_id)
  local views = require('memento.views')
  local lines = views.audit_lines(ask('memento/relief/audit', { id = id }, 'cannot open the audit', client_id))
  local buf = views.show('memento://relief/' .. id, lines)
  vim.keymap.set('n', 'u', function()
    async.run(function()
      if M.undo_compaction(id, nil, client_id) then
        M.audit(id, client_id)
      end
    end)
  end, { buffer = buf, nowait = true, silent = true, desc = 'Memento: undo this step' })
end

local function undo_figures(result)
  return ('%s → %s tokens'):format(format.tokens(result.tokensBefore), format.tokens(result.tokensAfter))
end

--- Undo a relief step (or an undo), or bring back one item of a prune or shake; when the
--- restored context would not fit, the server says why and what to leave out, and the user
--- may ask again with that left out. True when it was undone.
function M.undo_compaction(id, entry_id, client_id)
  if not id then
    local listed = ask('memento/compaction/list', nil, 'cannot list the compactions', client_id).compactions or {}
    local live = vim.tbl_filter(function(item)
      return item.undoneBy == nil
    end, listed)
    if #live == 0 then
      vim.notify('Memento: nothing to undo')
      return false
    end
    local chosen = async.select(live, {
      prompt = 'Undo which step?',
      format_item = function(item)
        return ('%s %s %s → %s tokens (%s)'):format(item.id, item.level, format.tokens(item.tokensBefore), format.tokens(item.tokensAfter or 0), item.reason or '')
      end,
    })
    if not chosen then
      return false
    end
    id = chosen.id
  end
  local params = { id = id, entryId = entry_id }
  local result = ask('memento/relief/undo', params, 'cannot undo', client_id)
  if not result.undone and result.droppable and #result.droppable > 0 then
    local names = vim.tbl_map(function(d)
      return ('%s %s (%s tokens)'):format(d.tool or d.role, d.file or '', format.thousands(d.tokens))
    end, result.droppable)
    vim.notify('Memento: ' .. result.why .. '\nTo leave out: ' .. table.concat(names, ', '), vim.log.levels.WARN)
    if not choose('Leave them out and undo?', 'Leave them out and undo') then
      return false
    end
    params.drop = vim.tbl_map(function(d)
      return d.entryId
    end, result.droppable)
    result = ask('memento/relief/undo', params, 'cannot undo', client_id)
  end
  if result.undone then
    vim.notify('Memento: undone, context ' .. undo_figures(result) .. '.')
  else
    vim.notify('Memento: ' .. (result.why or 'not undone'), vim.log.levels.WARN)
  end
  return result.undone == true
end

return M
