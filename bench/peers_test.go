package bench_test

import (
	"context"
	"errors"
	"testing"
	"time"

	avast "github.com/avast/retry-go/v4"
	avast5 "github.com/avast/retry-go/v5"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/bench/awsstorm"
	sethvargo "github.com/sethvargo/go-retry"
)

// The rules every library is held to:
//
//   - All call the same work function, through a func(ctx) (int, error)
//     stored in a caller, so the direct call pays the same indirection.
//   - Each library runs in its fastest configuration that its
//     documentation allows: whatever does not depend on the call
//     (strategies, policies, executors, retriers, option values, stateless
//     backoffs) is made once, outside the timed loop. What a library
//     cannot share between calls (a stateful backoff) is made per call:
//     that is its real cost.
//   - The context is the call's, given to each library its own way. A
//     library that binds the context when its retrier is made (retry-go
//     v5) gets one retrier made once with the benchmark's context, which
//     is what its reuse costs; a caller whose context changes per call
//     would make a retrier per call.
//   - At most 3 attempts; for the retry cases, zero delays.

// one is only read, so work is safe to call from many goroutines.
var one = 1

// work is the operation every benchmark retries: near-empty (an increment
// of a value it reads), kept out of line so that every library calls the
// same code. It is the floor: what a library costs is what it adds to it.
//
//go:noinline
func work(context.Context) (int, error) {
	return one + 1, nil
}

// A caller calls work, or a function around it, once through one library.
type caller struct {
	name string
	call func(context.Context) (int, error)
}

// must returns v, and panics if err is not nil: the benchmarks' settings
// are all valid.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// successCallers returns the callers for the success cases, each library
// set up at its fastest. The strategies are shared by all calls.
func successCallers(tb testing.TB) []caller {
	rkStrategy := retry.WithStrategy(must(retry.NewStandard()))

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

	// retry-go v5 binds the context when the retrier is made: one retrier,
	// reused, with the benchmark's context.
	ctx := context.Background()
	avast5Retrier := avast5.NewWithData[int](avast5.Attempts(3), avast5.Context(ctx))
	avast5Work := func() (int, error) { return work(ctx) }

	return []caller{
		{"direct", work},
		{"retrykit", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, work, rkStrategy)
		}},
		{"retrykit-default", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, work)
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
		{"failsafe-get", func(ctx context.Context) (int, error) {
			// Without the context: failsafe-go then neither sees the
			// caller's cancellation nor passes it on.
			return failsafeExec.Get(func() (int, error) { return work(ctx) })
		}},
		{"avast4", func(ctx context.Context) (int, error) {
			return avast.DoWithData(func() (int, error) { return work(ctx) }, avastAttempts, avast.Context(ctx))
		}},
		{"avast5", func(context.Context) (int, error) {
			return avast5Retrier.Do(avast5Work)
		}},
		{"sethvargo", func(ctx context.Context) (int, error) {
			// A go-retry backoff counts the call's retries: one per call.
			b := sethvargo.WithMaxRetries(2, sethvargo.NewExponential(10*time.Millisecond))
			return sethvargo.DoValue(ctx, b, work)
		}},
	}
}

// errFailed is the failure of the retry cases, before each library marks
// it as retryable in its own way.
var errFailed = errors.New("attempt failed")

// awsRetryableError marks an error as retryable for aws-sdk-go-v2, whose
// RetryableError check looks for this method.
type awsRetryableError struct{ error }

func (awsRetryableError) RetryableError() bool { return true }
func (e awsRetryableError) Unwrap() error      { return e.error }

// The retryable errors of the retry cases, made once.
var (
	rkTransient              = retry.Transient(errFailed)
	awsRetryable       error = awsRetryableError{errFailed}
	sethvargoRetryable       = sethvargo.RetryableError(errFailed)
)

// failing returns a function that fails with err n times, then calls
// work, and starts over. It is not safe for concurrent use.
func failing(n int, err error) func(context.Context) (int, error) {
	i := 0
	return func(ctx context.Context) (int, error) {
		if i++; i <= n {
			return 0, err
		}
		i = 0
		return work(ctx)
	}
}

// directRetry calls fn up to attempts times until it succeeds: the floor of
// the retry cases.
func directRetry(attempts int, fn func(context.Context) (int, error)) func(context.Context) (int, error) {
	return func(ctx context.Context) (v int, err error) {
		for range attempts {
			if v, err = fn(ctx); err == nil {
				break
			}
		}
		return v, err
	}
}

