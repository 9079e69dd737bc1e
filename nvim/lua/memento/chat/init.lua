-- The chat: a markdown scratch buffer per server (memento://chat) with an input buffer
-- below it, in a split or a float. It draws the session's transcript: the page
-- memento/transcript gives when the buffer is made (first :MementoChat or first patch) and
-- when another session becomes active, then each memento/transcript/patch (patches that
-- come while the page is read wait for it).
local api = vim.api
local async = require('memento.async')
local client_mod = require('memento.client')
local config = require('memento.config')
local transcript = require('memento.chat.transcript')
local views = require('memento.views')
local window = require('memento.chat.window')

local M = {}

--- Items drawn at once (the newest; a longer session says what is left out).
local PAGE = 1000
local STEERING = { 'steering', 'MementoChatSteer' }

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
  local self = setmetatable({ client_id = client_id, steers = {} }, Chat)
  self.buf = scratch('memento://chat', client_id)
  vim.bo[self.buf].modifiable = false
  vim.bo[self.buf].undolevels = -1
  self.input = scratch('memento://input', client_id)
  self.t = transcript.new(self.buf)
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
  map(self.buf, 'n', keys.open, function()
    require('memento.chat.act').open()
  end, 'Memento: the audit of this relief step')
  map(self.buf, 'n', keys.pin, function()
    require('memento.chat.act').pin()
  end, 'Memento: pin this message or tool result')
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

--- The chat of a server; `create` makes it (drawn from memento/transcript) when there is none.
function M.get(client_id, create)
  local chat = chats[client_id]
  if chat and not chat:valid() then
    chat:discard()
    chat = nil
  end
  if not chat and create and vim.lsp.get_client_by_id(client_id) then
    chat = Chat.new(client_id)
    chats[client_id] = chat
    chat:load()
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

-- -- the transcript ----------------------------------------------------------------------
--- Read the session's transcript and draw it; patches and notes that come meanwhile wait
--- for it (patches the page already holds are dropped).
function Chat:load()
  local client = vim.lsp.get_client_by_id(self.client_id)
  if not client then
    return
  end
  self.loading = self.loading or {}
  self.generation = (self.generation or 0) + 1
  local generation = self.generation
  client_mod.request(client, 'memento/transcript', { limit = PAGE }, function(err, page)
    if generation ~= self.generation or not self:valid() then
      return
    end
    local queued = self.loading or {}
    self.loading = nil
    if err or not page then
      -- Said once: patches are not followed until the session changes or the chat is made anew.
      self.session = false
      self.t:show({})
      self.t:note('✗ cannot read the transcript: ' .. tostring(err and err.message), 'error')
    else
      self.session, self.seq, self.steers = page.sessionId, page.seq, {}
      local items = page.items or {}
      local older = page.nextCursor and page.nextCursor ~= vim.NIL
      self.t:show(items, older and ('… older items are not shown (the newest %d are)'):format(#items) or nil)
    end
    for _, run in ipairs(queued) do
      run()
    end
  end)
end

--- Run `draw` now, or once the page being read is drawn.
function Chat:after_load(draw)
  if self.loading then
    table.insert(self.loading, draw)
  else
    draw()
  end
end

--- A line of the chat's own (a mode switch, the server stopping) at the end.
function Chat:note(text, kind)
  self:after_load(function()
    self.t:note(text, kind)
  end)
end

--- `memento/transcript/patch`: apply its ops (or read the page again after a reset, or when
--- this copy cannot follow them).
function Chat:patch(patch)
  if self.loading then
    table.insert(self.loading, function()
      self:patch(patch)
    end)
    return
  end
  if self.session == false then
    return
  end
  if patch.sessionId ~= self.session then
    return self:load()
  end
  if patch.seq <= (self.seq or -1) then
    return -- the page in hand holds it
  end
  for _, op in ipairs(patch.ops or {}) do
    if not self.t:apply(op) then
      return self:load()
    end
    if op.op == 'append' and op.node.kind == 'user' then
      self:steer_arrived(op.node.text)
    end
  end
  self.seq = patch.seq
end

-- A steer is shown the moment the server has it (the turn may be waiting on a tool or a
-- permission); the server puts it in the conversation at the next step, and the line the
-- chat drew for it meanwhile goes.
function Chat:steer_arrived(text)
  for index, steer in ipairs(self.steers) do
    if steer.text == text then
      self.t:drop(steer.key)
      table.remove(self.steers, index)
      return
    end
  end
end

--- The turn ended: a steer it did not take is not shown any more.
function Chat:turn_ended()
  self:after_load(function()
    for _, steer in ipairs(self.steers) do
      self.t:drop(steer.key)
    end
    self.steers = {}
  end)
end

--- Another session became active: draw its transcript.
function Chat:session_changed(id)
  if id ~= self.session then
    self:load()
  end
end

--- The running subagent whose line the cursor is on in the chat window, if any.
function Chat:child_here()
  local win = api.nvim_get_current_win()
  if api.nvim_win_get_buf(win) ~= self.buf then
    return nil
  end
  return self.t:child_at(api.nvim_win_get_cursor(win)[1] - 1)
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
      self:after_load(function()
        table.insert(self.steers, { text = text, key = self.t:note('↳ ' .. text, 'steer', STEERING) })
      end)
    end
  else
    client_mod.ask(client, 'memento/prompt', { text = text }, 'the prompt was not sent')
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
