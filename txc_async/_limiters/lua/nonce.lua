-- The API key's next nonce from its counter (KEYS[counter]), on the clock given (ARGV[clock], ms
-- on the server-aligned clock; '' for no nonce), at most ARGV[lead] ms ahead of it;
-- ARGV[ceiling] is the highest nonce the service can have accepted ('' when unknown), ARGV[ttl]
-- the counter's time to live (ms). Sets `nonce` (-1 for none), or `ahead`, the ms the counter is past the lead.
local nonce = -1
local ahead = 0
if ARGV[{clock}] ~= '' then
  local clock = tonumber(ARGV[{clock}])
  local lead = tonumber(ARGV[{lead}])
  local ceiling = tonumber(ARGV[{ceiling}])
  local last = tonumber(redis.call('GET', KEYS[{counter}]) or '')
  if not last and string.sub(gen, -1) == '1' then
    -- The store lost the counter: nonces drawn before may lie up to the lead past the clock,
    -- and the processes that drew them may be gone; start beyond them.
    last = clock + lead
    redis.call('SET', KEYS[{counter}], int(last), 'PX', ARGV[{ttl}])
  elseif not last then
    last = 0
  elseif ceiling and last > ceiling then
    -- Far ahead of the clock (a clock stepped back, or it ran fast when those nonces were
    -- drawn): come back to the highest value the service can have accepted. Every nonce it
    -- ever accepted lay within the window of its clock, which has only moved forward since,
    -- so none lies beyond that ceiling; values past it were refused and never used. Without
    -- a ceiling (no answer bounds the server's clock yet) nothing is lowered.
    last = ceiling
    redis.call('SET', KEYS[{counter}], int(last), 'PX', ARGV[{ttl}])
  end
  nonce = math.max(clock, last + 1)
  if nonce - clock > lead then
    ahead = nonce - clock - lead
  else
    redis.call('SET', KEYS[{counter}], int(nonce), 'PX', ARGV[{ttl}])
  end
end
