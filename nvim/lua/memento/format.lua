-- Numbers, times and lists as the views show them (as the VS Code extension does).
local M = {}

--- 950 → "950", 12345 → "12.3k", 128000 → "128k", 1500000 → "1.5M".
function M.tokens(n)
  n = tonumber(n) or 0
  local abs = math.abs(n)
  if abs < 1000 then
    return tostring(math.floor(n + 0.5))
  end
  local value, unit = n / 1000, 'k'
  if abs >= 1000000 then
    value, unit = n / 1000000, 'M'
  end
  local text = math.abs(value) < 100 and ('%.1f'):format(value) or ('%.0f'):format(value)
  return (text:gsub('%.0$', '')) .. unit
end

--- 12345 → "12,345" (exact figures, as the server words them).
function M.thousands(n)
  local text = tostring(math.floor(tonumber(n) or 0))
  local sign, digits = text:match('^(-?)(%d+)$')
  return sign .. digits:reverse():gsub('(%d%d%d)', '%1,'):reverse():gsub('^,', '')
end

function M.plural(n, word)
  return ('%d %s%s'):format(n, word, n == 1 and '' or 's')
end

--- "a.txt, b.py and 3 more"
function M.file_list(files, shown)
  shown = shown or 3
  if #files <= shown then
    return table.concat(files, ', ')
  end
  return table.concat(vim.list_slice(files, 1, shown), ', ') .. (' and %d more'):format(#files - shown)
end

--- Seconds since the epoch of an ISO-8601 UTC time ("2026-01-02T03:04:05.678Z"), or nil.
function M.parse_iso(iso)
  local y, mo, d, h, mi, s = tostring(iso):match('^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)')
  if not y then
    return nil
  end
  local t = { year = tonumber(y), month = tonumber(mo), day = tonumber(d), hour = tonumber(h), min = tonumber(mi), sec = tonumber(s) }
  -- os.time reads the table as local time; correct by this zone's offset at that moment.
  local localtime = os.time(t)
  local utc = os.date('!*t', localtime)
  utc.isdst = false
  return localtime + os.difftime(localtime, os.time(utc))
end

local UNITS = { { 60, 'second' }, { 60, 'minute' }, { 24, 'hour' }, { 7, 'day' }, { 4.35, 'week' }, { 12, 'month' } }

--- "just now", "5 minutes ago", "2 days ago".
function M.relative_time(iso, now)
  local at = M.parse_iso(iso)
  if not at then
    return tostring(iso)
  end
  local amount = math.max(0, (now or os.time()) - at)
  if amount < 10 then
    return 'just now'
  end
  for _, unit in ipairs(UNITS) do
    if amount < unit[1] then
      return M.plural(math.floor(amount), unit[2]) .. ' ago'
    end
    amount = amount / unit[1]
  end
  return M.plural(math.floor(amount), 'year') .. ' ago'
end

return M
