-- A missing generation marker means the server's data is gone (or was never there, or expired
-- after a day unused): a new marker records until when admissions hold, so that every process
-- still sending writes its anchors back first, and whether the process that made it knew that the
-- store lost data ('token/hold/lost', lost being 1 or 0).
local gen = redis.call('GET', KEYS[{key}])
if not gen then
  gen = ARGV[{token}] .. '/' .. int(now + tonumber(ARGV[{grace}])) .. '/' .. ARGV[{lost}]
  redis.call('SET', KEYS[{key}], gen, 'PX', ARGV[{ttl}])
end
