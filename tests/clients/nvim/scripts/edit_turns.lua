-- Prompts that make the model edit a file open in a buffer; the buffer text after each turn.
-- params: file, prompts (list), checkpoint (bool: create one before the first prompt, list
-- it after the turns, rewind to it).
local t = require('memento_test')

t.run(function()
  local p = t.params
  t.start()
  local buf = t.open(p.file)
  local checkpoint
  if p.checkpoint then
    local result, err = t.execute('memento.checkpoint.create', { { label = 'before the edits' } })
    assert(err == nil, vim.inspect(err))
    checkpoint = result.id
  end
  local states, texts = {}, {}
  for _, prompt in ipairs(p.prompts) do
    local ended = t.turn(prompt)
    table.insert(states, ended.state)
    table.insert(texts, t.text(buf))
  end
  t.observe('states', states)
  t.observe('texts', texts)
  if checkpoint then
    local listed = assert(t.request('memento/checkpoint/list', {}))
    for _, item in ipairs(listed.checkpoints) do
      if item.id == checkpoint then
        t.observe('files', item.files)
      end
    end
    local result, err = t.execute('memento.checkpoint.rewind', { { checkpointId = checkpoint } })
    assert(err == nil, vim.inspect(err))
    t.observe('rewind', result)
    t.observe('after_rewind', t.text(buf))
  end
end)
