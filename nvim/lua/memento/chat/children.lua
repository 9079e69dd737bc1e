-- Subagents in the chat: one line per child right under the `task` card that started it
-- ("  ↳ edit-a (worker) running edit · …"), rewritten in place as the child works, its final
-- state left there. A child's own turn, stream and tool events never reach the parent's
-- transcript. The stop key on a child's line stops that child alone (memento/subagent/abort).
local M = {}

local STATUS = {
  queued = { 'queued', 'MementoChatRunning' },
  running = { 'working…', 'MementoChatRunning' },
  completed = { '✓ done', 'MementoChatDone' },
  failed = { '✗ failed', 'MementoChatFailed' },
  aborted = { '⏹ stopped', 'MementoChatStopped' },
}
local TAIL = 60

local Children = {}
Children.__index = Children

function M.new(t)
  return setmetatable({ t = t, items = {}, last = {} }, Children)
end

local function live(state)
  return state == 'queued' or state == 'running'
end

local function text(item)
  local info = item.info
  local line = ('  ↳ %s (%s)'):format(info.id, info.agent)
  if live(info.state) then
    return line .. ' ' .. item.activity .. (item.tail ~= '' and (' · ' .. item.tail) or '')
  end
  local merge = info.merge and (' · merge ' .. info.merge) or ''
  local why = (info.error and info.state == 'failed') and (' · ' .. info.error:gsub('\n.*', '')) or ''
  return line .. ' ' .. info.state .. merge .. why
end

function Children:draw(item)
  local w = self.t.w
  local row = w:position(item.mark)
  if row then
    w:set_line(row, text(item))
    w:remark(item.mark, 'subagent', STATUS[item.info.state])
  end
end

--- `memento/subagent`: a child was queued, started or ended.
function Children:update(info)
  local item = self.items[info.id]
  if not item then
    item = { info = info, activity = 'queued', tail = '' }
    local group = info.parentToolCallId or info.parentTurnId or ''
    local previous = self.last[group] and self.t.w:position(self.last[group])
    if previous then
      local row = self.t.w:insert_below(previous, { text(item) })
      item.mark = self.t.w:mark(row, 'subagent', STATUS[info.state])
    else
      item.mark = self.t:marked(text(item), 'subagent', STATUS[info.state])
    end
    self.last[group] = item.mark
    self.items[info.id] = item
  end
  item.info = info
  if info.state == 'running' and item.activity == 'queued' then
    item.activity = 'starting'
  end
  self:draw(item)
end

--- A child's memento/turn, memento/stream or memento/tool (`kind`): what it is doing now.
function Children:event(kind, params)
  local item = self.items[params.subagentId]
  if not item or not live(item.info.state) then
    return
  end
  if kind == 'stream' and params.stream == 'text' then
    item.activity = 'writing'
    local flat = (item.tail .. (params.delta or '')):gsub('%s+', ' ')
    item.tail = vim.fn.strcharpart(flat, math.max(0, vim.fn.strchars(flat) - TAIL))
  elseif kind == 'stream' and params.stream == 'thinking' then
    item.activity = 'thinking'
  elseif kind == 'tool' then
    item.activity = params.state == 'started' and ('running ' .. params.toolName) or 'waiting for the model'
  elseif kind == 'turn' and params.state == 'started' then
    item.activity = 'waiting for the model'
  end
  self:draw(item)
end

--- The running child whose line is `row` (0-based), if any.
function Children:at(row)
  for id, item in pairs(self.items) do
    if live(item.info.state) and self.t.w:position(item.mark) == row then
      return id
    end
  end
end

function Children:reset()
  self.items, self.last = {}, {}
end

return M
