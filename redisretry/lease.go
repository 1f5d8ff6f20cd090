package redisretry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/retrykit/retry"
)

// The lease: a refresh reports what the process did and wanted, and applies
// the share and the retry grant it gets back (refresh.lua divides them);
// when Redis does not answer, the process falls back on its local limiter.

// exactHeldBack: under exact admission, a process that Redis held to its
// share asks for this multiple of it, so that however much capacity others
// free, it bids above the level max-min fairness gives it.
const exactHeldBack = 4

// newcomerLeases: a process that sent nothing under its first leases asks
// for as much as any member gets until it has had this many.
const newcomerLeases = 2

// How a process says what it wants (see measure): its attempts a second,
// smoothed with this weight on the newest interval (about five intervals),
// with a margin; held back, more than its share.
const (
	wantSmoothing = 0.2
	wantMargin    = 0.1
	heldBackOften = 0.5
)

// phaseAt returns the phase with which the local limiter starts pacing at
// rate at now (see retry.Assignment.Phase): the one that puts this
// process's sends on its own slots of a grid common to the fleet. The
// grid's period is a token period, 1/rate, counted from the Unix epoch;
// each member's slot in it is its number in the fleet times the golden
// ratio, modulo 1, which spreads any number of members evenly however
// many there are. Members at the same rate then send one after the other,
// not together, even while Redis is unreachable. Before the first lease
// the slot comes from the member's name.
func (f *Fleet) phaseAt(now time.Time, rate float64) float64 {
	if !(rate > 0) || math.IsInf(rate, 1) {
		return 0
	}
	slot := f.phase
	if f.ls.seq > 0 {
		_, slot = math.Modf(float64(f.ls.seq) * goldenRatio)
	}
	secs := float64(now.Unix()) + float64(now.Nanosecond())/1e9
	_, pos := math.Modf(secs * rate)
	p := pos - slot
	if p < 0 {
		p++
	}
	return min(p, math.Nextafter(1, 0))
}

// goldenRatio's fractional part spaces the members' slots: the fractional
// parts of k*0.618... for k = 1, 2, ... are spread evenly at every k.
const goldenRatio = 0.6180339887498949

// localBurst is the burst of a process's share, locally and in Redis: the
// share's whole number, and at least two, at most 2^30 (gcra.lua takes no
// more).
func localBurst(share float64) int { return int(max(2, min(share, 1<<30))) }

// The learning algorithm's constants (see the package documentation).
const (
	learnBeta        = 0.8         // a cut keeps at least 80% of the rate in use
	learnStart       = 0.9         // after a cut the capacity restarts at 90% of the estimate
	learnGrowth      = 0.0001      // the growth curve's constant, per second cubed
	learnTolerance   = 0.02        // the throttled share taken for noise
	learnMinRate     = 0.1         // the least fleet rate learned, a second
	learnEpochs      = 5           // the intervals of counts a cut is decided on
	learnMinAttempts = 20          // the least attempts a cut is decided on
	learnMaxEpochs   = 30          // the most intervals of counts a cut is decided on
	learnCauseLife   = time.Minute // how long a share of throttles found not to depend on the load is tolerated
)

// leaseState is what a Fleet knows of its lease. Fleet.mu guards it.
type leaseState struct {
	share     float64   // sends per second; +Inf: no limit; 0: no lease yet
	own       float64   // the rate exact admission holds the process to (see ownRate)
	capacity  float64   // the fleet's rate; +Inf: none known
	members   int       // processes in the fleet at the last refresh
	seq       int64     // this process's number in the fleet (0: none yet)
	grant     int       // retry tokens given at the last refresh
	carry     float64   // the part of a token the grants left over, in [0, 1)
	until     time.Time // when the lease ends
	connected bool      // the last call to Redis succeeded
	down      bool      // the fallback was applied since the last success

	// The counts reported so far, and when, and the smoothed demand.
	at                            time.Time
	attempts, throttles, refusals int64
	asked, exactRefusals          int64
	demand, heldBack              float64
	fallbackAttempts              int64 // attempts counted into the local budget since Redis failed

	refreshes, failures int64
	leases              int64 // the refreshes that succeeded
	lastErr             error
}

