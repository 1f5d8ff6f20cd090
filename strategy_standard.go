package retry

import (
	"context"
	"fmt"
	"time"
)

// DefaultMaxAttempts is the number of attempts, the first included, that a
// strategy makes by default.
const DefaultMaxAttempts = 3

// Standard is the standard retry strategy of the AWS SDKs and the Smithy
// design: it retries errors that are safe to retry, up to a maximum number
// of attempts, waiting an exponential backoff with jitter between attempts
// (at least as long as the service's retry-after hint), and pays for each
// retry from a retry quota (a TokenBucket) so that a broad outage stops
// retries instead of multiplying load. While a scope fails, its retries are
// also bound to a share of its requests (WithRetryBudget, default 20%),
// which bounds a fleet of small clients where a quota per client cannot;
// WithRetryBudget(0) leaves the quota alone, as the AWS SDKs have it.
//
// Each scope passed to AcquireInitialToken has its own bucket, made with
// the strategy's token bucket options, unless WithRetryQuota shares one
// bucket between all scopes (and strategies) or WithoutRetryQuota turns the
// quota off. At most WithMaxScopes named scopes are kept (default
// DefaultMaxScopes); the least recently used is forgotten beyond that.
//
// A Standard is safe for concurrent use by any number of goroutines.
// Create one with NewStandard; the zero value is not usable.
type Standard struct {
	e engine
}

var _ RetryStrategy = (*Standard)(nil)

// standardConfig is the configuration of Standard, and the shared part of
// Adaptive's.
type standardConfig struct {
	clock              Clock
	maxAttempts        int
	backoff            Backoff
	throttleBackoff    Backoff // nil: same as backoff
	classifier         Classifier
	maxScopes          int
	profile            Profile
	retryAfterLimit    time.Duration // 0: no limit
	maxRetryAfter      time.Duration // the ceiling on a hinted wait
	longPolling        bool
	hooks              []Hook
	nilHook            bool // WithHook(nil) was given
	nilThrottleBackoff bool // WithThrottleBackoff(nil) was given

	quota         *TokenBucket // shared by every scope
	quotaSet      bool         // WithRetryQuota was given
	noQuota       bool         // WithoutRetryQuota was given
	quotaOff      bool         // the profile has no quota unless one is configured
	bucket        bucketConfig // for the buckets the strategy makes
	bucketOptions bool         // a TokenBucketOption was given
}

func defaultStandardConfig() standardConfig {
	b, _ := NewExponentialBackoff()
	return standardConfig{
		clock:       systemClock{},
		maxAttempts: DefaultMaxAttempts,
		backoff:     b,
		classifier:  Classify,
		maxScopes:   DefaultMaxScopes,
		bucket:      defaultBucketConfig(),

		maxRetryAfter: DefaultMaxRetryAfter,
	}
}

// configure applies opts to the defaults they select and validates the
// result, or reports a nil option. The defaults depend on a key some
// options set (a profile, an algorithm), and options only set fields, so
// they can be applied twice: once over the zero key's defaults, to find
// the key, and once more over that key's defaults if it is another.
func configure[C, O any, K comparable](opts []O, defaults func(K) C, apply func(O, *C), key func(*C) K, validate func(*C) error) (C, error) {
	var k K
	cfg := defaults(k)
	if err := checkOptions(opts); err != nil {
		return cfg, err
	}
	for _, o := range opts {
		apply(o, &cfg)
	}
	if k2 := key(&cfg); k2 != k {
		cfg = defaults(k2)
		for _, o := range opts {
			apply(o, &cfg)
		}
	}
	return cfg, validate(&cfg)
}

