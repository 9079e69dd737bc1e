-- The :Memento* commands (plugin/memento.lua defines them; :help memento-commands).
local async = require('memento.async')
local client_mod = require('memento.client')

local M = {}

local function memento()
  local plugin = require('memento')
  if not plugin.did_setup then
    plugin.setup({}) -- a command before setup(): the defaults
  end
  return plugin
end

local ask, choose = client_mod.ask_here, async.confirm
local relief = require('memento.relief')
local mcp = require('memento.mcp')

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
        vim.notify(relief.compact_report(result))
      end)
    end,
  },
  MementoPin = {
    nargs = '?',
    complete = 'file',
    run = function(args)
      memento()
      async.run(function()
        relief.pin(vim.trim(args.args))
      end)
    end,
  },
  MementoUnpin = {
    run = function()
      memento()
      async.run(function()
        relief.unpin()
      end)
    end,
  },
  MementoPins = {
    run = function()
      memento()
      async.run(function()
        local listed = ask('memento/pins', nil, 'cannot list the pins')
        vim.notify(relief.pins_report(listed.pins))
      end)
    end,
  },
  MementoCompactions = {
    nargs = '?',
    run = function(args)
      memento()
      async.run(function()
        if args.fargs[1] then
          relief.audit(args.fargs[1])
        else
          relief.compactions()
        end
      end)
    end,
  },
  MementoUndoCompaction = {
    nargs = '*',
    run = function(args)
      memento()
      async.run(function()
        relief.undo_compaction(args.fargs[1], args.fargs[2])
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
        return mcp.names(lead)
      end
      return vim.tbl_filter(function(word)
        return vim.startswith(word, lead)
      end, { 'restart', 'trust', 'untrust' })
    end,
    run = function(args)
      memento()
      async.run(function()
        mcp.run(args.fargs[1], args.fargs[2])
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

return M
