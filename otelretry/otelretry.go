package otelretry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/retrykit/retry"
)

// ScopeName is the instrumentation scope of the meter a Metrics uses.
const ScopeName = "github.com/retrykit/retry/otelretry"

// waitBuckets are the bucket boundaries, in seconds, of the
// retry.client.wait.duration histogram, as the package documentation
// lists them.
var waitBuckets = []float64{0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60}

// countBuckets are the bucket boundaries of the per-call counts of gRPC's
// retry metrics: gRPC caps a call at 5 attempts.
var countBuckets = []float64{1, 2, 3, 4, 5, 10}

// latencyBuckets are the bucket boundaries, in seconds, of
// grpc.client.call.retry_delay: those of gRPC's latency metrics (gRFC A66).
var latencyBuckets = []float64{0, 0.00001, 0.00005, 0.0001, 0.0003, 0.0006, 0.0008, 0.001, 0.002, 0.003,
	0.004, 0.005, 0.006, 0.008, 0.01, 0.013, 0.016, 0.02, 0.025, 0.03, 0.04, 0.05, 0.065, 0.08, 0.1, 0.13,
	0.16, 0.2, 0.25, 0.3, 0.4, 0.5, 0.65, 0.8, 1, 2, 5, 10, 20, 50, 100}

// Metrics records the metrics of retry strategies: give its Hook to
// strategies with retry.WithHook, and Observe them for their quota and
// rate limiter state. Make it with New.
//
// A Metrics is safe for concurrent use and may serve any number of
// strategies; all its measurements carry the attributes given with
// WithAttributes. The zero Metrics records nothing: its Hook does nothing,
// and Observe refuses.
type Metrics struct {
	meter metric.Meter
	attrs []attribute.KeyValue // WithAttributes

	attempts metric.Int64Counter
	retries  metric.Int64Counter
	giveUps  metric.Int64Counter
	hedges   metric.Int64Counter
	wait     metric.Float64Histogram

	// gRPC's per-call retry metrics (gRFC A96), recorded by RecordGRPCCall.
	callRetries     metric.Int64Histogram
	callTransparent metric.Int64Histogram
	callHedges      metric.Int64Histogram
	callRetryDelay  metric.Float64Histogram

	quotaAvailable metric.Float64ObservableGauge
	quotaLimit     metric.Int64ObservableGauge
	fillRate       metric.Float64ObservableGauge
	measuredRate   metric.Float64ObservableGauge

	// sets caches the attributes of measurements, by attrKey, so that the
	// hook does not build them anew for every event; at most maxSets.
	sets  sync.Map // attrKey → *measurement
	nsets atomic.Int64
}

// maxSets bounds the attribute sets a Metrics caches: far more than the
// scopes, reasons and error types of a well-behaved program combine to.
// Past it, the hook builds the sets it does not have for every event.
const maxSets = 4096

// measurement holds the attributes of a measurement as the instruments
// take them, so that passing them allocates nothing.
type measurement struct {
	add     []metric.AddOption
	record  []metric.RecordOption
	observe []metric.ObserveOption
}

// attrKey is what sets the attributes of one measurement apart, besides
// those of WithAttributes. Empty fields are left out.
type attrKey struct {
	scope     string
	reason    string
	errorType string
	hasError  bool // errorType is set (it may be empty)

	grpc           bool // a gRPC call's: grpc.method and grpc.target, not retry.scope
	method, target string
}

