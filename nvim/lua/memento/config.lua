-- The plugin's options: defaults, merged with what setup() is given.
local M = {}

M.defaults = {
  --- The server command: a list of words, or a string split into words as a shell would
  --- (`M.split`); nil: `memento lsp` when `memento` is on $PATH, else `python3 -m memento lsp`.
  cmd = nil,
  --- The `memento` settings (the keys of .memento/config.toml, camelCase or snake_case): sent as
  --- initializationOptions and again in a didChangeConfiguration (a push refines, never resets).
  settings = {},
  --- Tell the server whether you trust this workspace (nil: leave it to `memento trust`).
  workspace_trusted = nil,
  --- Files that mark a workspace root, searched upwards from a buffer's file.
  root_markers = { '.memento', '.git' },
  --- function(bufnr) -> root or nil; replaces root_markers when set.
  root_dir = nil,
  --- Filetypes to attach to (nil: every file buffer under a root).
  filetypes = nil,
  chat = {
    --- 'right', 'left', 'bottom' or 'float'.
    layout = 'right',
    width = 0.4, -- share of the editor (or columns when > 1)
    height = 0.4, -- for 'bottom' and 'float'
    input_height = 4,
    --- Open the chat when :MementoPrompt sends a prompt.
    open_on_prompt = true,
  },
  keymaps = {
    send = '<CR>', -- input, normal mode
    send_insert = '<C-s>', -- input, insert mode
    stop = '<C-c>', -- chat and input
    close = 'q', -- chat
    diff = 'gd', -- chat: the edit's diff (on a tool card)
    open = '<CR>', -- chat: a prune, shake or compaction line's audit
    pin = 'gp', -- chat: pin the message or tool result under the cursor
    focus_input = 'i', -- chat: jump to the input
  },
}

M.options = vim.deepcopy(M.defaults)

function M.set(opts)
  M.options = vim.tbl_deep_extend('force', vim.deepcopy(M.defaults), opts or {})
  -- The settings are the user's: never merged with defaults (the server has its own).
  M.options.settings = vim.deepcopy((opts or {}).settings or {})
  return M.options
end

--- `text` split into words as a POSIX shell splits a simple command, as :help memento says
--- (`cmd`): spaces, tabs and newlines outside quotes separate words; single quotes keep
--- everything literally; double quotes keep spaces, and a backslash in them escapes `"`, `\`,
--- `$` and `` ` `` (before anything else it stays); outside quotes a backslash escapes the
--- next character; a backslash before a newline, outside quotes or in double quotes, joins
--- the lines. Nothing is expanded ($VAR, ~, globs). Returns the words, or nil and why.
function M.split(text)
  local words, word, quote, i = {}, nil, nil, 1
  while i <= #text do
    local c = text:sub(i, i)
    if quote == "'" then
      if c == "'" then
        quote = nil
      else
        word = word .. c
      end
    elseif quote == '"' then
      local n = text:sub(i + 1, i + 1)
      if c == '"' then
        quote = nil
      elseif c == '\\' and n ~= '' and ('"\\$`\n'):find(n, 1, true) then
        word, i = word .. (n == '\n' and '' or n), i + 1
      else
        word = word .. c
      end
    elseif c == ' ' or c == '\t' or c == '\n' then
      if word then
        table.insert(words, word)
        word = nil
      end
    elseif c == "'" or c == '"' then
      word, quote = word or '', c
    elseif c == '\\' then
      if i == #text then
        return nil, 'a backslash ends it'
      end
      local n = text:sub(i + 1, i + 1)
      if n ~= '\n' then -- a backslash before a newline joins the lines
        word = (word or '') .. n
      end
      i = i + 1
    else
      word = (word or '') .. c
    end
    i = i + 1
  end
  if quote then
    return nil, ('a %s quote is not closed'):format(quote == "'" and 'single' or 'double')
  end
  if word then
    table.insert(words, word)
  end
  if #words == 0 then
    return nil, 'it is empty'
  end
  return words
end

--- The server command from the options, as a list; nil and why when `cmd` cannot be used.
function M.command()
  local cmd = M.options.cmd
  if type(cmd) == 'string' then
    local words, why = M.split(cmd)
    if not words then
      return nil, ('setup({ cmd = %q }): %s'):format(cmd, why)
    end
    return words
  end
  if type(cmd) == 'table' and #cmd > 0 then
    return cmd
  end
  if cmd ~= nil then
    return nil, ('setup({ cmd = %s }): a command is a string or a list of strings'):format(vim.inspect(cmd))
  end
  if vim.fn.executable('memento') == 1 then
    return { 'memento', 'lsp' }
  end
  local installed = M.installed()
  if installed then
    return { installed, 'lsp' }
  end
  return { 'python3', '-m', 'memento', 'lsp' }
end

--- Where `uv tool install` and `pipx install` put programs: their variables, else
--- ~/.local/bin (both tools' default, and XDG's). `ask`: also ask uv and pipx themselves
--- (they run as processes: :checkhealth only, not at every start).
function M.tool_bin_dirs(ask)
  local dirs = {}
  local function add(dir, by)
    if dir and dir ~= '' then
      table.insert(dirs, { dir = vim.fs.normalize(dir), by = by })
    end
  end
  add(vim.env.UV_TOOL_BIN_DIR, 'UV_TOOL_BIN_DIR')
  add(vim.env.PIPX_BIN_DIR, 'PIPX_BIN_DIR')
  add(vim.env.XDG_BIN_HOME, 'XDG_BIN_HOME')
  add('~/.local/bin', '~/.local/bin')
  if ask then
    for _, tool in ipairs({ { 'uv', 'tool', 'dir', '--bin' }, { 'pipx', 'environment', '--value', 'PIPX_BIN_DIR' } }) do
      if vim.fn.executable(tool[1]) == 1 then
        local done = vim.system(tool, { text = true }):wait(10000)
        if done.code == 0 then
          add(vim.trim(done.stdout or ''), table.concat(tool, ' '))
        end
      end
    end
  end
  return dirs
end

--- The `memento` a uv tool or pipx install left off PATH (a GUI Neovim started without the
--- shell's profile), and the folder's source; nil when there is none.
function M.installed(ask)
  for _, entry in ipairs(M.tool_bin_dirs(ask)) do
    local program = entry.dir .. '/memento'
    if vim.fn.executable(program) == 1 then
      return program, entry.by
    end
  end
  return nil
end

--- The one command that installs the server: from the checkout this plugin is in (its nvim/
--- folder), uv's or pipx's install of it.
function M.install_command()
  local plugin = debug.getinfo(1, 'S').source:sub(2)
  local root = vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(vim.fs.dirname(plugin))))
  local pyproject = root .. '/pyproject.toml'
  local source = 'memento-lsp'
  if vim.uv.fs_stat(pyproject) and table.concat(vim.fn.readfile(pyproject, '', 20), '\n'):find('name = "memento%-lsp"') then
    source = root
  end
  local tool = vim.fn.executable('pipx') == 1 and vim.fn.executable('uv') ~= 1 and 'pipx install' or 'uv tool install'
  return ('%s %s'):format(tool, vim.fn.shellescape(source))
end

return M