// awsNoWait sets an aws-sdk-go-v2 retryer to retry at once, without a
// retry quota.
func awsNoWait(o *awsretry.StandardOptions) {
	o.Backoff = awsretry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	o.RateLimiter = ratelimit.None
}

// threeAttemptCallers returns the callers for the ThreeAttempts case: each
// succeeds on the third attempt, after two failures that its library
// retries at once. Retry quotas are off: the first retry's cost is not
// given back, so a quota would refuse retries after some hundred calls.
func threeAttemptCallers(tb testing.TB) []caller {
	rkStrategy := retry.WithStrategy(must(retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithoutRetryQuota())))
	rkFn := failing(2, rkTransient)

	awsStandard := awsretry.NewStandard(awsNoWait)
	awsAdaptive := awsretry.NewAdaptiveMode(func(o *awsretry.AdaptiveModeOptions) {
		o.StandardOptions = append(o.StandardOptions, awsNoWait)
	})
	awsStandardFn, awsAdaptiveFn := failing(2, awsRetryable), failing(2, awsRetryable)

	cenkaltiOpts := []backoff.RetryOption{backoff.WithBackOff(&backoff.ZeroBackOff{}), backoff.WithMaxTries(3)}
	cenkaltiFn := failing(2, errFailed)

	failsafeExec := failsafe.With(retrypolicy.NewWithDefaults[int]()) // 3 attempts, no delay
	failsafeFn := failing(2, errFailed)
	failsafeWork := func(e failsafe.Execution[int]) (int, error) { return failsafeFn(e.Context()) }

	avastAttempts, avastNoDelay, avastFixed := avast.Attempts(3), avast.Delay(0), avast.DelayType(avast.FixedDelay)
	avastFn := failing(2, errFailed)

	ctx := context.Background()
	avast5Fn := failing(2, errFailed)
	avast5Retrier := avast5.NewWithData[int](avast5.Attempts(3), avast5.Delay(0),
		avast5.DelayType(avast5.FixedDelay), avast5.LastErrorOnly(true), avast5.Context(ctx))
	avast5Work := func() (int, error) { return avast5Fn(ctx) }

	sethvargoNoWait := sethvargo.BackoffFunc(func() (time.Duration, bool) { return 0, false })
	sethvargoFn := failing(2, sethvargoRetryable)

	return []caller{
		{"direct", directRetry(3, failing(2, errFailed))},
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
		{"avast4", func(ctx context.Context) (int, error) {
			return avast.DoWithData(func() (int, error) { return avastFn(ctx) },
				avastAttempts, avastNoDelay, avastFixed, avast.Context(ctx))
		}},
		{"avast5", func(context.Context) (int, error) {
			return avast5Retrier.Do(avast5Work)
		}},
		{"sethvargo", func(ctx context.Context) (int, error) {
			return sethvargo.DoValue(ctx, sethvargo.WithMaxRetries(2, sethvargoNoWait), sethvargoFn)
		}},
	}
}

// oneRetryCallers returns the callers for the OneRetry case: a failure,
// retried at once, then a success, with each library's retry quota at its
// defaults (a retry that succeeds gives back what it took).
func oneRetryCallers(tb testing.TB) []caller {
	rkStrategy := retry.WithStrategy(must(retry.NewStandard(retry.WithBackoff(retry.NoBackoff))))
	rkFn := failing(1, rkTransient)
	awsStandard := awsretry.NewStandard(func(o *awsretry.StandardOptions) {
		o.Backoff = awsretry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
	awsFn := failing(1, awsRetryable)
	return []caller{
		{"direct", directRetry(2, failing(1, errFailed))},
		{"retrykit", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, rkFn, rkStrategy)
		}},
		{"awsStandard", func(ctx context.Context) (int, error) {
			return awsstorm.SDKDo(ctx, awsStandard, awsFn)
		}},
	}
}

// throttle makes one call through fn that its library counts as a
// throttle, so that its rate limiter is on from then on.
func throttle(tb testing.TB, fn func(context.Context, func(context.Context) (int, error)) (int, error), err error) {
	tb.Helper()
	if _, got := fn(context.Background(), func(context.Context) (int, error) { return 0, err }); got == nil {
		tb.Fatal("the throttled call succeeded")
	}
}