// New makes the instruments of a Metrics with the MeterProvider given
// with WithMeterProvider, or else the global one (otel.GetMeterProvider()).
// A bad option is an error wrapping retry.ErrInvalidConfig.
func New(opts ...Option) (*Metrics, error) {
	cfg := config{provider: otel.GetMeterProvider()}
	for _, o := range opts {
		if o == nil {
			return nil, configError("Option", "nil", "an option made by a With function")
		}
		o.apply(&cfg)
	}
	if cfg.err != nil {
		return nil, cfg.err
	}
	meter := cfg.provider.Meter(ScopeName)
	m := &Metrics{meter: meter, attrs: cfg.attrs}
	var err, e error
	m.attempts, e = meter.Int64Counter("retry.client.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts a retry strategy scheduled: first attempts and retries."))
	err = errors.Join(err, e)
	m.retries, e = meter.Int64Counter("retry.client.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Failed attempts that a retry strategy retries."))
	err = errors.Join(err, e)
	m.giveUps, e = meter.Int64Counter("retry.client.give_ups", metric.WithUnit("{give_up}"),
		metric.WithDescription("Failed calls that a retry strategy does not retry further."))
	err = errors.Join(err, e)
	m.hedges, e = meter.Int64Counter("retry.client.hedges", metric.WithUnit("{hedge}"),
		metric.WithDescription("Hedges sent: extra attempts of calls whose attempt was slow (retry.Hedging)."))
	err = errors.Join(err, e)
	m.wait, e = meter.Float64Histogram("retry.client.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("The wait a retry strategy planned before a retry."),
		metric.WithExplicitBucketBoundaries(waitBuckets...))
	err = errors.Join(err, e)
	m.callRetries, e = meter.Int64Histogram("grpc.client.call.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Number of retries during the client call. If there were no retries, 0 is not reported."),
		metric.WithExplicitBucketBoundaries(countBuckets...))
	err = errors.Join(err, e)
	m.callTransparent, e = meter.Int64Histogram("grpc.client.call.transparent_retries", metric.WithUnit("{transparent_retry}"),
		metric.WithDescription("Number of transparent retries during the client call. If there were no transparent retries, 0 is not reported."),
		metric.WithExplicitBucketBoundaries(countBuckets...))
	err = errors.Join(err, e)
	m.callHedges, e = meter.Int64Histogram("grpc.client.call.hedges", metric.WithUnit("{hedge}"),
		metric.WithDescription("Number of hedges during the client call. If there were no hedges, 0 is not reported."),
		metric.WithExplicitBucketBoundaries(countBuckets...))
	err = errors.Join(err, e)
	m.callRetryDelay, e = meter.Float64Histogram("grpc.client.call.retry_delay", metric.WithUnit("s"),
		metric.WithDescription("Total time of delay while there is no active attempt during the client call."),
		metric.WithExplicitBucketBoundaries(latencyBuckets...))
	err = errors.Join(err, e)
	m.quotaAvailable, e = meter.Float64ObservableGauge("retry.client.quota.available", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens in the retry quota of a scope."))
	err = errors.Join(err, e)
	m.quotaLimit, e = meter.Int64ObservableGauge("retry.client.quota.limit", metric.WithUnit("{token}"),
		metric.WithDescription("The most tokens the retry quota of a scope holds."))
	err = errors.Join(err, e)
	m.fillRate, e = meter.Float64ObservableGauge("retry.client.rate_limiter.fill_rate", metric.WithUnit("{attempt}/s"),
		metric.WithDescription("The send rate the client-side rate limiter of a scope allows, once it paces."))
	err = errors.Join(err, e)
	m.measuredRate, e = meter.Float64ObservableGauge("retry.client.rate_limiter.measured_rate", metric.WithUnit("{attempt}/s"),
		metric.WithDescription("The send rate the client-side rate limiter of a scope measures."))
	err = errors.Join(err, e)
	if err != nil {
		return nil, fmt.Errorf("otelretry: %w", err)
	}
	return m, nil
}

// Hook returns a retry.Hook that records the events of the strategies it
// is given to: a first attempt or a retry adds to retry.client.attempts; a
// retry adds to retry.client.retries and records its planned wait; a
// give-up adds to retry.client.give_ups; a hedge adds to
// retry.client.hedges (see the package documentation).
// Add it with retry.WithHook. The hook is quick and safe for concurrent
// use, as hooks must be; it records without a context, as hooks have
// none.
func (m *Metrics) Hook() retry.Hook {
	if m == nil || m.attempts == nil {
		return func(retry.Event) {}
	}
	return m.record
}

func (m *Metrics) record(ev retry.Event) {
	ctx := context.Background()
	switch ev.Kind {
	case retry.EventAttempt:
		m.attempts.Add(ctx, 1, m.with(attrKey{scope: ev.Scope}).add...)
	case retry.EventRetry:
		reason := retryReason(ev.Classification)
		m.attempts.Add(ctx, 1, m.with(attrKey{scope: ev.Scope}).add...)
		m.retries.Add(ctx, 1, m.with(attrKey{scope: ev.Scope, reason: reason, errorType: errorType(ev.Err), hasError: true}).add...)
		m.wait.Record(ctx, ev.Delay.Seconds(), m.with(attrKey{scope: ev.Scope, reason: reason}).record...)
	case retry.EventGiveUp:
		k := attrKey{scope: ev.Scope, reason: giveUpReason(ev.Reason)}
		if ev.Err != nil {
			k.errorType, k.hasError = errorType(ev.Err), true
		}
		m.giveUps.Add(ctx, 1, m.with(k).add...)
	case retry.EventHedge:
		m.hedges.Add(ctx, 1, m.with(attrKey{scope: ev.Scope}).add...)
	}
}

// with returns the attributes of a measurement: those k names, and those
// of WithAttributes.
func (m *Metrics) with(k attrKey) *measurement {
	if o, ok := m.sets.Load(k); ok {
		return o.(*measurement)
	}
	all := make([]attribute.KeyValue, 0, 3+len(m.attrs))
	if k.grpc {
		all = append(all, grpcMethodKey.String(k.method), grpcTargetKey.String(k.target))
	} else {
		all = append(all, scopeKey.String(k.scope))
	}
	if k.reason != "" {
		all = append(all, reasonKey.String(k.reason))
	}
	if k.hasError {
		all = append(all, semconv.ErrorTypeKey.String(k.errorType))
	}
	all = append(all, m.attrs...)
	opt := metric.WithAttributeSet(attribute.NewSet(all...))
	o := &measurement{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}, observe: []metric.ObserveOption{opt}}
	if m.nsets.Load() < maxSets {
		if _, loaded := m.sets.LoadOrStore(k, o); !loaded {
			m.nsets.Add(1)
		}
	}
	return o
}

