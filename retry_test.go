package retry_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

var errTransient = retry.Transient(errors.New("transient failure"))

// failing returns a function that fails with errs in turn, then succeeds
// with "ok", and counts its calls and the time of each.
func failing(errs ...error) (func(context.Context) (string, error), *[]time.Time) {
	var calls []time.Time
	return func(context.Context) (string, error) {
		calls = append(calls, time.Now())
		if n := len(calls); n <= len(errs) {
			return "", errs[n-1]
		}
		return "ok", nil
	}, &calls
}

func constant(t *testing.T, d time.Duration, opts ...retry.StandardOption) *retry.Standard {
	t.Helper()
	s, err := retry.NewStandard(append([]retry.StandardOption{retry.WithBackoff(retry.ConstantBackoff(d))}, opts...)...)
	require.NoError(t, err)
	return s
}

func TestDoSucceedsAfterRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := constant(t, time.Second)
		fn, calls := failing(errTransient, errTransient)
		start := time.Now()

		v, err := retry.Do(t.Context(), fn, retry.WithStrategy(s))

		require.NoError(t, err)
		assert.Equal(t, "ok", v)
		require.Len(t, *calls, 3)
		assert.Equal(t, time.Duration(0), (*calls)[0].Sub(start), "the first attempt does not wait")
		assert.Equal(t, time.Second, (*calls)[1].Sub((*calls)[0]))
		assert.Equal(t, time.Second, (*calls)[2].Sub((*calls)[1]))
		assert.Equal(t, float64(retry.DefaultMaxCapacity-retry.DefaultRetryCost), s.RetryQuota().Stats().Available,
			"two retries took 10; the success gave the last retry's 5 back")
	})
}

func TestDoGivesUp(t *testing.T) {
	permanent := retry.Permanent(errors.New("bad request"))
	tests := []struct {
		name     string
		opts     []retry.StandardOption
		errs     []error
		reason   error
		attempts int
	}{
		{"max attempts", nil, []error{errTransient, errTransient, errTransient}, retry.ErrMaxAttemptsExceeded, 3},
		{"one attempt allowed", []retry.StandardOption{retry.WithMaxAttempts(1)}, []error{errTransient}, retry.ErrMaxAttemptsExceeded, 1},
		{"not retryable", nil, []error{permanent}, retry.ErrNotRetryable, 1},
		{"not retryable after a retry", nil, []error{errTransient, permanent}, retry.ErrNotRetryable, 2},
		{"unknown error", nil, []error{errors.New("mystery")}, retry.ErrNotRetryable, 1},
		{"quota", []retry.StandardOption{retry.WithMaxCapacity(5)}, []error{errTransient, errTransient}, retry.ErrRetryQuotaExceeded, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fn, calls := failing(tt.errs...)
				_, err := retry.Do(t.Context(), fn, retry.WithStrategy(constant(t, time.Millisecond, tt.opts...)))

				require.ErrorIs(t, err, tt.reason)
				require.ErrorIs(t, err, tt.errs[len(tt.errs)-1], "the last attempt's error is reachable")
				var e *retry.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, tt.attempts, e.Attempts)
				assert.Len(t, *calls, tt.attempts)
				assert.Contains(t, err.Error(), tt.errs[len(tt.errs)-1].Error())
			})
		})
	}
}

func TestDoContextDoneBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	_, err := retry.Do(ctx, func(context.Context) (int, error) { called = true; return 1, nil })

	assert.False(t, called, "fn must not be called")
	require.ErrorIs(t, err, context.Canceled)
	var e *retry.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 0, e.Attempts)
	assert.Nil(t, e.Err)
	assert.Contains(t, err.Error(), "no attempt made")
}

func TestDoContextEndsDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := constant(t, time.Minute, retry.WithMaxAttempts(5))
		ctx, cancel := context.WithCancelCause(t.Context())
		cause := errors.New("shutting down")
		time.AfterFunc(30*time.Second, func() { cancel(cause) })
		fn, calls := failing(errTransient, errTransient)

		_, err := retry.Do(ctx, fn, retry.WithStrategy(s))

		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, cause, "the cancellation cause is reachable")
		require.ErrorIs(t, err, errTransient, "the last attempt's error is reachable")
		assert.Len(t, *calls, 1)
		assert.Equal(t, float64(retry.DefaultMaxCapacity), s.RetryQuota().Stats().Available,
			"the abandoned retry's cost went back to the bucket")
	})
}

func TestDoContextEndsDuringAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		_, err := retry.Do(ctx, func(ctx context.Context) (int, error) {
			calls++
			cancel()
			return 0, retry.Transient(ctx.Err())
		}, retry.WithStrategy(constant(t, 0)))

		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, calls, "never retried once the caller's context ended")
	})
}

func TestDoDeadlineTooSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		fn, calls := failing(errTransient, errTransient)

		_, err := retry.Do(ctx, fn, retry.WithStrategy(constant(t, 10*time.Second)))

		require.ErrorIs(t, err, retry.ErrDeadlineTooSoon)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, errTransient)
		assert.Len(t, *calls, 1)
		assert.Equal(t, time.Duration(0), time.Since(start), "stopped at once instead of sleeping into the deadline")
	})
}

func TestDoWaitsWhenDeadlineAllows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		fn, calls := failing(errTransient)

		v, err := retry.Do(ctx, fn, retry.WithStrategy(constant(t, 4*time.Second)))

		require.NoError(t, err)
		assert.Equal(t, "ok", v)
		assert.Len(t, *calls, 2)
	})
}

func TestDoAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		start := time.Now()
		v, err := retry.Do(t.Context(), func(ctx context.Context) (string, error) {
			if calls.Add(1) == 1 {
				<-ctx.Done() // the first attempt hangs until its own deadline
				return "", ctx.Err()
			}
			return "ok", nil
		}, retry.WithStrategy(constant(t, 0)), retry.WithAttemptTimeout(2*time.Second))

		require.NoError(t, err)
		assert.Equal(t, "ok", v)
		assert.Equal(t, int32(2), calls.Load())
		assert.Equal(t, 2*time.Second, time.Since(start))
	})
}

func TestDoAttemptTimeoutIsClassifiedAsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, err := retry.NewTokenBucket()
		require.NoError(t, err)
		s, err := retry.NewStandard(retry.WithRetryQuota(q), retry.WithBackoff(retry.NoBackoff), retry.WithMaxAttempts(2))
		require.NoError(t, err)

		_, err = retry.Do(t.Context(), func(ctx context.Context) (int, error) {
			<-ctx.Done()
			return 0, ctx.Err()
		}, retry.WithStrategy(s), retry.WithAttemptTimeout(time.Second))

		require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, float64(retry.DefaultMaxCapacity-retry.DefaultTimeoutRetryCost), q.Stats().Available,
			"the retry paid the timeout cost")
	})
}

func TestDoNoInitialTokenStillAttemptsOnce(t *testing.T) {
	q, err := retry.NewTokenBucket(retry.WithMaxCapacity(10), retry.WithInitialTryCost(20))
	require.NoError(t, err)
	s, err := retry.NewStandard(retry.WithRetryQuota(q))
	require.NoError(t, err)

	t.Run("success", func(t *testing.T) {
		v, err := retry.Do(t.Context(), func(context.Context) (int, error) { return 7, nil }, retry.WithStrategy(s))
		require.NoError(t, err)
		assert.Equal(t, 7, v)
	})
	t.Run("failure is not retried", func(t *testing.T) {
		fn, calls := failing(errTransient)
		_, err := retry.Do(t.Context(), fn, retry.WithStrategy(s))
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
		require.ErrorIs(t, err, errTransient)
		assert.Len(t, *calls, 1)
	})
}

func TestDoPanicPropagates(t *testing.T) {
	defer func() {
		assert.Equal(t, "boom", recover())
	}()
	_, _ = retry.Do(t.Context(), func(context.Context) (int, error) { panic("boom") })
	t.Fatal("Do returned after a panic")
}

func TestDoBadOptions(t *testing.T) {
	tests := []struct {
		name   string
		opt    retry.DoOption
		option string
	}{
		{"nil strategy", retry.WithStrategy(nil), "WithStrategy"},
		{"zero attempt timeout", retry.WithAttemptTimeout(0), "WithAttemptTimeout"},
		{"negative attempt timeout", retry.WithAttemptTimeout(-time.Second), "WithAttemptTimeout"},
		{"zero option", retry.DoOption{}, "DoOption"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			err := retry.Run(t.Context(), func(context.Context) error { called = true; return nil }, tt.opt)
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tt.option)
			assert.False(t, called)
		})
	}
}

