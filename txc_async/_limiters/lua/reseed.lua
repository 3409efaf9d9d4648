-- KEYS: 1 the server's generation marker, then ARGV[2] nonce counters (of the API keys this
-- process drew from), then budget logs. ARGV: 1 the generation the anchors are written back
-- into, 2 the number of counters m, 3 the counters' time to live (ms), then m least values for
-- the counters, then for each log: its time to live (ms), the number of anchors n, and n pairs of
-- member and score.
-- Returns 1, or 0 when the generation changed meanwhile (nothing written).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local counters = tonumber(ARGV[2])
for c = 1, counters do
  local least = tonumber(ARGV[3 + c])
  local last = tonumber(redis.call('GET', KEYS[1 + c]) or '')
  if not last or last < least then
    redis.call('SET', KEYS[1 + c], ARGV[3 + c], 'PX', ARGV[3])
  end
end
local i = 4 + counters
for k = 2 + counters, #KEYS do
  local ttl = tonumber(ARGV[i])
  local n = tonumber(ARGV[i + 1])
  i = i + 2
  for _ = 1, n do
    redis.call('ZADD', KEYS[k], 'NX', ARGV[i + 1], ARGV[i])
    i = i + 2
  end
  if n > 0 and redis.call('PTTL', KEYS[k]) < ttl then
    redis.call('PEXPIRE', KEYS[k], ttl)
  end
end
return 1
