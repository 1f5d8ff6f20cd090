package otelretry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/otelretry"
)

// newMetrics returns a Metrics whose measurements reader collects.
func newMetrics(t *testing.T, opts ...otelretry.Option) (*otelretry.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	m, err := otelretry.New(append([]otelretry.Option{otelretry.WithMeterProvider(mp)}, opts...)...)
	require.NoError(t, err)
	return m, reader
}

// collect returns every data point reader collects, by metric name and
// attributes: the value of a sum or gauge, and the count and sum of a
// histogram.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	points := make(map[string]float64)
	for _, sm := range rm.ScopeMetrics {
		require.Equal(t, otelretry.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			key := func(attrs attribute.Set) string {
				return m.Name + "{" + attrs.Encoded(attribute.DefaultEncoder()) + "}"
			}
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.True(t, data.IsMonotonic, m.Name)
				for _, dp := range data.DataPoints {
					points[key(dp.Attributes)] = float64(dp.Value)
				}
			case metricdata.Gauge[float64]:
				for _, dp := range data.DataPoints {
					points[key(dp.Attributes)] = dp.Value
				}
			case metricdata.Gauge[int64]:
				for _, dp := range data.DataPoints {
					points[key(dp.Attributes)] = float64(dp.Value)
				}
			case metricdata.Histogram[int64]:
				for _, dp := range data.DataPoints {
					points[key(dp.Attributes)+".count"] = float64(dp.Count)
					points[key(dp.Attributes)+".sum"] = float64(dp.Sum)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					points[key(dp.Attributes)+".count"] = float64(dp.Count)
					points[key(dp.Attributes)+".sum"] = dp.Sum
				}
			default:
				t.Fatalf("%s: unexpected %T", m.Name, data)
			}
		}
	}
	return points
}

// statusError is an API error that carries an HTTP status.
type statusError int

func (e statusError) Error() string       { return fmt.Sprintf("HTTP %d", int(e)) }
func (e statusError) HTTPStatusCode() int { return int(e) }

// failing returns a function that fails with errs, one per call, then
// succeeds.
func failing(errs ...error) func(context.Context) (int, error) {
	n := 0
	return func(context.Context) (int, error) {
		n++
		if n <= len(errs) {
			return 0, errs[n-1]
		}
		return n, nil
	}
}

func TestHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, reader := newMetrics(t)
		// The quota alone: with the retry budget, the call after the one
		// that gives up would be refused its retry (reason "quota").
		s, err := retry.NewStandard(retry.WithHook(m.Hook()), retry.WithBackoff(retry.ConstantBackoff(time.Second)), retry.WithRetryBudget(0))
		require.NoError(t, err)
		ctx := t.Context()
		transient := retry.Transient(errors.New("reset"))
		do := func(ctx context.Context, fn func(context.Context) (int, error), opts ...retry.DoOption) {
			_, _ = retry.Do(ctx, fn, append(opts, retry.WithStrategy(s))...)
		}

		do(ctx, failing(transient, statusError(503)), retry.WithScope("orders"))                          // 3 attempts, 2 retries
		do(ctx, failing(retry.Throttled(errors.New("slow down")), retry.Permanent(errors.New("denied")))) // not retryable
		do(ctx, failing(statusError(503), statusError(503), statusError(503)))                            // max attempts
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		do(short, failing(transient)) // the deadline comes before the retry

		// The last call's retry, which its deadline leaves no time for, is
		// not counted as an attempt, a retry or a wait: only as a give-up.
		// Every count is of attempts made and waits waited.
		assert.Equal(t, map[string]float64{
			"retry.client.attempts{retry.scope=orders}": 3,
			"retry.client.attempts{retry.scope=}":       6,

			"retry.client.retries{error.type=*errors.errorString,retry.reason=transient,retry.scope=orders}": 1,
			"retry.client.retries{error.type=503,retry.reason=transient,retry.scope=orders}":                 1,
			"retry.client.retries{error.type=*errors.errorString,retry.reason=throttle,retry.scope=}":        1,
			"retry.client.retries{error.type=503,retry.reason=transient,retry.scope=}":                       2,

			"retry.client.give_ups{error.type=*errors.errorString,retry.reason=not_retryable,retry.scope=}": 1,
			"retry.client.give_ups{error.type=503,retry.reason=max_attempts,retry.scope=}":                  1,
			"retry.client.give_ups{error.type=*errors.errorString,retry.reason=deadline,retry.scope=}":      1,

			"retry.client.wait.duration{retry.reason=transient,retry.scope=orders}.count": 2,
			"retry.client.wait.duration{retry.reason=transient,retry.scope=orders}.sum":   2,
			"retry.client.wait.duration{retry.reason=throttle,retry.scope=}.count":        1,
			"retry.client.wait.duration{retry.reason=throttle,retry.scope=}.sum":          1,
			"retry.client.wait.duration{retry.reason=transient,retry.scope=}.count":       2,
			"retry.client.wait.duration{retry.reason=transient,retry.scope=}.sum":         2,
		}, collect(t, reader))
	})
}