func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := retry.Run(t.Context(), func(context.Context) error {
			calls++
			if calls < 2 {
				return errTransient
			}
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, 2, calls)
	})
}

func TestDefaultStrategyIsShared(t *testing.T) {
	require.Same(t, retry.DefaultStrategy(), retry.DefaultStrategy())
	assert.Equal(t, retry.DefaultMaxAttempts, retry.DefaultStrategy().MaxAttempts())
}

func TestDoScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := constant(t, 0, retry.WithMaxCapacity(5))
		fn := func(context.Context) (int, error) { return 0, errTransient }

		_, err := retry.Do(t.Context(), fn, retry.WithStrategy(s), retry.WithScope("a"))
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded, "scope a spent its 5 tokens on one retry")
		_, err = retry.Do(t.Context(), fn, retry.WithStrategy(s), retry.WithScope("b"))
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
		var e *retry.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, 2, e.Attempts, "scope b has a quota of its own")
	})
}

// A strategy that refuses the initial token because it is not configured
// properly allows no attempt at all, as a refusal for a send slot does.
func TestDoStrategyNotConfiguredMakesNoAttempt(t *testing.T) {
	broken := fmt.Errorf("%w: no scopes configured", retry.ErrInvalidConfig)
	calls := 0
	_, err := retry.Do(t.Context(), func(context.Context) (int, error) {
		calls++
		return 1, nil
	}, retry.WithStrategy(refusingStrategy{broken}))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	var e *retry.Error
	require.ErrorAs(t, err, &e)
	assert.Zero(t, e.Attempts)
	assert.Zero(t, calls)
}

// refusingStrategy refuses every initial token with its error.
type refusingStrategy struct{ err error }

func (s refusingStrategy) AcquireInitialToken(context.Context, string) (retry.RetryToken, error) {
	return nil, s.err
}
func (refusingStrategy) RefreshRetryToken(context.Context, retry.RetryToken, error) (retry.RetryToken, error) {
	return nil, retry.ErrNotRetryable
}
func (refusingStrategy) RecordSuccess(retry.RetryToken) error { return nil }

// customStrategy is a RetryStrategy from outside the package: Do drives it
// through the interface. It waits n seconds before retry n when wait is
// set, and not at all otherwise.
type customStrategy struct {
	recorded int
	retries  int
	wait     bool
}

type customToken struct{ n int }

func (t customToken) Delay() time.Duration { return time.Duration(t.n) * time.Second }
func (t customToken) RetryCount() int      { return t.n }

func (s *customStrategy) AcquireInitialToken(context.Context, string) (retry.RetryToken, error) {
	return customToken{}, nil
}
func (s *customStrategy) RefreshRetryToken(ctx context.Context, tok retry.RetryToken, err error) (retry.RetryToken, error) {
	n := tok.RetryCount() + 1
	if n > s.retries {
		return nil, fmt.Errorf("custom: no more: %w", retry.ErrMaxAttemptsExceeded)
	}
	next := customToken{n: n}
	if s.wait {
		select {
		case <-time.After(next.Delay()):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return next, nil
}
func (s *customStrategy) RecordSuccess(retry.RetryToken) error { s.recorded++; return nil }

func TestDoCustomStrategy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &customStrategy{retries: 4, wait: true}
		fn, calls := failing(errTransient, errTransient)
		v, err := retry.Do(t.Context(), fn, retry.WithStrategy(s))
		require.NoError(t, err)
		assert.Equal(t, "ok", v)
		assert.Equal(t, time.Second, (*calls)[1].Sub((*calls)[0]), "the strategy waited")
		assert.Equal(t, 2*time.Second, (*calls)[2].Sub((*calls)[1]))
		assert.Equal(t, 1, s.recorded)

		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		fn, _ = failing(errTransient, errTransient)
		_, err = retry.Do(ctx, fn, retry.WithStrategy(s))
		require.ErrorIs(t, err, context.DeadlineExceeded, "the strategy's wait ended with ctx")
		require.ErrorIs(t, err, errTransient, "the last attempt's error is kept")
	})
}

func TestDoWaitsNothingItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &customStrategy{retries: 2}
		fn, calls := failing(errTransient, errTransient)
		_, err := retry.Do(t.Context(), fn, retry.WithStrategy(s))
		require.NoError(t, err)
		require.Len(t, *calls, 3)
		assert.Equal(t, (*calls)[0], (*calls)[2], "a strategy that returns at once gets immediate retries")
	})
}

