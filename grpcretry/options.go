package grpcretry

import (
	"context"
	"fmt"

	"github.com/retrykit/retry"
	"google.golang.org/grpc"
)

// An Option configures the interceptors. Every Option is also a
// grpc.CallOption: given to one call, it overrides the interceptor's
// setting for that call only, and it is not passed on to gRPC.
//
//	client.Create(ctx, req, grpcretry.Disable()) // a method that must not run twice
//
// Options apply in order, the interceptor's first, so the last one given
// for a setting wins. The zero Option is invalid. Options are plain values,
// safe to share and reuse. Given to a call on a connection without these
// interceptors, an Option does nothing.
type Option struct {
	grpc.EmptyCallOption

	kind       optionKind
	strategy   retry.RetryStrategy
	scope      string
	scopeFunc  ScopeFunc
	classifier retry.Classifier
	hedging    *retry.Hedging
	methods    []string
	callStats  func(context.Context, CallStats)
}

type optionKind uint8

const (
	optStrategy optionKind = iota + 1
	optScope
	optScopeFunc
	optClassifier
	optDisable
	optSendAttempts
	optHedging
	optCallStats
)

// A ScopeFunc names the strategy scope that a call's attempts are counted
// in: with the strategies of package retry, each scope has its own retry
// quota and rate limiter. It gets the call's context, its full method name
// ("/package.Service/Method") and its connection. It must be safe for
// concurrent use.
type ScopeFunc func(ctx context.Context, method string, cc *grpc.ClientConn) string

// WithStrategy sets the strategy that decides on retries, and turns
// retries back on after Disable. Default: retry.StrategyFromContext of the
// call's context, which is retry.DefaultStrategy(), shared by the whole
// process, unless retry.ContextWithStrategy set another. Valid: non-nil.
//
// The strategy's classifier must honour retry.RetryInfo, as retry.Classify
// (the default) does: that is how it learns what the interceptor's
// classifier made of each failure.
func WithStrategy(s retry.RetryStrategy) Option {
	return Option{kind: optStrategy, strategy: s}
}

// WithScope counts every call's attempts in the strategy scope named
// scope. Default: the connection's target, as dialed (see
// grpc.ClientConn.Target), so each server or service address has its own
// retry quota and rate limiter. WithScope("") uses the strategy's default
// scope.
func WithScope(scope string) Option {
	return Option{kind: optScope, scope: scope}
}

// WithScopeFunc names each call's strategy scope with f, for example per
// method. It replaces WithScope, and WithScope replaces it. Valid: non-nil.
func WithScopeFunc(f ScopeFunc) Option {
	return Option{kind: optScopeFunc, scopeFunc: f}
}

// WithClassifier sets what the interceptors make of a failed attempt.
// Default: Classify. A classifier that changes a few codes can defer to
// Classify for the rest. Whatever it says, a retry is refused once the
// caller's context is done, and the server's grpc-retry-pushback-ms
// trailer still applies (see UnaryClientInterceptor). Valid: non-nil; it
// must be safe for concurrent use.
func WithClassifier(c retry.Classifier) Option {
	return Option{kind: optClassifier, classifier: c}
}

// Disable turns retries off: each call is made once, as if there were no
// interceptor, and the strategy is neither asked nor told about it. Given
// to a call, it suits a method that must not run twice; given to the
// interceptor, calls that pass WithStrategy are retried and others are
// not.
func Disable() Option {
	return Option{kind: optDisable}
}

// SendAttempts makes each attempt carry its number and the strategy's
// attempt limit in the metadata entry amz-sdk-request ("attempt=2;
// max=3", as the AWS SDKs send it), so that a server using
// UnaryServerInterceptor or StreamServerInterceptor knows whether its
// caller will retry (see retry.RetryIfCallerWont). The limit is sent when
// the strategy has a MaxAttempts() int method, as retry.Standard and
// retry.Adaptive do. Each attempt then gets a context of its own.
func SendAttempts() Option {
	return Option{kind: optSendAttempts}
}

