-- Server commands that need the editor when a code action runs them. Neovim runs a client's
-- own `commands` instead of sending workspace/executeCommand: an advisor note's rewind goes
-- through the same confirmation as :MementoRewind (files named, three ways back), and
-- "make a rule" shows the candidate rule for you to read and save, as :MementoOmfg does.
local async = require('memento.async')

local M = {}

local function argument(command)
  local first = (command.arguments or {})[1]
  return type(first) == 'table' and first or {}
end

M.commands = {
  ['memento.checkpoint.rewind'] = function(command, ctx)
    local server = vim.lsp.get_client_by_id(ctx.client_id)
    require('memento.checkpoints').rewind(argument(command).checkpointId, server)
  end,
  ['memento.advisor.toRule'] = function(command, ctx)
    async.run(function()
      local client_mod = require('memento.client')
      local server = vim.lsp.get_client_by_id(ctx.client_id)
      if not server then
        async.fail('Memento: the server is not running')
      end
      local params = { command = command.command, arguments = command.arguments }
      local result = client_mod.ask(server, 'workspace/executeCommand', params, 'cannot make a rule from the note')
      require('memento.commands').review(result, server)
    end)
  end,
}

return M