type nilTokenStrategy struct{ customStrategy }

func (nilTokenStrategy) AcquireInitialToken(context.Context, string) (retry.RetryToken, error) {
	return nil, nil
}

func TestDoStrategyReturningNoToken(t *testing.T) {
	fn, calls := failing(errTransient)
	_, err := retry.Do(t.Context(), fn, retry.WithStrategy(&nilTokenStrategy{}))
	require.ErrorIs(t, err, retry.ErrInvalidToken)
	assert.Len(t, *calls, 1, "one attempt even without a token")
}

// The count of attempts appears once in Do's error.
func TestDoErrorMessageSaysTheCountOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, err := retry.Do(t.Context(), func(context.Context) (int, error) { return 0, errors.New("boom") },
			retry.WithStrategy(constant(t, 0, retry.WithClassifier(func(error) retry.Classification {
				return retry.Classification{Safety: retry.SafetyYes}
			}))))
		assert.EqualError(t, err, "retry: max attempts exceeded (after 3 attempts): boom")
	})
}

func TestErrorMessage(t *testing.T) {
	last := errors.New("boom")
	assert.Equal(t, "retry: max attempts exceeded (after 3 attempts): boom",
		(&retry.Error{Attempts: 3, Err: last, Reason: retry.ErrMaxAttemptsExceeded}).Error())
	assert.Equal(t, "retry: error is not retryable (after 1 attempt): boom",
		(&retry.Error{Attempts: 1, Err: last, Reason: retry.ErrNotRetryable}).Error())
}

// lateContext has a deadline that has passed by the clock, but has not
// ended yet: the moment before its timer fires.
type lateContext struct{ context.Context }

func (lateContext) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestDoDoesNotRetryPastTheDeadline(t *testing.T) {
	var events []retry.Event
	s := constant(t, 0, retry.WithHook(func(ev retry.Event) { events = append(events, ev) }))
	fn, calls := failing(errTransient)
	_, err := retry.Do(lateContext{t.Context()}, fn, retry.WithStrategy(s))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, errTransient)
	assert.Len(t, *calls, 1, "the caller's deadline had passed: no retry")
	for _, ev := range events {
		assert.NotEqual(t, retry.EventRetry, ev.Kind, "no retry was even planned")
	}
}

// A panic in the called function gives back the retry quota its attempt
// took, and still reaches the caller.
func TestDoPanicGivesBackQuota(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(0)))
	require.NoError(t, err)
	full := s.RetryQuota().Stats().Available
	for i := range 10 {
		calls := 0
		assert.PanicsWithValue(t, "boom", func() {
			_, _ = retry.Do(t.Context(), func(context.Context) (int, error) {
				calls++
				if calls == 2 {
					panic("boom") // during the retry, which paid for itself
				}
				return 0, errTransient
			}, retry.WithStrategy(s))
		}, "call %d", i)
	}
	assert.Equal(t, full, s.RetryQuota().Stats().Available, "ten panics during a retry keep no quota")
}

// The same holds with a per-attempt timeout, and for a strategy of another
// package that can release a token.
func TestDoPanicGivesBackQuotaAttemptTimeout(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(0)))
	require.NoError(t, err)
	full := s.RetryQuota().Stats().Available
	wrapped := struct{ retry.RetryStrategy }{s} // hides the engine: the general path
	for _, strategy := range []retry.RetryStrategy{s, releaser{wrapped, s}} {
		calls := 0
		assert.Panics(t, func() {
			_, _ = retry.Do(t.Context(), func(context.Context) (int, error) {
				calls++
				if calls == 3 {
					panic("boom")
				}
				return 0, errTransient
			}, retry.WithStrategy(strategy), retry.WithAttemptTimeout(time.Hour))
		})
	}
	// Each call made one retry that succeeded in failing (its cost spent,
	// as any failed retry's is) and one that panicked (given back).
	assert.Equal(t, full-2*float64(retry.DefaultRetryCost), s.RetryQuota().Stats().Available)
}

type releaser struct {
	retry.RetryStrategy
	s *retry.Standard
}

func (r releaser) ReleaseToken(t retry.RetryToken) error { return r.s.ReleaseToken(t) }