// cooldown is the least time between two cuts of a learned capacity:
// three intervals (the cut reaches every member within one, their reports
// of attempts made after it within two, and the counts of a whole
// interval after that within three), and under exact admission the
// longest wait for a slot reserved before the cut.
func (f *Fleet) cooldown() time.Duration {
	d := 3 * f.cfg.interval
	if f.cfg.exactBelow > 0 {
		d += f.cfg.maxWait
	}
	return d
}

// maxDivide is the largest fleet whose capacity is divided again as soon
// as a member joins (each division sorts the members' wants); a larger one
// divides once an interval.
const maxDivide = 1000

// refreshWithin refreshes within half an interval of ctx.
func (f *Fleet) refreshWithin(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.interval/2)
	defer cancel()
	_ = f.refresh(ctx) // recorded in Stats and given to WithErrorHandler
}

// A report is what a refresh tells the fleet.
type report struct {
	demand, want, heldBack       float64
	claim                        float64 // the share the process paces at, if a lease gave it (see refresh.lua)
	attempts, throttles, retries int64
	asked, exactRefusals         int64
	limiter                      retry.RateLimiterStats
}

// measure reads what the process did since the last successful refresh.
// f.mu must be held.
func (f *Fleet) measure(now time.Time) report {
	s := f.limiter.Stats()
	r := report{limiter: s, asked: f.asked.Load(), exactRefusals: f.refusals.Load()}
	r.attempts = max(s.Attempts-f.ls.attempts, 0)
	r.throttles = max(s.Throttles-f.ls.throttles, 0)
	refusals := max(s.Refusals-f.ls.refusals, 0)
	// The retries made are the tokens taken from the quota since the last
	// grant (a retry that succeeds gives its token back: the budget
	// counts the retries that failed).
	spent := max(f.ls.grant-int(f.quota.Stats().Available), 0)
	r.retries = min(int64(spent), r.attempts)
	dt := f.cfg.interval.Seconds()
	if !f.ls.at.IsZero() {
		dt = max(now.Sub(f.ls.at).Seconds(), dt/2)
	}
	// What the process would send unrestricted, smoothed over the last
	// few intervals, with a margin, so that a process that sends at random
	// times is not held at exactly its mean rate. Under exact admission,
	// each attempt the process asked to make counts once, whether it was
	// admitted, made to wait or refused, locally or in Redis (see wanted):
	// that is its demand, and a process refused at all wants at least four
	// times its share, so that the members held to their shares all bid
	// above the level that max-min fairness gives them, even when others
	// have just left, and share it equally. With leases, the local
	// limiter's refusals count the times a waiting attempt asked again as
	// well, and a process that sends at random is refused now and then by
	// bursts of its own: its demand is what it sent, and it wants more
	// than its share (up to twice it) only when it was held back in most
	// of the last few intervals.
	exact := f.exact.Load()
	refusals += max(r.exactRefusals-f.ls.exactRefusals, 0)
	sent := float64(r.attempts) / dt
	sample := sent
	if exact {
		sample = float64(max(r.asked-f.ls.asked, r.attempts)) / dt
	}
	r.demand = sample
	if !f.ls.at.IsZero() {
		r.demand = wantSmoothing*sample + (1-wantSmoothing)*f.ls.demand
	}
	r.want = r.demand * (1 + wantMargin)
	held := 0.0
	if refusals > 0 {
		held = 1
	}
	r.heldBack = wantSmoothing*held + (1-wantSmoothing)*f.ls.heldBack
	switch share := f.ls.share; {
	case share == 0 || f.ls.leases < newcomerLeases && r.attempts == 0:
		// No lease yet, or only one and nothing sent under it: nothing
		// measured says what the process will send. It asks for as much
		// as any member gets.
		r.want = maxRate
	case math.IsInf(share, 1):
	case exact && refusals > 0:
		r.want = max(r.want, exactHeldBack*share)
	case r.heldBack >= heldBackOften:
		r.want = max(r.want, share*(1+r.heldBack))
	case refusals > 0:
		r.want = max(r.want, sent*(1+wantMargin))
	}
	r.want = min(r.want, maxRate) // the script takes no more
	if f.ls.leases > 0 && !math.IsInf(f.ls.share, 1) {
		r.claim = f.ls.share
	}
	return r
}

