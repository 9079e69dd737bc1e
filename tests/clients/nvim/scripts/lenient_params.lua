-- Requests and commands with "no arguments" spelt as Lua spells them: `{}` (sent as []),
-- nil (params left out) and `{ {} }` (sent as [[]]). Observes each answer as
-- { result = ..., error = { code, message } }.
local t = require('memento_test')

local cases = {
  { 'transcript {}', 'memento/transcript', {} },
  { 'compact {}', 'memento/compact', {} },
  { 'advisor/toggle {}', 'memento/advisor/toggle', {} },
  { 'checkpoint/list {}', 'memento/checkpoint/list', {} },
  { 'rules/list {}', 'memento/rules/list', {} },
  { 'session/list nil', 'memento/session/list', nil },
  { 'context nil', 'memento/context', nil },
  { 'abort nil', 'memento/abort', nil },
  { 'create args {}', 'workspace/executeCommand', { command = 'memento.checkpoint.create', arguments = {} } },
  { 'create args {{}}', 'workspace/executeCommand', { command = 'memento.checkpoint.create', arguments = { {} } } },
  { 'create args nil', 'workspace/executeCommand', { command = 'memento.checkpoint.create' } },
  {
    'create args {{label}}',
    'workspace/executeCommand',
    { command = 'memento.checkpoint.create', arguments = { { label = 'named' } } },
  },
  { 'abort command {}', 'workspace/executeCommand', { command = 'memento.abort', arguments = {} } },
  { 'compact command {{}}', 'workspace/executeCommand', { command = 'memento.compact', arguments = { {} } } },
}

t.run(function()
  t.start()
  local answers = {}
  for _, case in ipairs(cases) do
    local result, err = t.request(case[2], case[3])
    answers[case[1]] = {
      result = result == nil and vim.NIL or result,
      error = err and { code = err.code, message = err.message } or vim.NIL,
    }
  end
  t.observe('answers', answers)
  local listed = assert(t.request('memento/checkpoint/list', nil))
  local labels = {}
  for _, item in ipairs(listed.checkpoints) do
    table.insert(labels, item.label)
  end
  t.observe('labels', labels)
end)
