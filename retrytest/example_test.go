package retrytest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/retrytest"
)

// Step a strategy's backoff with a manual clock: each retry goes ahead
// when the clock is advanced past its wait, with no real waiting.
func ExampleClock() {
	clock := retrytest.NewClock(time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC))
	strategy, err := retry.NewStandard(
		retry.WithClock(clock),
		retry.WithBackoff(retry.ConstantBackoff(time.Second)),
	)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	done := make(chan error)
	go func() {
		_, err := retry.Do(ctx, func(ctx context.Context) (int, error) {
			fmt.Println("attempt at", clock.Now().Format(time.TimeOnly))
			return 0, retry.Transient(errors.New("unavailable"))
		}, retry.WithStrategy(strategy))
		done <- err
	}()
	for range 2 {
		_ = clock.BlockUntilWaiters(ctx, 1) // the call is waiting its backoff
		clock.Advance(time.Second)
	}
	fmt.Println(<-done)
	// Output:
	// attempt at 00:00:00
	// attempt at 00:00:01
	// attempt at 00:00:02
	// retry: max attempts exceeded (after 3 attempts): unavailable
}

// Drive a call whose waits are not known in advance (jittered backoff):
// advance the clock whenever the call waits, until it is done.
func ExampleClock_BlockUntilWaiters() {
	clock := retrytest.NewClock(time.Time{})
	strategy, err := retry.NewStandard(retry.WithClock(clock)) // jittered exponential backoff
	if err != nil {
		panic(err)
	}
	ctx, callDone := context.WithCancel(context.Background())
	attempts := 0
	go func() {
		defer callDone()
		_, _ = retry.Do(ctx, func(ctx context.Context) (int, error) {
			attempts++
			return 0, retry.Transient(errors.New("unavailable"))
		}, retry.WithStrategy(strategy))
	}()
	for clock.BlockUntilWaiters(ctx, 1) == nil {
		clock.Advance(time.Second) // a longer wait takes a few steps
	}
	fmt.Println("attempts:", attempts)
	// Output: attempts: 3
}

// Give the code under test a strategy of its own, even though it calls
// retry.Do without one: tests running in parallel then never share the
// process-wide default strategy or its retry quota. (This example shows a
// test function; it is not run as an example.)
func ExampleContext() {
	_ = func(t *testing.T) {
		t.Parallel()
		ctx, strategy := retrytest.Context(t, retry.WithBackoff(retry.NoBackoff))
		if _, err := fetch(ctx, retry.Transient(errors.New("unavailable"))); !errors.Is(err, retry.ErrMaxAttemptsExceeded) {
			t.Errorf("fetch: %v, want max attempts exceeded", err)
		}
		stats, _ := strategy.Stats("")
		t.Logf("retry quota left: %v", stats.RetryQuota.Available)
	}
}

// The shortest way to test code that retries: a strategy of the test's
// own on a manual clock, and Run, which ends each wait as soon as it
// starts and says how long the waits were.
func ExampleClock_Run() {
	clock := retrytest.NewClock(time.Time{})
	strategy, err := retry.NewStandard(retry.WithClock(clock), retry.WithBackoff(retry.ConstantBackoff(time.Second)))
	if err != nil { // in a test: strategy := retrytest.Standard(t, ...)
		panic(err)
	}
	calls := 0
	waited := clock.Run(func() {
		_, err = retry.Do(context.Background(), func(context.Context) (int, error) {
			if calls++; calls < 3 {
				return 0, retry.Transient(errors.New("unavailable"))
			}
			return 1, nil
		}, retry.WithStrategy(strategy))
	})
	fmt.Println(err, calls, waited)
	// Output: <nil> 3 2s
}

// A classifier must return on an error chain that leads back to itself,
// as retry.Classify does.
func ExampleCyclicError() {
	err := retrytest.CyclicError()
	fmt.Println(retry.FiniteChain(err), retry.Classify(err).Safety)
	// Output: false maybe
}
