package retry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

func TestStandardDefaults(t *testing.T) {
	s, err := retry.NewStandard()
	require.NoError(t, err)
	assert.Equal(t, 3, s.MaxAttempts())
	stats := s.RetryQuota().Stats()
	assert.Equal(t, 500, stats.Capacity)
	assert.Equal(t, 500.0, stats.Available)
	assert.True(t, stats.CircuitBreaker)

	tok, err := s.PlanInitialToken("")
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), tok.Delay())
	assert.Equal(t, 0, tok.RetryCount())
	for n := 1; n <= 2; n++ {
		tok, err = plan(s, tok, errTransient)
		require.NoError(t, err)
		assert.Equal(t, n, tok.RetryCount())
		capN := time.Duration(float64(retry.DefaultInitialDelay) * []float64{1, 1.5}[n-1])
		assert.GreaterOrEqual(t, tok.Delay(), time.Duration(0))
		assert.Less(t, tok.Delay(), capN+1, "full jitter keeps the delay within the cap")
	}
	_, err = plan(s, tok, errTransient)
	require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
}

func TestStandardInvalidTokens(t *testing.T) {
	s, err := retry.NewStandard()
	require.NoError(t, err)
	other, err := retry.NewStandard()
	require.NoError(t, err)

	foreign, err := other.PlanInitialToken("")
	require.NoError(t, err)
	refreshed, err := s.PlanInitialToken("")
	require.NoError(t, err)
	_, err = plan(s, refreshed, errTransient)
	require.NoError(t, err)
	recorded, err := s.PlanInitialToken("")
	require.NoError(t, err)
	require.NoError(t, s.RecordSuccess(recorded))
	released, err := s.PlanInitialToken("")
	require.NoError(t, err)
	require.NoError(t, s.ReleaseToken(released))

	before := s.RetryQuota().Stats()
	for name, tok := range map[string]retry.RetryToken{
		"nil":                      nil,
		"another type":             customToken{},
		"another strategy's token": foreign,
		"already refreshed":        refreshed,
		"already recorded":         recorded,
		"already released":         released,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := plan(s, tok, errTransient)
			require.ErrorIs(t, err, retry.ErrInvalidToken)
			require.ErrorIs(t, s.RecordSuccess(tok), retry.ErrInvalidToken)
			require.ErrorIs(t, s.ReleaseToken(tok), retry.ErrInvalidToken)
		})
	}
	assert.Equal(t, before, s.RetryQuota().Stats(), "refused tokens changed nothing")
}

// A retried call that ends in an error that is not retryable gives back
// what its last retry took: the service answered, so the retry did not feed
// an outage. One that runs out of attempts gives nothing back.
func TestStandardRefundDecision(t *testing.T) {
	permanent := retry.Permanent(errors.New("not found"))
	tests := []struct {
		name string
		errs []error // the last one ends the call
		want float64
	}{
		{"not retryable at once", []error{permanent}, 500},
		{"not retryable after a retry", []error{errTransient, permanent}, 500},
		{"not retryable after two retries", []error{errTransient, errTransient, permanent}, 495},
		{"attempts run out", []error{errTransient, errTransient, errTransient}, 490},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := retry.NewStandard()
			require.NoError(t, err)
			tok, err := s.PlanInitialToken("")
			require.NoError(t, err)
			for _, e := range tt.errs[:len(tt.errs)-1] {
				tok, err = plan(s, tok, e)
				require.NoError(t, err)
			}
			_, err = plan(s, tok, tt.errs[len(tt.errs)-1])
			require.Error(t, err)
			assert.Equal(t, tt.want, s.RetryQuota().Stats().Available)
		})
	}
}

func TestStandardRetryAfterIsAMinimum(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(time.Second)))
	require.NoError(t, err)
	for _, tt := range []struct {
		hint, want time.Duration
	}{
		{0, time.Second},
		{500 * time.Millisecond, time.Second},
		{3 * time.Second, 3 * time.Second},
	} {
		tok, err := s.PlanInitialToken("")
		require.NoError(t, err)
		tok, err = plan(s, tok, retry.WithRetryAfter(errTransient, tt.hint))
		require.NoError(t, err)
		assert.Equal(t, tt.want, tok.Delay(), "hint %v", tt.hint)
		require.NoError(t, s.RecordSuccess(tok))
	}
}

