package otelretry_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

func TestHookCountsHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reader := newMetrics(t)
		s, err := retry.NewStandard(retry.WithHook(m.Hook()))
		require.NoError(t, err)
		h, err := retry.NewHedging(retry.WithHedgeDelay(10 * time.Millisecond))
		require.NoError(t, err)
		var calls atomic.Int32
		slowFirst := func(ctx context.Context) (int, error) {
			if calls.Add(1)%2 == 1 {
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return 1, nil
		}
		for range 2 {
			_, err := retry.DoHedged(t.Context(), slowFirst, h, retry.WithStrategy(s), retry.WithScope("api"))
			require.NoError(t, err)
		}
		got := collect(t, reader)
		assert.Equal(t, 2.0, got["retry.client.hedges{retry.scope=api}"])
		assert.Equal(t, 2.0, got["retry.client.attempts{retry.scope=api}"], "hedges are not attempts of the strategy")
	})
}
