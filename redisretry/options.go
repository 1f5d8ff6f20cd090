package redisretry

import (
	"fmt"
	"strings"
	"time"

	"github.com/retrykit/retry"
)

// Defaults of New.
const (
	// DefaultInterval is how often a process refreshes its lease: one
	// call to Redis per process per interval.
	DefaultInterval = time.Second
	// DefaultLeaseIntervals is how many intervals a lease lasts.
	DefaultLeaseIntervals = 3
	// DefaultHeadroom is the share of a configured rate kept unused, for
	// the variation of network latency: sends spaced exactly at the rate
	// arrive closer together when latency varies. An eighth absorbs a
	// spread of latency of an eighth of the time between sends: 25 ms at
	// 5 sends a second, where a service that holds one token throttles
	// any two sends that arrive closer than 200 ms.
	DefaultHeadroom = 0.125
	// DefaultExactBelow is the highest fleet rate, in sends per second,
	// at which attempts are admitted in Redis, one call each.
	DefaultExactBelow = 50
	// DefaultBurst is how many sends exact admission lets go at once
	// after a pause.
	DefaultBurst = 1
	// DefaultAdmitTimeout bounds a call to Redis that admits an attempt;
	// past it the attempt goes on, paced by the local limiter.
	DefaultAdmitTimeout = 100 * time.Millisecond
	// DefaultRetryRatio, DefaultRetryFloor and DefaultRetryWindow make the
	// fleet's retry budget: retries at most 20% of the first attempts
	// over 10 s, or 10 retries a second for the whole fleet if that is
	// more (Finagle's numbers, combined as Envoy's budget combines its
	// percentage and its minimum).
	DefaultRetryRatio  = 0.2
	DefaultRetryFloor  = 10
	DefaultRetryWindow = 10 * time.Second
	// DefaultPrefix begins every key.
	DefaultPrefix = "retrykit:"
)

// An Option configures New. The zero Option is invalid.
type Option struct{ apply func(*config) }

type config struct {
	rate         float64 // 0: learn it
	rateSet      bool
	headroom     float64
	interval     time.Duration
	lease        time.Duration
	leaseSet     bool
	exactBelow   float64
	burst        int
	maxWait      time.Duration
	admitTimeout time.Duration
	ratio, floor float64
	window       time.Duration
	windowSet    bool
	prefix       string
	member       string
	clock        retry.Clock // nil: the system clock
	clockSet     bool
	onError      func(error)
	strategyOpts []retry.AdaptiveOption
	limiterOpts  []retry.RateLimiterOption

	// The learning curve's constants (learnStart, learnGrowth): fields so
	// that the tests can measure the trade-off they make.
	start, growth float64
}

func defaults() config {
	return config{
		headroom:     DefaultHeadroom,
		interval:     DefaultInterval,
		exactBelow:   DefaultExactBelow,
		burst:        DefaultBurst,
		maxWait:      retry.DefaultMaxSendWait,
		admitTimeout: DefaultAdmitTimeout,
		ratio:        DefaultRetryRatio,
		floor:        DefaultRetryFloor,
		window:       DefaultRetryWindow,
		prefix:       DefaultPrefix,
		start:        learnStart,
		growth:       learnGrowth,
	}
}

func (c *config) validate() error {
	if !c.leaseSet {
		c.lease = DefaultLeaseIntervals * c.interval
	}
	if !c.windowSet {
		c.window = max(DefaultRetryWindow, c.interval)
	}
	switch {
	case c.rateSet && !(c.rate > 0 && c.rate <= maxRate):
		return invalid("WithRate", c.rate, fmt.Sprintf("in (0, %g] sends per second", maxRate))
	case !(c.headroom >= 0 && c.headroom < 1):
		return invalid("WithHeadroom", c.headroom, "in [0, 1)")
	case c.interval < 10*time.Millisecond || c.interval > time.Hour:
		return invalid("WithInterval", c.interval, "10ms to 1h")
	case c.lease < c.interval || c.lease > 24*time.Hour:
		return invalid("WithLease", c.lease, fmt.Sprintf("from the interval (%v) to 24h", c.interval))
	case !(c.exactBelow >= 0):
		return invalid("WithExactBelow", c.exactBelow, ">= 0 sends per second (0: never; +Inf: always)")
	case c.burst < 1 || c.burst > 1e6:
		return invalid("WithBurst", c.burst, "1 to 1000000")
	case c.maxWait < 0:
		return invalid("WithMaxWait", c.maxWait, ">= 0")
	case c.admitTimeout <= 0:
		return invalid("WithAdmitTimeout", c.admitTimeout, "> 0")
	case !(c.ratio >= 0 && c.ratio <= 100):
		return invalid("WithRetryBudget", c.ratio, "a ratio in [0, 100]")
	case !(c.floor >= 0 && c.floor <= maxRate):
		return invalid("WithRetryBudget", c.floor, fmt.Sprintf("a floor in [0, %g] retries per second", maxRate))
	case c.window < c.interval || c.window > 24*time.Hour:
		return invalid("WithRetryBudget", c.window, fmt.Sprintf("a window from the interval (%v) to 24h", c.interval))
	case strings.ContainsAny(c.prefix, "{}"):
		return invalid("WithPrefix", c.prefix, "no '{' or '}' (the limit's name is the hash tag)")
	case strings.ContainsAny(c.member, " \t\r\n"):
		return invalid("WithMember", c.member, "no white space")
	case c.clockSet && c.clock == nil:
		return invalid("WithClock", c.clock, "a non-nil Clock")
	}
	return nil
}

