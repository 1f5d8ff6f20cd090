package retrytest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/retrytest"
)

// Each test's strategies are its own: draining one's quota leaves every
// other strategy, and the process-wide default, untouched.
func TestStandardAndAdaptiveAreIsolated(t *testing.T) {
	boom := retry.Transient(errors.New("boom"))
	s1 := retrytest.Standard(t, retry.WithBackoff(retry.NoBackoff))
	s2 := retrytest.Standard(t)
	a := retrytest.Adaptive(t, retry.WithBackoff(retry.NoBackoff))
	for range 60 {
		_, _ = retry.Do(t.Context(), func(context.Context) (int, error) { return 0, boom }, retry.WithStrategy(s1))
		_, _ = retry.Do(t.Context(), func(context.Context) (int, error) { return 0, boom }, retry.WithStrategy(a))
	}
	assert.Less(t, s1.RetryQuota().Stats().Available, float64(retry.DefaultMaxCapacity))
	assert.Less(t, a.RetryQuota().Stats().Available, float64(retry.DefaultMaxCapacity))
	assert.Equal(t, float64(retry.DefaultMaxCapacity), s2.RetryQuota().Stats().Available)
	assert.Equal(t, float64(retry.DefaultMaxCapacity), retry.DefaultStrategy().RetryQuota().Stats().Available)

	ctx, a2 := retrytest.AdaptiveContext(t, retry.WithBackoff(retry.NoBackoff))
	_, err := fetch(ctx, boom)
	require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
	assert.Less(t, a2.RetryQuota().Stats().Available, float64(retry.DefaultMaxCapacity), "Do took the context's strategy")
}

func TestStandardAndAdaptiveBadOptions(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	assert.Nil(t, retrytest.Standard(rec, retry.WithMaxAttempts(0)))
	assert.Contains(t, rec.msg, "retrytest.Standard: ")
	assert.Contains(t, rec.msg, "WithMaxAttempts")

	rec = &fatalRecorder{TB: t}
	assert.Nil(t, retrytest.Adaptive(rec, retry.WithMaxSendWait(-1)))
	assert.Contains(t, rec.msg, "retrytest.Adaptive: ")
	assert.Contains(t, rec.msg, "WithMaxSendWait")

	rec = &fatalRecorder{TB: t}
	ctx, a := retrytest.AdaptiveContext(rec, retry.WithMaxSendWait(-1))
	assert.Nil(t, ctx)
	assert.Nil(t, a)
	assert.Contains(t, rec.msg, "retrytest.AdaptiveContext: ")
}

// Run drives every wait of the code under test with no ceremony, and says
// how long the waits were in all.
func TestClockRun(t *testing.T) {
	c := retrytest.NewClock(start)
	s := retrytest.Standard(t, retry.WithClock(c), retry.WithBackoff(retry.ConstantBackoff(time.Second)))
	var calledAt []time.Duration
	var err error
	waited := c.Run(func() {
		_, err = retry.Do(t.Context(), func(context.Context) (int, error) {
			calledAt = append(calledAt, c.Now().Sub(start))
			return 0, retry.Transient(errors.New("boom"))
		}, retry.WithStrategy(s))
	})
	require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
	assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, calledAt)
	assert.Equal(t, 2*time.Second, waited)
	assert.Equal(t, 0, c.Waiters())

	// Nothing to wait: Run returns at once, having moved nothing.
	assert.Zero(t, c.Run(func() {}))
}

// Run drives an adaptive strategy's send-slot waits, from several
// goroutines at once, to the end.
func TestClockRunAdaptive(t *testing.T) {
	c := retrytest.NewClock(start)
	a := retrytest.Adaptive(t, retry.WithClock(c), retry.WithMaxSendWait(time.Hour), retry.WithPublishedCUBIC())
	for range 5 { // throttles make the limiter pace sending
		tok, err := a.PlanInitialToken("")
		require.NoError(t, err)
		_, _, _ = a.PlanRetryToken(tok, retry.Throttled(errors.New("slow down")))
	}
	waited := c.Run(func() {
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				_, err := retry.Do(t.Context(), func(context.Context) (int, error) { return 1, nil }, retry.WithStrategy(a))
				assert.NoError(t, err)
			})
		}
		wg.Wait()
	})
	assert.Positive(t, waited, "the calls waited for send slots")
}

// A panic in f reaches the caller, and Run's goroutine is gone (goleak, in
// TestMain).
func TestClockRunPanics(t *testing.T) {
	c := retrytest.NewClock(start)
	assert.PanicsWithValue(t, "boom", func() { c.Run(func() { panic("boom") }) })
}