func TestStandardThrottleBackoff(t *testing.T) {
	s, err := retry.NewStandard(
		retry.WithBackoff(retry.ConstantBackoff(50*time.Millisecond)),
		retry.WithThrottleBackoff(retry.ConstantBackoff(time.Second)),
	)
	require.NoError(t, err)
	tok, _ := s.PlanInitialToken("")
	tok, err = plan(s, tok, errTransient)
	require.NoError(t, err)
	assert.Equal(t, 50*time.Millisecond, tok.Delay())
	tok, err = plan(s, tok, retry.Throttled(errors.New("slow down")))
	require.NoError(t, err)
	assert.Equal(t, time.Second, tok.Delay())
}

func TestStandardNegativeBackoffIsZero(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.BackoffFunc(func(int) time.Duration { return -time.Hour })))
	require.NoError(t, err)
	tok, _ := s.PlanInitialToken("")
	tok, err = plan(s, tok, errTransient)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), tok.Delay())
}

func TestStandardScopes(t *testing.T) {
	s, err := retry.NewStandard(retry.WithMaxCapacity(5), retry.WithMaxScopes(2))
	require.NoError(t, err)
	drain := func(scope string) error {
		tok, err := s.PlanInitialToken(scope)
		require.NoError(t, err)
		_, err = plan(s, tok, errTransient)
		return err
	}
	require.NoError(t, drain("a"))
	require.ErrorIs(t, drain("a"), retry.ErrRetryQuotaExceeded, "a's 5 tokens are spent")
	require.NoError(t, drain("b"), "b has a bucket of its own")
	require.NoError(t, drain(""), "so has the default scope")
	require.NoError(t, drain("c"), "c evicts a, the least recently used")
	require.NoError(t, drain("a"), "a starts afresh after eviction")
	require.ErrorIs(t, drain("c"), retry.ErrRetryQuotaExceeded, "c is still kept")
}

func TestStandardSharedQuota(t *testing.T) {
	q, err := retry.NewTokenBucket(retry.WithMaxCapacity(10))
	require.NoError(t, err)
	s1, err := retry.NewStandard(retry.WithRetryQuota(q))
	require.NoError(t, err)
	s2, err := retry.NewStandard(retry.WithRetryQuota(q))
	require.NoError(t, err)
	for _, s := range []*retry.Standard{s1, s2} {
		for _, scope := range []string{"x", "y"} {
			tok, _ := s.PlanInitialToken(scope)
			_, err := plan(s, tok, errTransient)
			if err != nil {
				require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
			}
		}
	}
	assert.Equal(t, 0.0, q.Stats().Available, "both strategies and every scope paid from q")
	assert.Same(t, q, s1.RetryQuota())
}

