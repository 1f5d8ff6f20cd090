package retry

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Default retry quota settings: the AWS SDKs' standard-mode defaults.
const (
	DefaultMaxCapacity                = 500
	DefaultInitialTryCost             = 0
	DefaultInitialTrySuccessIncrement = 1
	DefaultRetryCost                  = 5
	DefaultTimeoutRetryCost           = 10
	DefaultThrottlingRetryCost        = 5
	DefaultRefillRate                 = 0 // tokens per second

	// DefaultRetryBudget is the share of its requests that a failing
	// scope may retry (see WithRetryBudget): Finagle's and Envoy's 20%.
	DefaultRetryBudget = 0.2
)

// A TokenBucket is a retry quota: a pool of tokens that retries spend and
// successes earn back, shared by every call that uses it, so that when a
// service fails broadly the clients stop retrying instead of multiplying
// its load.
//
// A retry takes the retry cost for its failure (the throttling retry cost
// after a throttle, else the timeout retry cost after a timeout, else the
// retry cost) before it is made. A success on the first attempt adds the
// initial-try success increment; a success after retries gives back what
// the last retry took. The bucket never holds more than its capacity.
//
// A retry budget bounds the retries of a scope that is failing, where the
// quota alone cannot: see WithRetryBudget.
//
// When a retry's cost is more than the bucket holds, a bucket in
// circuit-breaker mode (the default) refuses it with ErrRetryQuotaExceeded.
// A bucket in wait mode instead promises the tokens from future refill and
// says how long the retry must wait for them; the tokens it holds still
// never go below zero, and promised tokens are reported as Owed.
//
// A TokenBucket is safe for concurrent use by any number of strategies and
// goroutines. A bucket that does not refill (the default) takes and gives
// back tokens without a lock, and when it is full, giving tokens back
// writes nothing, so many goroutines retrying and succeeding at once do
// not queue for it. Once goroutines give tokens back at the same moment,
// such a bucket also spreads its count over stripes on cache lines of
// their own, each call's retries taking from and giving back to one, so
// that goroutines on different CPUs do not pass one count between them;
// it stays one quota, refusing a retry only when all its tokens together
// cannot pay for it. Create one with
// NewTokenBucket: a nil or zero TokenBucket holds no quota, so Acquire and
// Release return an error wrapping ErrInvalidConfig and Stats reports
// zeros.
type TokenBucket struct {
	cfg bucketConfig

	full atomic.Bool // the bucket holds its capacity, and its scope is not failing; read without the lock

	// failing is set while the bucket's scope is failing, and budget then
	// holds the retries it may make, in budgetUnit per retry (see
	// WithRetryBudget).
	failing atomic.Bool
	budget  atomic.Int64

	// A bucket that does not refill (the default) holds a whole number of
	// tokens, which it counts in tokens and changes with atomic adds and
	// compare-and-swap, without the lock: goroutines taking and giving back tokens at once
	// do not queue for it. A bucket that refills counts in level, under
	// the lock, as its tokens flow back with time.
	capacity int64 // cfg.maxCapacity
	// Once giving tokens back is contended, the count is spread over
	// stripes (see tokenbucket_spread.go): each holds up to stripeCap
	// tokens (0: the bucket is too small to spread), and the count up to
	// centralCap, set before stripes.
	stripes    atomic.Pointer[tokenStripes]
	stripeCap  int64
	centralCap int64
	// The count has a cache line of its own: the configuration and the
	// flag, which every retry and success reads, are not moved from CPU
	// to CPU with it.
	_      [64]byte
	tokens atomic.Int64
	_      [56]byte

	mu    sync.Mutex
	level float64   // tokens held; negative only in wait mode (owed)
	last  time.Time // when refill was last applied
}

// bucketConfig is a TokenBucket's configuration.
type bucketConfig struct {
	clock                      Clock
	maxCapacity                int
	initialTryCost             int
	initialTrySuccessIncrement int
	retryCost                  int
	timeoutRetryCost           int
	throttlingRetryCost        int
	refillRate                 float64
	circuitBreaker             bool
	retryBudget                float64 // 0: none
}

func defaultBucketConfig() bucketConfig {
	return bucketConfig{
		clock:                      systemClock{},
		maxCapacity:                DefaultMaxCapacity,
		initialTryCost:             DefaultInitialTryCost,
		initialTrySuccessIncrement: DefaultInitialTrySuccessIncrement,
		retryCost:                  DefaultRetryCost,
		timeoutRetryCost:           DefaultTimeoutRetryCost,
		throttlingRetryCost:        DefaultThrottlingRetryCost,
		refillRate:                 DefaultRefillRate,
		circuitBreaker:             true,
		retryBudget:                DefaultRetryBudget,
	}
}