// config is the interceptors' configuration for one call.
type config struct {
	strategy   retry.RetryStrategy // nil: retry.StrategyFromContext
	scope      ScopeFunc           // nil: the connection's target
	fixedScope string              // when scope is nil and scopeSet
	scopeSet   bool
	classifier retry.Classifier
	disabled   bool
	send       bool                             // SendAttempts
	hedging    *retry.Hedging                   // WithHedging
	hedged     methodSet                        // the methods hedging applies to
	callStats  func(context.Context, CallStats) // WithCallStats
	err        error                            // the first bad option
}

// apply sets cfg from o, an option of the interceptor or, if perCall, of
// one call. A bad option leaves cfg.err set, if it was not already.
func (cfg *config) apply(o Option, perCall bool) {
	switch {
	case o.kind == optHedging && o.hedging != nil && validMethods(o.methods) && (perCall || len(o.methods) > 0):
		cfg.hedging, cfg.hedged = o.hedging, methodSet(o.methods)
	case o.kind == optCallStats && o.callStats != nil:
		cfg.callStats = o.callStats
	case o.kind == optStrategy && o.strategy != nil:
		cfg.strategy, cfg.disabled = o.strategy, false
	case o.kind == optScope:
		cfg.scope, cfg.fixedScope, cfg.scopeSet = nil, o.scope, true
	case o.kind == optScopeFunc && o.scopeFunc != nil:
		cfg.scope, cfg.fixedScope, cfg.scopeSet = o.scopeFunc, "", false
	case o.kind == optClassifier && o.classifier != nil:
		cfg.classifier = o.classifier
	case o.kind == optDisable:
		cfg.disabled = true
	case o.kind == optSendAttempts:
		cfg.send = true
	case cfg.err == nil:
		cfg.err = badOption(o, perCall)
	}
}

// badOption describes what is wrong with o, an option of the interceptor
// or, if perCall, of one call.
func badOption(o Option, perCall bool) error {
	switch o.kind {
	case optHedging:
		switch {
		case o.hedging == nil:
			return configError("WithHedging", "a nil *retry.Hedging", "one made by retry.NewHedging")
		case !validMethods(o.methods):
			return configError("WithHedging", fmt.Sprintf("methods %q", o.methods), `full method names ("/package.Service/Method") or services ("/package.Service/*")`)
		case !perCall:
			return configError("WithHedging", "no method, given to the interceptor", `the methods that may be hedged ("/package.Service/Method"), or given to a call`)
		}
	case optCallStats:
		return configError("WithCallStats", "nil", "a non-nil func(context.Context, CallStats)")
	case optStrategy:
		return configError("WithStrategy", "nil", "a non-nil retry.RetryStrategy")
	case optScopeFunc:
		return configError("WithScopeFunc", "nil", "a non-nil ScopeFunc")
	case optClassifier:
		return configError("WithClassifier", "nil", "a non-nil retry.Classifier")
	}
	return configError("Option", "the zero Option", "an option made by a grpcretry function")
}

// configError reports a bad value for the named option, as package retry
// does: the error wraps retry.ErrInvalidConfig.
func configError(option string, got any, valid string) error {
	return fmt.Errorf("%w: grpcretry.%s = %v, want %s", retry.ErrInvalidConfig, option, got, valid)
}

// newConfig returns the interceptor's configuration.
func newConfig(opts []Option) config {
	cfg := config{classifier: Classify}
	for _, o := range opts {
		cfg.apply(o, false)
	}
	return cfg
}

// forCall returns the configuration of one call, the interceptor's
// overridden by the call's own Options, and the call's other options,
// which are passed on to gRPC. opts is not modified.
func (cfg config) forCall(opts []grpc.CallOption) (config, []grpc.CallOption) {
	ours := 0
	for _, o := range opts {
		if _, ok := o.(Option); ok {
			ours++
		}
	}
	if ours == 0 {
		return cfg, opts
	}
	rest := make([]grpc.CallOption, 0, len(opts)-ours)
	for _, o := range opts {
		if ro, ok := o.(Option); ok {
			cfg.apply(ro, true)
		} else {
			rest = append(rest, o)
		}
	}
	return cfg, rest
}

// scopeOf returns the scope of a call.
func (cfg *config) scopeOf(ctx context.Context, method string, cc *grpc.ClientConn) string {
	switch {
	case cfg.scope != nil:
		return cfg.scope(ctx, method, cc)
	case cfg.scopeSet:
		return cfg.fixedScope
	case cc != nil:
		return cc.Target()
	}
	return ""
}
