package retry_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingClock is a Clock that counts how often it is read.
type countingClock struct{ reads atomic.Int64 }

func (c *countingClock) Now() time.Time {
	c.reads.Add(1)
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
}

func TestBucketWithoutRefillReadsNoClock(t *testing.T) {
	clock := new(countingClock)
	b, err := retry.NewTokenBucket(retry.WithClock(clock))
	require.NoError(t, err)
	before := clock.reads.Load()
	_, err = b.Acquire(5)
	require.NoError(t, err)
	require.NoError(t, b.Release(5))
	require.NoError(t, b.Release(1))
	_ = b.Stats()
	assert.Equal(t, before, clock.reads.Load(), "a bucket whose refill rate is 0 has no use for the time")

	refilling, err := retry.NewTokenBucket(retry.WithClock(clock), retry.WithRefillRate(1))
	require.NoError(t, err)
	before = clock.reads.Load()
	_, err = refilling.Acquire(5)
	require.NoError(t, err)
	assert.Greater(t, clock.reads.Load(), before, "a refilling bucket reads the clock")
}

func TestDoFastPathAllocatesNothing(t *testing.T) {
	s, err := retry.NewStandard()
	require.NoError(t, err)
	a, err := retry.NewAdaptive()
	require.NoError(t, err)
	ctx := context.Background()
	for name, opts := range map[string][]retry.DoOption{
		"default":             nil,
		"default, named":      {retry.WithScope("api.example.com")},
		"standard, named":     {retry.WithStrategy(s), retry.WithScope("api.example.com")},
		"adaptive, named":     {retry.WithStrategy(a), retry.WithScope("api.example.com")},
		"standard, two names": {retry.WithStrategy(s), retry.WithScope("a"), retry.WithScope("b")},
	} {
		allocs := testing.AllocsPerRun(1000, func() {
			_, _ = retry.Do(ctx, work, opts...)
		})
		assert.Zero(t, allocs, name)
	}
}

// TestInlineDoOptionsAllocateNothing gives the options the way most code
// does, made in the call: a DoOption is a pointer, and the record behind
// it must stay on the caller's stack (or, for the strategies of this
// package, be the one the strategy made once).
func TestInlineDoOptionsAllocateNothing(t *testing.T) {
	s, err := retry.NewStandard()
	require.NoError(t, err)
	ctx := context.Background()
	host := strings.Clone("api.example.com") // not a constant
	custom := new(customStrategy)            // its tokens need no allocation
	for name, call := range map[string]func(){
		"strategy":        func() { _, _ = retry.Do(ctx, work, retry.WithStrategy(s)) },
		"strategy, scope": func() { _, _ = retry.Do(ctx, work, retry.WithStrategy(s), retry.WithScope(host)) },
		"scope, strategy": func() { _, _ = retry.Do(ctx, work, retry.WithScope(host), retry.WithStrategy(s)) },
		"scope":           func() { _, _ = retry.Do(ctx, work, retry.WithScope(host)) },
		"option of a Run": func() {
			_ = retry.Run(ctx, func(context.Context) error { return nil }, retry.WithStrategy(s), retry.WithScope(host))
		},
		"custom strategy": func() { _, _ = retry.Do(ctx, work, retry.WithStrategy(custom)) },
	} {
		assert.Zero(t, testing.AllocsPerRun(1000, call), name)
	}
}

// Every way of naming a scope finds that scope's state, on the fast path
// of a hot scope as on the first call: the successes of each form refill
// the quota of the scope named, and no other.
func TestScopeFormsFindTheirScope(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	ctx := context.Background()
	available := func(s *retry.Standard, scope string) float64 {
		st, ok := s.Stats(scope)
		require.True(t, ok, scope)
		return st.RetryQuota.Available
	}
	spend := func(opts ...retry.DoOption) { // retries that fail: their cost is not given back
		_, err := retry.Do(ctx, func(context.Context) (int, error) { return 0, retry.Transient(errFlaky) }, opts...)
		require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
	}
	for _, form := range []struct {
		name string
		opts func(scope string) []retry.DoOption
	}{
		{"strategy, scope", func(scope string) []retry.DoOption {
			return []retry.DoOption{retry.WithStrategy(s), retry.WithScope(scope)}
		}},
		{"scope, strategy", func(scope string) []retry.DoOption {
			return []retry.DoOption{retry.WithScope(scope), retry.WithStrategy(s)}
		}},
	} {
		t.Run(form.name, func(t *testing.T) {
			a, b := form.name+"/a", form.name+"/b"
			spend(form.opts(a)...) // retries: tokens out of a's quota
			spend(form.opts(b)...)
			before, otherBefore := available(s, a), available(s, b)
			for range 3 {
				_, err := retry.Do(ctx, work, form.opts(a)...)
				require.NoError(t, err)
			}
			assert.Equal(t, before+3, available(s, a), "each success refills the scope named")
			assert.Equal(t, otherBefore, available(s, b), "and no other")
		})
	}

	// WithScope alone names a scope of the default strategy.
	d := retry.DefaultStrategy()
	const scope = "TestScopeFormsFindTheirScope.default"
	_, err = retry.Do(ctx, work, retry.WithScope(scope)) // makes the scope
	require.NoError(t, err)
	before := available(d, scope)
	spend(retry.WithScope(scope))
	assert.Less(t, available(d, scope), before, "the retry was paid from the default strategy's scope")
}