// adaptiveCallers returns the callers for the Adaptive case: adaptive
// strategies succeeding at once, before any throttle and after one. After
// the throttle the limiters are on, but set far above the call rate, so
// that no call waits: the rows show what the limiter's bookkeeping costs.
func adaptiveCallers(tb testing.TB) []caller {
	fresh := retry.WithStrategy(must(retry.NewAdaptive()))
	// The published algorithm, which the SDK's retryer runs, paces from
	// the first throttle; the default one only once throttles exceed what
	// it has learned to expect, over measurement windows of real time.
	throttledStrategy := must(retry.NewAdaptive(retry.WithMaxAttempts(1), retry.WithPublishedCUBIC(),
		retry.WithMinFillRate(1e12), retry.WithMinCapacity(1<<20)))
	throttled := retry.WithStrategy(throttledStrategy)
	throttle(tb, func(ctx context.Context, fn func(context.Context) (int, error)) (int, error) {
		return retry.Do(ctx, fn, throttled)
	}, retry.Throttled(errFailed))
	if st, _ := throttledStrategy.Stats(""); !st.RateLimiter.Enabled {
		tb.Fatal("retrykit's limiter does not pace after the throttle")
	}

	// The default algorithm after one throttle: it tolerates a throttled
	// share up to what it has learned to expect, so it does not pace yet.
	// (A throttle before the first accepted attempt would not count.)
	oneThrottleStrategy := must(retry.NewAdaptive(retry.WithMaxAttempts(1)))
	oneThrottle := retry.WithStrategy(oneThrottleStrategy)
	if _, err := retry.Do(context.Background(), work, oneThrottle); err != nil {
		tb.Fatal(err)
	}
	throttle(tb, func(ctx context.Context, fn func(context.Context) (int, error)) (int, error) {
		return retry.Do(ctx, fn, oneThrottle)
	}, retry.Throttled(errFailed))
	if st, _ := oneThrottleStrategy.Stats(""); st.RateLimiter.Enabled {
		tb.Fatal("retrykit's default limiter paces after one throttle")
	}

	awsFresh := awsretry.NewAdaptiveMode()
	// RequestCost 0: every attempt still refills and draws on the limiter's
	// bucket, but never waits.
	awsThrottled := awsretry.NewAdaptiveMode(func(o *awsretry.AdaptiveModeOptions) {
		o.RequestCost = 0
		o.StandardOptions = append(o.StandardOptions, func(o *awsretry.StandardOptions) { o.MaxAttempts = 1 })
	})
	throttle(tb, func(ctx context.Context, fn func(context.Context) (int, error)) (int, error) {
		return awsstorm.SDKDo(ctx, awsThrottled, fn)
	}, awsThrottlingError{})

	return []caller{
		{"direct", work},
		{"retrykit", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, work, fresh)
		}},
		{"retrykit-one-throttle", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, work, oneThrottle)
		}},
		{"retrykit-throttled", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, work, throttled)
		}},
		{"awsAdaptive", func(ctx context.Context) (int, error) {
			return awsstorm.SDKDo(ctx, awsFresh, work)
		}},
		{"awsAdaptive-throttled", func(ctx context.Context) (int, error) {
			return awsstorm.SDKDo(ctx, awsThrottled, work)
		}},
	}
}

// awsThrottlingError is an error aws-sdk-go-v2 counts as a throttle, by
// its error code.
type awsThrottlingError struct{}

func (awsThrottlingError) Error() string     { return "throttled" }
func (awsThrottlingError) ErrorCode() string { return "Throttling" }

// scopeCallers returns the callers for the Scope case: the default scope
// and a named one, on one strategy.
func scopeCallers(tb testing.TB) []caller {
	s := retry.WithStrategy(must(retry.NewStandard()))
	host := retry.WithScope("api.example.com")
	return []caller{
		{"direct", work},
		{"retrykit", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, work, s)
		}},
		{"retrykit-scope", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, work, s, host)
		}},
	}
}

