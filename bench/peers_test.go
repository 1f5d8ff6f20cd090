package bench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	avast "github.com/avast/retry-go/v4"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/bench/awsstorm"
	sethvargo "github.com/sethvargo/go-retry"
)

// The rules every library is held to:
//
//   - All call the same work function, through a func(ctx) (int, error)
//     stored in a caller, so the direct call pays the same indirection.
//   - Whatever does not depend on the call (strategies, policies, executors,
//     option values, stateless backoffs) is made once, outside the timed
//     loop. What a library cannot share between calls (a stateful backoff)
//     is made per call: that is its real cost.
//   - The context is the call's: each library gets it by its own means, and
//     a closure that has to capture it is made per call.
//   - Each library is set up as its documentation recommends, at 3 attempts
//     at most; for three attempts, with zero delays and no retry quota.

// key is what work hashes. It is only read, so work is safe to call from
// many goroutines.
var key = []byte("retrykit/bench")

// work is the operation every benchmark retries: a small hash, kept out of
// line so that every library calls the same code.
//
//go:noinline
func work(context.Context) (int, error) {
	h := uint32(2166136261) // FNV-1a
	for _, c := range key {
		h ^= uint32(c)
		h *= 16777619
	}
	return int(h), nil
}

// A caller calls work, or a function around it, once through one library.
type caller struct {
	name string
	call func(context.Context) (int, error)
}

// successCallers returns the callers for cases (a) and (c), each library
// set up as recommended. The strategies are shared by all calls.
func successCallers(tb testing.TB) []caller {
	rk, err := retry.NewStandard()
	if err != nil {
		tb.Fatal(err)
	}
	rkStrategy := retry.WithStrategy(rk)

	awsStandard := awsretry.NewStandard()
	awsAdaptive := awsretry.NewAdaptiveMode()

	// backoff.Retry makes a fresh ExponentialBackOff for each call unless
	// given one, and one cannot be shared: it keeps the call's state.
	cenkaltiOpts := []backoff.RetryOption{backoff.WithMaxTries(3)}

	failsafeExec := failsafe.With(retrypolicy.NewBuilder[int]().
		WithBackoff(10*time.Millisecond, 20*time.Second).
		WithMaxAttempts(3).
		Build())
	failsafeWork := func(e failsafe.Execution[int]) (int, error) { return work(e.Context()) }

	avastAttempts := avast.Attempts(3)

	return []caller{
		{"direct", work},
		{"retrykit", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, work, rkStrategy)
		}},
		{"awsStandard", func(ctx context.Context) (int, error) {
			return awsstorm.SDKDo(ctx, awsStandard, work)
		}},
		{"awsAdaptive", func(ctx context.Context) (int, error) {
			return awsstorm.SDKDo(ctx, awsAdaptive, work)
		}},
		{"cenkalti", func(ctx context.Context) (int, error) {
			return backoff.Retry(ctx, func() (int, error) { return work(ctx) }, cenkaltiOpts...)
		}},
		{"failsafe", func(ctx context.Context) (int, error) {
			return failsafeExec.WithContext(ctx).GetWithExecution(failsafeWork)
		}},
		{"avast", func(ctx context.Context) (int, error) {
			return avast.DoWithData(func() (int, error) { return work(ctx) }, avastAttempts, avast.Context(ctx))
		}},
		{"sethvargo", func(ctx context.Context) (int, error) {
			// A go-retry backoff counts the call's retries: one per call.
			b := sethvargo.WithMaxRetries(2, sethvargo.NewExponential(10*time.Millisecond))
			return sethvargo.DoValue(ctx, b, work)
		}},
	}
}

// errFailed is the failure of case (b), before each library marks it as
// retryable in its own way.
var errFailed = errors.New("attempt failed")

// awsRetryableError marks an error as retryable for aws-sdk-go-v2, whose
// RetryableError check looks for this method.
type awsRetryableError struct{ error }

func (awsRetryableError) RetryableError() bool { return true }
func (e awsRetryableError) Unwrap() error      { return e.error }

// The retryable errors of case (b), made once.
var (
	rkTransient              = retry.Transient(errFailed)
	awsRetryable       error = awsRetryableError{errFailed}
	sethvargoRetryable       = sethvargo.RetryableError(errFailed)
)

// failTwice returns a function that fails with err twice, then calls work,
// and starts over. It is not safe for concurrent use.
func failTwice(err error) func(context.Context) (int, error) {
	n := 0
	return func(ctx context.Context) (int, error) {
		if n++; n < 3 {
			return 0, err
		}
		n = 0
		return work(ctx)
	}
}

