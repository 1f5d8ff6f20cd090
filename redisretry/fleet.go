// Package redisretry shares one rate limit and one retry budget between
// every process of a fleet, through Redis (or Valkey, which speaks the same
// protocol).
//
// A limit that belongs to an account, not to a process (Route 53's 5
// requests a second per AWS account, a partner API's quota), is drawn on by
// every replica of every service that calls it. Each process's own
// adaptive limiter sees only its own few attempts and learns its part of
// the limit by being throttled; the fleet as a whole knows much more. A
// Fleet is this process's membership in one such limit:
//
//	fleet, err := redisretry.New(ctx, rdb, "route53", redisretry.WithRate(5))
//	if err != nil { ... }
//	defer fleet.Close()
//	out, err := retry.Do(ctx, call, retry.WithStrategy(fleet.Strategy()))
//
// # Leases
//
// Every interval (WithInterval, 1 s by default) each process makes one
// call to Redis, in the background: it says how many sends a second it
// wants and what it saw (attempts, throttles, retries), and gets back its
// share of the fleet's rate for a lease (WithLease, 3 intervals). The
// shares divide the rate max-min fairly by the wants, as Google's Doorman
// does: no process gets more than it wants, and what the small ones leave
// is divided equally among the others. A process's share is enforced by
// its own retry.RateLimiter (see retry.RateLimiter.Assign), so an admitted
// request costs what it costs with a local adaptive limiter: no network
// call on the request path.
//
// # Exact admission
//
// Shares alone cannot beat randomness: independent senders arrive at
// random, and a service whose token bucket holds little burst throttles
// them well below its rate even when their shares add up to less than it.
// While the fleet's rate is at most WithExactBelow (50 a second by
// default), every attempt is admitted in Redis instead: one round trip
// (a fraction of a millisecond on a local network, against 20 ms or more
// between sends) reserves the next slot of the fleet's rate, within the
// process's own share, so the fleet's sends are spaced as one client's
// would be and the slots go round the fleet fairly.
//
// # Knowing the limit
//
// With WithRate the rate is configured, less a headroom (WithHeadroom,
// 12.5%) for the variation of network latency. Without it the fleet learns
// it from the throttles of every process, pooled once an interval. Before
// the first throttle the rate is unlimited. When significantly more than
// 2% of the fleet's attempts of the last five intervals (at least 20 of
// them) were throttled, the fleet takes the rate the service accepted as
// its estimate w of the service's rate (after the first time, at least 80%
// of the rate in use), restarts at 90% of w, and grows along a cubic
// curve centred on w, as TCP CUBIC does: back to w in about 6 s, slowly
// near it, then faster beyond it, to find a rate that has risen
// (w(1 + 0.0004(t-6.3)³), t seconds after the cut). It cuts at most once
// in three intervals plus, with exact admission, the maximum wait: the
// counts just after a cut still hold attempts sent before it. The learned
// rate never falls below 0.1 a second.
//
// # The retry budget
//
// Retries may be at most a ratio (20% by default, as Finagle's budget) of
// the fleet's first attempts over a sliding window (10 s), plus a floor
// (10 retries a second) for the fleet as a whole, not for each process:
// however many processes share the load, the fleet's retries are bounded.
// Each refresh gives the process its part of what the budget has left, in
// proportion to its attempts, as a retry quota (a retry.TokenBucket).
//
// # Faults
//
// Redis is not on the request path, and it may fail: a refresh that fails
// or takes longer than half an interval changes nothing; the process keeps
// its share until its lease ends, and then its local adaptive algorithm
// takes over from that share, never above it when the rate was configured.
// A fleet that loses Redis keeps to the limit; it does not fall back to
// each process claiming the whole limit. Exact admission that fails falls
// back the same way, at once. A member that Redis does not know (new, or
// coming back after Redis restarted empty) gets only what the others
// leave, so the shares are rebuilt without a burst. Time comes from
// Redis's clock, never from the processes'; every value read back is
// checked, so a corrupted or hostile value cannot make a share negative,
// NaN or unbounded.
//
// # Keys
//
// A limit named name keeps three keys, prefix+"{"+name+"}:members",
// ":state" and ":slots" (WithPrefix; "retrykit:" by default): the hash tag
// puts them in one slot of a Redis Cluster, and different limits in
// different slots. The keys expire when no process calls for four leases.
// Each script is sent to Redis once and then called by its SHA1.
package redisretry

import (
	"context"
	"crypto/rand"
	_ "embed" // the Lua scripts
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrykit/retry"
)

