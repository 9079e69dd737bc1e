-- The chat: a markdown scratch buffer per server (memento://chat) with an input buffer
-- below it, in a split or a float. Live events are drawn as they come; when the buffer is
-- made (first :MementoChat or first event) and when another session becomes active, it is
-- drawn from memento/history first (events meanwhile wait their turn).
local api = vim.api
local async = require('memento.async')
local children = require('memento.chat.children')
local client_mod = require('memento.client')
local config = require('memento.config')
local history = require('memento.chat.history')
local transcript = require('memento.chat.transcript')
local views = require('memento.views')
local window = require('memento.chat.window')

local M = {}

local chats = {}

local Chat = {}
Chat.__index = Chat

local function scratch(name, client_id)
  local old = views.named(name)
  if old then
    local owner = vim.b[old].memento_client
    local client = owner and vim.lsp.get_client_by_id(owner)
    if not client or client_mod.call(client, 'is_stopped') then
      api.nvim_buf_delete(old, { force = true }) -- the chat of a server that is gone
    end
  end
  local buf = api.nvim_create_buf(false, true)
  local taken = views.named(name) ~= nil
  api.nvim_buf_set_name(buf, taken and ('%s/%d'):format(name, client_id) or name)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = 'markdown'
  vim.b[buf].memento_client = client_id
  return buf
end

local function map(buf, modes, lhs, rhs, desc)
  if lhs and lhs ~= false then
    vim.keymap.set(modes, lhs, rhs, { buffer = buf, nowait = true, silent = true, desc = desc })
  end
end

function Chat.new(client_id)
  local self = setmetatable({ client_id = client_id, prompts = {}, placeholders = {} }, Chat)
  self.buf = scratch('memento://chat', client_id)
  vim.bo[self.buf].modifiable = false
  vim.bo[self.buf].undolevels = -1
  self.input = scratch('memento://input', client_id)
  self.t = transcript.new(self.buf)
  self.children = children.new(self.t)
  local keys = config.options.keymaps
  map(self.buf, 'n', keys.close, function()
    self:close()
  end, 'Memento: close the chat')
  map(self.buf, 'n', keys.stop, function()
    require('memento').stop()
  end, 'Memento: stop the turn')
  map(self.buf, 'n', keys.diff, function()
    require('memento.diff').card()
  end, "Memento: the edit's diff")
  map(self.buf, 'n', keys.focus_input, function()
    self:open(true)
  end, 'Memento: type a prompt')
  map(self.input, 'n', keys.send, function()
    self:send_input()
  end, 'Memento: send')
  map(self.input, { 'i', 'n' }, keys.send_insert, function()
    self:send_input()
  end, 'Memento: send')
  map(self.input, 'n', keys.stop, function()
    require('memento').stop()
  end, 'Memento: stop the turn')
  return self
end

function Chat:valid()
  return api.nvim_buf_is_valid(self.buf) and api.nvim_buf_is_valid(self.input)
end

--- The chat of a server; `create` makes it (drawn from memento/history) when there is none.
function M.get(client_id, create)
  local chat = chats[client_id]
  if chat and not chat:valid() then
    chat:discard()
    chat = nil
  end
  if not chat and create and vim.lsp.get_client_by_id(client_id) then
    chat = Chat.new(client_id)
    chats[client_id] = chat
    chat:load_history()
  end
  return chat
end

--- The chat whose buffer (or input) is `buf`.
function M.for_buffer(buf)
  for _, chat in pairs(chats) do
    if chat.buf == buf or chat.input == buf then
      return chat
    end
  end
end

function Chat:discard()
  for _, buf in ipairs({ self.buf, self.input }) do
    if api.nvim_buf_is_valid(buf) then
      api.nvim_buf_delete(buf, { force = true })
    end
  end
  require('memento.chat.writer').forget(self.buf)
  chats[self.client_id] = nil
end

-- -- events ----------------------------------------------------------------------------
--- The turn the queued events start, if they start one: its id.
local function queued_start(queued)
  local first = queued[1]
  return first and first.started
end

function Chat:load_history()
  local client = vim.lsp.get_client_by_id(self.client_id)
  if not client then
    return
  end
  self.loading = {}
  self.generation = (self.generation or 0) + 1
  local generation = self.generation
  client_mod.request(client, 'memento/history', { limit = 1000 }, function(err, result)
    if generation ~= self.generation or not self:valid() then
      return
    end
    local queued = self.loading or {}
    self.loading = nil
    self.t:reset()
    self.children:reset()
    if err then
      self.t:error_line('cannot read the history: ' .. tostring(err.message))
    else
      local entries = result and result.entries or {}
      if result and result.nextCursor then
        self.t:note(('… older entries are not shown (%d shown)'):format(#entries), '')
      end
      local running = result and result.runningTurn
      local live = queued_start(queued)
      if live then
        -- The queued events hold that turn from its start: draw the history before its prompt.
        local cut = #entries
        for index = #entries, 1, -1 do
          local message = entries[index].message
          if (running and entries[index].id == running.entryId) or (not running and message and message.role == 'user') then
            cut = index - 1
            self.prompts[live] = self.prompts[live] or (message and history.text_of(message.content))
            break
          end
        end
        entries = vim.list_slice(entries, 1, cut)
        running = nil
      end
      history.render(self.t, entries, running, self.children, result and result.relief)
    end
    for _, draw in ipairs(queued) do
      draw.run()
    end
  end)
end

--- Queue-aware event entry point: `fn(self)`; `started` names a turn the event starts.
function Chat:on(fn, started)
  local draw = {
    started = started,
    run = function()
      fn(self)
    end,
  }
  if self.loading then
    table.insert(self.loading, draw)
  else
    draw.run()
  end
end

function Chat:turn(params)
  local id = params.turnId
  if params.state == 'started' then
    local text = self.prompts[id]
    local row = self.t:user(text or '…')
    if not text then
      self:fetch_prompt(id, row)
    end
    self.t:assistant(id, 'running')
  elseif params.state == 'retrying' then
    self:ensure_turn(id)
    self.t:retry(params, true)
  else
    self:ensure_turn(id)
    self.t:turn_end(id, params.state, params.error)
    self:fill_outputs(id)
  end
end

--- Results a server did not put in memento/tool (older ones): read from the history.
function Chat:fill_outputs(turn_id)
  local missing = self.t:without_output(turn_id)
  local client = next(missing) and vim.lsp.get_client_by_id(self.client_id)
  if not client then
    return
  end
  client_mod.request(client, 'memento/history', { limit = 200 }, function(err, result)
    if err or not result or not self:valid() then
      return
    end
    for _, entry in ipairs(result.entries or {}) do
      local message = entry.message
      if message and message.role == 'toolResult' and missing[message.toolCallId] then
        self:on(function()
          self.t:tool_output(message.toolCallId, message.isError == true, history.text_of(message.content))
        end)
      end
    end
  end)
end

--- A turn this chat did not see start (the chat was made mid-turn): give it a header.
function Chat:ensure_turn(id)
  if id and not self.t.turns[id] then
    self.t:assistant(id, 'running')
  end
end

--- A turn started elsewhere (an advisor note applied, another client): its prompt is the
--- newest user message of the history; fill it in where the placeholder is.
function Chat:fetch_prompt(turn_id, row)
  local mark = api.nvim_buf_set_extmark(self.buf, require('memento.chat.writer').ns, row, 0, {})
  local client = vim.lsp.get_client_by_id(self.client_id)
  if not client then
    return
  end
  client_mod.request(client, 'memento/history', { limit = 20 }, function(err, result)
    if err or not result or not api.nvim_buf_is_valid(self.buf) then
      return
    end
    for index = #result.entries, 1, -1 do
      local message = result.entries[index].message
      if message and message.role == 'user' then
        local text = history.text_of(message.content)
        local at = api.nvim_buf_get_extmark_by_id(self.buf, require('memento.chat.writer').ns, mark, {})[1]
        if at then
          self.t:fill(at, text)
        end
        self.prompts[turn_id] = text
        return
      end
    end
  end)
end

function Chat:stream(params)
  self:ensure_turn(params.turnId)
  if params.stream == 'tool' then
    self.t:tool_delta(params.toolCallId, params.toolName, params.delta)
  else
    self.t:stream(params.stream, params.delta)
  end
end

function Chat:tool(params)
  self:ensure_turn(params.turnId)
  if params.state == 'started' then
    -- An MCP tool's card names its server and the server's own tool name.
    local label = params.server and (params.server .. ' › ' .. (params.serverTool or params.toolName)) or nil
    self.t:tool_started(params.toolCallId, params.toolName, nil, label)
  else
    self.t:tool_finished(params.toolCallId, params.toolName, params.isError == true, params.output)
  end
end

--- The running subagent whose line the cursor is on in the chat window, if any.
function Chat:child_here()
  local win = api.nvim_get_current_win()
  if api.nvim_win_get_buf(win) ~= self.buf then
    return nil
  end
  return self.children:at(api.nvim_win_get_cursor(win)[1] - 1)
end

-- -- windows -----------------------------------------------------------------------------
function Chat:windows()
  return window.windows(self)
end

--- Show the chat (and its input); `focus_input` puts the cursor in the input.
function Chat:open(focus_input)
  return window.open(self, focus_input)
end

function Chat:close()
  window.close(self)
end

function Chat:visible()
  return window.visible(self)
end

-- -- sending -------------------------------------------------------------------------------
--- Inside async.run: send `text` as a prompt, or as a steer while a turn runs (the server
--- starts a turn with it when the running one has just ended). True once the server has it.
function Chat:send(text)
  if vim.trim(text) == '' then
    return false
  end
  local client = vim.lsp.get_client_by_id(self.client_id)
  if not client then
    async.fail('Memento: the server is not running')
  end
  if require('memento.status').running(self.client_id) then
    local result = client_mod.ask(client, 'memento/steer', { text = text }, 'the message was not sent')
    if result.delivered then
      self:on(function()
        self.t:steer(text)
      end)
    elseif result.turnId then
      self.prompts[result.turnId] = text
    end
  else
    local result = client_mod.ask(client, 'memento/prompt', { text = text }, 'the prompt was not sent')
    self.prompts[result.turnId] = text
  end
  return true
end

function Chat:send_input()
  local text = table.concat(api.nvim_buf_get_lines(self.input, 0, -1, false), '\n')
  async.run(function()
    if self:send(text) then
      api.nvim_buf_set_lines(self.input, 0, -1, false, {})
    end
  end)
end

function M.forget(client_id)
  chats[client_id] = nil
end

function M.all()
  return chats
end

return M
