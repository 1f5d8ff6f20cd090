package otelretry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/otelretry"
)

// Record a strategy's decisions and observe its retry quota. A program
// would use its configured MeterProvider (the global one by default); the
// example reads the metrics back with a ManualReader.
func Example() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	metrics, err := otelretry.New(otelretry.WithMeterProvider(provider))
	if err != nil {
		panic(err)
	}
	strategy, err := retry.NewStandard(
		retry.WithHook(metrics.Hook()),
		retry.WithBackoff(retry.NoBackoff), // no waiting in this example
	)
	if err != nil {
		panic(err)
	}
	reg, err := metrics.Observe(strategy)
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	calls := 0
	_, err = retry.Do(context.Background(), func(ctx context.Context) (string, error) {
		calls++
		if calls < 3 {
			return "", retry.Transient(errors.New("connection reset"))
		}
		return "ok", nil
	}, retry.WithStrategy(strategy), retry.WithScope("inventory"))
	if err != nil {
		panic(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			name := func(attrs attribute.Set) string {
				return m.Name + "{" + attrs.Encoded(attribute.DefaultEncoder()) + "}"
			}
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					lines = append(lines, fmt.Sprintf("%s %d", name(dp.Attributes), dp.Value))
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					lines = append(lines, fmt.Sprintf("%s count=%d sum=%gs", name(dp.Attributes), dp.Count, dp.Sum))
				}
			case metricdata.Gauge[float64]:
				for _, dp := range data.DataPoints {
					lines = append(lines, fmt.Sprintf("%s %g", name(dp.Attributes), dp.Value))
				}
			case metricdata.Gauge[int64]:
				for _, dp := range data.DataPoints {
					lines = append(lines, fmt.Sprintf("%s %d", name(dp.Attributes), dp.Value))
				}
			}
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// retry.client.attempts{retry.scope=inventory} 3
	// retry.client.quota.available{retry.scope=inventory} 495
	// retry.client.quota.available{retry.scope=} 500
	// retry.client.quota.limit{retry.scope=inventory} 500
	// retry.client.quota.limit{retry.scope=} 500
	// retry.client.retries{error.type=*errors.errorString,retry.reason=transient,retry.scope=inventory} 2
	// retry.client.wait.duration{retry.reason=transient,retry.scope=inventory} count=2 sum=0s
}

// Record gRPC's per-call retry metrics (gRFC A96). With grpcretry, the
// interceptors report each call:
//
//	grpcretry.WithCallStats(func(ctx context.Context, s grpcretry.CallStats) {
//		metrics.RecordGRPCCall(ctx, otelretry.GRPCCall(s))
//	})
func ExampleMetrics_RecordGRPCCall() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	metrics, err := otelretry.New(otelretry.WithMeterProvider(provider))
	if err != nil {
		panic(err)
	}

	metrics.RecordGRPCCall(context.Background(), otelretry.GRPCCall{
		Method: "/shop.Orders/Get", Target: "dns:///orders:443", Retries: 1, Hedges: 1, RetryDelay: 120 * time.Millisecond,
	})

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch data := m.Data.(type) {
		case metricdata.Histogram[int64]:
			fmt.Println(m.Name, data.DataPoints[0].Sum)
		case metricdata.Histogram[float64]:
			fmt.Println(m.Name, data.DataPoints[0].Sum)
		}
	}
	// Output:
	// grpc.client.call.retries 1
	// grpc.client.call.hedges 1
	// grpc.client.call.retry_delay 0.12
}