func TestStandardWithoutRetryQuota(t *testing.T) {
	s, err := retry.NewStandard(retry.WithoutRetryQuota(), retry.WithMaxAttempts(100), retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	assert.Nil(t, s.RetryQuota())
	tok, _ := s.PlanInitialToken("")
	for range 99 {
		tok, err = plan(s, tok, errTransient)
		require.NoError(t, err)
	}
	require.NoError(t, s.RecordSuccess(tok))
}

func TestStandardWaitModeQuota(t *testing.T) {
	clock := newManualClock()
	s, err := retry.NewStandard(
		retry.WithClock(clock),
		retry.WithMaxCapacity(5),
		retry.WithCircuitBreaker(false),
		retry.WithRefillRate(10),
		retry.WithBackoff(retry.ConstantBackoff(100*time.Millisecond)),
		retry.WithMaxAttempts(5),
	)
	require.NoError(t, err)
	tok, _ := s.PlanInitialToken("")
	tok, err = plan(s, tok, errTransient)
	require.NoError(t, err)
	assert.Equal(t, 100*time.Millisecond, tok.Delay(), "the bucket could pay: backoff only")
	tok, err = plan(s, tok, errTransient)
	require.NoError(t, err)
	assert.Equal(t, 500*time.Millisecond, tok.Delay(), "5 tokens at 10/s: wait for the refill")
	assert.Equal(t, 5.0, s.RetryQuota().Stats().Owed)
	clock.Advance(500 * time.Millisecond)
	assert.Equal(t, 0.0, s.RetryQuota().Stats().Owed)
}

func TestStandardBadOptions(t *testing.T) {
	q, err := retry.NewTokenBucket()
	require.NoError(t, err)
	tests := []struct {
		name   string
		opts   []retry.StandardOption
		option string
	}{
		{"zero attempts", []retry.StandardOption{retry.WithMaxAttempts(0)}, "WithMaxAttempts"},
		{"negative attempts", []retry.StandardOption{retry.WithMaxAttempts(-1)}, "WithMaxAttempts"},
		{"nil backoff", []retry.StandardOption{retry.WithBackoff(nil)}, "WithBackoff"},
		{"nil BackoffFunc", []retry.StandardOption{retry.WithBackoff(retry.BackoffFunc(nil))}, "WithBackoff = a nil retry.BackoffFunc"},
		{"nil *ExponentialBackoff", []retry.StandardOption{retry.WithBackoff((*retry.ExponentialBackoff)(nil))}, "WithBackoff = a nil *retry.ExponentialBackoff"},
		{"nil *DecorrelatedJitter", []retry.StandardOption{retry.WithBackoff((*retry.DecorrelatedJitter)(nil))}, "WithBackoff = a nil *retry.DecorrelatedJitter"},
		{"nil throttle backoff", []retry.StandardOption{retry.WithThrottleBackoff(nil)}, "WithThrottleBackoff = nil"},
		{"nil throttle backoff over a profile's", []retry.StandardOption{retry.WithProfile(retry.ProfileAWS2026), retry.WithThrottleBackoff(nil)}, "WithThrottleBackoff = nil"},
		{"nil throttle BackoffFunc", []retry.StandardOption{retry.WithThrottleBackoff(retry.BackoffFunc(nil))}, "WithThrottleBackoff = a nil retry.BackoffFunc"},
		{"negative constant backoff", []retry.StandardOption{retry.WithBackoff(retry.ConstantBackoff(-1))}, "WithBackoff"},
		{"negative throttle backoff", []retry.StandardOption{retry.WithThrottleBackoff(retry.ConstantBackoff(-1))}, "WithThrottleBackoff"},
		{"nil classifier", []retry.StandardOption{retry.WithClassifier(nil)}, "WithClassifier"},
		{"nil clock", []retry.StandardOption{retry.WithClock(nil)}, "WithClock"},
		{"nil ClockFunc", []retry.StandardOption{retry.WithClock(retry.ClockFunc(nil))}, "WithClock = a nil retry.ClockFunc"},
		{"nil clock pointer", []retry.StandardOption{retry.WithClock((*manualClock)(nil))}, "WithClock = a nil *retry_test.manualClock"},
		{"zero scopes", []retry.StandardOption{retry.WithMaxScopes(0)}, "WithMaxScopes"},
		{"nil quota", []retry.StandardOption{retry.WithRetryQuota(nil)}, "WithRetryQuota"},
		{"quota and no quota", []retry.StandardOption{retry.WithRetryQuota(q), retry.WithoutRetryQuota()}, "WithRetryQuota"},
		{"quota and bucket options", []retry.StandardOption{retry.WithRetryQuota(q), retry.WithRetryCost(1)}, "TokenBucketOption = given with WithRetryQuota"},
		{"no quota and bucket options", []retry.StandardOption{retry.WithoutRetryQuota(), retry.WithMaxCapacity(1)}, "TokenBucketOption = given with WithoutRetryQuota"},
		{"bad bucket option", []retry.StandardOption{retry.WithRetryCost(-5)}, "WithRetryCost"},
		{"wait mode without refill", []retry.StandardOption{retry.WithCircuitBreaker(false)}, "WithRefillRate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := retry.NewStandard(tt.opts...)
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tt.option)
			assert.Nil(t, s)
		})
	}
}

