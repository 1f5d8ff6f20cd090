package retry

import (
	"context"
	"sync/atomic"
)

// strategyKey is the context key of the strategy ContextWithStrategy sets.
type strategyKey struct{}

// contextStrategies is set once ContextWithStrategy has been called, so
// that until then a call without a strategy of its own skips the context
// lookup, which costs more the deeper the context is.
var contextStrategies atomic.Bool

// ContextWithStrategy returns a copy of ctx that carries s, the strategy
// for calls that give none of their own: Do and Run use it for a call
// whose context is the returned one, or derives from it, and that has no
// WithStrategy option. A strategy given explicitly always wins.
//
// It lets a test give the code it tests a strategy of its own, even when
// that code calls Do without WithStrategy, as long as the code passes its
// caller's context down, as Go code should. The process-wide
// DefaultStrategy is left alone, so tests that run in parallel
// (t.Parallel) each see their own strategy and none can drain another's
// retry quota; a package variable swapped by each test could not offer
// that. Package retrytest builds on it. In production, prefer to pass a
// strategy explicitly: a context is easy to lose on the way down.
//
// A nil s makes calls with the returned context use DefaultStrategy
// again. A nil ctx gives a nil context, which Do refuses with an error
// wrapping ErrInvalidConfig.
func ContextWithStrategy(ctx context.Context, s RetryStrategy) context.Context {
	if ctx == nil {
		return nil
	}
	if !contextStrategies.Load() {
		contextStrategies.Store(true)
	}
	return context.WithValue(ctx, strategyKey{}, s)
}

// StrategyFromContext returns the strategy a call with ctx uses when it
// gives none of its own: the one ContextWithStrategy set in ctx, or else
// DefaultStrategy(). Integrations that default to the default strategy,
// as Transport does, call it so that ContextWithStrategy reaches them too.
// A nil ctx gives DefaultStrategy().
func StrategyFromContext(ctx context.Context) RetryStrategy {
	if ctx != nil && contextStrategies.Load() {
		if s, ok := ctx.Value(strategyKey{}).(RetryStrategy); ok {
			return s
		}
	}
	return defaultStrategy
}
