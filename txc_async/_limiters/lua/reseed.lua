-- KEYS: 1 the generation marker, 2 the nonce counter, 3... budget logs. ARGV: 1 the generation
-- the anchors are written back into, 2 the least value for the nonce counter ('' for none), 3 the
-- counter's time to live (ms), then for each log: its time to live (ms), the number of anchors n,
-- and n pairs of member and score.
-- Returns 1, or 0 when the generation changed meanwhile (nothing written).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] ~= '' then
  local last = tonumber(redis.call('GET', KEYS[2]) or '')
  if not last or last < tonumber(ARGV[2]) then
    redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
  end
end
local i = 4
for k = 3, #KEYS do
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
