package retry

import (
	"context"
	"time"
)

// Adaptive is the adaptive retry strategy of the AWS SDKs: everything
// Standard does, plus a client-side rate limiter (a RateLimiter) that paces
// attempts when the service is overloaded. By default the limiter cuts the
// send rate by the share of recent attempts throttled beyond what it
// tolerates, grows it back along a cubic curve, and tolerates a small
// throttled share that does not depend on the load; WithPublishedCUBIC
// selects the published CUBIC algorithm of the AWS SDKs instead (see
// RateLimiter).
//
// Every attempt needs a send slot from the limiter, and the blocking
// methods wait for it: AcquireInitialToken before the first attempt,
// RefreshRetryToken after the backoff before each retry. So a caller's own
// loop that uses only the RetryStrategy methods is paced exactly as Do is.
// An attempt waits at most WithMaxSendWait for its slot (default
// DefaultMaxSendWait) and is then refused with an error wrapping
// ErrRateLimited, and never sent: under overload the requests that cannot
// be served fail fast instead of queueing until their deadline. A wait for
// a slot that could not end before ctx's deadline is refused at once with
// ErrDeadlineTooSoon. Until the limiter first cuts the rate, it delays
// nothing and takes no lock. Every outcome (success, throttle, other
// failure) updates the limiter. The retry quota works exactly as in
// standard mode.
//
// Each scope gets its own limiter, made with the strategy's rate limiter
// options, unless WithRateLimiter shares one; the adaptive design assumes
// a limiter per resource (one table, one bucket), so scope calls by
// resource. With a fail-fast limiter (WithFailFast), an attempt that finds
// no send slot free is refused at once.
//
// An Adaptive is safe for concurrent use by any number of goroutines.
// Create one with NewAdaptive; the zero value is not usable.
type Adaptive struct {
	e engine
}

var _ RetryStrategy = (*Adaptive)(nil)

// DefaultMaxSendWait is the longest an attempt of an Adaptive strategy
// waits for a send slot by default.
const DefaultMaxSendWait = 2 * time.Second

// adaptiveConfig is the configuration of Adaptive.
type adaptiveConfig struct {
	standardConfig
	limiter        limiterConfig
	limiterOptions bool         // a RateLimiterOption was given
	shared         *RateLimiter // WithRateLimiter
	sharedSet      bool
	maxSendWait    time.Duration
}

// adaptiveKey selects an Adaptive's defaults: its profile's, and the
// published algorithm's limiter defaults if WithPublishedCUBIC is given.
type adaptiveKey struct {
	profile   Profile
	published bool
}

// adaptiveDefaults returns the defaults k selects.
func adaptiveDefaults(k adaptiveKey) adaptiveConfig {
	return adaptiveConfig{standardConfig: profileConfig(k.profile), limiter: limiterDefaults(k.published), maxSendWait: DefaultMaxSendWait}
}

func (c *adaptiveConfig) validate() error {
	if err := c.standardConfig.validate(); err != nil {
		return err
	}
	switch {
	case c.sharedSet && !c.shared.valid():
		return configError("WithRateLimiter", "a nil or zero *RateLimiter", "one made by NewRateLimiter")
	case c.sharedSet && c.limiterOptions:
		return configError("RateLimiterOption", "with WithRateLimiter", "rate limiter options only for the strategy's own limiters")
	case c.maxSendWait < 0:
		return configError("WithMaxSendWait", c.maxSendWait, ">= 0 (0 sends only when a slot is free at once)")
	}
	return c.limiter.validate()
}

// NewAdaptive returns an adaptive strategy with the defaults of
// NewStandard and NewRateLimiter, changed by opts: every StandardOption,
// TokenBucketOption and RateLimiterOption, WithRateLimiter and
// WithMaxSendWait. A bad option value is an error wrapping
// ErrInvalidConfig that names the option and its valid range.
func NewAdaptive(opts ...AdaptiveOption) (*Adaptive, error) {
	cfg, err := configure(opts, adaptiveDefaults, AdaptiveOption.applyAdaptive,
		func(c *adaptiveConfig) adaptiveKey { return adaptiveKey{c.profile, c.limiter.published} }, (*adaptiveConfig).validate)
	if err != nil {
		return nil, err
	}
	newLimiter := func() *RateLimiter { return newRateLimiter(cfg.limiter) }
	if cfg.shared != nil {
		newLimiter = func() *RateLimiter { return cfg.shared }
	}
	a := new(Adaptive)
	cfg.initEngine(&a.e, newLimiter, cfg.shared == nil)
	a.e.bindOption(a)
	a.e.maxSendWait = cfg.maxSendWait
	return a, nil
}