func invalid(option string, got any, valid string) error {
	return fmt.Errorf("%w: redisretry.%s(%v): want %s", retry.ErrInvalidConfig, option, got, valid)
}

// WithRate configures the fleet's rate, in sends per second: the limit the
// service enforces for the whole fleet (Route 53: 5). The fleet sends at
// most that, less the headroom (WithHeadroom). Without it the fleet learns
// the rate from the throttles of all its processes. Valid: above 0 and
// finite.
func WithRate(perSecond float64) Option {
	return Option{func(c *config) { c.rate, c.rateSet = perSecond, true }}
}

// WithHeadroom sets the share of a configured rate kept unused (default
// DefaultHeadroom, 12.5%), in [0, 1).
func WithHeadroom(share float64) Option { return Option{func(c *config) { c.headroom = share }} }

// WithInterval sets how often each process refreshes its lease (default
// DefaultInterval, 1 s): the fleet's load on Redis is one call per process
// per interval, and the shares follow the fleet's demand within about two
// intervals. Valid: 10ms to 1h.
func WithInterval(d time.Duration) Option { return Option{func(c *config) { c.interval = d }} }

// WithLease sets how long a share holds without a refresh (default 3
// intervals): a process that stops refreshing drops out of the fleet when
// its lease ends, and a process that cannot reach Redis keeps its share
// that long. Valid: from the interval to 24h.
func WithLease(d time.Duration) Option {
	return Option{func(c *config) { c.lease, c.leaseSet = d, true }}
}

// WithExactBelow sets the highest fleet rate, in sends per second, at which
// every attempt is admitted in Redis (default DefaultExactBelow, 50): a
// round trip per attempt, which spaces the fleet's sends exactly. 0 never
// admits in Redis: Strategy is then the *retry.Adaptive itself, and the
// request path makes no call at all; math.Inf(1) always does once the
// rate is known.
func WithExactBelow(perSecond float64) Option {
	return Option{func(c *config) { c.exactBelow = perSecond }}
}

// WithBurst sets how many attempts exact admission lets go at once after a
// pause (default DefaultBurst, 1). Valid: 1 to 1000000.
func WithBurst(n int) Option { return Option{func(c *config) { c.burst = n }} }

// WithMaxWait sets the longest an attempt waits for its slot under exact
// admission (default retry.DefaultMaxSendWait): an attempt whose slot is
// further away is refused with an error wrapping retry.ErrRateLimited, and
// takes no slot. Valid: >= 0.
func WithMaxWait(d time.Duration) Option { return Option{func(c *config) { c.maxWait = d }} }

// WithAdmitTimeout bounds the call to Redis that admits an attempt
// (default DefaultAdmitTimeout, 100 ms): past it, the attempt goes on
// under the local limiter, and exact admission stops until the next
// refresh succeeds. go-redis applies a context's deadline to the
// connection only with Options.ContextTimeoutEnabled; without it its
// ReadTimeout bounds the call. Valid: > 0.
func WithAdmitTimeout(d time.Duration) Option { return Option{func(c *config) { c.admitTimeout = d }} }

// WithRetryBudget sets the fleet's retry budget: retries at most ratio of
// the fleet's first attempts over window, or floor retries a second for
// the whole fleet if that is more (defaults DefaultRetryRatio, DefaultRetryFloor,
// DefaultRetryWindow: 20%, 10/s, 10 s, or the interval if longer). Valid: ratio in [0, 100], floor
// finite and >= 0, window from the interval to 24h.
func WithRetryBudget(ratio, floor float64, window time.Duration) Option {
	return Option{func(c *config) { c.ratio, c.floor, c.window, c.windowSet = ratio, floor, window, true }}
}

// WithPrefix sets what every key begins with (default DefaultPrefix).
// Valid: no '{' or '}'.
func WithPrefix(prefix string) Option { return Option{func(c *config) { c.prefix = prefix }} }

// WithMember names this process in the fleet (default: its host name, its
// process id and a random suffix). Two live processes must not share a
// name. Valid: no white space.
func WithMember(id string) Option { return Option{func(c *config) { c.member = id }} }

// WithClock sets the clock of the local rate limiter, retry quota and
// strategy (default: the system clock), and the one a lease's end is read
// on. Leases are timed in Redis by Redis's clock, and exact admission
// waits for its slots on ordinary timers.
func WithClock(c retry.Clock) Option {
	return Option{func(cfg *config) { cfg.clock, cfg.clockSet = c, true }}
}

// WithErrorHandler sets a function called with every failed call to Redis
// (a refresh, an admission), for logging: the Fleet falls back by itself.
// It must not block.
func WithErrorHandler(f func(error)) Option { return Option{func(c *config) { c.onError = f }} }

// WithStrategyOptions sets options of the strategy (maximum attempts,
// backoff, classifier, hooks...). The Fleet gives it its own rate limiter
// and retry quota, after these options.
func WithStrategyOptions(opts ...retry.AdaptiveOption) Option {
	return Option{func(c *config) { c.strategyOpts = append(c.strategyOpts, opts...) }}
}

// WithLimiterOptions sets options of the local rate limiter, whose own
// algorithm paces the process while it has no lease (retry.WithFailFast,
// retry.WithPublishedCUBIC...).
func WithLimiterOptions(opts ...retry.RateLimiterOption) Option {
	return Option{func(c *config) { c.limiterOpts = append(c.limiterOpts, opts...) }}
}