var (
	//go:embed refresh.lua
	refreshSource string
	//go:embed gcra.lua
	gcraSource string

	refreshScript = redis.NewScript(refreshSource)
	gcraScript    = redis.NewScript(gcraSource)
)

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
// share's whole number, and at least two.
func localBurst(share float64) int { return int(max(2, min(share, 1<<30))) }

// The learning algorithm's constants (see the package documentation).
const (
	learnBeta        = 0.8    // a cut keeps at least 80% of the rate in use
	learnStart       = 0.9    // after a cut the capacity restarts at 90% of the estimate
	learnGrowth      = 0.0001 // the growth curve's constant, per second cubed
	learnTolerance   = 0.02   // the throttled share taken for noise
	learnMinRate     = 0.1    // the least fleet rate learned, a second
	learnEpochs      = 5      // the intervals of counts a cut is decided on
	learnMinAttempts = 20     // the least attempts a cut is decided on
)

// A Fleet is this process's membership in one limit that a fleet of
// processes shares through Redis: its share of the fleet's send rate and
// of the fleet's retry budget, renewed in the background (see the package
// documentation). Create one with New, take its Strategy, and Close it
// when the process no longer calls the service. A Fleet is safe for
// concurrent use.
type Fleet struct {
	rdb   redis.UniversalClient
	cfg   config
	name  string
	keys  []string // the members hash, the state hash, the slots hash
	slots []string // the state and slots hashes, for exact admission
	clock retry.Clock
	// phase is where in a token period this process's limiter starts
	// pacing, from its member name: processes that start pacing together
	// do not send together.
	phase float64
	// redisNow, when set (by the simulation), gives the scripts the time
	// instead of Redis's clock.
	redisNow func() time.Time

	limiter  *retry.RateLimiter
	quota    *retry.TokenBucket
	adaptive *retry.Adaptive
	strategy retry.RetryStrategy

	// exact says that attempts are admitted in Redis now: the fleet's rate
	// is known, at most WithExactBelow, and Redis answers. refusals counts
	// the attempts it refused.
	exact    atomic.Bool
	refusals atomic.Int64

	mu sync.Mutex
	ls leaseState

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// leaseState is what a Fleet knows of its lease. Fleet.mu guards it.
type leaseState struct {
	share     float64   // sends per second; +Inf: no limit; 0: no lease yet
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
	exactRefusals                 int64
	demand, heldBack              float64
	fallbackAttempts              int64 // attempts counted into the local budget since Redis failed

	refreshes, failures int64
	lastErr             error
}

// Stats is a snapshot of a Fleet, for metrics and tests.
type Stats struct {
	// Share is the send rate this process holds, in sends per second:
	// math.Inf(1) while the fleet has no limit (none configured and none
	// learned yet), 0 before the first lease.
	Share float64
	// Capacity is the fleet's send rate: the configured rate less the
	// headroom, or the learned one; math.Inf(1) when none is known.
	Capacity float64
	// Members is the number of processes in the fleet at the last refresh.
	Members int
	// Exact reports whether attempts are admitted in Redis now.
	Exact bool
	// RetryGrant is the number of retries the last refresh allowed this
	// process until the next.
	RetryGrant int
	// LeaseUntil is when the lease ends, by the Fleet's clock.
	LeaseUntil time.Time
	// Connected reports whether the last call to Redis succeeded.
	Connected bool
	// Refreshes and Failures count the refreshes made and those that
	// failed; LastError is the last failure's error.
	Refreshes, Failures int64
	LastError           error
}

// New joins the limit named name, through rdb, and makes the first refresh
// within ctx: when it fails (Redis down, ctx done), New still returns a
// Fleet, which falls back as after any failed refresh and tries again
// every interval; Stats says so. The Fleet refreshes in the background
// until Close. A bad option value or name is an error wrapping
// retry.ErrInvalidConfig that names the option and its valid range.
func New(ctx context.Context, rdb redis.UniversalClient, name string, opts ...Option) (*Fleet, error) {
	f, err := newFleet(rdb, name, opts)
	if err != nil {
		return nil, err
	}
	f.refreshWithin(ctx)
	f.stop, f.done = make(chan struct{}), make(chan struct{})
	go f.loop()
	return f, nil
}

// newFleet returns a Fleet that does not refresh by itself.
func newFleet(rdb redis.UniversalClient, name string, opts []Option) (*Fleet, error) {
	if rdb == nil {
		return nil, fmt.Errorf("%w: redisretry.New: a nil Redis client", retry.ErrInvalidConfig)
	}
	if name == "" || strings.ContainsAny(name, "{}") {
		return nil, fmt.Errorf("%w: redisretry.New: the limit name %q: want a name without '{' or '}' (it is the keys' hash tag)", retry.ErrInvalidConfig, name)
	}
	cfg := defaults()
	for _, o := range opts {
		if o.apply == nil {
			return nil, fmt.Errorf("%w: redisretry: the zero Option", retry.ErrInvalidConfig)
		}
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.member == "" {
		cfg.member = defaultMember()
	}
	tag := cfg.prefix + "{" + name + "}:"
	h := fnv.New64a()
	_, _ = h.Write([]byte(cfg.member)) // never fails
	f := &Fleet{
		rdb: rdb, cfg: cfg, name: name, phase: float64(h.Sum64()>>11) / (1 << 53),
		keys:  []string{tag + "members", tag + "state", tag + "slots"},
		slots: []string{tag + "state", tag + "slots"},
		clock: cfg.clock,
	}
	// The local parts read the Fleet's clock if one was given, and
	// otherwise their own default, the system clock, on which strategies
	// wait with ordinary timers.
	var limiterClock []retry.RateLimiterOption
	var bucketClock []retry.TokenBucketOption
	var strategyClock []retry.AdaptiveOption
	if cfg.clock != nil {
		limiterClock = []retry.RateLimiterOption{retry.WithClock(cfg.clock)}
		bucketClock = []retry.TokenBucketOption{retry.WithClock(cfg.clock)}
		strategyClock = []retry.AdaptiveOption{retry.WithClock(cfg.clock)}
	} else {
		f.clock = retry.ClockFunc(time.Now)
	}
	var err error
	limiterOpts := append(append([]retry.RateLimiterOption(nil), cfg.limiterOpts...), limiterClock...)
	if f.limiter, err = retry.NewRateLimiter(limiterOpts...); err != nil {
		return nil, fmt.Errorf("redisretry: WithLimiterOptions: %w", err)
	}
	// The retry quota holds the retries the fleet's budget grants: every
	// retry costs one, first attempts earn nothing. It starts empty.
	if f.quota, err = retry.NewTokenBucket(append([]retry.TokenBucketOption{retry.WithMaxCapacity(maxGrant),
		retry.WithRetryCost(1), retry.WithTimeoutRetryCost(1), retry.WithThrottlingRetryCost(1),
		retry.WithInitialTryCost(0), retry.WithInitialTrySuccessIncrement(0)}, bucketClock...)...); err != nil {
		return nil, err
	}
	f.ls.grant = maxGrant // what the bucket starts with
	f.setGrant(0)
	strategyOpts := append(append(strategyClock, cfg.strategyOpts...),
		retry.WithRateLimiter(f.limiter), retry.WithRetryQuota(f.quota))
	if f.adaptive, err = retry.NewAdaptive(strategyOpts...); err != nil {
		return nil, fmt.Errorf("redisretry: WithStrategyOptions: %w", err)
	}
	f.strategy = f.adaptive
	if cfg.exactBelow > 0 {
		f.strategy = exactStrategy{f}
	}
	return f, nil
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

// maxGrant bounds the retries one refresh may grant.
const maxGrant = 1 << 30

// defaultMember names this process: its host name, its process id and a
// random suffix, so that two processes never share a name.
func defaultMember() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	var b [4]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Strategy returns the strategy whose attempts follow the fleet's limit and
// whose retries draw on the fleet's budget: a *retry.Adaptive built with
// WithStrategyOptions and this Fleet's rate limiter and retry quota (every
// scope shares them), or, with exact admission possible (WithExactBelow
// above 0), a strategy that admits each attempt in Redis first while the
// fleet's rate is low enough, and otherwise is that Adaptive. Use it with
// retry.Do, a Transport, or a loop of your own.
func (f *Fleet) Strategy() retry.RetryStrategy { return f.strategy }

// RateLimiter returns the local rate limiter that enforces this process's
// share.
func (f *Fleet) RateLimiter() *retry.RateLimiter { return f.limiter }

// Close stops the background refresh and leaves the fleet: its share goes
// back to the others at their next refresh (Close removes this process's
// record; if that fails, the record expires with the lease). The
// strategy goes on working after Close, on its local limiter alone, as
// when Redis fails: it keeps to the last share.
func (f *Fleet) Close() error {
	var err error
	f.closeOnce.Do(func() {
		if f.stop != nil {
			close(f.stop)
			<-f.done
		}
		f.mu.Lock()
		f.fallBackLocked(f.clock.Now())
		f.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), f.cfg.interval)
		defer cancel()
		pipe := f.rdb.TxPipeline()
		pipe.HDel(ctx, f.keys[0], f.cfg.member)
		pipe.HDel(ctx, f.keys[2], f.cfg.member)
		if _, e := pipe.Exec(ctx); e != nil {
			err = fmt.Errorf("redisretry: leaving the fleet: %w", e)
		}
	})
	return err
}

// Stats returns a snapshot of the Fleet.
func (f *Fleet) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Stats{
		Share:      f.ls.share,
		Capacity:   f.ls.capacity,
		Members:    f.ls.members,
		Exact:      f.exact.Load(),
		RetryGrant: f.ls.grant,
		LeaseUntil: f.ls.until,
		Connected:  f.ls.connected,
		Refreshes:  f.ls.refreshes,
		Failures:   f.ls.failures,
		LastError:  f.ls.lastErr,
	}
}

