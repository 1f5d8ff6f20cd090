package retry_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The blocking contract: a strategy waits itself, so these tests run in
// synctest bubbles, where the default clock's timers are virtual.

func TestRefreshWaitsTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := constant(t, 3*time.Second)
		tok, err := s.AcquireInitialToken(t.Context(), "")
		require.NoError(t, err)
		assert.Zero(t, tok.Delay())
		start := time.Now()
		tok, err = s.RefreshRetryToken(t.Context(), tok, errTransient)
		require.NoError(t, err)
		assert.Equal(t, 3*time.Second, time.Since(start), "the strategy waited the backoff")
		assert.Equal(t, 3*time.Second, tok.Delay(), "Delay reports the wait imposed")
		assert.Equal(t, 1, tok.RetryCount())
		require.NoError(t, s.RecordSuccess(tok))
	})
}

func TestRefreshContextEndsDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := constant(t, 10*time.Second)
		q := s.RetryQuota()
		tok, err := s.AcquireInitialToken(t.Context(), "")
		require.NoError(t, err)
		ctx, cancel := context.WithCancelCause(t.Context())
		cause := errors.New("caller gave up")
		time.AfterFunc(time.Second, func() { cancel(cause) })
		start := time.Now()
		next, err := s.RefreshRetryToken(ctx, tok, errTransient)
		assert.Nil(t, next)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, cause, "the cause is kept")
		assert.Equal(t, time.Second, time.Since(start), "returned as soon as ctx ended")
		assert.Equal(t, float64(retry.DefaultMaxCapacity), q.Stats().Available, "the retry's cost was given back")
	})
}

func TestRefreshDeadlineTooSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := constant(t, 10*time.Second)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		tok, err := s.AcquireInitialToken(ctx, "")
		require.NoError(t, err)
		start := time.Now()
		_, err = s.RefreshRetryToken(ctx, tok, errTransient)
		require.ErrorIs(t, err, retry.ErrDeadlineTooSoon)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Zero(t, time.Since(start), "refused at once, not after waiting in vain")
		assert.Equal(t, float64(retry.DefaultMaxCapacity), s.RetryQuota().Stats().Available, "the retry's cost was given back")
	})
}

func TestAcquireRefusesADoneContext(t *testing.T) {
	for _, s := range []retry.RetryStrategy{constant(t, 0), newAdaptive(t)} {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		tok, err := s.AcquireInitialToken(ctx, "")
		assert.Nil(t, tok)
		require.ErrorIs(t, err, context.Canceled)
	}
}

func TestTokensAreUsedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, s := range []retry.RetryStrategy{constant(t, 0), newAdaptive(t)} {
			other := constant(t, 0)
			tok, err := s.AcquireInitialToken(t.Context(), "")
			require.NoError(t, err)
			next, err := s.RefreshRetryToken(t.Context(), tok, errTransient)
			require.NoError(t, err)

			_, err = s.RefreshRetryToken(t.Context(), tok, errTransient)
			require.ErrorIs(t, err, retry.ErrInvalidToken, "a refreshed token cannot be refreshed again")
			require.ErrorIs(t, s.RecordSuccess(tok), retry.ErrInvalidToken, "nor recorded")
			require.ErrorIs(t, other.RecordSuccess(next), retry.ErrInvalidToken, "another strategy's token")
			_, err = other.RefreshRetryToken(t.Context(), next, errTransient)
			require.ErrorIs(t, err, retry.ErrInvalidToken)
			require.ErrorIs(t, s.RecordSuccess(nil), retry.ErrInvalidToken)

			require.NoError(t, s.RecordSuccess(next))
			require.ErrorIs(t, s.RecordSuccess(next), retry.ErrInvalidToken, "a recorded token is spent")
		}
	})
}

func TestLongPollingRefusalWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := constant(t, 2*time.Second, retry.WithLongPolling(true), retry.WithMaxCapacity(0))
		tok, err := s.AcquireInitialToken(t.Context(), "")
		require.NoError(t, err)
		start := time.Now()
		_, err = s.RefreshRetryToken(t.Context(), tok, errTransient)
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
		assert.Equal(t, 2*time.Second, time.Since(start), "a long-polling refusal waits the backoff first")

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		tok, _ = s.AcquireInitialToken(ctx, "")
		_, err = s.RefreshRetryToken(ctx, tok, errTransient)
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
		require.ErrorIs(t, err, context.Canceled, "the wait was cut short")
	})
}

