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
// is divided equally among the others. A want is what the process sends
// with a margin of 10%, so that a process that sends at random is not
// held at its mean; with leases and a configured rate, what a small one
// leaves is counted from what it sends, so that the others do not pay for
// its margin, and the shares may add up to more than the rate less the
// headroom by the small ones' margins, never more than the configured
// rate (independent processes seldom use their margins at once). Under
// exact admission, and with a learned rate, they add up to at most the
// capacity. A process's share is enforced by
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
// process's own share (with the rate configured, within the level of the
// fleet's max-min division, the most any process gets), so the fleet's
// sends are spaced as one client's would be and the slots go round the
// fleet fairly. Each answer says when
// the process's own next slot is due, and a process asks no sooner; and
// how long the fleet's queue of slots is, which it takes to stay about that
// long: an attempt that could not have its slot within its wait is
// refused without a call, and an admitted one costs one call. One that
// might not have it, as the queue wanders, does not ask either: with the
// rate configured it waits for Redis to say again how long the queue is,
// within its wait, and then decides; with a learned rate it is refused.
//
// # Knowing the limit
//
// With WithRate the rate is configured, less a headroom (WithHeadroom,
// 12.5%) for the variation of network latency. Without it the fleet learns
// it from the throttles of every process, pooled once an interval. Before
// the first throttle the rate is unlimited. When significantly more than
// 2% (two standard deviations) of the fleet's attempts of the last five
// intervals were throttled (at least 20 attempts: a fleet that sends
// fewer in five intervals decides on as many as hold 20, up to thirty),
// the fleet takes the rate the service accepted as its estimate w of the
// service's rate (after the first time, at least 80% of the rate in use),
// restarts at 90% of w, and grows along a cubic curve centred on w, as
// TCP CUBIC does: back to w in about 10 s, slowly near it, then faster
// beyond it, to find a rate that has risen (w(1 + 0.0001(t-10)³), t
// seconds after the cut). It cuts at most once in three intervals plus,
// with exact admission, the maximum wait: the counts just after a cut
// still hold attempts sent before it.
// The learned rate never falls below 0.1 a second. Under exact admission,
// once the curve is past w, the first throttle ends the probe: sends
// spaced one by one are not throttled below the service's rate but for
// the spread of latency, so one throttle there says the rate was found.
// The fleet cuts, keeping w unless the throttles were significant. The
// process that saw the throttle tells Redis with its next attempt, and the
// fleet's sends go back to 90% of w at once; the cut's estimate is made at
// the end of the interval, on the fleet's counts.
//
// Under exact admission a significant cut is tested: throttles from
// congestion fall when the fleet sends less (a service that accepted a
// share 1-p of the rate r throttles 1-(1-p)r/r' of a lower rate r'), and
// throttles that do not depend on the load (a hot key, a quota of some
// other kind) stay at p. Once the cooldown is over and the evidence (the
// last five intervals, or more while they hold fewer than 20 attempts)
// holds 40 attempts, the nearer of the two decides (a fleet sending fewer
// than 8 a second does not test its cuts); if the throttles stayed, and
// did not fall significantly, the fleet goes back to the capacity before
// the cut and, for a minute, takes that share, not 2%, for noise (the
// share is an estimate, and its variance counts; a cut then takes three
// standard deviations above it, as the fleet decides every interval on
// windows that overlap, and at two a high draw of the noise would cut
// about once a minute), and a throttle past w no longer ends a probe.
// Then it tests again at the next cut.
//
// Under exact admission the first throttles do not set w: sends that
// arrive at random are throttled well below the rate of a service that
// holds little burst (one holding a single token at 5 a second accepts
// about 2 a second of them), so what it accepted says little about its
// rate. The fleet first spaces its sends at the rate it sent, and cuts on
// what the service accepts of those once the cooldown is over; if it then
// throttles too few to cut, the rate sent is w.
//
// # The retry budget
//
// Retries may be at most a ratio (20% by default, as Finagle's budget) of
// the fleet's first attempts over a sliding window (10 s), or a floor (10
// retries a second) if that is more, for the fleet as a whole, not for each
// process: however many processes share the load, the fleet's retries are
// bounded, and a fleet that sends more than 50 requests a second retries
// at most 20% of them. The floor lets a fleet that sends little retry; it
// is not added to the ratio (as Finagle adds its floor, per client), which
// at 40 requests a second would allow 45% (see TestMetastableTrigger).
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
// back the same way, at once, after the sends Redis had booked for the
// fleet, each process on its own slot of a grid the fleet shares, so that
// the fleet's sends stay spaced; back with Redis, a process keeps to its
// local slots for one more interval, while others may still send on
// theirs. A new member gets only what the others leave, so the shares are
// rebuilt without a burst; a member coming back to a Redis that no longer
// knows it (restarted empty, or its lease ended while it could not reach
// Redis) keeps, for an interval, the share it paces at, or its fair share
// if that is less, so that the members back first do not take the whole
// capacity from those still to come. Time comes from
// Redis's clock, never from the processes'; every value read back is
// checked, so a corrupted or hostile value cannot make a share negative,
// NaN or unbounded, or a refresh or an admission fail.
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
	"fmt"
	"hash/fnv"
	"os"
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
	// is known, at most WithExactBelow, and Redis answers. asked counts
	// the attempts the process asked to make meanwhile, each once (see
	// wanted); refusals the times Redis refused one, or told one to wait.
	exact           atomic.Bool
	asked, refusals atomic.Int64
	// lead is how far ahead of this process's last call to Redis under
	// exact admission (an admission or a lease) the fleet's next free slot
	// was, in nanoseconds: the sends booked and still to come then (see
	// fallBackLocked).
	lead atomic.Int64
	// toldThrottles is the limiter's count of throttles when this process
	// last called Redis under exact admission.
	toldThrottles atomic.Int64
	// ownAt is when this process's own next slot under exact admission is
	// due, as Redis last said (UnixNano on the Fleet's clock; 0: unknown),
	// and queue how far ahead of that answer the fleet's next free slot
	// was, in nanoseconds; heard is when that answer came (UnixNano on the
	// Fleet's clock), and slot the fleet's slot then (1/capacity, in
	// nanoseconds; 0: no rate known). See heldBack. Each is read without
	// the others: a read that mixes two answers is off by a slot or two,
	// which heldBack's margin covers.
	ownAt, queue, heard, slot atomic.Int64
	// news is closed when Redis next says how long the queue is, for the
	// attempts waiting for that (see queueNews); nil when none asked.
	newsMu sync.Mutex
	news   chan struct{}

	mu sync.Mutex
	ls leaseState

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
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
		f.fallBackLocked(f.clock.Now(), f.exact.Load())
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
