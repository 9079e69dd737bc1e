-- The plugin's options: defaults, merged with what setup() is given.
local M = {}

M.defaults = {
  --- The server command; nil: `memento lsp` when `memento` is on $PATH, else `python3 -m memento lsp`.
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

--- The server command from the options.
function M.command()
  local cmd = M.options.cmd
  if type(cmd) == 'string' then
    return { cmd }
  end
  if cmd then
    return cmd
  end
  if vim.fn.executable('memento') == 1 then
    return { 'memento', 'lsp' }
  end
  return { 'python3', '-m', 'memento', 'lsp' }
end

return M
