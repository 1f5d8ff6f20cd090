package grpcretry

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/retrykit/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// WithHedging hedges the unary calls of the named methods with h: while a
// call's attempt has not answered within h's delay, another is sent, the
// first success is the call's reply and the other attempts are
// cancelled, as retry.Hedging describes. Hedges are paid from h's budget
// in the call's scope, stop at once in a scope whose server throttles or
// pushes back, and, with the strategies of package retry, are sent only
// while the scope's retry quota is at least half full and, in adaptive
// mode, only when the rate limiter has a send slot free at once. Failed
// rounds are retried by the strategy as without hedging.
//
// Name the methods that may run more than once at the same time, by their
// full names ("/package.Service/Method"), or every method of a service
// ("/package.Service/*"): given to the interceptor, WithHedging with no
// method is an error. Given to one call, it hedges that call, or, with
// methods, that call if its method is named. Valid: h made by
// retry.NewHedging.
//
// Only unary calls whose reply is a proto.Message (those of generated
// clients with the default codec) are hedged: each hedge gets a reply of
// its own, and the winner's is merged into the caller's. Streams and other
// replies are retried without hedging.
//
// gRFC A6's hedging policy maps onto it as follows: maxAttempts is 1 +
// retry.WithMaxHedges (at most 5); hedgingDelay is retry.WithHedgeDelay
// (or leave the delay adaptive, a quantile of the scope's recent
// latency); nonFatalStatusCodes are the codes the classifier retries
// (Classify: UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED): any other
// code ends the call at once and cancels the other attempts, as a fatal
// code does. A server's grpc-retry-pushback-ms pauses the scope's hedges
// for at least the pushback; a negative one ends the call.
func WithHedging(h *retry.Hedging, methods ...string) Option {
	return Option{kind: optHedging, hedging: h, methods: methods}
}

// methodSet is the methods hedging applies to: full method names, and
// services written "/package.Service/*". An empty set names every method.
type methodSet []string

// validMethods reports whether every name is a full method name or a
// service's wildcard.
func validMethods(names []string) bool {
	for _, m := range names {
		service, method, ok := strings.Cut(strings.TrimPrefix(m, "/"), "/")
		if !strings.HasPrefix(m, "/") || !ok || service == "" || method == "" || strings.Contains(method, "/") ||
			(strings.Contains(method, "*") && method != "*") {
			return false
		}
	}
	return true
}

// has reports whether the set names method.
func (s methodSet) has(method string) bool {
	if len(s) == 0 {
		return true
	}
	for _, m := range s {
		if m == method || (strings.HasSuffix(m, "/*") && strings.HasPrefix(method, m[:len(m)-1])) {
			return true
		}
	}
	return false
}

// hedges returns the call's reply as a proto.Message if the call is to be
// hedged.
func (cfg *config) hedges(method string, reply any) (proto.Message, bool) {
	if cfg.hedging == nil || cfg.disabled || !cfg.hedged.has(method) {
		return nil, false
	}
	m, ok := reply.(proto.Message)
	return m, ok && m != nil
}

// invokeHedged makes a unary call with hedged attempts: retry.DoHedged
// drives the rounds, the hedges and the strategy, and each attempt is
// classified here as a call's attempts are. tr counts the call's rounds
// and hedges: the attempts of a round share its context.
func (cfg *config) invokeHedged(ctx context.Context, method string, req any, reply proto.Message, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, callOpts []grpc.CallOption, tr *tracker) error {
	s := cfg.strategyOf(ctx)
	limit := cfg.attemptLimit(s)
	send, classify := cfg.send, cfg.classifier // what the hedges' goroutines read: not cfg, which stays on the caller's stack
	n := len(callOpts)
	var taken atomic.Bool // reply is some attempt's
	fn := func(actx context.Context) (proto.Message, error) {
		round := tr.beginIn(actx)
		defer tr.end()
		if send {
			actx = withAttempt(actx, round, limit)
		}
		r := reply
		if taken.Swap(true) {
			r = reply.ProtoReflect().New().Interface() // another attempt may be writing reply
		}
		var trailer metadata.MD
		err := invoker(actx, method, req, r, cc, append(callOpts[:n:n], grpc.Trailer(&trailer))...)
		if err != nil {
			return nil, mark(classify, err, trailer)
		}
		return r, nil
	}
	win, err := retry.DoHedged(ctx, fn, cfg.hedging, retry.WithStrategy(s), retry.WithScope(cfg.scopeOf(ctx, method, cc)))
	if err != nil {
		return gaveUp(ctx, err)
	}
	if win != reply {
		// Every attempt has returned: reply is no longer written to.
		proto.Reset(reply)
		proto.Merge(reply, win)
	}
	return nil
}