func (c *bucketConfig) validate() error {
	for _, f := range []struct {
		option string
		value  int
	}{
		{"WithMaxCapacity", c.maxCapacity},
		{"WithInitialTryCost", c.initialTryCost},
		{"WithInitialTrySuccessIncrement", c.initialTrySuccessIncrement},
		{"WithRetryCost", c.retryCost},
		{"WithTimeoutRetryCost", c.timeoutRetryCost},
		{"WithThrottlingRetryCost", c.throttlingRetryCost},
	} {
		if f.value < 0 || f.value > maxTokens {
			return configError(f.option, f.value, "0 to 2^53 (9007199254740992)")
		}
	}
	switch {
	case isNil(c.clock):
		return configError("WithClock", nilValue(c.clock), "a non-nil Clock")
	case !(c.refillRate >= 0) || math.IsInf(c.refillRate, 0):
		return configError("WithRefillRate", c.refillRate, "a finite number >= 0")
	case !c.circuitBreaker && c.refillRate == 0:
		return configError("WithRefillRate", c.refillRate, "> 0 when WithCircuitBreaker(false) selects wait mode")
	case !(c.retryBudget >= 0 && c.retryBudget <= 1):
		return configError("WithRetryBudget", c.retryBudget, "in [0, 1] (0: no budget, the quota alone)")
	}
	return nil
}

// maxTokens is the largest capacity or cost a TokenBucket accepts, 2^53:
// the bucket counts in float64, which holds every whole number up to it
// exactly, and no further.
const maxTokens = 1 << 53

// WithMaxCapacity sets how many tokens the bucket holds when full, which is
// also how many it starts with (default DefaultMaxCapacity). Valid: 0 to
// 2^53; 0 allows no retries.
func WithMaxCapacity(n int) TokenBucketOption {
	return bucketOption(func(c *bucketConfig) { c.maxCapacity = n })
}

// WithInitialTryCost sets what a first attempt takes from the bucket
// (default DefaultInitialTryCost). When the bucket cannot pay it, the
// strategy refuses the initial token and the call gets one attempt without
// retries. Valid: 0 to 2^53.
func WithInitialTryCost(n int) TokenBucketOption {
	return bucketOption(func(c *bucketConfig) { c.initialTryCost = n })
}

// WithInitialTrySuccessIncrement sets what a success on the first attempt
// adds to the bucket (default DefaultInitialTrySuccessIncrement). Valid:
// 0 to 2^53.
func WithInitialTrySuccessIncrement(n int) TokenBucketOption {
	return bucketOption(func(c *bucketConfig) { c.initialTrySuccessIncrement = n })
}

// WithRetryCost sets what a retry after a transient error takes (default
// DefaultRetryCost). Valid: 0 to 2^53.
func WithRetryCost(n int) TokenBucketOption {
	return bucketOption(func(c *bucketConfig) { c.retryCost = n })
}

// WithTimeoutRetryCost sets what a retry after a timeout takes (default
// DefaultTimeoutRetryCost). Valid: 0 to 2^53.
func WithTimeoutRetryCost(n int) TokenBucketOption {
	return bucketOption(func(c *bucketConfig) { c.timeoutRetryCost = n })
}

// WithThrottlingRetryCost sets what a retry after a throttling error takes
// (default DefaultThrottlingRetryCost). Valid: 0 to 2^53.
func WithThrottlingRetryCost(n int) TokenBucketOption {
	return bucketOption(func(c *bucketConfig) { c.throttlingRetryCost = n })
}

// WithRefillRate sets how many tokens per second flow back into the bucket
// by themselves (default DefaultRefillRate: none, so only successes refill
// it). Valid: a finite number >= 0, and > 0 in wait mode.
func WithRefillRate(perSecond float64) TokenBucketOption {
	return bucketOption(func(c *bucketConfig) { c.refillRate = perSecond })
}

// WithCircuitBreaker selects what happens when a retry costs more than the
// bucket holds: with on (the default) the retry is refused; with off, the
// retry waits until refill provides the tokens, which needs WithRefillRate
// above zero.
func WithCircuitBreaker(on bool) TokenBucketOption {
	return bucketOption(func(c *bucketConfig) { c.circuitBreaker = on })
}

