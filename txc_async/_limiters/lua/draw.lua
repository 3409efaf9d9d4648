-- A new nonce for a request already admitted. KEYS: 1 the generation marker, 2 the nonce counter.
-- ARGV: 1 the generation this process knows, 2 the nonce clock (ms), 3 the lead (ms), 4 the
-- ceiling ('' when unknown), 5 the counter's time to live (ms). Returns {0, nonce}; {3, ms past
-- the lead} when the counter is too far ahead; {2, 0} when the generation changed (the process
-- must write its anchors back first) or is new and still holds admissions: the request is
-- admitted again instead.
--@include preamble

local gen = redis.call('GET', KEYS[1])
if gen ~= ARGV[1] then
  return {2, 0}
end
if tonumber(string.match(gen, '/(%d+)/%d$')) > now then
  -- A new generation's hold: processes are still writing their nonces back.
  return {2, 0}
end

--@include nonce counter=2 clock=2 lead=3 ceiling=4 ttl=5

if ahead > 0 then
  return {3, ahead}
end
return {0, nonce}