// refresh makes one refresh: it reports to the fleet and applies the lease
// it gets back, or falls back if Redis does not answer well.
func (f *Fleet) refresh(ctx context.Context) error {
	now := f.clock.Now()
	f.mu.Lock()
	r := f.measure(now)
	f.mu.Unlock()

	capacity := 0.0
	// With leases, the shares may add up to more than the capacity by the
	// margins of the members below the level, within the configured rate
	// (see refresh.lua); under exact admission, which spaces the fleet's
	// sends at the capacity whatever the shares, they may not: after a
	// fallback, the shares alone pace the fleet.
	room := 0.0
	if f.cfg.rate > 0 {
		capacity = f.cfg.rate * (1 - f.cfg.headroom)
		if f.cfg.exactBelow == 0 || capacity > f.cfg.exactBelow {
			room = f.cfg.rate
		}
	}
	args := []any{
		f.cfg.member, fmtFloat(r.want), r.attempts, r.throttles, r.retries,
		f.cfg.interval.Microseconds(), f.cfg.lease.Microseconds(), fmtFloat(capacity),
		fmtFloat(f.cfg.ratio), fmtFloat(f.cfg.floor), f.cfg.window.Microseconds(),
		fmtFloat(learnBeta), fmtFloat(f.cfg.growth), fmtFloat(learnTolerance), f.scriptNow(),
		fmtFloat(f.cfg.start), f.cooldown().Microseconds(), fmtFloat(learnMinRate), learnEpochs,
		learnMinAttempts, maxDivide, fmtFloat(wantMargin), fmtFloat(room),
		fmtFloat(min(f.cfg.exactBelow, maxRate)), learnMaxEpochs, learnCauseLife.Microseconds(),
		fmtFloat(r.claim),
	}
	res, err := refreshScript.Run(ctx, f.rdb, f.keys, args...).StringSlice()
	var l lease
	if err == nil {
		l, err = f.parseLease(res)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ls.refreshes++
	if err != nil {
		err = fmt.Errorf("redisretry: refreshing the lease on %q: %w", f.name, err)
		f.failLocked(now, r, err)
		return err
	}
	f.ls.at, f.ls.attempts, f.ls.throttles, f.ls.refusals = now, r.limiter.Attempts, r.limiter.Throttles, r.limiter.Refusals
	f.ls.asked, f.ls.exactRefusals, f.ls.demand, f.ls.heldBack = r.asked, r.exactRefusals, r.demand, r.heldBack
	f.ls.fallbackAttempts = r.limiter.Attempts
	f.keepHeldBack(now, l)
	f.ls.share, f.ls.own, f.ls.capacity, f.ls.members, f.ls.seq = l.share, l.own, l.capacity, l.members, l.seq
	f.ls.until = now.Add(f.cfg.lease)
	wasDown := f.ls.down
	f.ls.connected, f.ls.down, f.ls.lastErr = true, false, nil
	f.ls.leases++
	exact := f.cfg.exactBelow > 0 && !math.IsInf(l.capacity, 1) && l.capacity <= f.cfg.exactBelow
	// The local limiter keeps the process to its share, with a burst of
	// at least two: a slot of a small share that comes while the process
	// has nothing to send is kept for a while, not lost (the bursts of
	// independent processes seldom meet). Under exact admission Redis
	// keeps the process to its share and spaces the fleet's sends: the
	// local limiter does not pace until Redis fails. But for the first
	// interval after a fallback it still does: Redis, perhaps restarted
	// empty, spaces the sends of the processes back with it, while the
	// others still send on their local limiters' slots, which it does not
	// know; each process kept to its own slots as well, the fleet's sends
	// stay within its rate until all are back.
	a := retry.Assignment{Rate: l.share, Until: f.ls.until, Phase: f.phaseAt(now, l.share)}
	if exact && !wasDown {
		a.Rate = math.Inf(1)
	} else if !math.IsInf(l.share, 1) {
		a.Burst = localBurst(l.share)
	}
	if f.cfg.rate > 0 {
		a.Ceiling = l.share
	}
	if err := f.limiter.Assign(a); err != nil {
		return err // not reached: parseLease checked the share
	}
	if exact && !f.exact.Load() {
		// Throttles seen before exact admission are not told to it: they
		// were counted in the lease's reports.
		f.toldThrottles.Store(r.limiter.Throttles)
	}
	f.exact.Store(exact)
	if exact {
		f.booked(l.lead, l.capacity)
	}
	// A process with a small part of the fleet's attempts is granted a
	// fraction of a token: the fractions add up over the refreshes.
	g := l.grant + f.ls.carry
	n := int(min(g, maxGrant))
	f.ls.carry = min(max(g-float64(n), 0), 1)
	f.setGrant(n)
	return nil
}

// keepHeldBack forgets when Redis's last answer under exact admission said
// this process's own next slot is due (see heldBack) where the lease l
// makes it wrong: as the admission script does, a slot further ahead than
// any wait and a slot at the new share is due now. (The fleet's next free
// slot needs nothing here: under exact admission the lease says it anew,
// see booked.) f.mu must be held.
func (f *Fleet) keepHeldBack(now time.Time, l lease) {
	if own := f.ownAt.Load(); own != 0 && !math.IsInf(l.own, 1) &&
		time.Duration(own-now.UnixNano()) > f.cfg.maxWait+time.Duration(float64(time.Second)/l.own) {
		f.ownAt.Store(0)
	}
}

// failLocked falls back after a failed call to Redis: no more exact
// admission, and the local limiter keeps the last share until the lease
// ends and then goes on from it (below it when the rate was configured).
// A Fleet that never had a lease keeps below the configured rate. In the
// meantime the retry quota earns the budget's ratio of the process's own
// first attempts. f.mu must be held.
func (f *Fleet) failLocked(now time.Time, r report, err error) {
	f.ls.failures++
	f.ls.connected, f.ls.lastErr = false, err
	wasExact := f.exact.Swap(false)
	if f.cfg.onError != nil {
		f.cfg.onError(err)
	}
	first := max(r.limiter.Attempts-f.ls.fallbackAttempts-r.retries, 0)
	f.ls.fallbackAttempts = r.limiter.Attempts
	if earned := int(f.cfg.ratio * float64(first)); earned > 0 {
		_ = f.quota.Release(earned)
		f.ls.grant += earned
	}
	if f.ls.down {
		return
	}
	f.fallBackLocked(now, wasExact)
}

// fallBackLocked leaves the pacing to the local limiter: it keeps the last
// share until the lease ends and then goes on from it (below it when the
// rate was configured); a Fleet that never had a lease keeps below the
// configured rate. After exact admission (wasExact), sends Redis booked
// for the fleet may still be to come, up to the longest wait ahead: the
// local limiter's first slot is the process's slot on the fleet's grid
// (see phaseAt) once those are done, as far ahead of now as they were at
// this process's last call to Redis, an admission or a lease. (Not as far
// as they were then: while the fleet asks for more than its rate, the
// others book on after that call and the bookings keep their lead, up to
// the longest wait. Counted from that call, local sends started under
// bookings made since, and the busiest second of the Route 53 simulation
// went from 1.2x to 1.4x the limit.) The fleet's sends then follow each
// other at its rate, as when Redis spaced them: what was booked goes
// first, then each process on its own slots, which the members' places on
// the grid spread evenly; a burst of two, which the local algorithm keeps
// after the lease (see retry.Assignment.Burst), keeps a process's place
// when it misses a slot by a moment. f.mu must be held.
func (f *Fleet) fallBackLocked(now time.Time, wasExact bool) {
	f.ls.down = true
	f.exact.Store(false)
	share, until := f.ls.share, f.ls.until
	if share == 0 || math.IsInf(share, 1) {
		if f.cfg.rate == 0 {
			return // nothing known to keep to: the local algorithm decides
		}
		share, until = f.cfg.rate*(1-f.cfg.headroom), now
	}
	a := retry.Assignment{Rate: share, Until: until, Burst: localBurst(share)}
	if f.ls.demand < share {
		// A process that sends less than its share has no place on the
		// fleet's grid to keep (see below): a burst of one keeps its sends
		// from meeting others' after a pause.
		a.Burst = 1
	}
	if wasExact {
		a.NextSend = f.nextSlot(now.Add(time.Duration(f.lead.Load())), share)
	} else {
		a.Phase = f.phaseAt(now, share)
	}
	if f.cfg.rate > 0 {
		a.Ceiling = share
	}
	_ = f.limiter.Assign(a) // share is finite and above 0; NextSend is within the longest wait and a slot
}

// nextSlot returns the first of this process's slots on the fleet's grid
// at rate (see phaseAt) at or after t.
func (f *Fleet) nextSlot(t time.Time, rate float64) time.Time {
	p := f.phaseAt(t, rate)
	if p == 0 {
		return t
	}
	return t.Add(time.Duration((1 - p) / rate * float64(time.Second)))
}

// setGrant sets the retry quota to n tokens. f.mu must be held, or f not
// yet shared.
func (f *Fleet) setGrant(n int) {
	have := int(f.quota.Stats().Available)
	switch {
	case n > have:
		_ = f.quota.Release(n - have)
	case n < have:
		// Retries may take tokens meanwhile: take what is there.
		for have > n {
			if _, err := f.quota.Acquire(have - n); err == nil {
				break
			}
			have = int(f.quota.Stats().Available)
		}
	}
	f.ls.grant = n
}

// A lease is what a refresh gets back.
type lease struct {
	share, capacity float64 // +Inf: no limit
	own             float64 // the rate exact admission holds the process to (see ownRate)
	grant           float64
	members         int
	seq             int64         // the member's number, in the order of joining
	lead            time.Duration // how far ahead exact admission's next free slot is
}

// parseLease reads the refresh script's reply, and refuses a value that
// is out of range.
func (f *Fleet) parseLease(res []string) (lease, error) {
	if len(res) != 7 {
		return lease{}, fmt.Errorf("%w: %d values, want 7", errBadReply, len(res))
	}
	vals := make([]float64, 7)
	for i, s := range res {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < -1 || v > maxRate {
			return lease{}, fmt.Errorf("%w: value %d is %q", errBadReply, i+1, s)
		}
		vals[i] = v
	}
	l := lease{share: vals[0], capacity: vals[3], members: int(vals[2]), seq: int64(vals[5])}
	level := vals[4]
	if vals[1] < 0 || vals[2] < 1 || vals[5] < 1 || vals[6] < 0 {
		return lease{}, fmt.Errorf("%w: grant %v, members %v, seq %v, lead %v", errBadReply, vals[1], vals[2], vals[5], vals[6])
	}
	l.lead = time.Duration(vals[6] * float64(time.Microsecond)) // bounded by maxRate; see booked
	l.grant = min(vals[1], maxGrant)
	switch {
	case l.capacity == -1 && l.share == -1:
		l.share, l.capacity = math.Inf(1), math.Inf(1)
	case l.capacity > 0 && l.share > 0 && l.share <= l.capacity*(1+1e-9) && level <= l.capacity*(1+1e-9):
	default:
		return lease{}, fmt.Errorf("%w: share %v, level %v of capacity %v", errBadReply, l.share, level, l.capacity)
	}
	l.own = l.share
	if f.cfg.rate > 0 {
		l.own = ownRate(l.share, level)
	}
	if want := f.cfg.rate * (1 - f.cfg.headroom); f.cfg.rate > 0 && math.Abs(l.capacity-want) > want*1e-9 {
		return lease{}, fmt.Errorf("%w: capacity %v, configured %v", errBadReply, l.capacity, want)
	}
	return l, nil
}

// ownRate is the rate exact admission holds a process to, given its share
// and the level of the fleet's max-min fair division (-1: every want
// fits): the level, the most any member gets, when there is one. For a
// member at the level that is its share; one below it sends what it
// wants, and the fleet's rate, which Redis spaces, bounds them all. Held
// to its share as well, a process whose requests come at random was made
// to wait by bursts of its own, bid as one held back, and took capacity
// from those at the level (in a fleet of 10 processes wanting 20/s and 40
// wanting 1/s, the heavy ones got 0.54 of their fair share). Only a
// configured rate is divided so. Under a learned one, against a service
// throttling half of all attempts whatever the load, a fleet of 20 each
// held to the level was cut down to a twentieth of its rate on 4 seeds of
// 20, against 1 of 20 held to their shares (the README's "Throttles that
// do not depend on the load" has why such cuts happen at all).
func ownRate(share, level float64) float64 {
	if level < 0 {
		return share
	}
	return max(share, level)
}

// maxRate bounds every rate and count read back from Redis.
const maxRate = 1e15

var errBadReply = errors.New("a reply out of range")

// scriptNow is the time the scripts are given: "" to read Redis's clock.
func (f *Fleet) scriptNow() string {
	if f.redisNow == nil {
		return ""
	}
	return strconv.FormatInt(f.redisNow().UnixMicro(), 10)
}

// fmtFloat formats v for a script, which reads it with tonumber.
func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
