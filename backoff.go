package retry

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Default backoff settings: the AWS SDKs' standard-mode defaults.
const (
	DefaultInitialDelay = 10 * time.Millisecond // delay cap before the first retry
	DefaultScaleFactor  = 1.5                   // growth of the cap per retry
	DefaultMaxBackoff   = 20 * time.Second      // the cap never exceeds this
	DefaultJitter       = FullJitter            // see WithJitter
)

// Jitter kinds for WithJitter, as the AWS Architecture Blog's "Exponential
// Backoff And Jitter" names them. Decorrelated jitter, the third kind, is
// a Backoff of its own: DecorrelatedJitter.
const (
	// FullJitter draws each delay uniformly from (0, d], where d is the
	// capped exponential delay: the widest spread, so the least load in a
	// burst of retries.
	FullJitter = 1.0
	// EqualJitter draws each delay uniformly from (d/2, d]: it keeps half
	// of the exponential delay, trading some spread for a floor.
	EqualJitter = 0.5
)

// DefaultDecorrelatedScale is the growth factor of DecorrelatedJitter:
// the longest delay it draws is this many times the previous delay.
const DefaultDecorrelatedScale = 3.0

// A Backoff computes the delay before a retry. It is stateless: the delay
// depends only on n, the number of the retry (1 for the first retry), so
// one Backoff can serve any number of concurrent calls. Implementations must
// be safe for concurrent use. A negative delay is treated as zero.
type Backoff interface {
	// Delay returns the delay before retry n, n >= 1.
	Delay(n int) time.Duration
}

// A ChainedBackoff is a Backoff whose delay also depends on the delay it
// gave before the previous retry, such as DecorrelatedJitter. It is still
// stateless: the caller keeps the previous delay, and one ChainedBackoff
// serves any number of concurrent calls.
//
// Standard and Adaptive call DelayAfter with the backoff they chose before
// the previous retry (0 before the first retry), which the token carries;
// the backoff only, not the longer wait a retry-after hint or the retry
// quota may have imposed. A caller that does not keep the previous delay
// calls Delay, which every ChainedBackoff must answer on its own.
// Implementations must be safe for concurrent use.
type ChainedBackoff interface {
	Backoff
	// DelayAfter returns the delay before retry n when the delay before
	// retry n-1 was previous.
	DelayAfter(n int, previous time.Duration) time.Duration
}

// BackoffFunc adapts an ordinary function to the Backoff interface.
type BackoffFunc func(n int) time.Duration

// Delay returns f(n).
func (f BackoffFunc) Delay(n int) time.Duration { return f(n) }

// ConstantBackoff waits the same time before every retry. A negative
// ConstantBackoff is rejected by the strategy constructors.
type ConstantBackoff time.Duration

// NoBackoff retries at once.
const NoBackoff ConstantBackoff = 0

// Delay returns time.Duration(c).
func (c ConstantBackoff) Delay(int) time.Duration { return time.Duration(c) }

func (c ConstantBackoff) validate() error {
	if c < 0 {
		return configError("ConstantBackoff", time.Duration(c), ">= 0")
	}
	return nil
}

// ExponentialBackoff is exponential backoff with jitter. The delay before
// retry n is
//
//	d = min(initial * scale^(n-1), max)
//	delay = d * (1 - jitter*U)
//
// with U uniform in [0, 1): the cap applies before the jitter, and the
// jitter applies to every retry, including those at the cap. Jitter 1
// (FullJitter, the default) spreads delays over (0, d]; EqualJitter (0.5)
// over (d/2, d]; jitter 0 waits exactly d. Delays never overflow: a cap as
// long as a Duration holds is reached and kept.
//
// An ExponentialBackoff is immutable and safe for concurrent use. Create one
// with NewExponentialBackoff; the zero value never waits.
type ExponentialBackoff struct {
	initial time.Duration
	scale   float64
	max     time.Duration
	jitter  float64
	rand    func() float64
}

// backoffConfig is what the BackoffOptions set.
type backoffConfig struct {
	initial   time.Duration
	scale     float64
	max       time.Duration
	jitter    float64
	jitterSet bool
	rand      func() float64
}

// BackoffOption configures NewExponentialBackoff and NewDecorrelatedJitter.
type BackoffOption func(*backoffConfig)

// WithInitialDelay sets the delay cap before the first retry (default
// DefaultInitialDelay); for DecorrelatedJitter, the shortest delay.
// Valid: >= 0.
func WithInitialDelay(d time.Duration) BackoffOption {
	return func(c *backoffConfig) { c.initial = d }
}

