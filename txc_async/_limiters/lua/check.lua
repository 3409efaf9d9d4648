-- KEYS[1]: the generation marker; ARGV: 1 a token for a new generation, 2 how long (us) it holds
-- admissions, 3 its time to live (ms), 4 1 when a missing marker means a loss to this process.
-- Returns the generation.
--@include preamble

--@include generation key=1 token=1 grace=2 lost=4 ttl=3

return gen
