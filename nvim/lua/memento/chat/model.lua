-- The chat's copy of the session's transcript (memento/transcript, then every
-- memento/transcript/patch applied in order): the items as the server sent them, and an index
-- of every node by key (its node, its container, the top-level item it is in). The server's
-- `TranscriptState` is the reference this follows.
local contract = require('memento.transcript_contract')

local M = {}

local Model = {}
Model.__index = Model

function M.new(items)
  local self = setmetatable({}, Model)
  self:reset(items or {})
  return self
end

--- The fields of a node that hold its children (a reply's parts, a task's cards, a card's items).
local CHILDREN = contract.children

local function each_child(node, fn)
  for _, field in ipairs(CHILDREN) do
    for _, child in ipairs(node[field] or {}) do
      fn(child, field)
    end
  end
end

function Model:index(node, parent, item)
  self.nodes[node.key] = { node = node, parent = parent, item = item or node.key }
  each_child(node, function(child)
    self:index(child, node.key, item or node.key)
  end)
end

function Model:unindex(node)
  self.nodes[node.key] = nil
  each_child(node, function(child)
    self:unindex(child)
  end)
end

--- Start again from a page's items (oldest first).
function Model:reset(items)
  self.items, self.nodes = items, {}
  for _, item in ipairs(items) do
    self:index(item, nil, nil)
  end
end

function Model:get(key)
  local entry = self.nodes[key]
  return entry and entry.node
end

function Model:parent(key)
  local entry = self.nodes[key]
  return entry and entry.parent and self:get(entry.parent)
end

--- The field of `parent` that holds `node`'s kind of child.
local function field_for(parent, node)
  if node.kind == 'subagent' then
    return 'subagents'
  end
  return parent.kind == 'subagent' and 'items' or 'parts'
end

--- The nearest subagent card `key` is in (or is), if any.
function Model:card_of(key)
  while key do
    local entry = self.nodes[key]
    if not entry then
      return nil
    end
    if entry.node.kind == 'subagent' then
      return entry.node
    end
    key = entry.parent
  end
end

--- Apply one op. Returns the key of the top-level item it changed (nil for a reset or an
--- op on a node this copy does not hold: the server's copy and this one then differ, and
--- the caller reads the page again).
function Model:apply(op)
  if op.op == 'append' then
    local node = vim.deepcopy(op.node)
    if op.parent == nil or op.parent == vim.NIL then
      table.insert(self.items, node)
      self:index(node, nil, nil)
      return node.key
    end
    local parent = self:get(op.parent)
    if not parent then
      return nil
    end
    local field = field_for(parent, node)
    parent[field] = parent[field] or {}
    table.insert(parent[field], node)
    self:index(node, op.parent, self.nodes[op.parent].item)
    return self.nodes[node.key].item
  elseif op.op == 'update' then
    local entry = self.nodes[op.node.key]
    if not entry then
      return nil
    end
    local old = entry.node
    for field in pairs(old) do
      if not vim.tbl_contains(CHILDREN, field) then
        old[field] = nil
      end
    end
    for field, value in pairs(op.node) do
      if not vim.tbl_contains(CHILDREN, field) then
        old[field] = vim.deepcopy(value)
      end
    end
    return entry.item
  elseif op.op == 'text' then
    local entry = self.nodes[op.key]
    if not entry then
      return nil
    end
    local field = entry.node.kind == 'tool' and 'args' or 'text'
    entry.node[field] = (entry.node[field] or '') .. op.text
    return entry.item
  elseif op.op == 'remove' then
    local entry = self.nodes[op.key]
    if not entry then
      return nil
    end
    local item = entry.item
    local list = self.items
    if entry.parent then
      local parent = self:get(entry.parent)
      list = parent[field_for(parent, entry.node)] or {}
    end
    for index, node in ipairs(list) do
      if node.key == op.key then
        table.remove(list, index)
        break
      end
    end
    self:unindex(entry.node)
    return item
  end
  return nil
end

return M
