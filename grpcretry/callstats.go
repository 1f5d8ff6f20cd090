package grpcretry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"
)

// CallStats is what one call's retries and hedges came to: the per-call
// figures of gRPC's retry metrics (gRFC A96), which otelretry records
// (otelretry.Metrics.RecordGRPCCall takes a CallStats converted field for
// field).
type CallStats struct {
	// Method is the call's full method name, "/package.Service/Method".
	Method string
	// Target is the connection's target, as dialed.
	Target string
	// Retries counts the attempts after the first, hedges not included.
	Retries int
	// TransparentRetries counts the attempts gRPC made again by itself,
	// below the interceptor, because they never reached the server's
	// application. They are counted only on a connection dialed with
	// grpc.WithStatsHandler(CountTransparentRetries()); 0 otherwise.
	TransparentRetries int
	// Hedges counts the hedges sent (see WithHedging).
	Hedges int
	// RetryDelay is how long, in all, the call had no attempt in flight
	// after it started: the strategy's backoff and pacing waits, and the
	// wait for the first attempt's send slot.
	RetryDelay time.Duration
}

// WithCallStats calls f with each call's CallStats when the interceptor is
// done with the call: a unary call when it returns; a stream when it can no
// longer be retried (once open, or for a server-streaming call at its
// first response message or when it gives up). f is called on the
// caller's goroutine with the call's context; it must be quick and safe
// for concurrent use. Calls with retries disabled are reported too, with
// nothing retried. Valid: non-nil.
//
// To record gRPC's per-call retry metrics with OpenTelemetry:
//
//	grpcretry.WithCallStats(func(ctx context.Context, s grpcretry.CallStats) {
//		metrics.RecordGRPCCall(ctx, otelretry.GRPCCall(s))
//	})
func WithCallStats(f func(context.Context, CallStats)) Option {
	return Option{kind: optCallStats, callStats: f}
}

// CountTransparentRetries returns a stats.Handler that counts gRPC's
// transparent retries into the CallStats of calls made through the
// interceptors with WithCallStats: dial with
// grpc.WithStatsHandler(grpcretry.CountTransparentRetries()). It does
// nothing else, and costs nothing for other calls.
func CountTransparentRetries() stats.Handler { return transparentCounter{} }

type transparentCounter struct{}

func (transparentCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	return ctx
}

func (transparentCounter) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if b, ok := s.(*stats.Begin); ok && b.IsTransparentRetryAttempt {
		if tr, _ := ctx.Value(trackerKey{}).(*tracker); tr != nil {
			tr.transparent.Add(1)
		}
	}
}

func (transparentCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (transparentCounter) HandleConn(context.Context, stats.ConnStats) {}

// trackerKey is the context key under which a call's tracker is found by
// CountTransparentRetries.
type trackerKey struct{}

// tracker follows the attempts of one call: its rounds (an attempt of the
// strategy, with its hedges), its hedges, and the time it had no attempt
// in flight.
type tracker struct {
	mu        sync.Mutex
	running   int           // attempts in flight
	rounds    int           // attempts of the strategy begun
	hedges    int           // hedges begun
	round     any           // what identifies the current round: its attempts' context
	idleSince time.Time     // when running last fell to 0
	idle      time.Duration // the time with no attempt in flight, before idleSince

	transparent atomic.Int64 // CountTransparentRetries

	f      func(context.Context, CallStats) // WithCallStats; nil: nothing to report
	method string
	cc     *grpc.ClientConn
}

// newTracker returns the tracker of a call of method on cc, whose figures
// report gives to f.
func newTracker(f func(context.Context, CallStats), method string, cc *grpc.ClientConn) *tracker {
	return &tracker{idleSince: time.Now(), f: f, method: method, cc: cc}
}

// begin records that an attempt of its own round begins, and returns the
// round's number. A nil tracker follows nothing.
func (t *tracker) begin() int { return t.beginIn(nil) }

// beginIn records that an attempt of the round identified by round begins
// (the attempts of a hedged round share its context; nil: a round of its
// own), and returns the round's number.
func (t *tracker) beginIn(round any) int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running == 0 {
		t.idle += time.Since(t.idleSince)
	}
	t.running++
	if round == nil || round != t.round {
		t.rounds++
		t.round = round
	} else {
		t.hedges++
	}
	return t.rounds
}

// end records that an attempt returned.
func (t *tracker) end() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.running--; t.running == 0 {
		t.idleSince = time.Now()
	}
}

// report gives the call's figures to the tracker's function, if it has
// one, with ctx, the call's context. The call's time since its last
// attempt is not a delay: the call is over. A nil tracker reports nothing.
func (t *tracker) report(ctx context.Context) {
	if t == nil || t.f == nil {
		return
	}
	t.mu.Lock()
	s := CallStats{
		Method:             t.method,
		Retries:            max(t.rounds-1, 0),
		Hedges:             t.hedges,
		RetryDelay:         t.idle,
		TransparentRetries: int(t.transparent.Load()),
	}
	t.mu.Unlock()
	if t.cc != nil {
		s.Target = t.cc.Target()
	}
	t.f(ctx, s)
}