// loop refreshes every interval until Close.
func (f *Fleet) loop() {
	defer close(f.done)
	t := time.NewTicker(f.cfg.interval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			f.refreshWithin(context.Background())
		}
	}
}

// refreshWithin refreshes within half an interval of ctx.
func (f *Fleet) refreshWithin(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.interval/2)
	defer cancel()
	_ = f.refresh(ctx) // recorded in Stats and given to WithErrorHandler
}

// A report is what a refresh tells the fleet.
type report struct {
	demand, want, held, heldBack float64
	attempts, throttles, retries int64
	exactRefusals                int64
	limiter                      retry.RateLimiterStats
	spent                        int
	at                           time.Time
}

// measure reads what the process did since the last successful refresh.
// f.mu must be held.
func (f *Fleet) measure(now time.Time) report {
	s := f.limiter.Stats()
	r := report{limiter: s, at: now, exactRefusals: f.refusals.Load()}
	r.attempts = max(s.Attempts-f.ls.attempts, 0)
	r.throttles = max(s.Throttles-f.ls.throttles, 0)
	refusals := max(s.Refusals-f.ls.refusals, 0)
	// The retries made are the tokens taken from the quota since the last
	// grant (a retry that succeeds gives its token back: the budget
	// counts the retries that failed).
	r.spent = max(f.ls.grant-int(f.quota.Stats().Available), 0)
	r.retries = min(int64(r.spent), r.attempts)
	dt := f.cfg.interval.Seconds()
	if !f.ls.at.IsZero() {
		dt = max(now.Sub(f.ls.at).Seconds(), dt/2)
	}
	// What the process would send unrestricted, smoothed over the last
	// few intervals, with a margin, so that a process that sends at random
	// times is not held at exactly its mean rate. Under exact admission,
	// every attempt asks Redis, and a refused one asks again when its slot
	// is due: what the process sent and was refused is its demand, and a
	// process refused at all wants at least twice its share, so that the
	// members held to their shares all bid above the level that max-min
	// fairness gives them and share it equally. With leases, the local
	// limiter's refusals count the times a waiting attempt asked again as
	// well, and a process that sends at random is refused now and then by
	// bursts of its own: its demand is what it sent, and it wants more
	// than its share (up to twice it) only when it was held back in most
	// of the last few intervals.
	exact := f.exact.Load()
	refusals += max(f.refusals.Load()-f.ls.exactRefusals, 0)
	sent := float64(r.attempts) / dt
	sample := sent
	if exact {
		sample = float64(r.attempts+refusals) / dt
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
	case share == 0:
		// No lease yet: nothing measured says what the process will
		// send. It asks for as much as any member gets.
		r.want = maxRate
	case math.IsInf(share, 1):
	case exact && refusals > 0:
		r.want = max(r.want, 2*share)
	case r.heldBack >= heldBackOften:
		r.want = max(r.want, share*(1+r.heldBack))
	case refusals > 0:
		r.want = max(r.want, sent*(1+wantMargin))
	}
	if f.ls.share > 0 && !math.IsInf(f.ls.share, 1) {
		r.held = f.ls.share
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
	if f.cfg.rate > 0 {
		capacity = f.cfg.rate * (1 - f.cfg.headroom)
	}
	args := []any{
		f.cfg.member, fmtFloat(r.want), fmtFloat(r.held), r.attempts, r.throttles, r.retries,
		f.cfg.interval.Microseconds(), f.cfg.lease.Microseconds(), fmtFloat(capacity),
		fmtFloat(f.cfg.ratio), fmtFloat(f.cfg.floor), f.cfg.window.Microseconds(),
		fmtFloat(learnBeta), fmtFloat(learnGrowth), fmtFloat(learnTolerance), f.scriptNow(),
		fmtFloat(learnStart), f.cooldown().Microseconds(), fmtFloat(learnMinRate), learnEpochs,
		learnMinAttempts, maxDivide,
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
	f.ls.exactRefusals, f.ls.demand, f.ls.heldBack = r.exactRefusals, r.demand, r.heldBack
	f.ls.fallbackAttempts = r.limiter.Attempts
	f.ls.share, f.ls.capacity, f.ls.members, f.ls.seq = l.share, l.capacity, l.members, l.seq
	f.ls.until = now.Add(f.cfg.lease)
	f.ls.connected, f.ls.down, f.ls.lastErr = true, false, nil
	exact := f.cfg.exactBelow > 0 && !math.IsInf(l.capacity, 1) && l.capacity <= f.cfg.exactBelow
	// The local limiter keeps the process to its share, with a burst of
	// at least two: a slot of a small share that comes while the process
	// has nothing to send is kept for a while, not lost (the bursts of
	// independent processes seldom meet). Under exact admission Redis
	// keeps the process to its share and spaces the fleet's sends: the
	// local limiter does not pace until Redis fails.
	a := retry.Assignment{Rate: l.share, Until: f.ls.until, Phase: f.phaseAt(now, l.share)}
	if exact {
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
	f.exact.Store(exact)
	// A process with a small part of the fleet's attempts is granted a
	// fraction of a token: the fractions add up over the refreshes.
	g := l.grant + f.ls.carry
	n := int(min(g, maxGrant))
	f.ls.carry = min(max(g-float64(n), 0), 1)
	f.setGrant(n)
	return nil
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
	f.exact.Store(false)
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
	f.fallBackLocked(now)
}

// fallBackLocked leaves the pacing to the local limiter: it keeps the last
// share until the lease ends and then goes on from it (below it when the
// rate was configured); a Fleet that never had a lease keeps below the
// configured rate. f.mu must be held.
func (f *Fleet) fallBackLocked(now time.Time) {
	f.ls.down = true
	f.exact.Store(false)
	share, until := f.ls.share, f.ls.until
	if share == 0 || math.IsInf(share, 1) {
		if f.cfg.rate == 0 {
			return // nothing known to keep to: the local algorithm decides
		}
		share, until = f.cfg.rate*(1-f.cfg.headroom), now
	}
	a := retry.Assignment{Rate: share, Until: until, Burst: localBurst(share), Phase: f.phaseAt(now, share)}
	if f.cfg.rate > 0 {
		a.Ceiling = share
	}
	_ = f.limiter.Assign(a) // share is finite and above 0
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
	grant           float64
	members         int
	seq             int64 // the member's number, in the order of joining
}

// parseLease reads the refresh script's reply, and refuses a value that
// is out of range.
func (f *Fleet) parseLease(res []string) (lease, error) {
	if len(res) != 6 {
		return lease{}, fmt.Errorf("%w: %d values, want 6", errBadReply, len(res))
	}
	vals := make([]float64, 6)
	for i, s := range res {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < -1 || v > maxRate {
			return lease{}, fmt.Errorf("%w: value %d is %q", errBadReply, i+1, s)
		}
		vals[i] = v
	}
	l := lease{share: vals[0], capacity: vals[3], members: int(vals[2]), seq: int64(vals[5])}
	if vals[1] < 0 || vals[2] < 1 || vals[5] < 1 {
		return lease{}, fmt.Errorf("%w: grant %v, members %v, seq %v", errBadReply, vals[1], vals[2], vals[5])
	}
	l.grant = min(vals[1], maxGrant)
	switch {
	case l.capacity == -1 && l.share == -1:
		l.share, l.capacity = math.Inf(1), math.Inf(1)
	case l.capacity > 0 && l.share > 0 && l.share <= l.capacity*(1+1e-9):
	default:
		return lease{}, fmt.Errorf("%w: share %v of capacity %v", errBadReply, l.share, l.capacity)
	}
	if want := f.cfg.rate * (1 - f.cfg.headroom); f.cfg.rate > 0 && math.Abs(l.capacity-want) > want*1e-9 {
		return lease{}, fmt.Errorf("%w: capacity %v, configured %v", errBadReply, l.capacity, want)
	}
	return l, nil
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
