if redis.replicate_commands then
  redis.replicate_commands() -- Redis before 5 must be told TIME may precede writes
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function int(x) return string.format('%d', x) end
