-- A recording of a real run (tests/data/transcript) replayed through the plugin's chat
-- renderer, as the chat lives it: the first page drawn, each patch applied in order, a page
-- drawn again after a reset. Then the items shown live only are removed (as a patch would),
-- and a second chat buffer draws the page read back after a restart. Both drawings observed,
-- and the text ops that changed more than the end of the buffer.
-- params: steps ({ {"page", page} | {"patch", patch} }), transient (keys), stored (page)
local t = require('memento_test')
local api = vim.api

local function drawing(renderer)
  local buf = renderer.buf
  local marks = {}
  for _, mark in ipairs(api.nvim_buf_get_extmarks(buf, require('memento.chat.writer').ns, 0, -1, { details = true })) do
    local details = mark[4]
    table.insert(marks, {
      row = mark[2],
      group = details.line_hl_group,
      status = details.virt_text and details.virt_text[1][1] or vim.NIL,
    })
  end
  return { lines = t.lines(buf), marks = marks, folds = vim.deepcopy(renderer:regions()) }
end

local function chat_buffer()
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].modifiable = false
  return buf
end

t.run(function()
  vim.opt.rtp:prepend(t.config.plugin_dir)
  local transcript = require('memento.chat.transcript')
  local p = t.params

  local live = transcript.new(chat_buffer())
  -- Streaming stays cheap: a text op changes the end of the buffer only (no redraw).
  local changed
  api.nvim_buf_attach(live.buf, false, {
    on_lines = function(_, _, _, first)
      changed = math.min(changed or first, first)
    end,
  })
  local text_ops, redrawn = 0, {}
  local seq
  for _, step in ipairs(p.steps) do
    local kind, value = step[1], step[2]
    if kind == 'page' then
      live:show(value.items)
    else
      assert(value.seq > seq, 'patches in order')
      for _, op in ipairs(value.ops) do
        local last = api.nvim_buf_line_count(live.buf) - 1
        changed = nil
        assert(live:apply(op), 'an op the copy cannot follow: ' .. vim.inspect(op))
        if op.op == 'text' then
          text_ops = text_ops + 1
          if changed and changed < last then
            table.insert(redrawn, op)
          end
        end
      end
    end
    seq = value.seq
  end
  t.observe('model', vim.deepcopy(live.model.items))
  t.observe('text_ops', text_ops)
  t.observe('text_redraws', redrawn)
  for _, key in ipairs(p.transient) do
    assert(live:apply({ op = 'remove', item = key, key = key }), 'no transient ' .. key)
  end
  t.observe('live', drawing(live))

  local stored = transcript.new(chat_buffer())
  stored:show(p.stored.items)
  t.observe('stored', drawing(stored))
end)