// sleeperClock is a virtual clock that provides waits: Sleep moves the
// clock forward by d at once, as an event-driven test clock might.
type sleeperClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *sleeperClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *sleeperClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func TestSleeperClockProvidesTheWaits(t *testing.T) {
	clock := &sleeperClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, err := retry.NewStandard(retry.WithClock(clock), retry.WithBackoff(retry.ConstantBackoff(time.Hour)), retry.WithMaxAttempts(3))
	require.NoError(t, err)
	start := time.Now()
	_, err = retry.Do(t.Context(), func(context.Context) (int, error) { return 0, errTransient }, retry.WithStrategy(s))
	require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
	assert.Equal(t, []time.Duration{time.Hour, time.Hour}, clock.sleeps, "both backoffs went through the clock")
	assert.Less(t, time.Since(start), time.Hour, "no real hour passed")
}

func TestClockThatCannotWait(t *testing.T) {
	clock := newManualClock()
	s, err := retry.NewStandard(retry.WithClock(clock), retry.WithBackoff(retry.ConstantBackoff(time.Second)))
	require.NoError(t, err)
	tok, err := s.AcquireInitialToken(t.Context(), "")
	require.NoError(t, err, "no wait, no need for one")
	_, err = s.RefreshRetryToken(t.Context(), tok, errTransient)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "Sleeper")
	assert.Equal(t, float64(retry.DefaultMaxCapacity), s.RetryQuota().Stats().Available, "the retry's cost was given back")

	// The Plan methods need no waits.
	tok, _ = s.PlanInitialToken("")
	next, wait, err := s.PlanRetryToken(tok, errTransient)
	require.NoError(t, err)
	assert.Equal(t, time.Second, wait)
	assert.Equal(t, time.Second, next.Delay())
	d, err := s.Admit(next)
	require.NoError(t, err)
	assert.Zero(t, d, "a standard strategy admits at once")
}

// busyLimiter returns a shared rate limiter, in the current synctest bubble,
// that has seen throttling and whose send slots are reserved for the next
// several seconds. It runs the published algorithm, whose first throttle
// starts pacing at once.
func busyLimiter(t *testing.T) *retry.RateLimiter {
	t.Helper()
	l, err := retry.NewRateLimiter(retry.WithPublishedCUBIC())
	require.NoError(t, err)
	makeBusy(t, l)
	return l
}

// makeBusy has l see throttling, and reserves its send slots for the next
// several seconds.
func makeBusy(t *testing.T, l *retry.RateLimiter) {
	t.Helper()
	for i := 0; !l.Stats().Enabled; i++ {
		require.Less(t, i, 10_000, "the limiter never enabled")
		l.Update(true)
	}
	for {
		d, err := l.Acquire()
		require.NoError(t, err)
		if d > 5*time.Second {
			return
		}
	}
}

func TestAcquireWaitsForASendSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := busyLimiter(t)
		a, err := retry.NewAdaptive(retry.WithRateLimiter(l), retry.WithMaxSendWait(time.Minute))
		require.NoError(t, err)
		start := time.Now()
		tok, err := a.AcquireInitialToken(t.Context(), "")
		require.NoError(t, err)
		waited := time.Since(start)
		assert.Greater(t, waited, 5*time.Second, "waited for the next free slot")
		assert.Equal(t, waited, tok.Delay(), "Delay reports the pacing wait")
	})
}

func TestSendSlotWaitEnds(t *testing.T) {
	t.Run("context canceled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, err := retry.NewAdaptive(retry.WithRateLimiter(busyLimiter(t)), retry.WithMaxSendWait(time.Minute))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(time.Second, cancel)
			start := time.Now()
			tok, err := a.AcquireInitialToken(ctx, "")
			assert.Nil(t, tok)
			require.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, time.Second, time.Since(start))
		})
	})
	t.Run("deadline too soon", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, err := retry.NewAdaptive(retry.WithRateLimiter(busyLimiter(t)), retry.WithMaxSendWait(time.Minute))
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			start := time.Now()
			_, err = a.AcquireInitialToken(ctx, "")
			require.ErrorIs(t, err, retry.ErrDeadlineTooSoon)
			assert.Zero(t, time.Since(start), "refused at once")
		})
	})
	t.Run("longer than the maximum send wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a, err := retry.NewAdaptive(retry.WithRateLimiter(busyLimiter(t)), retry.WithMaxSendWait(time.Second))
			require.NoError(t, err)
			start := time.Now()
			_, err = a.AcquireInitialToken(t.Context(), "")
			require.ErrorIs(t, err, retry.ErrRateLimited)
			assert.Contains(t, err.Error(), "WithMaxSendWait")
			assert.Zero(t, time.Since(start), "refused at once: the slot is further away than the bound")
		})
	})
	t.Run("retry refused: quota given back", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l, err := retry.NewRateLimiter(retry.WithPublishedCUBIC())
			require.NoError(t, err)
			a, err := retry.NewAdaptive(retry.WithRateLimiter(l), retry.WithMaxSendWait(time.Second),
				retry.WithBackoff(retry.ConstantBackoff(0)))
			require.NoError(t, err)
			tok, err := a.AcquireInitialToken(t.Context(), "")
			require.NoError(t, err)
			makeBusy(t, l)
			_, err = a.RefreshRetryToken(t.Context(), tok, errTransient)
			require.ErrorIs(t, err, retry.ErrRateLimited)
			assert.Equal(t, float64(retry.DefaultMaxCapacity), a.RetryQuota().Stats().Available, "the refused retry's cost was given back")
		})
	})
}

