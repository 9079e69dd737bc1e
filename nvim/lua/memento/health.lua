-- :checkhealth memento: Neovim, the server command, whether the server starts (and its
-- version), the effective settings and where each came from.
local client_mod = require('memento.client')
local config = require('memento.config')

local M = {}

local health = vim.health

local function by_source(sources)
  local grouped = {}
  for key, source in pairs(sources or {}) do
    if source ~= 'default' then
      grouped[source] = grouped[source] or {}
      table.insert(grouped[source], key)
    end
  end
  return grouped
end

local ORDER = { 'user', 'workspace', 'initializationOptions', 'didChangeConfiguration' }

local function report_settings(server)
  local response = client_mod.call(server, 'request_sync', 'memento/settings', nil, 10000, 0)
  if not response or response.err or not response.result then
    health.error('memento/settings got no answer: ' .. vim.inspect(response and response.err))
    return
  end
  local result = response.result
  local settings = result.settings or {}
  local provider = settings.provider or {}
  health.ok(
    ('effective settings read: provider %s, model %s%s'):format(
      tostring(provider.kind),
      tostring(provider.model or '(default)'),
      provider.baseUrl and (' at ' .. provider.baseUrl) or ''
    )
  )
  local grouped = by_source(result.sources)
  for _, source in ipairs(ORDER) do
    local keys = grouped[source]
    if keys then
      table.sort(keys)
      health.info(('from %s: %s'):format(source, table.concat(keys, ', ')))
    end
  end
  if not next(grouped) then
    health.info('every setting has its default value')
  end
  health.info(('sources of provider.kind: %s'):format((result.sources or {})['provider.kind'] or 'default'))
  for _, which in ipairs({ 'user', 'workspace' }) do
    local path = (result.files or {})[which]
    if path then
      health.info(('%s file: %s%s'):format(which, path, vim.uv.fs_stat(path) and '' or ' (none)'))
    end
  end
  if type(result.workspaceTrusted) == 'boolean' then
    health.info('workspace trusted: ' .. tostring(result.workspaceTrusted))
  end
  if result.ignoredKeys and #result.ignoredKeys > 0 then
    health.warn(
      'the workspace file sets user-level keys that are ignored: ' .. table.concat(result.ignoredKeys, ', '),
      { 'Read .memento/config.toml; if you trust it, run :MementoTrust' }
    )
  end
  for _, problem in ipairs(result.problems or {}) do
    health.warn(problem)
  end
end

function M.check()
  health.start('memento')
  local version = vim.version()
  local text = ('%d.%d.%d'):format(version.major, version.minor, version.patch)
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok('Neovim ' .. text)
  else
    health.error('Neovim ' .. text .. ': Memento needs 0.11 (the version it is tested with)')
  end
  if require('memento').did_setup then
    health.ok('setup() was called')
  else
    health.warn('setup() was not called', { 'require("memento").setup({ settings = { provider = { … } } })' })
  end
  health.info('permission prompts (bash) use vim.ui.select, through Neovim\'s own window/showMessageRequest handler')

  health.start('memento: server')
  local cmd, why = config.command()
  if not cmd then
    health.error('server command: ' .. why, { 'setup({ cmd = "memento lsp" }) or setup({ cmd = { "memento", "lsp" } })' })
    return
  end
  local shown = table.concat(vim.tbl_map(function(word)
    return word:find('[%s\'"\\]') and vim.fn.shellescape(word) or word
  end, cmd), ' ')
  local install = config.install_command()
  local default = config.options.cmd == nil
  if default and cmd[1] == 'python3' then
    -- Nothing on PATH nor where uv and pipx install: perhaps where uv or pipx say they do.
    local found, by = config.installed(true)
    if found then
      health.warn(('memento is installed (%s) in a folder the plugin did not look in: %s'):format(by, found), {
        ('setup({ cmd = { %q, "lsp" } }), or put its folder on PATH'):format(found),
      })
    else
      health.warn('memento is not on PATH, nor where `uv tool install` and `pipx install` put it (~/.local/bin)', {
        'Install the server: ' .. install,
      })
    end
  elseif default and cmd[1] ~= 'memento' then
    health.info(('memento is not on PATH; using the one in %s (uv tool / pipx install)'):format(vim.fs.dirname(cmd[1])))
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    health.error(('server command: %s: %s is not an executable'):format(shown, cmd[1]), {
      default and ('Install the server: ' .. install) or 'Set setup({ cmd = { … } }) to the program that runs `memento lsp`',
    })
    return
  end
  health.ok(('server command: %s (%s)'):format(shown, vim.fn.exepath(cmd[1])))
  local server = client_mod.current(false)
  local temporary = false
  if not server then
    server = client_mod.start(client_mod.root_for(vim.api.nvim_get_current_buf()) or vim.fn.getcwd())
    temporary = true
  end
  if not server then
    health.error('the server could not be started', { 'Run the command above in a terminal', ':MementoLog' })
    return
  end
  vim.wait(30000, function()
    return server.initialized or client_mod.call(server, 'is_stopped')
  end, 20)
  if not server.initialized then
    local advice = { 'Run the command above in a terminal', ':MementoLog' }
    if default and cmd[1] == 'python3' then
      advice = { 'Install the server: ' .. install }
    end
    health.error('the server did not answer initialize', advice)
    return
  end
  local info = server.server_info or {}
  health.ok(
    ('the server %s and answers initialize: %s %s (root %s)'):format(
      temporary and 'starts' or 'runs',
      info.name or 'memento',
      info.version or '(no version)',
      server.root_dir
    )
  )
  report_settings(server)
  if temporary then
    client_mod.stop(server)
  end
end

return M
