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

var start = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

func TestClockNow(t *testing.T) {
	epoch := time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, start, retrytest.NewClock(start).Now())
	assert.Equal(t, epoch, retrytest.NewClock(time.Time{}).Now(), "the zero start is not read as the zero time")
	var zero retrytest.Clock
	assert.Equal(t, epoch, zero.Now(), "the zero Clock is ready to use")
	zero.Advance(time.Second)
	assert.Equal(t, epoch.Add(time.Second), zero.Now())
}

func TestClockAdvance(t *testing.T) {
	c := retrytest.NewClock(start)
	c.Advance(90 * time.Second)
	assert.Equal(t, start.Add(90*time.Second), c.Now())
	c.Advance(-30 * time.Second)
	assert.Equal(t, start.Add(time.Minute), c.Now(), "a negative d moves the clock back")
}

// sleep starts c.Sleep(ctx, d) on a goroutine and returns its result's
// channel.
func sleep(ctx context.Context, c *retrytest.Clock, d time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.Sleep(ctx, d) }()
	return done
}

func TestClockSleep(t *testing.T) {
	c := retrytest.NewClock(start)
	ctx := t.Context()
	short, long := sleep(ctx, c, time.Second), sleep(ctx, c, time.Minute)
	require.NoError(t, c.BlockUntilWaiters(ctx, 2))
	assert.Equal(t, 2, c.Waiters())

	c.Advance(time.Second - 1)
	assert.Equal(t, 2, c.Waiters(), "a nanosecond short wakes nobody")
	c.Advance(1)
	require.NoError(t, <-short, "woken exactly at its end")
	assert.Equal(t, 1, c.Waiters())

	c.Advance(-time.Hour)
	assert.Equal(t, 1, c.Waiters(), "moving back wakes nobody")
	c.Advance(2 * time.Hour)
	require.NoError(t, <-long, "woken past its end")
	assert.Zero(t, c.Waiters())
}

func TestClockSleepContext(t *testing.T) {
	c := retrytest.NewClock(start)

	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, c.Sleep(canceled, time.Second), context.Canceled, "an ended context returns at once")
	require.ErrorIs(t, c.Sleep(canceled, 0), context.Canceled)
	require.NoError(t, c.Sleep(t.Context(), 0), "no wait")
	require.NoError(t, c.Sleep(t.Context(), -time.Second), "no wait")
	assert.Zero(t, c.Waiters())

	ctx, cancel := context.WithCancel(t.Context())
	done := sleep(ctx, c, time.Second)
	require.NoError(t, c.BlockUntilWaiters(t.Context(), 1))
	cancel()
	require.ErrorIs(t, <-done, context.Canceled, "the context ended first")
	assert.Zero(t, c.Waiters(), "a wait cut short is no longer waiting")
	assert.Equal(t, start, c.Now(), "and the clock did not move")
}

func TestClockBlockUntilWaiters(t *testing.T) {
	c := retrytest.NewClock(start)
	require.NoError(t, c.BlockUntilWaiters(t.Context(), 0))

	err := c.BlockUntilWaiters(t.Context(), -1)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "BlockUntilWaiters n = -1, want 0 or more")

	ctx, cancel := context.WithCancel(t.Context())
	blocked := make(chan error, 1)
	go func() { blocked <- c.BlockUntilWaiters(ctx, 3) }()
	sleepCtx, stop := context.WithCancel(t.Context())
	defer stop()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _ = c.Sleep(sleepCtx, time.Second) })
	}
	require.NoError(t, c.BlockUntilWaiters(t.Context(), 2), "at least n")
	select {
	case err := <-blocked:
		t.Fatalf("returned with 2 of 3 waiters: %v", err)
	default:
	}
	cancel()
	require.ErrorIs(t, <-blocked, context.Canceled)
	stop()
	wg.Wait()
}

// A strategy built on the clock waits its backoff on it: each retry goes
// ahead when, and only when, the test advances the clock past its wait.
func TestClockDrivesStrategy(t *testing.T) {
	c := retrytest.NewClock(start)
	s, err := retry.NewStandard(retry.WithClock(c), retry.WithBackoff(retry.ConstantBackoff(time.Second)))
	require.NoError(t, err)
	boom := retry.Transient(errors.New("boom"))

	var mu sync.Mutex
	var calledAt []time.Duration
	done := make(chan error, 1)
	go func() {
		_, err := retry.Do(t.Context(), func(context.Context) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			calledAt = append(calledAt, c.Now().Sub(start))
			return 0, boom
		}, retry.WithStrategy(s))
		done <- err
	}()
	for range retry.DefaultMaxAttempts - 1 {
		require.NoError(t, c.BlockUntilWaiters(t.Context(), 1))
		c.Advance(time.Second)
	}
	require.ErrorIs(t, <-done, retry.ErrMaxAttemptsExceeded)
	assert.Equal(t, []time.Duration{0, time.Second, 2 * time.Second}, calledAt)
}

// The send-slot waits of an adaptive strategy go through the clock too.
func TestClockDrivesAdaptive(t *testing.T) {
	c := retrytest.NewClock(start)
	a, err := retry.NewAdaptive(retry.WithClock(c), retry.WithMaxSendWait(time.Hour), retry.WithPublishedCUBIC())
	require.NoError(t, err)
	throttled := retry.Throttled(errors.New("slow down"))

	// Throttles make the limiter pace sending.
	for range 5 {
		tok, err := a.PlanInitialToken("")
		require.NoError(t, err)
		_, _, _ = a.PlanRetryToken(tok, throttled)
	}
	stats, _ := a.Stats("")
	require.True(t, stats.RateLimiter.Enabled)

	// Send until a call has to wait for a send slot; advance the clock
	// whenever one does, until every call is done.
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			_, err := retry.Do(t.Context(), func(context.Context) (int, error) { return 1, nil }, retry.WithStrategy(a))
			assert.NoError(t, err)
		})
	}
	go func() { wg.Wait(); cancel() }()
	advanced := 0
	for c.BlockUntilWaiters(ctx, 1) == nil {
		c.Advance(100 * time.Millisecond)
		advanced++
	}
	assert.Positive(t, advanced, "the calls waited for send slots")
}