func TestMaxSendWaitBadInput(t *testing.T) {
	_, err := retry.NewAdaptive(retry.WithMaxSendWait(-time.Second))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "WithMaxSendWait")
}

func TestZeroAndNilValues(t *testing.T) {
	fn := func(context.Context) (int, error) { return 1, nil }
	for name, opt := range map[string]retry.DoOption{
		"nil *Standard":  retry.WithStrategy((*retry.Standard)(nil)),
		"zero Standard":  retry.WithStrategy(&retry.Standard{}),
		"nil *Adaptive":  retry.WithStrategy((*retry.Adaptive)(nil)),
		"zero Adaptive":  retry.WithStrategy(&retry.Adaptive{}),
		"nil interface":  retry.WithStrategy(nil),
		"zero DoOption":  {},
		"bad timeout":    retry.WithAttemptTimeout(-1),
		"zero timeout":   retry.WithAttemptTimeout(0),
		"valid, control": retry.WithScope("x"),
	} {
		t.Run(name, func(t *testing.T) {
			calls := 0
			_, err := retry.Do(t.Context(), func(ctx context.Context) (int, error) { calls++; return fn(ctx) }, opt)
			if name == "valid, control" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.Zero(t, calls, "no attempt with a bad configuration")
		})
	}
	//lint:ignore SA1012 a nil Context is the bad input under test
	_, err := retry.Do(nil, fn) //nolint:staticcheck
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "nil context")
	require.ErrorIs(t, retry.Run(t.Context(), nil), retry.ErrInvalidConfig)
	_, err = retry.Do[int](t.Context(), nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)

	for _, s := range []interface {
		retry.RetryStrategy
		Stats(string) (retry.ScopeStats, bool)
		MaxAttempts() int
		RetryQuota() *retry.TokenBucket
	}{(*retry.Standard)(nil), &retry.Standard{}, (*retry.Adaptive)(nil), &retry.Adaptive{}} {
		_, err := s.AcquireInitialToken(t.Context(), "")
		require.ErrorIs(t, err, retry.ErrInvalidConfig, "%T", s)
		_, err = s.RefreshRetryToken(t.Context(), nil, errTransient)
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
		require.ErrorIs(t, s.RecordSuccess(nil), retry.ErrInvalidConfig)
		_, ok := s.Stats("")
		assert.False(t, ok)
		assert.Zero(t, s.MaxAttempts())
		assert.Nil(t, s.RetryQuota())
	}
}

func newAdaptive(t *testing.T, opts ...retry.AdaptiveOption) *retry.Adaptive {
	t.Helper()
	a, err := retry.NewAdaptive(append([]retry.AdaptiveOption{retry.WithBackoff(retry.ConstantBackoff(0))}, opts...)...)
	require.NoError(t, err)
	return a
}

func TestZeroBucketAndLimiter(t *testing.T) {
	for _, b := range []*retry.TokenBucket{nil, {}} {
		_, err := b.Acquire(1)
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
		require.ErrorIs(t, b.Release(1), retry.ErrInvalidConfig)
		assert.Zero(t, b.Stats())
		_, err = retry.NewStandard(retry.WithRetryQuota(b))
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
		assert.Contains(t, err.Error(), "WithRetryQuota")
	}
	for _, l := range []*retry.RateLimiter{nil, {}} {
		l.Update(true)
		d, err := l.Acquire()
		require.NoError(t, err)
		assert.Zero(t, d, "a zero limiter never paces")
		assert.Zero(t, l.Stats())
		_, err = retry.NewAdaptive(retry.WithRateLimiter(l))
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
		assert.Contains(t, err.Error(), "WithRateLimiter")
	}
}