// GRPCCall is what one gRPC call's retries and hedges came to, field for
// field grpcretry.CallStats, so that one converts to the other:
//
//	grpcretry.WithCallStats(func(ctx context.Context, s grpcretry.CallStats) {
//		metrics.RecordGRPCCall(ctx, otelretry.GRPCCall(s))
//	})
type GRPCCall struct {
	Method             string        // the full method name, "/package.Service/Method"
	Target             string        // the connection's target, as dialed
	Retries            int           // attempts after the first, hedges not included
	TransparentRetries int           // attempts gRPC made again below the interceptor
	Hedges             int           // hedges sent
	RetryDelay         time.Duration // the time the call had no attempt in flight
}

// RecordGRPCCall records one gRPC call's figures in gRPC's per-call retry
// metrics (gRFC A96): grpc.client.call.retries, .transparent_retries and
// .hedges when not 0, and grpc.client.call.retry_delay, with the
// attributes grpc.method (the method's name without its leading "/", as
// gRPC's own metrics have it) and grpc.target, and those of
// WithAttributes. ctx is passed to the instruments. A zero Metrics records
// nothing.
//
// Each method and target is a series of its own. gRPC's own metrics bound
// their number by recording "other" for methods that generated code did
// not register; RecordGRPCCall records the name it is given, so keep the
// names a bounded set (rename the others to "other" before recording).
func (m *Metrics) RecordGRPCCall(ctx context.Context, c GRPCCall) {
	if m == nil || m.callRetries == nil {
		return
	}
	at := m.with(attrKey{grpc: true, method: strings.TrimPrefix(c.Method, "/"), target: c.Target})
	if c.Retries > 0 {
		m.callRetries.Record(ctx, int64(c.Retries), at.record...)
	}
	if c.TransparentRetries > 0 {
		m.callTransparent.Record(ctx, int64(c.TransparentRetries), at.record...)
	}
	if c.Hedges > 0 {
		m.callHedges.Record(ctx, int64(c.Hedges), at.record...)
	}
	m.callRetryDelay.Record(ctx, max(c.RetryDelay, 0).Seconds(), at.record...)
}

// StatsReporter is a strategy whose state Observe reports: *retry.Standard
// and *retry.Adaptive are.
type StatsReporter interface {
	// AllStats returns a snapshot of every scope the strategy keeps state
	// for.
	AllStats() []retry.ScopeStats
}

// Observe reports the retry quota and rate limiter of every scope s keeps
// state for, whenever the metrics are collected, until the registration
// it returns is unregistered. Observe each strategy once; when one
// Metrics observes several strategies with scopes of the same names, tell
// them apart with a Metrics per strategy, each made WithAttributes of its
// own.
//
// A nil s, a nil or zero *retry.Standard or *retry.Adaptive, or a zero
// Metrics, is an error wrapping retry.ErrInvalidConfig.
func (m *Metrics) Observe(s StatsReporter) (metric.Registration, error) {
	switch {
	case m == nil || m.meter == nil:
		return nil, configError("Metrics", "the zero Metrics", "one made by New")
	case s == nil:
		return nil, configError("Observe", "a nil strategy", "a strategy such as a *retry.Standard or *retry.Adaptive")
	case len(s.AllStats()) == 0:
		// Every strategy made by a constructor reports its default scope.
		return nil, configError("Observe", fmt.Sprintf("a %T that reports no scope", s), "a strategy made by retry.NewStandard or retry.NewAdaptive")
	}
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		m.observe(o, s.AllStats())
		return nil
	}, m.quotaAvailable, m.quotaLimit, m.fillRate, m.measuredRate)
	if err != nil {
		return nil, fmt.Errorf("otelretry: %w", err)
	}
	return reg, nil
}

// observe reports stats to o.
func (m *Metrics) observe(o metric.Observer, stats []retry.ScopeStats) {
	for _, st := range stats {
		attrs := m.with(attrKey{scope: st.Scope}).observe
		if q := st.RetryQuota; q != nil {
			o.ObserveFloat64(m.quotaAvailable, q.Available, attrs...)
			o.ObserveInt64(m.quotaLimit, int64(q.Capacity), attrs...)
		}
		if l := st.RateLimiter; l != nil {
			if l.Enabled {
				o.ObserveFloat64(m.fillRate, l.FillRate, attrs...)
			}
			o.ObserveFloat64(m.measuredRate, l.MeasuredRate, attrs...)
		}
	}
}
