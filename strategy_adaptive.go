package retry

import "time"

// Adaptive is the adaptive retry strategy of the AWS SDKs: everything
// Standard does, plus a client-side rate limiter (a RateLimiter) that paces
// attempts when the service is overloaded. By default the limiter cuts the
// send rate by the share of recent attempts throttled beyond what it
// tolerates, grows it back along a cubic curve, and tolerates a small
// throttled share that does not depend on the load; WithPublishedCUBIC
// selects the published CUBIC algorithm of the AWS SDKs instead (see
// RateLimiter).
//
// Every attempt needs a send slot from the limiter. Tokens say how long to
// wait before the attempt (the backoff, at least), and Admit says whether
// the slot is there once the wait is over, or how much longer to wait; Do
// and Transport ask it for every token. Until the limiter first paces, it
// never delays anything and takes no lock. Every outcome (success,
// throttle, other failure) updates the limiter. The retry quota works
// exactly as in standard mode.
//
// Each scope gets its own limiter, made with the strategy's rate limiter
// options, unless WithRateLimiter shares one; the adaptive design assumes
// a limiter per resource (one table, one bucket), so scope calls by
// resource. With a fail-fast limiter (WithFailFast), an attempt that finds
// no send slot is not made: Admit returns an error wrapping
// ErrRateLimited.
//
// An Adaptive is safe for concurrent use by any number of goroutines.
// Create one with NewAdaptive; the zero value is not usable.
type Adaptive struct {
	e engine
}

var (
	_ RetryStrategy = (*Adaptive)(nil)
	_ TokenReleaser = (*Adaptive)(nil)
	_ Gate          = (*Adaptive)(nil)
)

// adaptiveConfig is the configuration of Adaptive.
type adaptiveConfig struct {
	standardConfig
	limiter        limiterConfig
	limiterOptions bool         // a RateLimiterOption was given
	shared         *RateLimiter // WithRateLimiter
	sharedSet      bool
}

func adaptiveDefaults(p Profile) adaptiveConfig {
	return adaptiveConfig{standardConfig: profileConfig(p), limiter: limiterDefaults(false)}
}

// publishedDefaults is adaptiveDefaults with the published algorithm's
// limiter defaults, which WithPublishedCUBIC selects.
func publishedDefaults(p Profile) adaptiveConfig {
	return adaptiveConfig{standardConfig: profileConfig(p), limiter: limiterDefaults(true)}
}

func (c *adaptiveConfig) validate() error {
	if err := c.standardConfig.validate(); err != nil {
		return err
	}
	switch {
	case c.sharedSet && c.shared == nil:
		return configError("WithRateLimiter", "nil", "a non-nil *RateLimiter")
	case c.sharedSet && c.limiterOptions:
		return configError("RateLimiterOption", "with WithRateLimiter", "rate limiter options only for the strategy's own limiters")
	}
	return c.limiter.validate()
}

// NewAdaptive returns an adaptive strategy with the defaults of
// NewStandard and NewRateLimiter, changed by opts: every StandardOption,
// TokenBucketOption and RateLimiterOption, and WithRateLimiter. A bad
// option value is an error wrapping ErrInvalidConfig that names the option
// and its valid range.
func NewAdaptive(opts ...AdaptiveOption) (*Adaptive, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	profile := func(c *adaptiveConfig) Profile { return c.profile }
	cfg := configure(opts, adaptiveDefaults, AdaptiveOption.applyAdaptive, profile)
	if cfg.limiter.published {
		// Options only set fields: apply them again over the published
		// algorithm's defaults, so they override its constants.
		cfg = configure(opts, publishedDefaults, AdaptiveOption.applyAdaptive, profile)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	newLimiter := func() *RateLimiter { return newRateLimiter(cfg.limiter) }
	if cfg.shared != nil {
		newLimiter = func() *RateLimiter { return cfg.shared }
	}
	return &Adaptive{e: cfg.newEngine(newLimiter, cfg.shared == nil)}, nil
}

// WithRateLimiter makes every scope of the strategy take its send slots
// from l, which other strategies talking to the same resource may share.
// Valid: non-nil; not with rate limiter options.
func WithRateLimiter(l *RateLimiter) AdaptiveOption {
	return adaptiveOption(func(c *adaptiveConfig) { c.shared, c.sharedSet = l, true })
}

// AcquireInitialToken returns the token for the first attempt in scope.
// Its attempt still needs a send slot: see Admit.
func (a *Adaptive) AcquireInitialToken(scope string) (RetryToken, error) {
	return a.e.acquireInitialToken(scope)
}

// RefreshRetryToken returns the token for the next attempt, as Standard's
// does, after reporting the failure to the rate limiter.
func (a *Adaptive) RefreshRetryToken(token RetryToken, err error) (RetryToken, error) {
	return a.e.refreshRetryToken(token, err)
}

// RecordSuccess reports the success to the rate limiter and the retry
// quota, as Standard's does.
func (a *Adaptive) RecordSuccess(token RetryToken) error {
	return a.e.recordSuccess(token)
}

// ReleaseToken gives back what token took from the retry quota, for an
// attempt that will not be made, and uses the token up.
func (a *Adaptive) ReleaseToken(token RetryToken) error {
	return a.e.releaseToken(token)
}

// Admit takes a send slot for the attempt token admits, after its delay.
// It returns 0 when the attempt may go now, or how long to wait before
// asking again; with a fail-fast limiter it returns an error wrapping
// ErrRateLimited instead of a wait. A token that was already used is
// refused with ErrInvalidToken.
func (a *Adaptive) Admit(token RetryToken) (time.Duration, error) {
	return a.e.admitToken(token)
}

// RetryQuota returns the bucket of the default scope, or nil if the
// strategy has no retry quota.
func (a *Adaptive) RetryQuota() *TokenBucket { return a.e.def.bucket }

// RateLimiter returns the rate limiter of the default scope (the shared
// one with WithRateLimiter).
func (a *Adaptive) RateLimiter() *RateLimiter { return a.e.def.limiter }

// MaxAttempts returns the number of attempts, the first included, that the
// strategy allows.
func (a *Adaptive) MaxAttempts() int { return a.e.maxAttempts }
