-- redisretry's exact admission: one call per attempt (see exact.go). The
-- generic cell rate algorithm, as a reservation: each admitted attempt
-- gets the next send slot of the fleet's rate, and waits for it.
--
-- KEYS[1]  the state hash: reads its capacity ("cap"), keeps the
--          theoretical arrival time of the next slot ("tat")
-- ARGV[1]  the longest wait to accept, microseconds
-- ARGV[2]  burst: how many slots may be taken at once after a pause
-- ARGV[3]  now in microseconds, or "" to read Redis's clock
--
-- Returns {admitted (1 or 0), wait in microseconds, capacity}; capacity
-- -1 (no rate known yet) admits without a wait.

local function num(v, lo, hi)
  local n = tonumber(v)
  if n == nil or n ~= n or n < lo or n > hi then return nil end
  return n
end

local maxwait = num(ARGV[1], 0, 1e15)
local burst = num(ARGV[2], 1, 1e9)
if maxwait == nil or burst == nil then error('redisretry: gcra arguments out of range') end
local now = num(ARGV[3], 0, 1e18)
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local f = redis.call('HMGET', KEYS[1], 'cap', 'tat')
local cap = num(f[1], -1, 1e15)
if cap == nil or cap <= 0 then return {1, '0', '-1'} end
local step = 1e6 / cap
-- A slot time in the past, missing, or further ahead than any wait could
-- have put it, starts from now.
local tat = num(f[2], now, now + maxwait + burst * step + 1e6) or now
local send = math.max(now, tat - (burst - 1) * step)
local wait = send - now
if wait > maxwait then return {0, string.format('%.17g', wait), string.format('%.17g', cap)} end
redis.call('HSET', KEYS[1], 'tat', string.format('%.17g', tat + step))
return {1, string.format('%.17g', wait), string.format('%.17g', cap)}