// WithScaleFactor sets how much the cap grows per retry (default
// DefaultScaleFactor); for DecorrelatedJitter, how many times the previous
// delay the next one may reach (default DefaultDecorrelatedScale).
// Valid: >= 1 and finite.
func WithScaleFactor(f float64) BackoffOption {
	return func(c *backoffConfig) { c.scale = f }
}

// WithMaxBackoff sets the largest delay before jitter (default
// DefaultMaxBackoff); for DecorrelatedJitter, the largest delay. Valid: >=
// the initial delay.
func WithMaxBackoff(d time.Duration) BackoffOption {
	return func(c *backoffConfig) { c.max = d }
}

// WithJitter sets how much of each delay is random (default DefaultJitter):
// FullJitter (1) draws it from (0, d], EqualJitter (0.5) from (d/2, d], 0
// waits exactly d. Valid: [0, 1]. DecorrelatedJitter does not take it: its
// draws are its jitter.
func WithJitter(j float64) BackoffOption {
	return func(c *backoffConfig) { c.jitter, c.jitterSet = j, true }
}

// WithRandom sets the source of U, which must return values in [0, 1) and
// be safe for concurrent use if the backoff is shared (default:
// math/rand/v2.Float64). Tests inject a fixed value for exact delays. Valid:
// non-nil.
//
// A value outside [0, 1), or NaN, is a bug in the source. Delay cannot
// report it, having no error result, and a panic on the retry path would
// turn one failed call into a crashed program; nor is the value clamped
// into range, which would turn a source that returns 1 into immediate
// retries under full jitter. Instead the draw is not used: the delay is
// the longest the draw could have given (the cap d, for
// ExponentialBackoff), so a broken source errs toward waiting longer,
// never toward a retry storm, and shows itself in tests as delays that
// stop varying.
func WithRandom(r func() float64) BackoffOption {
	return func(c *backoffConfig) { c.rand = r }
}

// newBackoffConfig applies opts to defaults and validates the result.
func newBackoffConfig(defaults backoffConfig, opts []BackoffOption) (backoffConfig, error) {
	c := defaults
	for i, opt := range opts {
		if opt == nil {
			return c, configError(fmt.Sprintf("option %d", i), "nil", "a non-nil BackoffOption")
		}
		opt(&c)
	}
	switch {
	case c.initial < 0:
		return c, configError("WithInitialDelay", c.initial, ">= 0")
	case !(c.scale >= 1) || math.IsInf(c.scale, 0):
		return c, configError("WithScaleFactor", c.scale, "a finite number >= 1")
	case c.max < c.initial:
		return c, configError("WithMaxBackoff", c.max, fmt.Sprintf(">= the initial delay (%v)", c.initial))
	case !(c.jitter >= 0 && c.jitter <= 1):
		return c, configError("WithJitter", c.jitter, "[0, 1]")
	case c.rand == nil && c.jitter > 0:
		return c, configError("WithRandom", "nil", "a non-nil function")
	}
	return c, nil
}

// NewExponentialBackoff returns an ExponentialBackoff with the AWS SDKs'
// standard-mode defaults, changed by opts. A bad option value is an error
// wrapping ErrInvalidConfig.
func NewExponentialBackoff(opts ...BackoffOption) (*ExponentialBackoff, error) {
	c, err := newBackoffConfig(backoffConfig{
		initial: DefaultInitialDelay,
		scale:   DefaultScaleFactor,
		max:     DefaultMaxBackoff,
		jitter:  DefaultJitter,
		rand:    rand.Float64,
	}, opts)
	if err != nil {
		return nil, err
	}
	return &ExponentialBackoff{initial: c.initial, scale: c.scale, max: c.max, jitter: c.jitter, rand: c.rand}, nil
}

// Delay returns the delay before retry n (n = 1 for the first retry). An n
// below 1 is treated as 1. It draws U once, unless the jitter is 0.
func (b *ExponentialBackoff) Delay(n int) time.Duration {
	if b == nil || b.max == 0 {
		return 0
	}
	d := b.Cap(n)
	if b.jitter == 0 {
		return d
	}
	u := b.rand()
	if !validDraw(u) {
		return d // see WithRandom
	}
	// float64(d) can round up (to 2^63 for a cap near the largest
	// Duration): never return more than d.
	return min(satMul(d, 1-b.jitter*u), d)
}

// Cap returns the delay before retry n before jitter:
// min(initial * scale^(n-1), max).
func (b *ExponentialBackoff) Cap(n int) time.Duration {
	if b == nil {
		return 0
	}
	return capped(b.initial, b.scale, max(n, 1)-1, b.max)
}

