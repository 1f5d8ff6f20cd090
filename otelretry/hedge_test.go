package otelretry_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/otelretry"
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

// RecordGRPCCall records gRPC's per-call retry metrics, leaving out the
// counts that are 0, as gRFC A96 asks.
func TestRecordGRPCCall(t *testing.T) {
	m, reader := newMetrics(t, otelretry.WithAttributes(attribute.String("service", "orders")))
	ctx := t.Context()
	m.RecordGRPCCall(ctx, otelretry.GRPCCall{Method: "/shop.Orders/Get", Target: "dns:///orders:443",
		Retries: 2, Hedges: 1, TransparentRetries: 1, RetryDelay: 300 * time.Millisecond})
	m.RecordGRPCCall(ctx, otelretry.GRPCCall{Method: "/shop.Orders/Get", Target: "dns:///orders:443"})
	m.RecordGRPCCall(ctx, otelretry.GRPCCall{Method: "/shop.Orders/Get", Target: "dns:///orders:443", RetryDelay: -time.Second})
	got := collect(t, reader)
	const attrs = "{grpc.method=shop.Orders/Get,grpc.target=dns:///orders:443,service=orders}"
	assert.Equal(t, map[string]float64{
		"grpc.client.call.retries" + attrs + ".count":             1,
		"grpc.client.call.retries" + attrs + ".sum":               2,
		"grpc.client.call.hedges" + attrs + ".count":              1,
		"grpc.client.call.hedges" + attrs + ".sum":                1,
		"grpc.client.call.transparent_retries" + attrs + ".count": 1,
		"grpc.client.call.transparent_retries" + attrs + ".sum":   1,
		"grpc.client.call.retry_delay" + attrs + ".count":         3,
		"grpc.client.call.retry_delay" + attrs + ".sum":           0.3,
	}, got, "a negative delay is recorded as 0")

	var zero otelretry.Metrics
	zero.RecordGRPCCall(ctx, otelretry.GRPCCall{Retries: 1}) // records nothing, and does not panic
	var nilMetrics *otelretry.Metrics
	nilMetrics.RecordGRPCCall(ctx, otelretry.GRPCCall{Retries: 1})
}
