package retry_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"unicode/utf8"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScopeStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := retry.NewStandard(retry.WithMaxScopes(2), retry.WithBackoff(retry.ConstantBackoff(0)))
		require.NoError(t, err)
		fail := func(scope string) {
			tok, err := s.AcquireInitialToken(t.Context(), scope)
			require.NoError(t, err)
			_, err = s.RefreshRetryToken(t.Context(), tok, errTransient)
			require.NoError(t, err)
		}
		_, ok := s.Stats("a")
		assert.False(t, ok, "a scope never used has no state")
		fail("a")
		fail("b")
		fail("b")

		st, ok := s.Stats("b")
		require.True(t, ok)
		assert.Equal(t, "b", st.Scope)
		require.NotNil(t, st.RetryQuota)
		assert.Equal(t, 490.0, st.RetryQuota.Available)
		assert.Nil(t, st.RateLimiter, "a standard strategy has no limiter")

		all := s.AllStats()
		require.Len(t, all, 3)
		assert.Equal(t, []string{"", "b", "a"}, []string{all[0].Scope, all[1].Scope, all[2].Scope}, "default first, then most recently used")
		assert.Equal(t, 500.0, all[0].RetryQuota.Available)
		assert.Equal(t, 495.0, all[2].RetryQuota.Available)

		_, _ = s.Stats("a") // not a use: "a" stays the least recently used
		fail("c")
		_, ok = s.Stats("a")
		assert.False(t, ok, "the least recently used scope was forgotten")
	})
}

func TestScopeStatsShared(t *testing.T) {
	q, err := retry.NewTokenBucket(retry.WithMaxCapacity(50))
	require.NoError(t, err)
	a, err := retry.NewAdaptive(retry.WithRetryQuota(q))
	require.NoError(t, err)
	_, ok := a.Stats("table")
	assert.False(t, ok, "per-scope limiters: a named scope has state once used")
	tok, err := a.PlanInitialToken("table")
	require.NoError(t, err)
	require.NoError(t, a.RecordSuccess(tok))
	st, ok := a.Stats("table")
	require.True(t, ok)
	require.NotNil(t, st.RateLimiter)
	assert.Equal(t, 50, st.RetryQuota.Capacity, "the shared quota")
	assert.Len(t, a.AllStats(), 2)

	s, err := retry.NewStandard(retry.WithRetryQuota(q))
	require.NoError(t, err)
	st, ok = s.Stats("x")
	require.True(t, ok, "every scope shares the default state")
	assert.Equal(t, "x", st.Scope)
	assert.Len(t, s.AllStats(), 1)
}

func ExampleStandard_AllStats() {
	s, _ := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(0)))
	for _, host := range []string{"a.example", "b.example"} {
		tok, _ := s.AcquireInitialToken(context.Background(), host)
		_ = s.RecordSuccess(tok)
	}
	for _, st := range s.AllStats() {
		fmt.Printf("%q: %.0f of %d retry tokens\n", st.Scope, st.RetryQuota.Available, st.RetryQuota.Capacity)
	}
	// Output:
	// "": 500 of 500 retry tokens
	// "b.example": 500 of 500 retry tokens
	// "a.example": 500 of 500 retry tokens
}

// A strategy keeps at most 256 bytes of a scope's name: 200 distinct
// 1-MiB names keep a few KiB, not 200 MiB, and stay distinct scopes.
func TestLongScopeNamesKeepBoundedMemory(t *testing.T) {
	s, err := retry.NewStandard(retry.WithMaxScopes(256))
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	long := func(i int) string { return fmt.Sprintf("%08d", i) + strings.Repeat("é", 1<<19) } // 1 MiB
	for i := range 200 {
		_, err := retry.Do(t.Context(), func(context.Context) (int, error) { return 1, nil },
			retry.WithStrategy(s), retry.WithScope(long(i)))
		require.NoError(t, err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	assert.Less(t, int64(after.HeapAlloc)-int64(before.HeapAlloc), int64(32<<20), "the strategy keeps the names")

	all := s.AllStats()
	require.Len(t, all, 201) // the default scope and the 200
	seen := map[string]bool{}
	for _, st := range all[1:] {
		assert.LessOrEqual(t, len(st.Scope), 256)
		assert.True(t, utf8.ValidString(st.Scope), "cut at a character boundary")
		seen[st.Scope] = true
	}
	assert.Len(t, seen, 200, "distinct names stay distinct scopes")
	st, ok := s.Stats(long(7))
	require.True(t, ok, "a long name finds its scope")
	assert.Equal(t, long(7), st.Scope)
	_, ok = s.Stats(long(7) + "x")
	assert.False(t, ok)
	runtime.KeepAlive(s)
}