// NewTokenBucket returns a full TokenBucket with the AWS SDKs' defaults,
// changed by opts. A bad option value is an error wrapping ErrInvalidConfig
// that names the option.
func NewTokenBucket(opts ...TokenBucketOption) (*TokenBucket, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	cfg := defaultBucketConfig()
	for _, opt := range opts {
		opt.applyBucket(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return newTokenBucket(cfg), nil
}

// newTokenBucket returns a full bucket for a validated configuration.
func newTokenBucket(cfg bucketConfig) *TokenBucket {
	b := &TokenBucket{cfg: cfg, level: float64(cfg.maxCapacity), last: cfg.clock.Now()}
	b.capacity = int64(cfg.maxCapacity)
	b.stripeCap = stripeCapFor(cfg)
	b.tokens.Store(b.capacity)
	b.full.Store(true)
	return b
}

// RetryCost returns what a retry after a failure classified as c takes: the
// throttling retry cost for a throttle, else the timeout retry cost for a
// timeout, else the retry cost. A nil or zero bucket costs nothing.
func (b *TokenBucket) RetryCost(c Classification) int {
	switch {
	case b == nil:
		return 0
	case c.Throttle:
		return b.cfg.throttlingRetryCost
	case c.Timeout:
		return b.cfg.timeoutRetryCost
	}
	return b.cfg.retryCost
}

// valid reports whether b was made by NewTokenBucket.
func (b *TokenBucket) valid() bool { return b != nil && b.cfg.clock != nil }

// errZeroBucket is the error of every method of a nil or zero TokenBucket.
var errZeroBucket = configError("TokenBucket", "a nil or zero *TokenBucket", "one made by NewTokenBucket")

// negativeTokens reports a negative argument to Acquire or Release.
func negativeTokens(method string, n int) error {
	return configError("TokenBucket."+method+" count", n, ">= 0")
}

// Acquire takes n tokens from the bucket. If the bucket holds fewer, a
// bucket in circuit-breaker mode takes nothing and returns an error
// wrapping ErrRetryQuotaExceeded (of takes racing on a nearly empty
// bucket, one may then be refused that a moment later would have been
// paid); a bucket in wait mode promises the
// missing tokens from refill and returns how long the caller must wait
// before acting. A negative n is an error wrapping ErrInvalidConfig.
func (b *TokenBucket) Acquire(n int) (time.Duration, error) {
	return b.acquire(n, 0)
}

// acquire is Acquire for a caller that tells a spread bucket which stripe
// to take from (see stripeHint), and gives the tokens back with releaseFor
// and the same hint.
func (b *TokenBucket) acquire(n int, hint stripeHint) (time.Duration, error) {
	if !b.valid() {
		return 0, errZeroBucket
	}
	if n < 0 {
		return 0, negativeTokens("Acquire", n)
	}
	if n == 0 {
		return 0, nil
	}
	if b.cfg.refillRate == 0 {
		return 0, b.takeCounted(int64(n), hint)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	cost := float64(n)
	if b.level >= cost {
		b.take(cost)
		return 0, nil
	}
	if b.cfg.circuitBreaker {
		return 0, fmt.Errorf("%w: retry costs %d, bucket holds %v", ErrRetryQuotaExceeded, n, math.Floor(b.level))
	}
	b.take(cost)
	// A long debt at a slow refill can exceed a Duration: saturate.
	return satDuration(math.Ceil(-b.level / b.cfg.refillRate * float64(time.Second))), nil
}

// Release gives n tokens back to the bucket, never filling it beyond its
// capacity. In wait mode, tokens owed to waiting retries are paid first. A
// negative n is an error wrapping ErrInvalidConfig.
func (b *TokenBucket) Release(n int) error {
	return b.releaseFor(n, 0)
}

// releaseFor is Release for tokens taken by acquire with hint.
func (b *TokenBucket) releaseFor(n int, hint stripeHint) error {
	if n > 0 && b != nil && b.full.Load() && b.tokens.Load() == b.capacity {
		// The common case: no lock, no write. The count confirms the
		// flag, which a give-back racing with a take may leave set for a
		// moment on a bucket that is not full: a caller giving back
		// tokens it took never sees a full count. (A bucket that refills
		// keeps its count at its capacity; a spread one keeps it below.)
		return nil
	}
	return b.release(n, hint)
}

func (b *TokenBucket) release(n int, hint stripeHint) error {
	if !b.valid() {
		return errZeroBucket
	}
	if n < 0 {
		return negativeTokens("Release", n)
	}
	if n == 0 {
		return nil
	}
	if b.cfg.refillRate == 0 {
		b.putCounted(int64(n), hint)
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	b.put(float64(n))
	return nil
}

// takeCounted takes n tokens from a bucket that does not refill, if it
// holds them, and otherwise takes nothing and says so. It takes them with
// one atomic add, and gives them back at once if that overdrew the
// bucket: one write to the shared count where a load and a
// compare-and-swap would be two, as goroutines on different CPUs taking
// tokens at once pass the count between them. While the overdraft lasts,
// another take may be refused that the tokens would have paid for: a take
// that races with others on a nearly empty bucket can fail, as it could
// have come a moment later. A spread bucket takes from its stripes first.
func (b *TokenBucket) takeCounted(n int64, hint stripeHint) error {
	if sp := b.stripes.Load(); sp != nil {
		return b.takeSpread(sp, n, hint)
	}
	if !b.takeCentral(n) {
		if sp := b.stripes.Load(); sp != nil { // spread meanwhile
			return b.takeSpread(sp, n, hint)
		}
		return fmt.Errorf("%w: retry costs %d, bucket holds %d", ErrRetryQuotaExceeded, n, b.held())
	}
	b.clearFull() // a write only when it changes: the line stays where it is
	return nil
}

// putCounted gives n tokens back to a bucket that does not refill, up to
// its capacity, and spreads the count once giving back is contended.
func (b *TokenBucket) putCounted(n int64, hint stripeHint) {
	for {
		if sp := b.stripes.Load(); sp != nil {
			b.putSpread(sp, n, hint)
			return
		}
		held := b.tokens.Load()
		next := min(held+n, b.capacity)
		if next <= held {
			// Full. A flag that says otherwise lost a race (see
			// syncFull) or is held down while the scope fails.
			if !b.full.Load() && !b.failing.Load() {
				b.syncFull()
			}
			return
		}
		if b.tokens.CompareAndSwap(held, next) {
			if next == b.capacity || b.stripes.Load() != nil {
				b.settle(next)
			}
			return
		}
		b.spread()
	}
}

// take removes cost tokens. b.mu must be held.
func (b *TokenBucket) take(cost float64) {
	b.level -= cost
	b.full.Store(false)
}

// put adds n tokens, up to capacity. b.mu must be held.
func (b *TokenBucket) put(n float64) {
	capacity := float64(b.cfg.maxCapacity)
	b.level = min(b.level+n, capacity)
	if b.level == capacity {
		b.setFull()
	}
}

// refill adds the tokens earned since the last refill. b.mu must be held.
// A bucket that does not refill (the default) reads no clock.
func (b *TokenBucket) refill() {
	if b.cfg.refillRate != 0 {
		b.refillNow()
	}
}

func (b *TokenBucket) refillNow() {
	now := b.cfg.clock.Now()
	if !now.After(b.last) {
		return // a clock that stands still or steps back earns nothing
	}
	elapsed := now.Sub(b.last).Seconds()
	b.last = now
	if !b.full.Load() { // refill calls this only for a rate above 0
		b.put(elapsed * b.cfg.refillRate)
	}
}

// TokenBucketStats is a snapshot of a TokenBucket, for metrics and tests.
type TokenBucketStats struct {
	Available      float64 // tokens held now, in [0, Capacity]
	Owed           float64 // tokens promised to waiting retries (wait mode)
	Capacity       int     // the most the bucket holds
	RefillRate     float64 // tokens per second that flow back by themselves
	CircuitBreaker bool    // true: refuse retries it cannot pay; false: wait

	// Failing reports whether the bucket's scope is failing (see
	// WithRetryBudget), and Budget the retries its budget holds then.
	Failing bool
	Budget  float64
}

// Stats returns a consistent snapshot of the bucket's state at its clock's
// now.
func (b *TokenBucket) Stats() TokenBucketStats {
	if !b.valid() {
		return TokenBucketStats{}
	}
	s := TokenBucketStats{Capacity: b.cfg.maxCapacity, RefillRate: b.cfg.refillRate, CircuitBreaker: b.cfg.circuitBreaker}
	if b.failing.Load() {
		s.Failing, s.Budget = true, float64(max(b.budget.Load(), 0))/budgetUnit
	}
	if b.cfg.refillRate == 0 {
		s.Available = float64(b.held())
		return s
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	s.Available, s.Owed = max(b.level, 0), max(-b.level, 0)
	return s
}