// WithRateLimiter makes every scope of the strategy take its send slots
// from l, which other strategies talking to the same resource may share.
// Valid: a limiter made by NewRateLimiter; not with rate limiter options.
func WithRateLimiter(l *RateLimiter) AdaptiveOption {
	return adaptiveOption(func(c *adaptiveConfig) { c.shared, c.sharedSet = l, true })
}

// WithMaxSendWait sets the longest an attempt waits for a send slot, in
// all, before it is refused with an error wrapping ErrRateLimited and not
// sent (default DefaultMaxSendWait). The bound keeps overload from turning
// into unbounded client-side queueing: a request that cannot be sent soon
// fails fast, and its caller learns of the overload instead of waiting.
// Valid: >= 0; 0 sends only when a slot is free at once.
func WithMaxSendWait(d time.Duration) AdaptiveOption {
	return adaptiveOption(func(c *adaptiveConfig) { c.maxSendWait = d })
}

// AcquireInitialToken returns the token for the first attempt in scope,
// once the attempt has a send slot. Besides Standard's errors it returns
// one wrapping ErrRateLimited when no slot comes within the maximum send
// wait, or ErrDeadlineTooSoon when it would not come before ctx's
// deadline; then no attempt may be made.
func (a *Adaptive) AcquireInitialToken(ctx context.Context, scope string) (RetryToken, error) {
	return a.engine().acquireInitialToken(ctx, scope)
}

// RefreshRetryToken reports the failure to the rate limiter and returns
// the token for the next attempt, as Standard's does, once the backoff is
// over and the attempt has a send slot. A retry that finds no slot within
// the maximum send wait is refused with an error wrapping ErrRateLimited.
func (a *Adaptive) RefreshRetryToken(ctx context.Context, token RetryToken, err error) (RetryToken, error) {
	return a.engine().refreshRetryToken(ctx, token, err)
}

// RecordSuccess reports the success to the rate limiter and the retry
// quota, as Standard's does.
func (a *Adaptive) RecordSuccess(token RetryToken) error {
	return a.engine().recordSuccess(token)
}

// PlanInitialToken is the non-blocking form of AcquireInitialToken, for
// event loops and simulations (see Standard.PlanInitialToken). The
// attempt still needs a send slot: ask Admit when the token's Delay is
// over.
func (a *Adaptive) PlanInitialToken(scope string) (RetryToken, error) {
	return a.engine().planInitialToken(scope)
}

// PlanRetryToken is the non-blocking form of RefreshRetryToken, for event
// loops and simulations (see Standard.PlanRetryToken). The attempt still
// needs a send slot: ask Admit when the token's Delay is over.
func (a *Adaptive) PlanRetryToken(token RetryToken, err error) (RetryToken, time.Duration, error) {
	return a.engine().planRetryToken(token, err)
}

// Admit is the send-slot check of the non-blocking path, asked once a
// token's Delay is over: 0 and a nil error mean the attempt may go now (it
// has taken its slot); a positive duration means no slot yet, ask again
// after that long; an error means the attempt must not be made: it wraps
// ErrRateLimited when the limiter fails fast or the attempt has waited
// for a slot as long as WithMaxSendWait allows, and ErrInvalidToken for a
// token that is not this strategy's or was already used.
func (a *Adaptive) Admit(token RetryToken) (time.Duration, error) {
	return a.engine().admitToken(token)
}

// ReleaseToken gives back what token took from the retry quota, for an
// attempt that will not be made, and uses the token up (see
// Standard.ReleaseToken).
func (a *Adaptive) ReleaseToken(token RetryToken) error {
	return a.engine().releaseToken(token)
}

// RetryQuota returns the bucket of the default scope, or nil if the
// strategy has no retry quota.
func (a *Adaptive) RetryQuota() *TokenBucket {
	if e := a.engine(); e != nil {
		return e.def.bucket
	}
	return nil
}

// RateLimiter returns the rate limiter of the default scope (the shared
// one with WithRateLimiter).
func (a *Adaptive) RateLimiter() *RateLimiter {
	if e := a.engine(); e != nil {
		return e.def.limiter
	}
	return nil
}

// MaxAttempts returns the number of attempts, the first included, that the
// strategy allows.
func (a *Adaptive) MaxAttempts() int {
	if e := a.engine(); e != nil {
		return e.maxAttempts
	}
	return 0
}

// engine returns the strategy's engine, or nil for a nil or zero Adaptive.
func (a *Adaptive) engine() *engine {
	if a == nil || !a.e.valid() {
		return nil
	}
	return &a.e
}
