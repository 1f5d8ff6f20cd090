// Package otelretry reports the decisions and state of retry strategies
// (github.com/retrykit/retry) as OpenTelemetry metrics.
//
// A [Metrics] makes the instruments once. Its [Metrics.Hook] counts
// attempts, retries and give-ups and records the wait before each retry,
// as a strategy decides them; [Metrics.Observe] reports the retry quota
// and the client-side rate limiter of every scope of a strategy, read
// through its AllStats method whenever the metrics are collected:
//
//	m, err := otelretry.New() // with the global MeterProvider
//	if err != nil { ... }
//	strategy, err := retry.NewStandard(retry.WithHook(m.Hook()))
//	if err != nil { ... }
//	reg, err := m.Observe(strategy)
//	if err != nil { ... }
//	defer reg.Unregister()
//
// # Metrics
//
// The semantic conventions define no retry metrics; these follow their
// naming rules.
//
//	name                                     instrument  unit
//	retry.client.attempts                    Counter     {attempt}
//	retry.client.retries                     Counter     {retry}
//	retry.client.give_ups                    Counter     {give_up}
//	retry.client.hedges                      Counter     {hedge}
//	retry.client.wait.duration               Histogram   s
//	retry.client.quota.available             Gauge       {token}
//	retry.client.quota.limit                 Gauge       {token}
//	retry.client.rate_limiter.fill_rate      Gauge       {attempt}/s
//	retry.client.rate_limiter.measured_rate  Gauge       {attempt}/s
//
// and gRPC's per-call retry metrics (gRFC A96), which Metrics.RecordGRPCCall
// records from the figures grpcretry.WithCallStats reports for each call:
//
//	grpc.client.call.retries                 Histogram   {retry}
//	grpc.client.call.transparent_retries     Histogram   {transparent_retry}
//	grpc.client.call.hedges                  Histogram   {hedge}
//	grpc.client.call.retry_delay             Histogram   s
//
// The first three are recorded only when not 0, as gRFC A96 asks; their
// buckets are 1, 2, 3, 4, 5 and 10. The retry delay is the time a call had
// no attempt in flight, in the buckets of gRPC's latency metrics (gRFC
// A66). They carry grpc.method (without its leading "/") and grpc.target,
// not retry.scope, and the attributes of WithAttributes.
//
// The hook counts in retry.client.attempts every attempt a strategy
// schedules, the first of a call and each retry, and in
// retry.client.retries each failed attempt it retries, with the wait it
// plans before the retry in retry.client.wait.duration (the backoff, or a
// longer Retry-After; a wait for a send slot of an adaptive strategy
// comes on top). When no further attempt is made, it counts a give-up.
// A scheduled attempt whose wait is cut short, because the caller's
// context ends or its deadline would pass first, or because no send slot
// came in time, is never made: it is counted as scheduled, and then as a
// give-up with reason canceled, deadline or rate_limited. (An attempt
// during which the caller's context ends is counted as scheduled and no
// more, as the strategy is told nothing further.) A hedge of a call made
// with retry.DoHedged or a hedging Transport counts in
// retry.client.hedges, not as an attempt: the strategy's attempts are the
// rounds of a hedged call.
//
// The histogram's bucket boundaries, in seconds, suit backoff: from no
// wait at all, through the milliseconds of a first backoff, to the minute
// of a long Retry-After: 0, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
// 2.5, 5, 10, 20, 30, 60. A View of the MeterProvider can change them.
//
// The gauges report, for each scope a strategy keeps state for, the tokens
// in its retry quota and the most it holds, and for an adaptive strategy
// the send rate its limiter allows once it paces (RateLimiterStats.Enabled;
// before, sending is not limited), and the send rate it measures.
//
// # Attributes
//
// Every measurement has retry.scope, the scope of the call ("" for the
// default scope), and the attributes given with WithAttributes. A strategy
// keeps state for a bounded number of scopes (retry.WithMaxScopes), but
// the hook reports the scope of every call: keep scope names few, such as
// one per endpoint.
//
// Retries and waits have retry.reason, what the strategy made of the
// error: throttle, timeout or transient. Give-ups have retry.reason, why
// no further attempt is made: not_retryable, max_attempts, quota,
// rate_limited, deadline, canceled, invalid_config, retry_after_too_long
// (the service asked for a wait above the strategy's ceiling),
// caller_will_retry (retry.RetryIfCallerWont), or _OTHER.
//
// Retries, and give-ups after a failed attempt, have error.type, the
// semantic conventions' attribute: what the error's ErrorType() string
// method says; else its service error code, from an ErrorCode() string
// method as the AWS SDKs' errors have; else its HTTP status code, from an
// HTTPStatusCode() int method, if 400 or more; else its Go type, under
// the wrappers of fmt.Errorf and the marks of package retry
// (retry.Transient, ...), as semconv.ErrorType names it, such as
// "*net.OpError".
package otelretry
