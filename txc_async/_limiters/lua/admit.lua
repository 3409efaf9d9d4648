-- KEYS: 1 the budget's log (anchors), 2 its pause key, 3 the key's nonce counter, 4 the key's
-- generation marker, 5 the longest window (us) a client counts the budget's log in, and until
-- when it is kept ('per:until').
-- ARGV: 1 requests per window, 2 the window (us), 3 the request's timeout (us), 4 its member,
-- 5 the generation this process knows, 6 a token for a new generation, 7 how long (us) a new
-- generation holds admissions, 8 the nonce clock (ms on the server-aligned clock; '' for no
-- nonce), 9 how far (ms) the nonce may lead that clock, 10 the service's nonce window (ms),
-- 11 the log's time to live (ms), 12 the marker's and the counter's time to live (ms), 13 1 when
-- a missing marker means a loss to this process, else 0.
-- Returns {0, now, nonce or -1, generation} when admitted; {1, microseconds to wait, 1 when a
-- request in flight blocks else 0, generation}; {2, now, 0, generation} when the process must
-- write its anchors back first.
--@include preamble

--@include generation key=4 token=6 grace=7 lost=13 ttl=12

if gen ~= ARGV[5] then
  return {2, now, 0, gen}
end
local hold = tonumber(string.match(gen, '/(%d+)/%d$'))
if hold > now then
  return {1, hold - now, 0, gen}
end
local paused = redis.call('PTTL', KEYS[2])
if paused > 0 then
  return {1, paused * 1000, 0, gen}
end
local cap = tonumber(ARGV[1])
local per = tonumber(ARGV[2])
-- Anchors stay for the longest window a client of the budget counts in (KEYS[5]: 'per:until',
-- until being its client's last admission plus that window, when it is forgotten), and each
-- client counts those of its own window: a shorter one never drops what a longer one needs.
local kept = per
local record = redis.call('GET', KEYS[5])
if record then
  local longest, untill = string.match(record, '^(%d+):(%d+)$')
  if longest and tonumber(longest) > per and tonumber(untill) > now then
    kept = tonumber(longest)
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', int(now - kept))
local count = redis.call('ZCOUNT', KEYS[1], '(' .. int(now - per), '+inf')
if count >= cap then
  -- The cap-th latest anchor must leave the window first.
  local total = redis.call('ZCARD', KEYS[1])
  local blocking = redis.call('ZRANGE', KEYS[1], total - cap, total - cap, 'WITHSCORES')
  local at = tonumber(blocking[2])
  local in_flight = 0
  if at > now then in_flight = 1 end
  return {1, math.max(1, at + per - now), in_flight, gen}
end

--@include nonce counter=3 clock=8 lead=9 ceiling=10 ttl=12

if ahead > 0 then
  return {3, ahead * 1000, 0, gen}
end
redis.call('ZADD', KEYS[1], int(now + tonumber(ARGV[3])), ARGV[4])
local ttl = tonumber(ARGV[11])
if redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
if kept == per then
  redis.call('SET', KEYS[5], int(per) .. ':' .. int(now + per), 'PX', int(per / 1000) + 1000)
end
if redis.call('PTTL', KEYS[4]) < tonumber(ARGV[12]) then
  redis.call('PEXPIRE', KEYS[4], ARGV[12])
end
return {0, now, nonce, gen}
