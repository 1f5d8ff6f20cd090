package retrytest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/retrytest"
)

// fetch stands for the code under test: it calls retry.Do without a
// strategy of its own.
func fetch(ctx context.Context, fail error) (int, error) {
	return retry.Do(ctx, func(context.Context) (int, error) { return 0, fail })
}

// Tests running in parallel each drain their own retry quota, never the
// process-wide default's nor each other's.
func TestContext(t *testing.T) {
	boom := retry.Transient(errors.New("boom"))
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			q, err := retry.NewTokenBucket(retry.WithMaxCapacity(5), retry.WithRetryCost(5))
			require.NoError(t, err)
			ctx, s := retrytest.Context(t, retry.WithRetryQuota(q), retry.WithBackoff(retry.NoBackoff))
			_, err = fetch(ctx, boom)
			require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded, "the one retry the quota paid failed too")
			stats, ok := s.Stats("")
			require.True(t, ok)
			assert.Zero(t, stats.RetryQuota.Available)
		})
	}
	assert.Equal(t, float64(retry.DefaultMaxCapacity), retry.DefaultStrategy().RetryQuota().Stats().Available,
		"the default strategy is untouched")
}

func TestContextEndsWithTheTest(t *testing.T) {
	var ctx context.Context
	t.Run("inner", func(t *testing.T) {
		ctx, _ = retrytest.Context(t)
		require.NoError(t, ctx.Err())
	})
	require.ErrorIs(t, ctx.Err(), context.Canceled, "the context is the test's own")
}

// fatalRecorder is a testing.TB whose Fatalf records the message and
// returns.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
}

func TestContextBadOption(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	ctx, s := retrytest.Context(rec, retry.WithMaxAttempts(0))
	assert.Nil(t, ctx)
	assert.Nil(t, s)
	assert.Contains(t, rec.msg, "retrytest.Context: ")
	assert.Contains(t, rec.msg, "WithMaxAttempts")
}
