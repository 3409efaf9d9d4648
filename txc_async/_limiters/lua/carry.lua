-- Carries a counter of the previous layout over: KEYS[1] the API key's nonce counter; ARGV: 1 the
-- last nonce the previous layout's counter gave, 2 the counter's time to live (ms). The counter
-- is raised to that value when it is below it (or missing), never lowered. Returns 1.
local last = tonumber(redis.call('GET', KEYS[1]) or '')
if not last or last < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return 1
