-- redisretry's lease: one call per process per interval (see lease.go).
--
-- KEYS[1]  the members hash: member id -> "want held expiry requests"
-- KEYS[2]  the state hash (see the fields read below)
-- ARGV[1]  member id
-- ARGV[2]  want: the sends per second the member would make, unrestricted
-- ARGV[3]  held: the share the member holds now (0: none)
-- ARGV[4]  attempts, ARGV[5] throttles, ARGV[6] retries: counts since the
--          member's last call
-- ARGV[7]  interval, ARGV[8] lease: microseconds
-- ARGV[9]  configured capacity in sends per second, 0 to learn it
-- ARGV[10] retry ratio, ARGV[11] retry floor (retries per second),
-- ARGV[12] retry window (microseconds)
-- ARGV[13] learning: beta, ARGV[14] growth constant, ARGV[15] tolerance
-- ARGV[16] now in microseconds, or "" to read Redis's clock
--
-- Returns {share, grant, members, capacity, level}, numbers as strings
-- (share and capacity -1: no limit).

local BIG = 1e15 -- bounds every rate and count: nothing read back is unbounded

-- num returns v as a number within [lo, hi], or nil: a stored value that
-- is missing, corrupted or hostile is never used as it is.
local function num(v, lo, hi)
  local n = tonumber(v)
  if n == nil or n ~= n or n < lo or n > hi then return nil end
  return n
end

local function arg(i, lo, hi)
  local n = num(ARGV[i], lo, hi)
  if n == nil then error('redisretry: argument ' .. i .. ' out of range: ' .. tostring(ARGV[i])) end
  return n
end

local members, statekey = KEYS[1], KEYS[2]
local id = ARGV[1]
local want = arg(2, 0, BIG)
local held = arg(3, 0, BIG)
local attempts, throttles, retries = arg(4, 0, BIG), arg(5, 0, BIG), arg(6, 0, BIG)
local interval, lease = arg(7, 1000, BIG), arg(8, 1000, BIG)
local configured = arg(9, 0, BIG)
local ratio, floor, window = arg(10, 0, BIG), arg(11, 0, BIG), arg(12, 0, BIG)
local beta, growth, tolerance = arg(13, 0, 1), arg(14, 0, BIG), arg(15, 0, 1)
local now = num(ARGV[16], 0, 1e18)
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local f = redis.call('HMGET', statekey, 'end', 'start', 'cap', 'cut', 'w', 'level', 'extra',
  'heldsum', 'a', 't', 'x', 'ring', 'budget', 'asum')
local epochEnd = num(f[1], 0, 1e18)
local epochStart = num(f[2], 0, 1e18) or now
local cap = num(f[3], -1, BIG) or -1 -- -1: no limit learned yet
local cut = num(f[4], 0, 1e18) or now -- when the learned capacity was last cut
local w = num(f[5], 0, BIG) or 0 -- the learned capacity at the last cut
local level = num(f[6], -1, BIG) or -1 -- -1: every want fits
local extra = num(f[7], 0, BIG) or 0
local heldsum = num(f[8], 0, BIG) or 0
local ea, et, ex = num(f[9], 0, BIG) or 0, num(f[10], 0, BIG) or 0, num(f[11], 0, BIG) or 0
local ring = f[12] or ''
local budget = num(f[13], 0, BIG) or 0
local asum = num(f[14], 0, BIG) or 0

if configured > 0 then cap = configured end

-- This call's counts join the epoch's.
ea, et, ex = ea + attempts, et + throttles, ex + retries

-- The member's record; a member that is new, or whose record expired or
-- was lost, counts with what it says it holds (after a restart of Redis,
-- the shares are rebuilt from what the members hold, without a burst).
local rec = redis.call('HGET', members, id)
local oldheld, known = held, false
if rec then
  local rw, rh, re, ra = string.match(rec, '^(%S+) (%S+) (%S+) (%S+)$')
  rh = num(rh, 0, BIG)
  if rh ~= nil then oldheld, known = rh, true end
end
if not known then heldsum = heldsum + held end

