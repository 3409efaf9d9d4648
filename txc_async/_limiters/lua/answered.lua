-- KEYS: the logs of the budgets a request drew on; ARGV[1]: its member. The request was
-- answered: its anchor in each moves to now, if it is still there and later. Returns now (us).
--@include preamble

for k = 1, #KEYS do
  local at = redis.call('ZSCORE', KEYS[k], ARGV[1])
  if at and tonumber(at) > now then
    redis.call('ZADD', KEYS[k], 'XX', int(now), ARGV[1])
  end
end
return now