// A clock holding a nil function is refused by every constructor that
// takes a clock, instead of panicking when it is first read.
func TestNilClockFuncIsAnError(t *testing.T) {
	clock := retry.WithClock(retry.ClockFunc(nil))
	_, err := retry.NewStandard(clock)
	assert.ErrorIs(t, err, retry.ErrInvalidConfig)
	_, err = retry.NewAdaptive(clock)
	assert.ErrorIs(t, err, retry.ErrInvalidConfig)
	_, err = retry.NewTokenBucket(clock)
	assert.ErrorIs(t, err, retry.ErrInvalidConfig)
	_, err = retry.NewRateLimiter(clock)
	assert.ErrorIs(t, err, retry.ErrInvalidConfig)
}

// A nil context, or a nil error to refresh with, is an error that leaves
// the token as it was: nothing is taken from the quota, and the token can
// still be used.
func TestStrategyNilArguments(t *testing.T) {
	for _, name := range []string{"standard", "adaptive"} {
		t.Run(name, func(t *testing.T) {
			var s interface {
				retry.RetryStrategy
				PlanRetryToken(retry.RetryToken, error) (retry.RetryToken, time.Duration, error)
				RetryQuota() *retry.TokenBucket
			}
			var err error
			if name == "standard" {
				s, err = retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
			} else {
				s, err = retry.NewAdaptive(retry.WithBackoff(retry.NoBackoff))
			}
			require.NoError(t, err)
			ctx := context.Background()
			//lint:ignore SA1012 a nil context is the bad input under test
			_, err = s.AcquireInitialToken(nil, "")
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.Contains(t, err.Error(), "ctx = nil")

			tok, err := s.AcquireInitialToken(ctx, "")
			require.NoError(t, err)
			level := s.RetryQuota().Stats().Available
			//lint:ignore SA1012 a nil context is the bad input under test
			_, err = s.RefreshRetryToken(nil, tok, errTransient)
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			_, err = s.RefreshRetryToken(ctx, tok, nil)
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.Contains(t, err.Error(), "err = nil")
			_, _, err = s.PlanRetryToken(tok, nil)
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.Equal(t, level, s.RetryQuota().Stats().Available, "nothing taken from the quota")

			tok, err = s.RefreshRetryToken(ctx, tok, errTransient)
			require.NoError(t, err, "the token is still unused")
			require.NoError(t, s.RecordSuccess(tok))
		})
	}
}

// Many goroutines share one strategy; every call succeeds after one retry,
// so every retry's cost comes back and the bucket ends full. A watcher
// checks the bucket's bounds throughout.
func TestStandardStress(t *testing.T) {
	const goroutines, calls = 200, 50
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithMaxCapacity(goroutines*5))
	require.NoError(t, err)
	q := s.RetryQuota()

	stop := make(chan struct{})
	watched := make(chan error)
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if st := q.Stats(); st.Available < 0 || st.Available > float64(st.Capacity) {
				watched <- errors.New("bucket out of bounds")
				return
			}
		}
	}()

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			scope := []string{"", "a", "b"}[g%3]
			for range calls {
				tok, err := s.PlanInitialToken(scope)
				if !assert.NoError(t, err) {
					return
				}
				if tok, err = plan(s, tok, errTransient); !assert.NoError(t, err) {
					return
				}
				assert.NoError(t, s.RecordSuccess(tok))
			}
		})
	}
	wg.Wait()
	close(stop)
	require.NoError(t, <-watched)
	assert.Equal(t, float64(goroutines*5), q.Stats().Available, "every retry's cost came back")
}

// A nil option is an error, never a panic, in every constructor.
func TestNilOptions(t *testing.T) {
	_, err := retry.NewStandard(nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "option 0")
	_, err = retry.NewAdaptive(retry.WithMaxAttempts(2), nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "option 1")
	_, err = retry.NewTokenBucket(nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	_, err = retry.NewRateLimiter(nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	_, err = retry.NewExponentialBackoff(nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	_, err = retry.Poll(t.Context(), func(context.Context) (int, retry.PollStatus, error) { return 0, retry.PollDone, nil }, nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
}