-- At the end of an epoch: drop the members whose lease ended, learn the
-- capacity, divide it max-min fairly by wants, and work out the retry
-- budget.
if epochEnd == nil or now >= epochEnd then
  local dur = math.max(now - epochStart, interval / 2) / 1e6
  local all = redis.call('HGETALL', members)
  local wants, n = {}, 0
  heldsum, asum = 0, 0
  for i = 1, #all, 2 do
    local rw, rh, re, ra = string.match(all[i + 1], '^(%S+) (%S+) (%S+) (%S+)$')
    rw, rh, re, ra = num(rw, 0, BIG), num(rh, 0, BIG), num(re, 0, 1e18), num(ra, 0, BIG)
    if all[i] == id then
      -- counted below, with this call's values
    elseif rw == nil or rh == nil or re == nil or ra == nil or re <= now then
      redis.call('HDEL', members, all[i])
    else
      n = n + 1
      wants[n] = rw
      heldsum = heldsum + rh
      asum = asum + ra
    end
  end
  n = n + 1
  wants[n] = want
  heldsum = heldsum + held
  oldheld = held
  asum = asum + attempts

  -- Learn the capacity from the fleet's counts: cut to the rate the
  -- service accepted when significantly more than the tolerated share was
  -- throttled; otherwise, while the fleet wants more, grow from the last
  -- cut along w*(1 + growth*t^3).
  if configured == 0 then
    local sent = ea / dur
    local p = tolerance * ea
    if et > 0 and et > p + 2 * math.sqrt(p) then
      local base = sent
      if cap >= 0 then base = math.min(cap, sent) end
      cap = math.max(base * (1 - (et / ea - tolerance)), beta * base, 1e-6)
      w, cut = cap, now
    elseif cap >= 0 then
      local t = (now - cut) / 1e6
      cap = math.min(w * (1 + growth * t * t * t), math.max(cap, 2 * sent), BIG)
    end
  end

  -- Max-min fair division (water-filling): level is the most any member
  -- gets; when every want fits, the capacity left over is shared equally
  -- (extra), so that members can grow.
  level, extra = -1, 0
  if cap >= 0 then
    table.sort(wants)
    local left = cap
    for i = 1, n do
      local fair = left / (n - i + 1)
      if wants[i] > fair then
        level = fair
        left = 0
        break
      end
      left = left - wants[i]
    end
    if level < 0 then extra = left / n end
  end

  -- The retry budget: retries may be ratio of the fleet's first attempts
  -- over the window, plus floor a second.
  local slots = math.max(1, math.ceil(window / interval))
  local kept, rs, xs, k = {}, 0, 0, 0
  for r, x in string.gmatch(ring, '(%S+),(%S+)') do
    r, x = num(r, 0, BIG), num(x, 0, BIG)
    if r ~= nil and x ~= nil then
      k = k + 1
      kept[k] = {r, x}
    end
  end
  table.insert(kept, {math.max(ea - ex, 0), ex})
  while #kept > slots do table.remove(kept, 1) end
  local parts = {}
  for i, e in ipairs(kept) do
    rs, xs = rs + e[1], xs + e[2]
    parts[i] = string.format('%.17g,%.17g', e[1], e[2])
  end
  ring = table.concat(parts, ' ')
  budget = math.max(0, ratio * rs + floor * window / 1e6 - xs)

  epochStart, epochEnd = now, now + interval
  ea, et, ex = 0, 0, 0
end

-- This member's share: its fair share, but never more than the others
-- leave, so that the shares held never add up to more than the capacity
-- while they change hands (but for a millionth of the capacity, the least
-- share a member gets, so that a newcomer can start).
local share = -1
if cap >= 0 then
  local target = want + extra
  if level >= 0 then target = math.min(want, level) + extra end
  local others = math.max(heldsum - oldheld, 0)
  share = math.max(math.min(target, cap - others), cap / 1e6)
end
local nowheld = math.max(share, 0)
heldsum = math.max(heldsum - oldheld + nowheld, 0)

-- The member's part of the retry budget, by its share of the attempts.
local count = redis.call('HLEN', members)
if not rec then count = count + 1 end
local grant = budget / math.max(count, 1)
if asum > 0 then grant = budget * math.min(attempts / asum, 1) end

redis.call('HSET', members, id, string.format('%.17g %.17g %.17g %.17g', want, nowheld, now + lease, attempts))
redis.call('HSET', statekey, 'end', string.format('%.17g', epochEnd), 'start', string.format('%.17g', epochStart),
  'cap', string.format('%.17g', cap), 'cut', string.format('%.17g', cut), 'w', string.format('%.17g', w),
  'level', string.format('%.17g', level), 'extra', string.format('%.17g', extra),
  'heldsum', string.format('%.17g', heldsum), 'a', string.format('%.17g', ea), 't', string.format('%.17g', et),
  'x', string.format('%.17g', ex), 'ring', ring, 'budget', string.format('%.17g', budget),
  'asum', string.format('%.17g', asum))
-- A fleet that stops calling leaves nothing behind.
local ttl = math.ceil(math.max(lease, window) * 4 / 1000)
redis.call('PEXPIRE', members, ttl)
redis.call('PEXPIRE', statekey, ttl)

return {string.format('%.17g', share), string.format('%.17g', grant), tostring(count),
  string.format('%.17g', cap), string.format('%.17g', level)}
