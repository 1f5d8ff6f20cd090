// Package grpcretry retries gRPC client calls with a retry.RetryStrategy:
// a unary and a stream client interceptor, a classifier of gRPC status
// codes, and the server's retry pushback. The unary interceptor also
// hedges the calls of the methods named with WithHedging, and
// WithCallStats reports each call's retries, hedges and retry delay.
//
// Install the interceptors when dialing:
//
//	conn, err := grpc.NewClient(target,
//		grpc.WithTransportCredentials(creds),
//		grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor()),
//		grpc.WithStreamInterceptor(grpcretry.StreamClientInterceptor()),
//		grpc.WithDisableRetry(), // the strategy retries, not gRPC
//	)
//
// By default they use the strategy of the call's context
// (retry.StrategyFromContext: retry.DefaultStrategy() unless a test set
// its own with retry.ContextWithStrategy), with one scope (retry quota
// and rate limiter) per connection target, and retry UNAVAILABLE,
// RESOURCE_EXHAUSTED (as throttling) and DEADLINE_EXCEEDED (as a timeout)
// (see Classify). Options change this for every call or, passed as
// grpc.CallOptions, for one call.
//
// The strategy decides and waits: the interceptors only ask it for a token
// before the first attempt, refresh the token after each failure and
// record the success, so any retry.RetryStrategy works, and
// retry.NewAdaptive adds client-side rate limiting. The interceptors never
// retry once the caller's context is done, and start no goroutine. In a
// chain of interceptors, the ones after these see every attempt, and the
// ones before them see the call.
//
// Do not turn on gRPC's own retries (a retryPolicy in the service config)
// on a connection with these interceptors: each of the strategy's attempts
// would be retried by gRPC too, multiplying the attempts. Dial with
// grpc.WithDisableRetry to make sure a service config from the name
// resolver cannot turn them on; gRPC's transparent retries, of calls that
// never reached the server's application, stay on.
package grpcretry

import (
	"context"
	"sync"

	"github.com/retrykit/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// UnaryClientInterceptor returns an interceptor that retries failed unary
// calls as its strategy decides.
//
// Each failed attempt is classified (by Classify, unless WithClassifier
// says otherwise) and handed to the strategy marked with what the
// classifier found (a retry.RetryInfo). The server's grpc-retry-pushback-ms
// trailer, as gRFC A6 defines it, amends the classification: a
// non-negative number of milliseconds is the least the strategy waits
// before the retry (as retry.WithRetryAfter), and a negative or malformed
// value, or more than one, means the call is not retried. (A pushback
// over 24 hours also means no retry.)
//
// When the strategy gives up, or the caller's context ends, the returned
// error is one status.FromError and status.Code read as the last
// attempt's status (the context's, once the caller's context is done), and
// it wraps a *retry.Error: errors.Is reaches the last attempt's error and
// the reason for giving up (retry.ErrMaxAttemptsExceeded,
// retry.ErrNotRetryable, ...), and errors.As gives the number of attempts.
// A bad Option, or a strategy that reports a configuration error (a nil
// or zero *retry.Standard, say), fails the call with an error wrapping
// retry.ErrInvalidConfig, with no attempt made.
//
// Every attempt gets the call's context and options; the reply message is
// reused, so it holds the last attempt's reply. The interceptor is safe
// for concurrent use.
func UnaryClientInterceptor(opts ...Option) grpc.UnaryClientInterceptor {
	base := newConfig(opts)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
		invoker grpc.UnaryInvoker, callOpts ...grpc.CallOption) error {
		cfg, callOpts := base.forCall(callOpts)
		if cfg.callStats == nil || ctx == nil {
			return cfg.invoke(ctx, method, req, reply, cc, invoker, callOpts, nil)
		}
		tr := newTracker(cfg.callStats, method, cc)
		ctx = context.WithValue(ctx, trackerKey{}, tr)
		err := cfg.invoke(ctx, method, req, reply, cc, invoker, callOpts, tr)
		tr.report(ctx)
		return err
	}
}

// invoke makes a unary call, its attempts followed by tr if not nil:
// retry.Do (or, hedged, retry.DoHedged) drives the attempts and the
// strategy, and each attempt is classified here, with the server's
// pushback from the attempt's trailer.
func (cfg *config) invoke(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, callOpts []grpc.CallOption, tr *tracker) error {
	if retried, err := cfg.ready(ctx); err != nil {
		return err
	} else if !retried {
		tr.begin()
		defer tr.end()
		return invoker(ctx, method, req, reply, cc, callOpts...)
	}
	if m, ok := cfg.hedges(method, reply); ok {
		if tr == nil {
			tr = newTracker(nil, method, cc)
		}
		return cfg.invokeHedged(ctx, method, req, m, cc, invoker, callOpts, tr)
	}
	s := cfg.strategyOf(ctx)
	limit := cfg.attemptLimit(s)
	at := getAttempts(callOpts)
	defer putAttempts(at)
	_, err := retry.Do(ctx, func(actx context.Context) (struct{}, error) {
		at.n++
		if cfg.send {
			actx = withAttempt(actx, at.n, limit)
		}
		at.trailer = nil
		tr.begin()
		err := invoker(actx, method, req, reply, cc, at.opts...)
		tr.end()
		if err != nil {
			return struct{}{}, cfg.mark(err, at.trailer)
		}
		return struct{}{}, nil
	}, retry.WithStrategy(s), retry.WithScope(cfg.scopeOf(ctx, method, cc)))
	if err != nil {
		return gaveUp(ctx, err)
	}
	return nil
}

// attempts is what the attempts of one unary call share: the call's
// options with grpc.Trailer added, the trailer of the last attempt, and
// the number of attempts. They are pooled: gRPC writes the trailer before
// the attempt returns, and keeps nothing of a call's options after it.
type attempts struct {
	n       int
	trailer metadata.MD
	opts    []grpc.CallOption
}

var attemptsPool = sync.Pool{New: func() any { return new(attempts) }}

// getAttempts returns the attempts of a call with opts, from the pool.
func getAttempts(opts []grpc.CallOption) *attempts {
	at := attemptsPool.Get().(*attempts)
	at.opts = append(append(at.opts[:0], opts...), grpc.Trailer(&at.trailer))
	return at
}

// putAttempts returns at to the pool, holding nothing of its call.
func putAttempts(at *attempts) {
	clear(at.opts)
	at.n, at.trailer, at.opts = 0, nil, at.opts[:0]
	attemptsPool.Put(at)
}