// The metrics are the documented instruments, with the documented units
// and bucket boundaries.
func TestInstruments(t *testing.T) {
	m, reader := newMetrics(t)
	a, err := retry.NewAdaptive(retry.WithHook(m.Hook()), retry.WithPublishedCUBIC()) // paces from the first throttle
	require.NoError(t, err)
	reg, err := m.Observe(a)
	require.NoError(t, err)
	defer func() { require.NoError(t, reg.Unregister()) }()
	tok, err := a.PlanInitialToken("")
	require.NoError(t, err)
	_, _, err = a.PlanRetryToken(tok, retry.Throttled(errors.New("slow down")))
	require.NoError(t, err)
	tok, err = a.PlanInitialToken("")
	require.NoError(t, err)
	_, _, err = a.PlanRetryToken(tok, retry.Permanent(errors.New("denied")))
	require.Error(t, err)

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	require.Len(t, rm.ScopeMetrics, 1)
	units := make(map[string]string)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		units[m.Name] = m.Unit
		assert.NotEmpty(t, m.Description, m.Name)
		if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
			assert.Equal(t, []float64{0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60}, h.DataPoints[0].Bounds)
		}
	}
	assert.Equal(t, map[string]string{
		"retry.client.attempts":                   "{attempt}",
		"retry.client.retries":                    "{retry}",
		"retry.client.give_ups":                   "{give_up}",
		"retry.client.wait.duration":              "s",
		"retry.client.quota.available":            "{token}",
		"retry.client.quota.limit":                "{token}",
		"retry.client.rate_limiter.fill_rate":     "{attempt}/s",
		"retry.client.rate_limiter.measured_rate": "{attempt}/s",
	}, units)
}

func TestObserve(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
	// A Metrics per strategy, each with attributes of its own, tells their
	// scopes apart.
	mS, err := otelretry.New(otelretry.WithMeterProvider(mp), otelretry.WithAttributes(attribute.String("service", "inventory")))
	require.NoError(t, err)
	mA, err := otelretry.New(otelretry.WithMeterProvider(mp), otelretry.WithAttributes(attribute.String("service", "billing")))
	require.NoError(t, err)
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	// The published algorithm paces from the first throttle.
	a, err := retry.NewAdaptive(retry.WithBackoff(retry.NoBackoff), retry.WithPublishedCUBIC())
	require.NoError(t, err)
	assert.Empty(t, collect(t, reader), "nothing observed yet")

	regS, err := mS.Observe(s)
	require.NoError(t, err)
	regA, err := mA.Observe(a)
	require.NoError(t, err)

	// Spend quota in a named scope of s, and throttle a's default scope.
	tok, err := s.PlanInitialToken("orders")
	require.NoError(t, err)
	_, _, err = s.PlanRetryToken(tok, retry.Transient(errors.New("reset")))
	require.NoError(t, err)
	tok, err = a.PlanInitialToken("")
	require.NoError(t, err)
	_, _, err = a.PlanRetryToken(tok, retry.Throttled(errors.New("slow down")))
	require.NoError(t, err)

	want := make(map[string]float64)
	for service, strategy := range map[string]otelretry.StatsReporter{"inventory": s, "billing": a} {
		for _, st := range strategy.AllStats() {
			attrs := "{retry.scope=" + st.Scope + ",service=" + service + "}"
			want["retry.client.quota.available"+attrs] = st.RetryQuota.Available
			want["retry.client.quota.limit"+attrs] = float64(st.RetryQuota.Capacity)
			if l := st.RateLimiter; l != nil {
				require.True(t, l.Enabled)
				want["retry.client.rate_limiter.fill_rate"+attrs] = l.FillRate
				want["retry.client.rate_limiter.measured_rate"+attrs] = l.MeasuredRate
			}
		}
	}
	got := collect(t, reader)
	assert.Equal(t, want, got)
	assert.Len(t, got, 2*2+4, "s: two scopes with a quota; a: one scope with a quota and a limiter")
	assert.Equal(t, float64(retry.DefaultMaxCapacity-retry.DefaultRetryCost), got["retry.client.quota.available{retry.scope=orders,service=inventory}"])
	assert.Contains(t, got, "retry.client.rate_limiter.fill_rate{retry.scope=,service=billing}")

	require.NoError(t, regS.Unregister())
	require.NoError(t, regA.Unregister())
	assert.Empty(t, collect(t, reader), "unregistered")
}

