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
	DefaultJitter       = 1.0                   // full jitter
)

// A Backoff computes the delay before a retry. It is stateless: the delay
// depends only on n, the number of the retry (1 for the first retry), so
// one Backoff can serve any number of concurrent calls. Implementations must
// be safe for concurrent use. A negative delay is treated as zero.
type Backoff interface {
	Delay(n int) time.Duration
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
// jitter applies to every retry, including those at the cap. Jitter 1 (full
// jitter, the default) spreads delays over (0, d]; jitter 0 waits exactly d.
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

// BackoffOption configures NewExponentialBackoff.
type BackoffOption func(*ExponentialBackoff)

// WithInitialDelay sets the delay cap before the first retry (default
// DefaultInitialDelay). Valid: >= 0.
func WithInitialDelay(d time.Duration) BackoffOption {
	return func(b *ExponentialBackoff) { b.initial = d }
}

// WithScaleFactor sets how much the cap grows per retry (default
// DefaultScaleFactor). Valid: >= 1 and finite.
func WithScaleFactor(f float64) BackoffOption {
	return func(b *ExponentialBackoff) { b.scale = f }
}

// WithMaxBackoff sets the largest delay before jitter (default
// DefaultMaxBackoff). Valid: >= the initial delay.
func WithMaxBackoff(d time.Duration) BackoffOption {
	return func(b *ExponentialBackoff) { b.max = d }
}

// WithJitter sets how much of each delay is random (default DefaultJitter):
// 1 draws it from (0, d], 0.5 from about [d/2, d], 0 waits exactly d.
// Valid: [0, 1].
func WithJitter(j float64) BackoffOption {
	return func(b *ExponentialBackoff) { b.jitter = j }
}

// WithRandom sets the source of U, which must return values in [0, 1) and
// be safe for concurrent use if the backoff is shared (default:
// math/rand/v2.Float64). Tests inject a fixed value for exact delays. Valid:
// non-nil.
func WithRandom(r func() float64) BackoffOption {
	return func(b *ExponentialBackoff) { b.rand = r }
}

// NewExponentialBackoff returns an ExponentialBackoff with the AWS SDKs'
// standard-mode defaults, changed by opts. A bad option value is an error
// wrapping ErrInvalidConfig.
func NewExponentialBackoff(opts ...BackoffOption) (*ExponentialBackoff, error) {
	b := &ExponentialBackoff{
		initial: DefaultInitialDelay,
		scale:   DefaultScaleFactor,
		max:     DefaultMaxBackoff,
		jitter:  DefaultJitter,
		rand:    rand.Float64,
	}
	for i, opt := range opts {
		if opt == nil {
			return nil, configError(fmt.Sprintf("option %d", i), "nil", "a non-nil BackoffOption")
		}
		opt(b)
	}
	if err := b.check(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *ExponentialBackoff) check() error {
	switch {
	case b.initial < 0:
		return configError("WithInitialDelay", b.initial, ">= 0")
	case !(b.scale >= 1) || math.IsInf(b.scale, 0):
		return configError("WithScaleFactor", b.scale, "a finite number >= 1")
	case b.max < b.initial:
		return configError("WithMaxBackoff", b.max, fmt.Sprintf(">= the initial delay (%v)", b.initial))
	case !(b.jitter >= 0 && b.jitter <= 1):
		return configError("WithJitter", b.jitter, "[0, 1]")
	case b.rand == nil && b.jitter > 0:
		return configError("WithRandom", "nil", "a non-nil function")
	}
	return nil
}

// Delay returns the delay before retry n (n = 1 for the first retry). An n
// below 1 is treated as 1.
func (b *ExponentialBackoff) Delay(n int) time.Duration {
	if b == nil || b.max == 0 {
		return 0
	}
	d := b.Cap(n)
	if b.jitter == 0 {
		return d
	}
	return time.Duration(float64(d) * (1 - b.jitter*b.rand()))
}

// Cap returns the delay before retry n before jitter:
// min(initial * scale^(n-1), max).
func (b *ExponentialBackoff) Cap(n int) time.Duration {
	if b == nil || b.initial == 0 {
		return 0 // and not 0 × +Inf = NaN once scale^(n-1) overflows
	}
	n = max(n, 1)
	// Compare in float64 so that a large n saturates at max instead of
	// overflowing time.Duration.
	d := float64(b.initial) * math.Pow(b.scale, float64(n-1))
	if d >= float64(b.max) {
		return b.max
	}
	return time.Duration(d)
}