// threeAttemptCallers returns the callers for case (b): each succeeds on
// the third attempt, after two failures that its library retries at once.
// Retry quotas are off: the first retry's cost is not given back, so a
// quota would refuse retries after some hundred calls.
func threeAttemptCallers(tb testing.TB) []caller {
	rk, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithoutRetryQuota())
	if err != nil {
		tb.Fatal(err)
	}
	rkStrategy := retry.WithStrategy(rk)
	rkFn := failTwice(rkTransient)

	awsNoWait := func(o *awsretry.StandardOptions) {
		o.Backoff = awsretry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		o.RateLimiter = ratelimit.None
	}
	awsStandard := awsretry.NewStandard(awsNoWait)
	awsAdaptive := awsretry.NewAdaptiveMode(func(o *awsretry.AdaptiveModeOptions) {
		o.StandardOptions = append(o.StandardOptions, awsNoWait)
	})
	awsStandardFn, awsAdaptiveFn := failTwice(awsRetryable), failTwice(awsRetryable)

	cenkaltiOpts := []backoff.RetryOption{backoff.WithBackOff(&backoff.ZeroBackOff{}), backoff.WithMaxTries(3)}
	cenkaltiFn := failTwice(errFailed)

	failsafeExec := failsafe.With(retrypolicy.NewWithDefaults[int]()) // 3 attempts, no delay
	failsafeFn := failTwice(errFailed)
	failsafeWork := func(e failsafe.Execution[int]) (int, error) { return failsafeFn(e.Context()) }

	avastAttempts, avastNoDelay, avastFixed := avast.Attempts(3), avast.Delay(0), avast.DelayType(avast.FixedDelay)
	avastFn := failTwice(errFailed)

	sethvargoNoWait := sethvargo.BackoffFunc(func() (time.Duration, bool) { return 0, false })
	sethvargoFn := failTwice(sethvargoRetryable)

	directFn := failTwice(errFailed)

	return []caller{
		{"direct", func(ctx context.Context) (v int, err error) {
			for range 3 {
				if v, err = directFn(ctx); err == nil {
					break
				}
			}
			return v, err
		}},
		{"retrykit", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, rkFn, rkStrategy)
		}},
		{"awsStandard", func(ctx context.Context) (int, error) {
			return awsstorm.SDKDo(ctx, awsStandard, awsStandardFn)
		}},
		{"awsAdaptive", func(ctx context.Context) (int, error) {
			return awsstorm.SDKDo(ctx, awsAdaptive, awsAdaptiveFn)
		}},
		{"cenkalti", func(ctx context.Context) (int, error) {
			return backoff.Retry(ctx, func() (int, error) { return cenkaltiFn(ctx) }, cenkaltiOpts...)
		}},
		{"failsafe", func(ctx context.Context) (int, error) {
			return failsafeExec.WithContext(ctx).GetWithExecution(failsafeWork)
		}},
		{"avast", func(ctx context.Context) (int, error) {
			return avast.DoWithData(func() (int, error) { return avastFn(ctx) },
				avastAttempts, avastNoDelay, avastFixed, avast.Context(ctx))
		}},
		{"sethvargo", func(ctx context.Context) (int, error) {
			return sethvargo.DoValue(ctx, sethvargo.WithMaxRetries(2, sethvargoNoWait), sethvargoFn)
		}},
	}
}

// TestCallers checks that every caller succeeds, twice in a row: for case
// (b), a caller that made fewer than three attempts would fail.
func TestCallers(t *testing.T) {
	ctx := context.Background()
	for _, c := range append(successCallers(t), threeAttemptCallers(t)...) {
		for range 2 {
			if _, err := c.call(ctx); err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		}
	}
}

// runEach benchmarks each caller in turn, from one goroutine.
func runEach(b *testing.B, callers []caller) {
	ctx := context.Background()
	for _, c := range callers {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.call(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSuccess is case (a): the call succeeds at once.
func BenchmarkSuccess(b *testing.B) {
	runEach(b, successCallers(b))
}

// BenchmarkThreeAttempts is case (b): the call fails twice with an error
// its library retries, then succeeds; there is no delay between attempts.
func BenchmarkThreeAttempts(b *testing.B) {
	runEach(b, threeAttemptCallers(b))
}

// BenchmarkSuccessParallel is case (c): case (a) from GOMAXPROCS
// goroutines, all using the same strategy.
func BenchmarkSuccessParallel(b *testing.B) {
	for _, c := range successCallers(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := c.call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