// twoScopesCaller returns a caller that takes two named scopes in turn, as
// a Transport sending to two hosts takes them. Its turn is not safe for
// concurrent use: the root package's BenchmarkDoScopes measures scopes in
// turn from parallel goroutines, each with its own turn.
func twoScopesCaller() caller {
	s := retry.WithStrategy(must(retry.NewStandard()))
	hosts := [2]retry.DoOption{retry.WithScope("a.example.com"), retry.WithScope("b.example.com")}
	turn := 0
	return caller{"retrykit-two-scopes", func(ctx context.Context) (int, error) {
		turn ^= 1
		return retry.Do(ctx, work, s, hosts[turn])
	}}
}

// hedgedCallers returns the callers for the Hedged case: a call that
// succeeds before its hedge delay (10 ms), so that no hedge is sent; what
// each library pays for being ready to hedge. failsafe-go's hedge policy
// is its fastest configuration: a fixed delay and no budget.
func hedgedCallers(tb testing.TB) []caller {
	s := retry.WithStrategy(must(retry.NewStandard()))
	hedging := must(retry.NewHedging(retry.WithHedgeDelay(10 * time.Millisecond)))
	adaptive := must(retry.NewHedging())
	failsafeExec := failsafe.With(hedgepolicy.NewWithDelay[int](10 * time.Millisecond))
	failsafeWork := func(e failsafe.Execution[int]) (int, error) { return work(e.Context()) }
	return []caller{
		{"direct", work},
		{"retrykit", func(ctx context.Context) (int, error) {
			return retry.Do(ctx, work, s)
		}},
		{"retrykit-hedged", func(ctx context.Context) (int, error) {
			return retry.DoHedged(ctx, work, hedging, s)
		}},
		{"retrykit-hedged-adaptive", func(ctx context.Context) (int, error) {
			return retry.DoHedged(ctx, work, adaptive, s)
		}},
		{"failsafe-hedge", func(ctx context.Context) (int, error) {
			return failsafeExec.WithContext(ctx).GetWithExecution(failsafeWork)
		}},
	}
}

// TestCallers checks that every caller succeeds, twice in a row: a retry
// caller that made too few attempts would fail.
func TestCallers(t *testing.T) {
	ctx := context.Background()
	var all []caller
	for _, f := range []func(testing.TB) []caller{successCallers, threeAttemptCallers, oneRetryCallers, adaptiveCallers, scopeCallers, hedgedCallers} {
		all = append(all, f(t)...)
	}
	all = append(all, twoScopesCaller())
	all = append(all, grpcCallers(t, 0)...)
	all = append(all, grpcCallers(t, 2)...)
	for _, c := range all {
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

// runParallel benchmarks each caller in turn, from GOMAXPROCS goroutines
// sharing it.
func runParallel(b *testing.B, callers []caller) {
	for _, c := range callers {
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

// BenchmarkHedged: a hedged call succeeds before its hedge delay.
func BenchmarkHedged(b *testing.B) { runEach(b, hedgedCallers(b)) }

// BenchmarkSuccess: the call succeeds at once.
func BenchmarkSuccess(b *testing.B) { runEach(b, successCallers(b)) }

// BenchmarkSuccessParallel: Success from GOMAXPROCS goroutines, all using
// the same strategy.
func BenchmarkSuccessParallel(b *testing.B) { runParallel(b, successCallers(b)) }

// BenchmarkThreeAttempts: the call fails twice with an error its library
// retries, then succeeds; there is no delay between attempts.
func BenchmarkThreeAttempts(b *testing.B) { runEach(b, threeAttemptCallers(b)) }

// BenchmarkOneRetry: the call fails once, is retried at once, and
// succeeds, with the default retry quota.
func BenchmarkOneRetry(b *testing.B) { runEach(b, oneRetryCallers(b)) }

// BenchmarkAdaptive: adaptive strategies, success at once, before any
// throttle and after one.
func BenchmarkAdaptive(b *testing.B) { runEach(b, adaptiveCallers(b)) }

// BenchmarkAdaptiveParallel: Adaptive from GOMAXPROCS goroutines sharing
// each strategy.
func BenchmarkAdaptiveParallel(b *testing.B) { runParallel(b, adaptiveCallers(b)) }

// BenchmarkScope: success at once in the default scope, in a named one,
// and in two named ones taken in turn.
func BenchmarkScope(b *testing.B) { runEach(b, append(scopeCallers(b), twoScopesCaller())) }

// BenchmarkScopeParallel: Scope from GOMAXPROCS goroutines.
func BenchmarkScopeParallel(b *testing.B) { runParallel(b, scopeCallers(b)) }
