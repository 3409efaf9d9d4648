-- KEYS: the logs of the budgets a request drew on; ARGV[1]: its member. The request never left
-- (or was never admitted): its anchor goes from every log at once. Returns 0.
for k = 1, #KEYS do
  redis.call('ZREM', KEYS[k], ARGV[1])
end
return 0
