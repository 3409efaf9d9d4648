-- Admits one request across every budget it draws on (its scope's, then its groups'), or none.
-- KEYS: 1 the server's generation marker, 2 the API key's nonce counter, then three a budget:
-- its log (anchors), its pause key, and the longest window (us) a client counts the log in with
-- until when it is kept ('per:until').
-- ARGV: 1 the request's timeout (us), 2 its member, 3 the generation this process knows, 4 a
-- token for a new generation, 5 how long (us) a new generation holds admissions, 6 the nonce
-- clock (ms on the server-aligned clock; '' for no nonce), 7 how far (ms) the nonce may lead that
-- clock, 8 the highest nonce the service can have accepted ('' when unknown), 9 the marker's and
-- the counter's time to live (ms), 10 1 when a missing marker means a loss to this process, else
-- 0; then three a budget: its requests per window, its window (us), its log's time to live (ms).
-- Returns {0, now, nonce or -1, generation, 0} when admitted; {1, microseconds to wait, 1 when a
-- request in flight blocks else 0, generation, the blocking budget (0 the scope's)}; {2, now, 0,
-- generation, 0} when the process must write its anchors back first; {3, microseconds to wait,
-- 0, generation, 0} when the nonce counter is too far ahead.
--@include preamble

--@include generation key=1 token=4 grace=5 lost=10 ttl=9

if gen ~= ARGV[3] then
  return {2, now, 0, gen, 0}
end
local hold = tonumber(string.match(gen, '/(%d+)/%d$'))
if hold > now then
  return {1, hold - now, 0, gen, 0}
end

-- Every budget is looked at before anything is written: the scope's first (a request its own
-- scope holds waits on it alone), then the group that holds it longest.
local budgets = (#KEYS - 2) / 3
local kept = {}
local longest, blocking, blocking_in_flight = 0, 0, 0
for b = 1, budgets do
  local log, window = KEYS[3 * b], KEYS[3 * b + 2]
  local cap = tonumber(ARGV[8 + 3 * b])
  local per = tonumber(ARGV[9 + 3 * b])
  local wait, in_flight = 0, 0
  local paused = redis.call('PTTL', KEYS[3 * b + 1])
  if paused > 0 then
    wait = paused * 1000
  end
  -- Anchors stay for the longest window a client of the budget counts in ('per:until', until
  -- being its client's last admission plus that window, when it is forgotten), and each client
  -- counts those of its own window: a shorter one never drops what a longer one needs.
  kept[b] = per
  local record = redis.call('GET', window)
  if record then
    local other, untill = string.match(record, '^(%d+):(%d+)$')
    if other and tonumber(other) > per and tonumber(untill) > now then
      kept[b] = tonumber(other)
    end
  end
  redis.call('ZREMRANGEBYSCORE', log, '-inf', int(now - kept[b]))
  local count = redis.call('ZCOUNT', log, '(' .. int(now - per), '+inf')
  if count >= cap then
    -- The cap-th latest anchor must leave the window first.
    local total = redis.call('ZCARD', log)
    local at = tonumber(redis.call('ZRANGE', log, total - cap, total - cap, 'WITHSCORES')[2])
    local full = math.max(1, at + per - now)
    if full > wait then
      wait = full
      if at > now then in_flight = 1 end
    end
  end
  if wait > 0 then
    if b == 1 then
      return {1, wait, in_flight, gen, 0}
    end
    if wait > longest then
      longest, blocking, blocking_in_flight = wait, b - 1, in_flight
    end
  end
end
if longest > 0 then
  return {1, longest, blocking_in_flight, gen, blocking}
end

--@include nonce counter=2 clock=6 lead=7 ceiling=8 ttl=9

if ahead > 0 then
  return {3, ahead * 1000, 0, gen, 0}
end
local deadline = int(now + tonumber(ARGV[1]))
for b = 1, budgets do
  local log = KEYS[3 * b]
  local per = tonumber(ARGV[9 + 3 * b])
  local ttl = tonumber(ARGV[10 + 3 * b])
  redis.call('ZADD', log, deadline, ARGV[2])
  if redis.call('PTTL', log) < ttl then
    redis.call('PEXPIRE', log, ttl)
  end
  if kept[b] == per then
    redis.call('SET', KEYS[3 * b + 2], int(per) .. ':' .. int(now + per), 'PX',
               int(per / 1000) + 1000)
  end
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[9]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[9])
end
return {0, now, nonce, gen, 0}
