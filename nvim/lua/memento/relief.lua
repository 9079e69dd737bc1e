-- Steering what the context keeps: pins, and the relief steps (compactions, prunes,
-- shakes) with their audits and undo (:MementoPin, :MementoCompactions, :MementoUndoCompaction).
local async = require('memento.async')
local client_mod = require('memento.client')
local format = require('memento.format')

local M = {}
local ask, choose = client_mod.ask_here, async.confirm

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
