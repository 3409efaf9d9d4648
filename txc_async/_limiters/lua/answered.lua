-- KEYS[1]: a budget's log; ARGV[1]: a member. The request was answered: its anchor moves to now,
-- if it is still there and later. Returns now (us).
--@include preamble

local at = redis.call('ZSCORE', KEYS[1], ARGV[1])
if at and tonumber(at) > now then
  redis.call('ZADD', KEYS[1], 'XX', int(now), ARGV[1])
end
return now
