-- :MementoPin, :MementoPins and :MementoUnpin as a user meets them: a tool result picked from
-- the latest entries, a file by name, the list of pins, and one taken back.
-- params: file, prompt
local t = require('memento_test')

local function pick(match)
  vim.ui.select = function(items, opts, done)
    for _, item in ipairs(items) do
      if match(item, opts.format_item(item)) then
        return done(item)
      end
    end
    done(nil)
  end
end

local function said(command, count)
  vim.cmd(command)
  t.wait(command .. ' to answer', 30000, function()
    return #t.messages >= count
  end)
  return t.messages[#t.messages].message
end

t.run(function()
  local p = t.params
  t.plugin()
  t.plugin_open(p.file)
  require('memento').prompt(p.prompt)
  t.wait_event('MementoTurnFinished', 30000, 1)

  pick(function(_, label)
    return label:find('result of read', 1, true) ~= nil
  end)
  t.observe('pinned_result', said('MementoPin', 1))
  t.observe('pinned_file', said('MementoPin ' .. p.file, 2))
  t.observe('listed', said('MementoPins', 3))
  pick(function(item)
    return item.kind == 'file'
  end)
  t.observe('unpinned', said('MementoUnpin', 4))
  t.observe('pins', (t.request('memento/pins', nil)).pins)
  t.observe('errors', t.errors())
end)
