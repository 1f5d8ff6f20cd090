-- redisretry's lease: one call per process per interval (see lease.go).
--
-- KEYS[1]  the members hash: member id -> "want held expiry attempts seq"
-- KEYS[2]  the state hash (see the fields read below)
-- KEYS[3]  the slots hash of exact admission (see gcra.lua)
-- ARGV[1]  member id
-- ARGV[2]  want: the sends per second the member would make, unrestricted
-- ARGV[3]  attempts, ARGV[4] throttles, ARGV[5] retries: counts since the
--          member's last call
-- ARGV[6]  interval, ARGV[7] lease: microseconds
-- ARGV[8]  configured capacity in sends per second, 0 to learn it
-- ARGV[9]  retry ratio, ARGV[10] retry floor (retries per second),
-- ARGV[11] retry window (microseconds)
-- ARGV[12] learning: beta, ARGV[13] growth, ARGV[14] tolerance
-- ARGV[15] now in microseconds, or "" to read Redis's clock
-- ARGV[16] learning: start, ARGV[17] cooldown (microseconds),
-- ARGV[18] the least capacity learned (sends per second), ARGV[19] how
-- many epochs of counts a cut is decided on, ARGV[20] the least attempts
-- it is decided on, ARGV[21] the largest fleet divided again when a
-- member joins, ARGV[22] the margin in the members' wants (a want is what
-- the member sends, times 1 + margin), ARGV[23] the most the shares held
-- may add up to (sends per second; 0: the capacity), ARGV[24] the rate
-- up to which sends are admitted one by one in Redis (sends per second; 0:
-- never), ARGV[25] the most epochs of counts a cut is decided on, when
-- the last ARGV[19] hold fewer than ARGV[20] attempts, ARGV[26] how long
-- a throttled share found not to depend on the load is tolerated
-- (microseconds), ARGV[27] the share the member paces at under a lease
-- Redis no longer knows (0: none; see the member's record below)
--
-- Returns {share, grant, members, capacity, level, seq, lead}, numbers as
-- strings (share and capacity -1: no limit); seq numbers the members in the
-- order they joined, from 1; lead is how far ahead of now exact
-- admission's next free slot is, in microseconds (see gcra.lua).

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
local attempts, throttles, retries = arg(3, 0, BIG), arg(4, 0, BIG), arg(5, 0, BIG)
local interval, lease = arg(6, 1000, BIG), arg(7, 1000, BIG)
local configured = arg(8, 0, BIG)
local ratio, floor, window = arg(9, 0, BIG), arg(10, 0, BIG), arg(11, 0, BIG)
local beta, growth, tolerance = arg(12, 0, 1), arg(13, 0, BIG), arg(14, 0, 1)
local start, cooldown, minrate = arg(16, 0, 1), arg(17, 0, BIG), arg(18, 0, BIG)
local epochs, minattempts = arg(19, 1, 1000), arg(20, 0, BIG)
local maxdivide = arg(21, 0, BIG)
local margin, most = arg(22, 0, 10), arg(23, 0, BIG)
local exactbelow = arg(24, 0, BIG)
local maxepochs = arg(25, epochs, 1000)
local qlife = arg(26, 0, BIG)
local claim = arg(27, 0, BIG)

-- room returns the most the shares held may add up to at capacity cap:
-- the capacity and the members' margins, within the configured rate (most);
-- the capacity alone when no rate is configured.
local function room(cap)
  if most <= cap then return cap end
  return math.min(cap * (1 + margin), most)
end
local now = num(ARGV[15], 0, 1e18)
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end

local f = redis.call('HMGET', statekey, 'end', 'start', 'cap', 'cut', 'w', 'level', 'extra',
  'heldsum', 'a', 't', 'x', 'ring', 'budget', 'asum', 'ev', 'q', 'qn', 'qend', 'test', 'probed', 'tat')
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
local ev = f[15] or ''
local evs
-- q: the throttled share found not to depend on the load, on qn
-- attempts, tolerated until qend; the test of a cut's cause: the
-- attempts and throttles the cut was decided on, the share of the rate
-- sent that it cut to, and the capacity before it (-1: none).
local q, qn, qend = num(f[16], 0, 1) or 0, num(f[17], 1, BIG) or 1, num(f[18], 0, 1e18) or 0
if now >= qend then q = 0 end
local tsa, tst, tf, tcap = string.match(f[19] or '', '^(%S+) (%S+) (%S+) (%S+)$')
tsa, tst, tf, tcap = num(tsa, 1, BIG), num(tst, 0, BIG), num(tf, 0, 1), num(tcap, -1, BIG)
if tcap ~= nil and tcap ~= -1 and tcap < minrate then tcap = nil end -- not a capacity learned
local testing = tsa ~= nil and tst ~= nil and tst <= tsa and tf ~= nil and tf > 0 and tcap ~= nil

if configured > 0 then
  cap = configured
elseif cap < minrate then
  cap = -1 -- no learned rate is that low: not one of ours
end
-- probed: the capacity of a probe that exact admission ended at its first
-- throttle, sending at start*w since (see gcra.lua); the cut at the end of
-- the interval is made from it, as if the throttle were counted here.
local probedField = f[20] or ''
local probed = num(probedField, minrate, BIG) -- gcra.lua writes no less

-- This call's counts join the epoch's.
ea, et, ex = ea + attempts, et + throttles, ex + retries

-- The member's record. A member without one is new, or its record
-- expired or was lost, as when Redis restarted empty. A new member holds
-- nothing: it gets a share only from what the others leave, so that the
-- shares are rebuilt without a burst. One that paces at a share it got
-- before (claim) keeps at most that share, without growing, whatever the
-- others hold: as when Redis restarted empty and every member comes back
-- at its old share, one after the other. It would send that much anyway;
-- given only what the others leave, the members back first would take
-- the whole capacity and those after them nothing, for an interval. A
-- claim never brings a member more than its fair share.
local rec = redis.call('HGET', members, id)
local oldheld, seq = 0, nil
if rec then
  local rw, rh, re, ra, rs = string.match(rec, '^(%S+) (%S+) (%S+) (%S+) (%S+)$')
  oldheld = num(rh, 0, BIG) or 0
  seq = num(rs, 1, BIG)
  claim = 0
end
if seq == nil then
  -- The next number (read and checked, not HINCRBY: a corrupted count
  -- would make it fail, and every newcomer's refresh with it).
  seq = math.floor(num(redis.call('HGET', statekey, 'seq'), 0, BIG - 1) or 0) + 1
  redis.call('HSET', statekey, 'seq', string.format('%d', seq))
end

-- At the end of an epoch, drop the members whose lease ended, learn the
-- capacity, divide it max-min fairly by wants, and work out the retry
-- budget. When a member joins a fleet of at most maxdivide members, divide
-- the capacity again at once, so that the others make room for it at
-- their next call.
local ended = epochEnd == nil or now >= epochEnd
if ended or not rec and redis.call('HLEN', members) < maxdivide then
  local dur = math.max(now - epochStart, interval / 2) / 1e6
  local all = redis.call('HGETALL', members)
  local wants, n = {}, 0
  heldsum, asum = 0, 0
  for i = 1, #all, 2 do
    local rw, rh, re, ra = string.match(all[i + 1], '^(%S+) (%S+) (%S+) (%S+) %S+$')
    rw, rh, re, ra = num(rw, 0, BIG), num(rh, 0, BIG), num(re, 0, 1e18), num(ra, 0, BIG)
    if all[i] == id then
      -- counted below, with this call's values
    elseif rw == nil or rh == nil or re == nil or ra == nil or re <= now then
      redis.call('HDEL', members, all[i])
      redis.call('HDEL', KEYS[3], all[i])
    else
      n = n + 1
      wants[n] = rw
      heldsum = heldsum + rh
      asum = asum + ra
    end
  end
  n = n + 1
  wants[n] = want
  heldsum = heldsum + oldheld
  asum = asum + attempts

  if ended then
  -- Learn the capacity from the fleet's counts, kept for the last few
  -- epochs since the last cut (further back while they hold fewer than
  -- minattempts: a slow fleet's evidence spans more time, up to
  -- maxepochs): the evidence. When it holds enough attempts and
  -- significantly more than the tolerated share of them were throttled,
  -- and the cooldown since the last cut is over (the counts
  -- just after a cut still hold attempts sent before it: each member
  -- learns of the cut and reports once an interval, and attempts admitted
  -- in Redis keep the slots they reserved), the fleet cuts: w, its
  -- estimate of the service's rate, becomes the rate the service accepted
  -- (after the first cut, at least beta times the rate in use), and the
  -- capacity restarts at start*w. It then grows along a cubic curve
  -- centred on w, as TCP CUBIC's: quickly back towards w, slowly near it,
  -- then faster beyond it, to find a rate that has risen:
  -- w*(1 + growth*(t - k)^3), with k = cbrt((1 - start)/growth). Never
  -- beyond twice what the fleet sent.
  if configured == 0 then
    if probed ~= nil and cap >= 0 then cap = probed end
    local sent = ea / dur
    local sa, st, sd = ea, et, dur
    evs = {}
    for a, t, d in string.gmatch(ev, '(%S+),(%S+),(%S+)') do
      a, t, d = num(a, 0, BIG), num(t, 0, BIG), num(d, 0, BIG)
      if a ~= nil and t ~= nil and d ~= nil and t <= a then
        table.insert(evs, {a, t, d})
      end
    end
    while #evs >= maxepochs do table.remove(evs, 1) end
    local spans = 1
    for i = #evs, 1, -1 do
      if spans >= epochs and sa >= minattempts then break end
      sa, st, sd = sa + evs[i][1], st + evs[i][2], sd + evs[i][3]
      spans = spans + 1
    end
    table.insert(evs, {ea, et, dur})
    local k = (((1 - start) / growth) ^ (1 / 3))
    -- The test of a cut's cause. Throttles from congestion fall when the
    -- fleet sends less: at the share f of the rate, a service that
    -- accepted 1 - pre of it throttles 1 - (1 - pre)/f, or nothing (or
    -- the share already found not to depend on the load). Throttles that
    -- do not depend on the load stay at pre. Once the evidence since the
    -- cut holds enough attempts, the nearer decides; if the throttles
    -- stayed, the fleet goes back to the capacity before the cut and
    -- tolerates the share, from the attempts before and after, for qlife.
    local resumed = false
    if testing and now >= cut + cooldown and sa >= 2 * minattempts then
      testing = false
      local pre, post = tst / tsa, st / sa
      local cong = math.max(q, 1 - (1 - pre) / tf)
      local fell = pre - post > 2 * math.sqrt(pre * (1 - pre) * (1 / sa + 1 / tsa))
      if st >= 2 and post > (cong + pre) / 2 and not fell then
        q, qn, qend = (tst + st) / (tsa + sa), tsa + sa, now + qlife
        cap, cut, evs = tcap, now - k * 1e6, {}
        w = math.max(tcap, 0) -- none: no estimate
        resumed = true
      end
    end
    -- Significantly more throttled than the tolerance (two standard
    -- deviations), or than the share that does not depend on the load
    -- (itself an estimate from qn attempts: its variance counts): three,
    -- as the fleet decides every interval, on windows that overlap, and
    -- at two a high draw of throttles that come whatever the load would
    -- cut about once a minute, each cut then tested again, and now and
    -- then taken for congestion.
    local p, spread, z = tolerance * sa, tolerance * sa, 2
    if q > tolerance then p, spread, z = q * sa, q * sa + q * (1 - q) * sa * sa / qn, 3 end
    local significant = not resumed and sa >= minattempts and st > p + z * math.sqrt(spread)
    -- Past its estimate under exact admission, the fleet probes for a
    -- rate that has risen; spaced sends are not throttled below the
    -- service's rate (but for the spread of latency), so the first
    -- throttle ends the probe: a cut that keeps the estimate, unless the
    -- throttles are significant. Exact admission ends it as soon as a
    -- member tells it of the throttle (probed), and the cut is made here
    -- even if no member has reported the throttle yet.
    local probing = not resumed and q == 0 and w > 0 and cap > w and cap <= exactbelow
    if (et > 0 or probed ~= nil) and (probing or significant) and (cap < 0 or now >= cut + cooldown) then
      if cap < 0 and sent >= minrate and sent <= exactbelow then
        -- The first throttles. Sends that arrive at random are throttled
        -- well below the rate of a service that holds little burst, so
        -- the rate they got accepted says little about it; sends admitted
        -- one by one, spaced, get its rate. Space the fleet's sends at
        -- the rate it sent (w = 0: no estimate yet), and cut on what the
        -- service accepts of them, after the cooldown.
        cap, w = sent, 0
      else
        local accepted = (sa - st) / sd
        local was, rate = cap, sa / sd -- the capacity, and the rate sent, before the cut
        if cap >= 0 then rate = math.min(cap, rate) end
        if w > 0 then accepted = math.max(accepted, beta * math.min(cap, sent)) end
        if not significant then accepted = math.max(accepted, w) end
        w = math.max(accepted, minrate)
        cap = math.max(start * w, minrate)
        -- A significant cut under exact admission is tested (above),
        -- unless it ends a probe: the probe sent past the estimate, and
        -- the throttles that ended it are its own.
        testing = significant and not probing and cap < rate and rate <= exactbelow
        if testing then tsa, tst, tf, tcap = sa, st, cap / rate, was end
      end
      cut, evs = now, {}
    elseif cap >= 0 and not resumed then
      if w == 0 and now >= cut + cooldown then
        -- Spaced at the rate sent, the service throttled too few to
        -- cut: that rate is the estimate, and the curve grows past it.
        w, cut = cap, now - k * 1e6
      end
      if w > 0 then
        local t = (now - cut) / 1e6 - k
        cap = math.min(math.max(w * (1 + growth * t * t * t), minrate), math.max(cap, 2 * sent), BIG)
      end
    end
  end

  if configured == 0 then
    local parts = {}
    for i, e in ipairs(evs or {}) do parts[i] = string.format('%.17g,%.17g,%.17g', e[1], e[2], e[3]) end
    ev = table.concat(parts, ' ')
  end
  end

  -- Max-min fair division (water-filling): level is the most any member
  -- gets; when every want fits, the capacity left over is shared equally
  -- (extra), so that members can grow. Where the shares may add up to
  -- more than the capacity (room, below), what a member below the level
  -- leaves to the others is counted from what it sends, its want without
  -- the margin: the margin covers the randomness of its own sends, and
  -- the members' margins are seldom used at once.
  level, extra = -1, 0
  if cap >= 0 then
    local use = 1
    if room(cap) > cap then use = 1 / (1 + margin) end
    table.sort(wants)
    local left, sum = cap, 0
    for i = 1, n do
      local fair = left / (n - i + 1)
      if wants[i] * use > fair then
        level = fair
        left = 0
        break
      end
      left = left - wants[i] * use
      sum = sum + wants[i]
    end
    if level < 0 then extra = math.max(cap - sum, 0) / n end
  end

  if ended then
  -- The retry budget: retries may be ratio of the fleet's first attempts
  -- over the window, or floor a second if that is more (Envoy's model: the
  -- floor lets a fleet that sends little retry, and bounds nothing once
  -- the ratio allows more).
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
  budget = math.max(0, math.max(ratio * rs, floor * window / 1e6) - xs)

  epochStart, epochEnd = now, now + interval
  ea, et, ex = 0, 0, 0
  probedField = ''
  end
end

-- This member's share: its fair share, but never more than the others
-- leave, so that the shares held add up to no more than the room while
-- they change hands (but for a millionth of the capacity, the least
-- share a member gets, so that a newcomer can start, and but for a cut of
-- the capacity, which the members follow as they refresh).
-- A member whose share shrinks (the capacity was cut, others want more)
-- gets its new share at once; one whose share grows gets only what is free.
local share = -1
if cap >= 0 then
  local target = want + extra
  if level >= 0 then target = math.min(want, level) + extra end
  if claim > 0 then
    target = math.min(target, claim)
  elseif target > oldheld then
    local others = math.max(heldsum - oldheld, 0)
    target = math.max(oldheld, math.min(target, room(cap) - others))
  end
  share = math.max(math.min(target, cap), cap / 1e6)
end
local nowheld = math.max(share, 0)
heldsum = math.max(heldsum - oldheld + nowheld, 0)

-- The member's part of the retry budget, by its share of the attempts.
local count = redis.call('HLEN', members)
if not rec then count = count + 1 end
local grant = budget / math.max(count, 1)
if asum > 0 then grant = budget * math.min(attempts / asum, 1) end

redis.call('HSET', members, id, string.format('%.17g %.17g %.17g %.17g %d', want, nowheld, now + lease, attempts, seq))
redis.call('HSET', statekey, 'end', string.format('%.17g', epochEnd), 'start', string.format('%.17g', epochStart),
  'cap', string.format('%.17g', cap), 'cut', string.format('%.17g', cut), 'w', string.format('%.17g', w),
  'level', string.format('%.17g', level), 'extra', string.format('%.17g', extra),
  'heldsum', string.format('%.17g', heldsum), 'a', string.format('%.17g', ea), 't', string.format('%.17g', et),
  'x', string.format('%.17g', ex), 'ring', ring, 'budget', string.format('%.17g', budget),
  'asum', string.format('%.17g', asum), 'ev', ev, 'q', string.format('%.17g', q),
  'qn', string.format('%.17g', qn), 'qend', string.format('%.17g', qend),
  'test', testing and string.format('%.17g %.17g %.17g %.17g', tsa, tst, tf, tcap) or '',
  'probed', probedField)
-- A fleet that stops calling leaves nothing behind.
local ttl = math.ceil(math.max(lease, window) * 4 / 1000)
redis.call('PEXPIRE', members, ttl)
redis.call('PEXPIRE', statekey, ttl)
redis.call('PEXPIRE', KEYS[3], ttl)

local tat = num(f[21], now, now + BIG) or now
-- The level the reply gives is one of this capacity's: a stored one
-- beyond it (corrupted, or from a larger capacity configured before) is
-- none.
if cap < 0 or level > cap then level = -1 end
return {string.format('%.17g', share), string.format('%.17g', grant), tostring(count),
  string.format('%.17g', cap), string.format('%.17g', level), string.format('%d', seq),
  string.format('%.17g', tat - now)}
