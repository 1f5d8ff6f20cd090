-- redisretry's exact admission: one call per attempt (see exact.go). The
-- generic cell rate algorithm, as a reservation: each admitted attempt
-- gets the next send slot of the fleet's rate, and waits for it; and each
-- member gets slots at no more than the rate it is held to (its share,
-- or the level of the fleet's division: see ownRate in lease.go), so that
-- the slots go round the fleet fairly, whoever asks first.
--
-- KEYS[1]  the state hash: reads the fleet's capacity ("cap"), keeps the
--          theoretical arrival time of the fleet's next slot ("tat")
-- KEYS[2]  the slots hash: member id -> the theoretical arrival time of
--          the member's next slot
-- ARGV[1]  the longest wait to accept, microseconds
-- ARGV[2]  burst: how many of the fleet's slots may be taken at once
-- ARGV[3]  now in microseconds, or "" to read Redis's clock
-- ARGV[4]  member id, ARGV[5] the rate it is held to, its share for
--          short (sends per second; 0: none),
-- ARGV[6]  its burst: how many of its slots, less one, it keeps when late
-- ARGV[7]  the longest wait any member accepts, microseconds: no slot time
--          stored is further ahead than that (with the bursts)
-- ARGV[8]  the configured capacity (sends per second), used when the state
--          holds none (Redis restarted empty); 0 when the capacity is
--          learned
-- ARGV[9]  the throttles the member saw since its last call; ARGV[10]
--          learning: start, ARGV[11] cooldown (microseconds), ARGV[12]
--          the least capacity learned (see refresh.lua)
--
-- Returns {admitted, wait in microseconds, capacity, lead, own}: admitted
-- 1, the attempt goes after the wait; 0, it may not go within the longest
-- wait; 2, the member is over its share and may ask again after the wait.
-- Capacity -1 (no rate known yet) admits without a wait. Lead is how far
-- ahead of now the fleet's next free slot is, in microseconds: the sends
-- booked and still to come, which a member that loses Redis waits out
-- before its local limiter sends (see fallBackLocked). Own is how far
-- ahead of now the member's own next slot is due, in microseconds (0: due
-- now, or no share): the member does not ask before then (see
-- Fleet.heldBack).

local function num(v, lo, hi)
  local n = tonumber(v)
  if n == nil or n ~= n or n < lo or n > hi then return nil end
  return n
end

local maxwait = num(ARGV[1], 0, 1e15)
local burst = num(ARGV[2], 1, 1e9)
local share = num(ARGV[5], 0, 1e15)
local mburst = num(ARGV[6], 1, 2 ^ 30) -- localBurst's largest
local horizon = num(ARGV[7], 0, 1e15)
local configured = num(ARGV[8], 0, 1e15)
local throttled, start = num(ARGV[9], 0, 1e15), num(ARGV[10], 0, 1)
local cooldown, minrate = num(ARGV[11], 0, 1e15), num(ARGV[12], 0, 1e15)
if maxwait == nil or burst == nil or share == nil or mburst == nil or horizon == nil or configured == nil or
  throttled == nil or start == nil or cooldown == nil or minrate == nil then
  error('redisretry: gcra arguments out of range')
end
local now = num(ARGV[3], 0, 1e18)
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local fmt = '%.17g'

local f = redis.call('HMGET', KEYS[1], 'cap', 'tat', 'w', 'q', 'qend', 'cut', 'probed')
local cap = num(f[1], -1, 1e15)
-- No rate known: -1 (none learned yet), or a value below the least rate
-- learned, which refresh.lua never writes (not one of ours).
if cap ~= nil and cap < minrate then cap = nil end
if configured > 0 then
  cap = configured
elseif throttled > 0 and cap ~= nil and (f[7] or '') == '' then
  -- A learned rate past its estimate w is a probe, and the first throttle
  -- ends it (see refresh.lua): here at once, not at the end of the
  -- interval, once the member that saw it reported it, so that the fleet
  -- does not send above the rate found for another interval or two. The
  -- sends go back to where the cut restarts (start*w), and the capacity
  -- probed waits for the cut, made at the end of the interval on the
  -- fleet's counts.
  local w, q, qend = num(f[3], 0, 1e15) or 0, num(f[4], 0, 1) or 0, num(f[5], 0, 1e18) or 0
  if now >= qend then q = 0 end
  local cut = num(f[6], 0, 1e18) or now
  if w > 0 and q == 0 and cap > w and now >= cut + cooldown then
    local probed = cap
    cap = math.max(start * w, minrate)
    redis.call('HSET', KEYS[1], 'cap', string.format(fmt, cap), 'probed', string.format(fmt, probed))
  end
end
-- The lead of a slot time: how far ahead of now it is, 0 if not a time
-- ahead within any wait.
local function lead(t)
  local most = now + horizon + 1e6
  if cap ~= nil and cap > 0 then most = most + burst * 1e6 / cap end
  t = num(t, now, most)
  if t == nil then return '0' end
  return string.format(fmt, t - now)
end

-- The member's own slots, at its share: checked first, and taken only with
-- a slot of the fleet's. A member gets each slot when it is due, never
-- before, so that members asking all the time take the same number of
-- slots in any window, give or take one; one that comes late for a slot
-- (its next request came after the slot was due) keeps it for up to
-- mburst-1 slots, and catches up, so that lateness does not cost it
-- slots either. A member idle for longer starts again with mburst-1 slots
-- it may take at once; a new member, with none.
local mtat
if share > 0 then
  local mstep = 1e6 / share
  local late = (mburst - 1) * mstep
  -- A member's first slot is due now; so is the next one of a member
  -- whose slot time is further ahead than any wait and a slot at its share
  -- now (its share grew since: it need not wait out a slot of the old
  -- one), or is not a time.
  mtat = num(redis.call('HGET', KEYS[2], ARGV[4]), 0, now + horizon + mstep) or now
  mtat = math.max(mtat, now - late)
  if mtat > now then
    return {2, string.format(fmt, mtat - now), string.format(fmt, cap), lead(f[2]), string.format(fmt, mtat - now)}
  end
  mtat = mtat + mstep
end

if cap == nil or cap <= 0 then
  -- No rate known yet: the member's share alone bounds it.
  if mtat then redis.call('HSET', KEYS[2], ARGV[4], string.format(fmt, mtat)) end
  return {1, '0', '-1', '0', string.format(fmt, math.max((mtat or now) - now, 0))}
end
local step = 1e6 / cap
-- A slot time in the past, missing, or further ahead than any wait could
-- have put it, starts from now.
local tat = num(f[2], now, now + horizon + burst * step + 1e6) or now
local send = math.max(now, tat - (burst - 1) * step)
local wait = send - now
if wait > maxwait then return {0, string.format(fmt, wait), string.format(fmt, cap), lead(tat), '0'} end
redis.call('HSET', KEYS[1], 'tat', string.format(fmt, tat + step))
if mtat then redis.call('HSET', KEYS[2], ARGV[4], string.format(fmt, mtat)) end
return {1, string.format(fmt, wait), string.format(fmt, cap), lead(tat + step),
  string.format(fmt, math.max((mtat or now) - now, 0))}