func TestDoRetryWithoutDelayAllocatesNothing(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	ctx := context.Background()
	transient := retry.Transient(errFlaky)
	failed := false
	fn := func(context.Context) (int, error) {
		if failed = !failed; failed {
			return 0, transient
		}
		return 1, nil
	}
	for name, opts := range map[string][]retry.DoOption{
		"default scope": {retry.WithStrategy(s)},
		"named scope":   {retry.WithStrategy(s), retry.WithScope("api.example.com")},
	} {
		allocs := testing.AllocsPerRun(1000, func() {
			_, err := retry.Do(ctx, fn, opts...)
			require.NoError(t, err)
		})
		assert.Zero(t, allocs, name)
	}
}

var errFlaky = fmt.Errorf("flaky")

// TestScopesConcurrently uses more scopes than the strategy keeps, from
// many goroutines: the scopes kept stay within the bound, each kept scope
// is the one its name finds, and a scope found again after it was
// forgotten starts afresh.
func TestScopesConcurrently(t *testing.T) {
	const maxScopes = 8
	s, err := retry.NewStandard(retry.WithMaxScopes(maxScopes), retry.WithBackoff(retry.NoBackoff), retry.WithMaxCapacity(1000))
	require.NoError(t, err)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				scope := fmt.Sprintf("host-%d", (g*7+i)%(3*maxScopes))
				failOnce := true
				_, err := retry.Do(ctx, func(context.Context) (int, error) {
					if failOnce {
						failOnce = false
						return 0, retry.Transient(errFlaky)
					}
					return 1, nil
				}, retry.WithStrategy(s), retry.WithScope(scope))
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	all := s.AllStats()
	assert.LessOrEqual(t, len(all), maxScopes+1, "the default scope and at most WithMaxScopes named ones")
	seen := map[string]bool{}
	for _, st := range all[1:] {
		assert.False(t, seen[st.Scope], "scope %q kept twice", st.Scope)
		seen[st.Scope] = true
		got, ok := s.Stats(st.Scope)
		require.True(t, ok, st.Scope)
		assert.Equal(t, st.RetryQuota.Capacity, got.RetryQuota.Capacity)
	}
}

// TestForgottenHotScopeStartsAfresh: the scope used last is found without
// a lookup; once it is forgotten, its name must find a fresh state.
func TestForgottenHotScopeStartsAfresh(t *testing.T) {
	s, err := retry.NewStandard(retry.WithMaxScopes(1), retry.WithMaxCapacity(10), retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	ctx := context.Background()
	failTwice := func(scope string) error {
		n := 0
		_, err := retry.Do(ctx, func(context.Context) (int, error) {
			if n++; n < 3 {
				return 0, retry.Transient(errFlaky)
			}
			return 1, nil
		}, retry.WithStrategy(s), retry.WithScope(scope))
		return err
	}
	require.NoError(t, failTwice("a")) // a: 10 - 5 - 5 + 5 = 5
	st, ok := s.Stats("a")
	require.True(t, ok)
	assert.Equal(t, 5.0, st.RetryQuota.Available)
	require.NoError(t, failTwice("b")) // forgets a
	_, ok = s.Stats("a")
	assert.False(t, ok)
	_, err = retry.Do(ctx, work, retry.WithStrategy(s), retry.WithScope("a"))
	require.NoError(t, err)
	st, ok = s.Stats("a")
	require.True(t, ok)
	assert.Equal(t, 10.0, st.RetryQuota.Available, "a forgotten scope starts with a full bucket")
}

// TestFastPathUsesContextStrategy: a call without WithStrategy takes its
// strategy from the context on the fast path too, with or without a
// scope, and WithStrategy still wins.
func TestFastPathUsesContextStrategy(t *testing.T) {
	once, err := retry.NewStandard(retry.WithMaxAttempts(1))
	require.NoError(t, err)
	ctx := retry.ContextWithStrategy(t.Context(), once)
	for name, opts := range map[string][]retry.DoOption{
		"no option":  nil,
		"scope only": {retry.WithScope("api.example.com")},
	} {
		calls := 0
		_, err := retry.Do(ctx, func(context.Context) (int, error) {
			calls++
			return 0, retry.Transient(errFlaky)
		}, opts...)
		require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded, name)
		assert.Equal(t, 1, calls, name)
	}
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	calls := 0
	_, err = retry.Do(ctx, func(context.Context) (int, error) {
		if calls++; calls < 3 {
			return 0, retry.Transient(errFlaky)
		}
		return 1, nil
	}, retry.WithStrategy(s))
	require.NoError(t, err)
	assert.Equal(t, 3, calls, "WithStrategy wins")
}

// TestScopeInUseIsKept: a scope used between the creations of many others
// is never the one forgotten, however many there are.
func TestScopeInUseIsKept(t *testing.T) {
	s, err := retry.NewStandard(retry.WithMaxScopes(3), retry.WithMaxCapacity(10),
		retry.WithInitialTrySuccessIncrement(0), retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	ctx := context.Background()
	tok, err := s.PlanInitialToken("hot")
	require.NoError(t, err)
	_, _, err = s.PlanRetryToken(tok, retry.Transient(errFlaky)) // takes 5, never given back
	require.NoError(t, err)
	for i := range 100 {
		_, err := retry.Do(ctx, work, retry.WithStrategy(s), retry.WithScope(fmt.Sprintf("new-%d", i)))
		require.NoError(t, err)
		_, err = retry.Do(ctx, work, retry.WithStrategy(s), retry.WithScope("hot"))
		require.NoError(t, err)
	}
	st, ok := s.Stats("hot")
	require.True(t, ok)
	assert.Equal(t, 5.0, st.RetryQuota.Available, "the scope in use kept its state")
	assert.Len(t, s.AllStats(), 4, "the default scope and 3 named ones")
}