func (c *standardConfig) validate() error {
	switch {
	case c.maxAttempts < 1:
		return configError("WithMaxAttempts", c.maxAttempts, "1 or more (1 means no retries)")
	case isNil(c.backoff):
		return configError("WithBackoff", nilValue(c.backoff), "a non-nil Backoff (NoBackoff for none)")
	case c.nilThrottleBackoff || c.throttleBackoff != nil && isNil(c.throttleBackoff):
		return configError("WithThrottleBackoff", nilValue(c.throttleBackoff), "a non-nil Backoff (leave the option out to use WithBackoff's)")
	case c.classifier == nil:
		return configError("WithClassifier", "nil", "a non-nil Classifier")
	case isNil(c.clock):
		return configError("WithClock", nilValue(c.clock), "a non-nil Clock")
	case c.profile < ProfileStandard || c.profile > ProfileAWS2026:
		return configError("WithProfile", c.profile, "ProfileStandard, ProfileLegacy or ProfileAWS2026")
	case c.retryAfterLimit < 0:
		return configError("WithRetryAfterLimit", c.retryAfterLimit, ">= 0 (0 means no limit)")
	case c.maxRetryAfter <= 0:
		return configError("WithMaxRetryAfter", c.maxRetryAfter, "> 0 (math.MaxInt64 to honour any hint)")
	case c.nilHook:
		return configError("WithHook", "nil", "a non-nil Hook")
	case c.maxScopes < 1 || c.maxScopes > MaxMaxScopes:
		return configError("WithMaxScopes", c.maxScopes, fmt.Sprintf("a number from 1 to %d (MaxMaxScopes)", MaxMaxScopes))
	case c.quotaSet && !c.quota.valid():
		return configError("WithRetryQuota", "a nil or zero *TokenBucket", "one made by NewTokenBucket (WithoutRetryQuota turns the quota off)")
	case c.quotaSet && c.noQuota:
		return configError("WithRetryQuota", "with WithoutRetryQuota", "one or the other")
	case c.bucketOptions && c.quotaSet:
		return configError("TokenBucketOption", "given with WithRetryQuota", "token bucket options only for the strategy's own buckets (give them to NewTokenBucket for a shared one)")
	case c.bucketOptions && c.noQuota:
		return configError("TokenBucketOption", "given with WithoutRetryQuota", "token bucket options only for a strategy with a retry quota")
	}
	for _, b := range []struct {
		option string
		b      Backoff
	}{{"WithBackoff", c.backoff}, {"WithThrottleBackoff", c.throttleBackoff}} {
		if v, ok := b.b.(interface{ validate() error }); ok {
			if err := v.validate(); err != nil {
				return fmt.Errorf("%s: %w", b.option, err)
			}
		}
	}
	return c.bucket.validate()
}

// initEngine builds, in e, the engine for a validated configuration.
// newLimiter, if not nil, returns the rate limiter of a new scope;
// perScopeLimiter says whether it makes a new one each time. It works in
// place because each scope's state points back at its engine.
func (c *standardConfig) initEngine(e *engine, newLimiter func() *RateLimiter, perScopeLimiter bool) {
	*e = engine{
		clock:           c.clock,
		maxAttempts:     c.maxAttempts,
		backoff:         c.backoff,
		throttleBackoff: c.throttleBackoff,
		classify:        c.classifier,
		retryAfterLimit: c.retryAfterLimit,
		maxRetryAfter:   c.maxRetryAfter,
		longPolling:     c.longPolling,
		hooks:           c.hooks,
	}
	if e.throttleBackoff == nil {
		e.throttleBackoff = e.backoff
	}
	noQuota := c.noQuota || (c.quotaOff && !c.quotaSet && !c.bucketOptions)
	newBucket := func() *TokenBucket {
		switch {
		case noQuota:
			return nil
		case c.quota != nil:
			return c.quota
		}
		return newTokenBucket(c.bucket)
	}
	initState := func(st *scopeState, name string) {
		st.owner, st.name, st.bucket = e, name, newBucket()
		if newLimiter != nil {
			st.limiter = newLimiter()
		}
		st.setQuiet()
	}
	initialTryCost := c.bucket.initialTryCost
	if c.quota != nil {
		initialTryCost = c.quota.cfg.initialTryCost
	}
	e.freeStart = len(c.hooks) == 0 && (noQuota || initialTryCost == 0)
	initState(&e.def, "")
	if (!noQuota && c.quota == nil) || perScopeLimiter {
		e.scopes = newScopeCache(c.maxScopes, func(name string) *scopeState {
			st := new(scopeState)
			initState(st, name)
			return st
		})
	}
}

