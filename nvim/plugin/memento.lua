-- Memento's commands; nothing starts until setup() or the first command (:help memento).
if vim.g.loaded_memento then
  return
end
vim.g.loaded_memento = true

if vim.fn.has('nvim-0.11') ~= 1 then
  vim.notify('Memento needs Neovim 0.11 (the version it is tested with)', vim.log.levels.ERROR)
  return
end

require('memento.commands').define()
