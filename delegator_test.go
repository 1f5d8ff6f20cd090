package retry_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gate is a Delegator: while open it stands for its inner strategy; closed,
// it counts the tokens it gives, through the inner strategy.
type gate struct {
	inner *retry.Standard
	open  atomic.Bool
	own   atomic.Int64
}

func (g *gate) Delegate() retry.RetryStrategy {
	if g.open.Load() {
		return g.inner
	}
	return nil
}

func (g *gate) AcquireInitialToken(ctx context.Context, scope string) (retry.RetryToken, error) {
	g.own.Add(1)
	return g.inner.AcquireInitialToken(ctx, scope)
}

func (g *gate) RefreshRetryToken(ctx context.Context, tok retry.RetryToken, err error) (retry.RetryToken, error) {
	g.own.Add(1)
	return g.inner.RefreshRetryToken(ctx, tok, err)
}

func (g *gate) RecordSuccess(tok retry.RetryToken) error { return g.inner.RecordSuccess(tok) }

func TestDelegator(t *testing.T) {
	inner, err := retry.NewStandard(retry.WithBackoff(retry.BackoffFunc(func(int) time.Duration { return 0 })))
	require.NoError(t, err)
	g := &gate{inner: inner}
	ctx := context.Background()
	flaky := func() func(context.Context) (int, error) {
		calls := 0
		return func(context.Context) (int, error) {
			calls++
			if calls == 1 {
				return 0, retry.Transient(errors.New("once"))
			}
			return calls, nil
		}
	}

	// Closed: Do drives the wrapper.
	n, err := retry.Do(ctx, flaky(), retry.WithStrategy(g))
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Equal(t, int64(2), g.own.Load(), "the wrapper's first and retry tokens")

	// Open: Do uses the inner strategy, first attempt and retries alike.
	g.open.Store(true)
	g.own.Store(0)
	n, err = retry.Do(ctx, flaky(), retry.WithStrategy(g), retry.WithScope("s"))
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.Zero(t, g.own.Load())
	_, kept := inner.Stats("s")
	assert.True(t, kept, "the inner strategy kept the call's scope")

	// Open, a success costs no allocation: the inner strategy's fast path.
	opt := retry.WithStrategy(g)
	work := func(context.Context) (int, error) { return 1, nil }
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := retry.Do(ctx, work, opt); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}