// Until its limiter paces, an adaptive strategy reports no fill rate:
// sending is not limited.
func TestObserveNoThrottleYet(t *testing.T) {
	m, reader := newMetrics(t)
	a, err := retry.NewAdaptive()
	require.NoError(t, err)
	reg, err := m.Observe(a)
	require.NoError(t, err)
	defer func() { require.NoError(t, reg.Unregister()) }()
	got := collect(t, reader)
	assert.NotContains(t, got, "retry.client.rate_limiter.fill_rate{retry.scope=}")
	assert.Contains(t, got, "retry.client.rate_limiter.measured_rate{retry.scope=}")
	assert.Equal(t, float64(retry.DefaultMaxCapacity), got["retry.client.quota.available{retry.scope=}"])
}

func TestBadInput(t *testing.T) {
	_, err := otelretry.New(otelretry.WithMeterProvider(nil))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "WithMeterProvider = nil")

	_, err = otelretry.New(otelretry.WithAttributes(attribute.String("ok", "1"), attribute.KeyValue{}))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "WithAttributes")

	_, err = otelretry.New(nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)

	m, _ := newMetrics(t)
	_, err = m.Observe(nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	_, err = m.Observe((*retry.Standard)(nil))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "*retry.Standard that reports no scope")
	_, err = m.Observe(new(retry.Adaptive))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)

	var zero otelretry.Metrics
	zero.Hook()(retry.Event{Kind: retry.EventAttempt}) // records nothing, and does not panic
	var nilMetrics *otelretry.Metrics
	nilMetrics.Hook()(retry.Event{Kind: retry.EventRetry})
	_, err = zero.Observe(retry.DefaultStrategy())
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	_, err = nilMetrics.Observe(retry.DefaultStrategy())
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
}

// Without WithMeterProvider, New uses the global MeterProvider.
func TestGlobalMeterProvider(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { require.NoError(t, mp.Shutdown(context.Background())) }()
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(mp)
	t.Cleanup(func() { otel.SetMeterProvider(prev) })

	m, err := otelretry.New()
	require.NoError(t, err)
	m.Hook()(retry.Event{Kind: retry.EventAttempt, Scope: "s", Attempt: 1})
	assert.Equal(t, map[string]float64{"retry.client.attempts{retry.scope=s}": 1}, collect(t, reader))
}

// BenchmarkHook measures what the hook adds to each event, with the SDK
// aggregating.
func BenchmarkHook(b *testing.B) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	m, err := otelretry.New(otelretry.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	hook := m.Hook()
	events := map[string]retry.Event{
		"attempt": {Kind: retry.EventAttempt, Scope: "orders", Attempt: 1},
		"retry": {Kind: retry.EventRetry, Scope: "orders", Attempt: 2, Delay: time.Second,
			Err: retry.Transient(errors.New("reset")), Classification: retry.Classification{Safety: retry.SafetyYes}},
		"give-up": {Kind: retry.EventGiveUp, Scope: "orders", Attempt: 3, Err: errors.New("reset"),
			Reason: retry.ErrMaxAttemptsExceeded},
	}
	for name, ev := range events {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				hook(ev)
			}
		})
	}
}
