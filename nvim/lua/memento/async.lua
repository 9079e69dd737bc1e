-- Commands as straight-line code: `run` starts a coroutine, `await` waits in it for a
-- callback (a server answer, a vim.ui.select choice). A `fail` ends the command with its
-- message; any other error is reported with its traceback. Nothing ever blocks the editor.
local M = {}

local steps = setmetatable({}, { __mode = 'k' })
local Failure = {}
Failure.__index = Failure

--- End the running command with a message for the user (no traceback).
function M.fail(message, level)
  error(setmetatable({ message = message, level = level or vim.log.levels.ERROR }, Failure), 0)
end

local function report(co, problem)
  if getmetatable(problem) == Failure then
    vim.notify(problem.message, problem.level)
  else
    vim.notify('Memento: ' .. debug.traceback(co, tostring(problem)), vim.log.levels.ERROR)
  end
end

--- Run `fn(...)` as a command; returns at its first wait.
function M.run(fn, ...)
  local co = coroutine.create(fn)
  local function step(...)
    local ok, problem = coroutine.resume(co, ...)
    if not ok then
      report(co, problem)
    end
    if coroutine.status(co) == 'dead' then
      steps[co] = nil
    end
  end
  steps[co] = step
  step(...)
end

--- Inside `run`: call `start(callback)` and wait until the callback is called; returns its
--- arguments. A callback called at once (a stubbed vim.ui.select) does not wait at all.
function M.await(start)
  local co = coroutine.running()
  assert(co and steps[co], 'memento.async.await outside memento.async.run')
  local results, waiting = nil, false
  start(function(...)
    if results then
      return
    end
    results = { n = select("#", ...), ... }
    if waiting then
      -- Resume at once (a prompt's turnId is known before its turn's first notification);
      -- from a fast event (a luv callback), on the main loop.
      if vim.in_fast_event() then
        vim.schedule(function()
          steps[co]()
        end)
      else
        steps[co]()
      end
    end
  end)
  if not results then
    waiting = true
    coroutine.yield()
  end
  return unpack(results, 1, results.n)
end

--- vim.ui.select, awaited: the chosen item (nil when dismissed) and its index.
function M.select(items, opts)
  return M.await(function(done)
    vim.ui.select(items, opts, done)
  end)
end

--- A yes-or-cancel question, awaited: true when `yes` was chosen.
function M.confirm(question, yes)
  return M.select({ yes, 'Cancel' }, { prompt = question, kind = 'memento.confirm' }) == yes
end

--- vim.ui.input, awaited.
function M.input(opts)
  return M.await(function(done)
    vim.ui.input(opts, done)
  end)
end

return M