// NewStandard returns a standard strategy with the AWS SDKs' defaults
// (DefaultMaxAttempts attempts; an ExponentialBackoff with its defaults; a
// TokenBucket with its defaults for each scope; the Classify classifier),
// changed by opts. A bad option value is an error wrapping ErrInvalidConfig
// that names the option and its valid range.
func NewStandard(opts ...StandardOption) (*Standard, error) {
	cfg, err := configure(opts, profileConfig, StandardOption.applyStandard,
		func(c *standardConfig) Profile { return c.profile }, (*standardConfig).validate)
	if err != nil {
		return nil, err
	}
	s := new(Standard)
	cfg.initEngine(&s.e, nil, false)
	s.e.bindOption(s)
	return s, nil
}

// AcquireInitialToken returns the token for the first attempt in scope.
// It refuses a ctx that is already done, and fails when the scope's bucket
// cannot pay a non-zero initial-try cost (WithInitialTryCost); a bucket in
// wait mode makes it wait instead, within ctx. A nil ctx is an error
// wrapping ErrInvalidConfig.
func (s *Standard) AcquireInitialToken(ctx context.Context, scope string) (RetryToken, error) {
	return s.engine().acquireInitialToken(ctx, scope)
}

// RefreshRetryToken returns the token for the next attempt after the
// attempt admitted by token failed with err, once the backoff is over. It
// returns an error wrapping ErrNotRetryable if err is not safe to retry,
// ErrMaxAttemptsExceeded if no attempts are left, ErrRetryQuotaExceeded if
// the bucket cannot pay for the retry, ctx's error if ctx ends during the
// wait, ErrDeadlineTooSoon if ctx's deadline would pass before the wait
// ends, or ErrInvalidToken if token was not issued by s or was already
// used. A nil ctx or err is an error wrapping ErrInvalidConfig, and leaves
// token unused.
//
// When err is not retryable, what the last retry took from the bucket is
// given back: the service answered, so that retry did not feed an outage.
// When attempts or quota run out, nothing is given back. A wait cut short
// gives back what the new token took.
func (s *Standard) RefreshRetryToken(ctx context.Context, token RetryToken, err error) (RetryToken, error) {
	return s.engine().refreshRetryToken(ctx, token, err)
}

// RecordSuccess reports that the attempt admitted by token succeeded: a
// first attempt adds the initial-try success increment to the bucket, and a
// retry gives back what it took. It returns an error wrapping
// ErrInvalidToken if token was not issued by s or was already used.
func (s *Standard) RecordSuccess(token RetryToken) error {
	return s.engine().recordSuccess(token)
}

// PlanInitialToken is the non-blocking form of AcquireInitialToken, for
// event loops and simulations that keep their own timers; most callers
// want AcquireInitialToken. It never waits: the attempt may go after the
// token's Delay, once Admit allows it.
func (s *Standard) PlanInitialToken(scope string) (RetryToken, error) {
	return s.engine().planInitialToken(scope)
}

// PlanRetryToken is the non-blocking form of RefreshRetryToken, for event
// loops and simulations: it decides at once and never waits. When it
// grants a retry, the new token's Delay is the backoff to wait, and the
// duration it returns is the same; the attempt may go after that, once
// Admit allows it. When it refuses, the duration is how long the caller
// should wait before giving up (a long-polling strategy's backoff, see
// WithLongPolling; otherwise 0). A nil err is an error wrapping
// ErrInvalidConfig, and leaves token unused.
func (s *Standard) PlanRetryToken(token RetryToken, err error) (RetryToken, time.Duration, error) {
	return s.engine().planRetryToken(token, err)
}