// capped returns min(initial * scale^k, limit) for k >= 0 and
// 0 <= initial <= limit.
func capped(initial time.Duration, scale float64, k int, limit time.Duration) time.Duration {
	if initial == 0 {
		return 0 // and not 0 × +Inf = NaN once scale^k overflows
	}
	// Compare in float64 so that a large k saturates at limit instead of
	// overflowing time.Duration.
	d := float64(initial) * math.Pow(scale, float64(k))
	if d >= float64(limit) {
		return limit
	}
	return satDuration(d)
}

// validDraw reports whether u is a value a random source may return.
func validDraw(u float64) bool { return u >= 0 && u < 1 }

// DecorrelatedJitter is the "decorrelated jitter" backoff of the AWS
// Architecture Blog's "Exponential Backoff And Jitter": each delay is drawn
// from a range that grows with the delay before it, then capped:
//
//	delay = min(max, base + U*(previous*scale - base))
//
// with U uniform in [0, 1), base the initial delay, scale
// DefaultDecorrelatedScale (3) unless set, and previous the delay before
// the previous retry, or base before the first retry (a previous delay
// below base counts as base). So the first delay is in [base, 3×base),
// and each later one in [base, 3×previous), capped: a draw above max
// waits max. Unlike ExponentialBackoff's delays, successive delays can
// shrink back towards base; they are correlated with each other but not
// with other clients', which spreads a burst of retries over time.
//
// A DecorrelatedJitter is a ChainedBackoff: Standard and Adaptive pass
// DelayAfter the previous delay, which their tokens carry. Delay, for
// callers that do not keep it, assumes the longest previous delay retry
// n-1 could have drawn, min(max, base×scale^(n-1)): it draws delay n from
// [base, base×scale^n), capped, which is full jitter above a floor of base.
//
// A bad draw from WithRandom's source is not used: the delay is then the
// top of its range, capped (see WithRandom).
//
// A DecorrelatedJitter is immutable and safe for concurrent use. Create one
// with NewDecorrelatedJitter; the zero value never waits.
type DecorrelatedJitter struct {
	base  time.Duration
	scale float64
	max   time.Duration
	rand  func() float64
}

var _ ChainedBackoff = (*DecorrelatedJitter)(nil)

// NewDecorrelatedJitter returns a DecorrelatedJitter with the initial delay
// DefaultInitialDelay, the scale DefaultDecorrelatedScale and the maximum
// DefaultMaxBackoff, changed by opts: WithInitialDelay sets the base,
// WithScaleFactor the scale, WithMaxBackoff the cap and WithRandom the
// source of U. A bad option value, or WithJitter, is an error wrapping
// ErrInvalidConfig.
func NewDecorrelatedJitter(opts ...BackoffOption) (*DecorrelatedJitter, error) {
	c, err := newBackoffConfig(backoffConfig{
		initial: DefaultInitialDelay,
		scale:   DefaultDecorrelatedScale,
		max:     DefaultMaxBackoff,
		jitter:  FullJitter,
		rand:    rand.Float64,
	}, opts)
	switch {
	case c.jitterSet:
		// Checked first: WithJitter names the misuse better than its value.
		return nil, configError("WithJitter", c.jitter, "not set: DecorrelatedJitter draws every delay at random")
	case err != nil:
		return nil, err
	}
	return &DecorrelatedJitter{base: c.initial, scale: c.scale, max: c.max, rand: c.rand}, nil
}

// Delay returns the delay before retry n (n = 1 for the first retry) for a
// caller that does not keep the previous delay: DelayAfter(n, p) with p
// the longest delay retry n-1 could have drawn. An n below 1 is treated as
// 1. It draws U once.
func (b *DecorrelatedJitter) Delay(n int) time.Duration {
	if b == nil || b.max == 0 {
		return 0
	}
	return b.draw(capped(b.base, b.scale, max(n, 1)-1, b.max))
}

// DelayAfter returns the delay before retry n when the delay before retry
// n-1 was previous. For n <= 1 there was no previous retry, and previous
// is ignored. It draws U once.
func (b *DecorrelatedJitter) DelayAfter(n int, previous time.Duration) time.Duration {
	if b == nil || b.max == 0 {
		return 0
	}
	if n <= 1 {
		previous = b.base
	}
	return b.draw(previous)
}

// draw returns min(max, base + U*(hi - base)) with hi = previous*scale,
// previous raised to base.
func (b *DecorrelatedJitter) draw(previous time.Duration) time.Duration {
	hi := max(satMul(max(previous, b.base), b.scale), b.base) // rounding can take hi below base
	u := b.rand()
	if !validDraw(u) {
		return min(hi, b.max) // see WithRandom
	}
	return min(satAdd(b.base, satMul(hi-b.base, u)), b.max)
}
