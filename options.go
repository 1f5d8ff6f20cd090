package retry

import (
	"fmt"
	"reflect"
)

// The option types form a small hierarchy so that one option value can be
// passed to every constructor it makes sense for:
//
//   - every StandardOption is also an AdaptiveOption;
//   - every TokenBucketOption is also a StandardOption: given to NewStandard
//     or NewAdaptive, it configures the buckets the strategy makes for its
//     scopes;
//   - every RateLimiterOption is also an AdaptiveOption: given to
//     NewAdaptive, it configures the limiters the strategy makes;
//   - WithClock returns a ClockOption, which is all of them.
//
// Options only record values. Each constructor validates the result in one
// place and reports a bad value as an error wrapping ErrInvalidConfig.

// AdaptiveOption configures NewAdaptive.
type AdaptiveOption interface {
	applyAdaptive(*adaptiveConfig)
}

// StandardOption configures NewStandard. Every StandardOption is also an
// AdaptiveOption.
type StandardOption interface {
	AdaptiveOption
	applyStandard(*standardConfig)
}

// TokenBucketOption configures NewTokenBucket. Given to NewStandard or
// NewAdaptive, it configures the retry quota buckets the strategy creates
// (one per scope); it cannot be combined with WithRetryQuota or
// WithoutRetryQuota there.
type TokenBucketOption interface {
	StandardOption
	applyBucket(*bucketConfig)
}

// RateLimiterOption configures NewRateLimiter. Given to NewAdaptive, it
// configures the rate limiters the strategy creates (one per scope); it
// cannot be combined with WithRateLimiter there.
type RateLimiterOption interface {
	AdaptiveOption
	applyLimiter(*limiterConfig)
}

// ClockOption is accepted by every constructor that reads time:
// NewStandard, NewAdaptive, NewTokenBucket and NewRateLimiter.
type ClockOption interface {
	TokenBucketOption
	RateLimiterOption
}

// WithClock makes the constructed value read time from c instead of the
// system clock. Given to a strategy, it also applies to the buckets and
// limiters that strategy creates (not to ones passed in to be shared).
// A nil Clock, or one holding a nil pointer or function, is an error.
func WithClock(c Clock) ClockOption { return clockOption{c} }

type clockOption struct{ c Clock }

func (o clockOption) applyAdaptive(c *adaptiveConfig) {
	o.applyStandard(&c.standardConfig)
	c.limiter.clock = o.c
}
func (o clockOption) applyStandard(c *standardConfig) {
	c.clock = o.c
	c.bucket.clock = o.c
}
func (o clockOption) applyBucket(c *bucketConfig)   { c.clock = o.c }
func (o clockOption) applyLimiter(c *limiterConfig) { c.clock = o.c }

// standardOption sets a field of the strategy's own configuration.
type standardOption func(*standardConfig)

func (f standardOption) applyStandard(c *standardConfig) { f(c) }
func (f standardOption) applyAdaptive(c *adaptiveConfig) { f(&c.standardConfig) }

// adaptiveOption sets a field that only NewAdaptive has.
type adaptiveOption func(*adaptiveConfig)

func (f adaptiveOption) applyAdaptive(c *adaptiveConfig) { f(c) }

// bucketOption sets a field of a token bucket's configuration.
type bucketOption func(*bucketConfig)

func (f bucketOption) applyBucket(c *bucketConfig) { f(c) }
func (f bucketOption) applyStandard(c *standardConfig) {
	f(&c.bucket)
	c.bucketOptions = true
}
func (f bucketOption) applyAdaptive(c *adaptiveConfig) { f.applyStandard(&c.standardConfig) }

// limiterOption sets a field of a rate limiter's configuration.
type limiterOption func(*limiterConfig)

func (f limiterOption) applyLimiter(c *limiterConfig) { f(c) }
func (f limiterOption) applyAdaptive(c *adaptiveConfig) {
	f(&c.limiter)
	c.limiterOptions = true
}

// isNil reports whether v is nil or holds a nil pointer, function, map or
// channel: an option value that would fail, or panic, at its first use, as
// a ClockFunc(nil) or the nil *ExponentialBackoff of a failed constructor
// would. Constructors check it once; no call path does.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// nilValue describes v, which isNil reports as nil, for an error message.
func nilValue(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("a nil %T", v)
}

// checkOptions reports a nil option, which would otherwise panic when
// applied.
func checkOptions[O any](opts []O) error {
	for i, o := range opts {
		if any(o) == nil {
			return configError(fmt.Sprintf("option %d", i), "nil", "a non-nil option")
		}
	}
	return nil
}
