package retry_test

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

var (
	errBroken  = retry.Transient(errors.New("503"))
	errSlow    = retry.TimedOut(errors.New("read timeout"))
	errTooMany = retry.Throttled(errors.New("429"))
)

// budgeted returns a Standard with its own quota q, whose Stats the tests
// read, and no backoff.
func budgeted(t *testing.T, opts ...retry.TokenBucketOption) (*retry.Standard, *retry.TokenBucket) {
	t.Helper()
	q, err := retry.NewTokenBucket(opts...)
	require.NoError(t, err)
	s, err := retry.NewStandard(retry.WithRetryQuota(q), retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	return s, q
}

// fail makes a request whose attempts all fail with err, and returns how
// many attempts it made and why it stopped.
func fail(t *testing.T, s *retry.Standard, err error) (int, error) {
	t.Helper()
	tok, ierr := s.PlanInitialToken("")
	require.NoError(t, ierr)
	for attempts := 1; ; attempts++ {
		next, perr := plan(s, tok, err)
		if perr != nil {
			return attempts, perr
		}
		tok = next
	}
}

func TestRetryBudgetBadInput(t *testing.T) {
	for _, ratio := range []float64{-0.1, 1.01, math.NaN(), math.Inf(1)} {
		_, err := retry.NewTokenBucket(retry.WithRetryBudget(ratio))
		require.ErrorIs(t, err, retry.ErrInvalidConfig, "%v", ratio)
		assert.ErrorContains(t, err, "WithRetryBudget")
		assert.ErrorContains(t, err, "[0, 1]")
		_, err = retry.NewStandard(retry.WithRetryBudget(ratio))
		require.ErrorIs(t, err, retry.ErrInvalidConfig, "%v", ratio)
	}
	for _, ratio := range []float64{0, 0.05, 1} {
		_, err := retry.NewTokenBucket(retry.WithRetryBudget(ratio))
		require.NoError(t, err, "%v", ratio)
	}
}

// A scope that has not failed retries as the AWS SDKs do; once a request
// gives up, retries are paid from the budget, a fifth of a retry for each
// request whose first attempt fails, until an attempt succeeds.
func TestRetryBudgetFailingScope(t *testing.T) {
	s, q := budgeted(t)
	n, err := fail(t, s, errBroken)
	assert.Equal(t, retry.DefaultMaxAttempts, n, "a scope that has not failed makes every attempt")
	require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
	require.True(t, q.Stats().Failing, "a request gave up: the scope fails")
	assert.Zero(t, q.Stats().Budget, "the budget starts empty")
	available := q.Stats().Available

	// Four requests add four fifths of a retry; the fifth request's first
	// retry is paid, its second refused.
	for i := range 4 {
		n, err := fail(t, s, errBroken)
		assert.Equal(t, 1, n, "request %d", i)
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
		assert.ErrorContains(t, err, "WithRetryBudget")
	}
	assert.InDelta(t, 0.8, q.Stats().Budget, 1e-9)
	assert.Equal(t, available, q.Stats().Available, "a retry the budget refuses takes nothing from the quota")
	n, err = fail(t, s, errBroken)
	assert.Equal(t, 2, n)
	require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	assert.Equal(t, available-retry.DefaultRetryCost, q.Stats().Available, "the retry the budget paid paid the quota too")

	// A success ends it: the next request makes every attempt.
	tok, err := s.PlanInitialToken("")
	require.NoError(t, err)
	require.NoError(t, s.RecordSuccess(tok))
	assert.False(t, q.Stats().Failing)
	n, _ = fail(t, s, errBroken)
	assert.Equal(t, retry.DefaultMaxAttempts, n)
}

// The budget holds at most ten retries, however long the scope fails.
func TestRetryBudgetCap(t *testing.T) {
	s, q := budgeted(t, retry.WithMaxCapacity(0)) // the quota refuses every retry
	_, err := fail(t, s, errBroken)
	require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	require.True(t, q.Stats().Failing, "a retry the quota refuses is a request that gives up")
	for range 100 {
		_, err := fail(t, s, errBroken)
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	}
	assert.InDelta(t, 10, q.Stats().Budget, 1e-9, "a retry the quota refuses gives back what the budget took")
}

// A throttle starts no failure: the service holds the client back, it is
// not broken. Two timeouts in one request do: the service is slow.
func TestRetryBudgetWhatFails(t *testing.T) {
	s, q := budgeted(t)
	n, err := fail(t, s, errTooMany)
	assert.Equal(t, retry.DefaultMaxAttempts, n)
	require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
	assert.False(t, q.Stats().Failing, "throttles")

	n, err = fail(t, s, errSlow)
	assert.Equal(t, 2, n, "a retry that timed out too is not retried again unless the budget pays")
	require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	assert.True(t, q.Stats().Failing, "timeouts")

	// While the scope fails, throttles are paid from the budget too.
	n, err = fail(t, s, errTooMany)
	assert.Equal(t, 1, n)
	require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
}

// WithRetryBudget(0) leaves the quota alone, as the AWS SDKs have it.
func TestRetryBudgetOff(t *testing.T) {
	s, q := budgeted(t, retry.WithRetryBudget(0))
	for range 10 {
		n, err := fail(t, s, errSlow)
		assert.Equal(t, retry.DefaultMaxAttempts, n)
		require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
	}
	assert.False(t, q.Stats().Failing)
}

// Many goroutines failing, retrying and succeeding at once: the budget
// never holds less than nothing or more than its cap, every refusal is the
// quota's sentinel, and once everything has succeeded the scope no longer
// fails and the quota is whole again.
func TestRetryBudgetConcurrent(t *testing.T) {
	s, q := budgeted(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				tok, err := s.PlanInitialToken("")
				if err != nil {
					errs <- err
					return
				}
				for (i+g)%3 != 0 {
					next, err := plan(s, tok, errBroken)
					if err != nil {
						if !errors.Is(err, retry.ErrRetryQuotaExceeded) && !errors.Is(err, retry.ErrMaxAttemptsExceeded) {
							errs <- err
						}
						tok = nil
						break
					}
					tok = next
					i++
				}
				if tok != nil {
					_ = s.RecordSuccess(tok)
				}
				if b := q.Stats().Budget; b < 0 || b > 10 {
					errs <- fmt.Errorf("budget %v outside [0, 10]", b)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for range retry.DefaultMaxCapacity { // successes earn the quota back
		tok, _ := s.PlanInitialToken("")
		require.NoError(t, s.RecordSuccess(tok))
	}
	st := q.Stats()
	assert.False(t, st.Failing)
	assert.Equal(t, float64(st.Capacity), st.Available)
}