// Admit is the send-slot check of the non-blocking path: it is asked once
// a token's Delay is over. A Standard has no rate limiter, so it admits
// every valid token at once; it exists so that one event loop can drive
// Standard and Adaptive alike.
func (s *Standard) Admit(token RetryToken) (time.Duration, error) {
	return s.engine().admitToken(token)
}

// ReleaseToken gives back what token took from the bucket, for an attempt
// that will not be made, and uses the token up. The blocking methods do
// this themselves; it is for callers of the Plan methods that abandon a
// token. It returns an error wrapping ErrInvalidToken if token was not
// issued by s or was already used.
func (s *Standard) ReleaseToken(token RetryToken) error {
	return s.engine().releaseToken(token)
}

// RetryQuota returns the bucket of the default scope, or nil if the
// strategy has no retry quota. With WithRetryQuota it is the shared bucket.
func (s *Standard) RetryQuota() *TokenBucket {
	if e := s.engine(); e != nil {
		return e.def.bucket
	}
	return nil
}

// MaxAttempts returns the number of attempts, the first included, that the
// strategy allows.
func (s *Standard) MaxAttempts() int {
	if e := s.engine(); e != nil {
		return e.maxAttempts
	}
	return 0
}

// engine returns the strategy's engine, or nil for a nil or zero Standard.
func (s *Standard) engine() *engine {
	if s == nil || !s.e.valid() {
		return nil
	}
	return &s.e
}

// WithMaxAttempts sets the number of attempts, the first included (default
// DefaultMaxAttempts). Valid: 1 or more; 1 means no retries.
func WithMaxAttempts(n int) StandardOption {
	return standardOption(func(c *standardConfig) { c.maxAttempts = n })
}

// WithBackoff sets how long to wait before each retry (default: an
// ExponentialBackoff with its defaults). Valid: non-nil, and not a nil
// pointer or function, such as the result of a constructor that failed
// (NoBackoff retries without waiting).
func WithBackoff(b Backoff) StandardOption {
	return standardOption(func(c *standardConfig) { c.backoff = b })
}

// WithThrottleBackoff sets how long to wait before a retry after a
// throttling error, when that should differ from WithBackoff (as in the
// AWS SDKs' 2026 behaviour, which starts throttled retries at 1 s). Default:
// the WithBackoff backoff; under ProfileAWS2026, that profile's throttle
// backoff. Valid: non-nil, and not a nil pointer or function.
func WithThrottleBackoff(b Backoff) StandardOption {
	return standardOption(func(c *standardConfig) { c.throttleBackoff, c.nilThrottleBackoff = b, b == nil })
}

// WithRetryQuota makes every scope of the strategy pay for retries from q,
// which other strategies may share. Valid: a bucket made by
// NewTokenBucket; not with WithoutRetryQuota or token bucket options.
func WithRetryQuota(q *TokenBucket) StandardOption {
	return standardOption(func(c *standardConfig) { c.quota, c.quotaSet = q, true })
}

// WithoutRetryQuota turns the retry quota off: retries are limited only by
// the attempt limit. Without a quota, a broad outage multiplies the load on
// the service by the number of attempts.
func WithoutRetryQuota() StandardOption {
	return standardOption(func(c *standardConfig) { c.noQuota = true })
}

// WithClassifier sets how errors are classified (default Classify). Valid:
// non-nil.
func WithClassifier(cl Classifier) StandardOption {
	return standardOption(func(c *standardConfig) { c.classifier = cl })
}

// WithMaxScopes sets how many named scopes the strategy keeps state for
// (default DefaultMaxScopes). Valid: 1 to MaxMaxScopes.
func WithMaxScopes(n int) StandardOption {
	return standardOption(func(c *standardConfig) { c.maxScopes = n })
}
