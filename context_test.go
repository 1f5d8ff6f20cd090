package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// countingStrategy builds a Standard whose hook counts first attempts.
func countingStrategy(t *testing.T, opts ...retry.StandardOption) (*retry.Standard, *int) {
	t.Helper()
	var n int
	s, err := retry.NewStandard(append(opts, retry.WithHook(func(ev retry.Event) {
		if ev.Kind == retry.EventAttempt {
			n++
		}
	}))...)
	require.NoError(t, err)
	return s, &n
}

func TestContextWithStrategy(t *testing.T) {
	s, calls := countingStrategy(t)
	ctx := retry.ContextWithStrategy(t.Context(), s)
	assert.Same(t, s, retry.StrategyFromContext(ctx))

	_, err := retry.Do(ctx, work)
	require.NoError(t, err)
	assert.Equal(t, 1, *calls, "Do uses the context's strategy")

	derived, cancel := context.WithCancel(context.WithValue(ctx, struct{ k int }{}, "v"))
	defer cancel()
	require.NoError(t, retry.Run(derived, func(context.Context) error { return nil }))
	assert.Equal(t, 2, *calls, "a derived context carries it too")

	other, otherCalls := countingStrategy(t)
	_, err = retry.Do(ctx, work, retry.WithStrategy(other))
	require.NoError(t, err)
	assert.Equal(t, 2, *calls, "WithStrategy wins")
	assert.Equal(t, 1, *otherCalls)

	inner, innerCalls := countingStrategy(t)
	_, err = retry.Do(retry.ContextWithStrategy(ctx, inner), work)
	require.NoError(t, err)
	assert.Equal(t, 1, *innerCalls, "the innermost strategy wins")
	assert.Equal(t, 2, *calls)
}

func TestContextWithStrategyBadInput(t *testing.T) {
	s, calls := countingStrategy(t)
	ctx := retry.ContextWithStrategy(t.Context(), s)

	reset := retry.ContextWithStrategy(ctx, nil)
	assert.Same(t, retry.DefaultStrategy(), retry.StrategyFromContext(reset), "nil: the default again")
	_, err := retry.Do(reset, work)
	require.NoError(t, err)
	assert.Zero(t, *calls)

	assert.Same(t, retry.DefaultStrategy(), retry.StrategyFromContext(context.Background()))
	//lint:ignore SA1012 a nil context is the bad input tested
	assert.Same(t, retry.DefaultStrategy(), retry.StrategyFromContext(nil))

	//lint:ignore SA1012 a nil context is the bad input tested
	nilCtx := retry.ContextWithStrategy(nil, s)
	assert.Nil(t, nilCtx)
	_, err = retry.Do(nilCtx, work)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)

	var zero *retry.Standard
	_, err = retry.Do(retry.ContextWithStrategy(t.Context(), zero), work)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "nil or zero *Standard")
}

// Parallel tests that each give the code they test a strategy through the
// context cannot drain each other's retry quota.
func TestContextWithStrategyParallel(t *testing.T) {
	boom := retry.Transient(errors.New("boom"))
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			q, err := retry.NewTokenBucket(retry.WithMaxCapacity(10), retry.WithRetryCost(5))
			require.NoError(t, err)
			s, err := retry.NewStandard(retry.WithRetryQuota(q), retry.WithBackoff(retry.NoBackoff), retry.WithMaxAttempts(10))
			require.NoError(t, err)
			ctx := retry.ContextWithStrategy(t.Context(), s)
			calls := 0
			_, err = retry.Do(ctx, func(context.Context) (int, error) { calls++; return 0, boom })
			require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
			assert.Equal(t, 3, calls, "a full bucket of 10 pays two retries of 5")
			assert.Zero(t, q.Stats().Available)
		})
	}
}

// A call that gives no strategy and finds one in its context allocates
// nothing more than one with WithStrategy.
func TestContextWithStrategyAllocatesNothing(t *testing.T) {
	s, err := retry.NewStandard()
	require.NoError(t, err)
	ctx := retry.ContextWithStrategy(context.Background(), s)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = retry.Do(ctx, work) }))
}

// BenchmarkDoStrategyFromContext compares Do with WithStrategy, with
// neither option nor context strategy (the default strategy), and with the
// strategy found in the context, each on a bare and on a deeper context.
// Until a process first calls ContextWithStrategy, the default path skips
// the context lookup: run this benchmark alone (-run '^$' -count 1) to see
// that, as its "default" cases run before it calls ContextWithStrategy.
func BenchmarkDoStrategyFromContext(b *testing.B) {
	s, err := retry.NewStandard()
	if err != nil {
		b.Fatal(err)
	}
	bg := context.Background()
	// A context a few values deep, as an HTTP server's request context is.
	deep := bg
	for i := range 4 {
		deep = context.WithValue(deep, struct{ n int }{i}, i)
	}
	run := func(name string, ctx func() context.Context, opts ...retry.DoOption) {
		b.Run(name, func(b *testing.B) {
			ctx := ctx()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := retry.Do(ctx, work, opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	same := func(ctx context.Context) func() context.Context { return func() context.Context { return ctx } }
	run("WithStrategy", same(bg), retry.WithStrategy(s))
	run("default", same(bg))
	run("default/deep", same(deep))
	run("context", func() context.Context { return retry.ContextWithStrategy(bg, s) })
	run("context/deep", func() context.Context { return retry.ContextWithStrategy(deep, s) })
}

// Give code that calls Do without a strategy of its own, such as a library
// under test, a strategy through its context.
func ExampleContextWithStrategy() {
	// fetch is the code under test: it uses whatever strategy its caller's
	// context carries, else the process-wide default.
	fetch := func(ctx context.Context) (string, error) {
		return retry.Do(ctx, func(ctx context.Context) (string, error) {
			return "", errors.New("not found")
		})
	}

	strategy, err := retry.NewStandard(retry.WithClassifier(retry.ClassifyAll), retry.WithBackoff(retry.NoBackoff))
	if err != nil {
		panic(err)
	}
	ctx := retry.ContextWithStrategy(context.Background(), strategy)
	_, err = fetch(ctx)
	fmt.Println(err)
	// Output: retry: max attempts exceeded (after 3 attempts): not found
}
