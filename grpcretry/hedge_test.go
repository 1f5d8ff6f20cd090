package grpcretry_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

const unaryMethod = "/grpc.testing.TestService/UnaryCall"

// newHedging returns a Hedging with a fixed delay d.
func newHedging(t testing.TB, d time.Duration, opts ...retry.HedgingOption) *retry.Hedging {
	t.Helper()
	h, err := retry.NewHedging(append([]retry.HedgingOption{retry.WithHedgeDelay(d)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// warm connects client to its server, so that the attempts of a hedged
// call reach the server in the order they were sent (the server answers
// calls in the order of its script). It leaves the script as it is: the
// test server does not implement EmptyCall.
func warm(t testing.TB, client testpb.TestServiceClient) {
	t.Helper()
	_, err := client.EmptyCall(t.Context(), &testpb.Empty{}, grpcretry.Disable())
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("EmptyCall: %v, want UNIMPLEMENTED", err)
	}
}

// statsLog records the CallStats of every call.
type statsLog struct {
	mu  sync.Mutex
	all []grpcretry.CallStats
}

func (l *statsLog) record(_ context.Context, s grpcretry.CallStats) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, s)
}

func (l *statsLog) get() []grpcretry.CallStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// The first attempt hangs; the hedge sent after the delay answers, its
// reply is the caller's, and the hanging attempt is cancelled: the call
// returns, which it could not do with an attempt still running.
func TestUnaryHedgeWinnerTakesAll(t *testing.T) {
	s, evs, _ := newStandard(t)
	h := newHedging(t, 5*time.Millisecond)
	var log statsLog
	srv, client, cc := setup(t, []reply{{block: true}},
		grpcretry.WithStrategy(s), grpcretry.WithHedging(h, unaryMethod), grpcretry.WithCallStats(log.record))

	warm(t, client)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second) // a hang fails the test, not the run
	defer cancel()
	resp, err := unaryCall(client, ctx, "hello")
	if err != nil {
		t.Fatalf("UnaryCall: %v", err)
	}
	if got := string(resp.GetPayload().GetBody()); got != "hello" {
		t.Errorf("reply payload = %q, want %q", got, "hello")
	}
	if got := srv.Calls(); got != 2 {
		t.Errorf("server calls = %d, want 2 (the attempt and its hedge)", got)
	}
	st := h.Stats(cc.Target())
	if st.Hedges != 1 || st.Wins != 1 || st.Calls != 1 {
		t.Errorf("hedging stats = %+v, want 1 call, 1 hedge, 1 win", st)
	}
	want := []retry.EventKind{retry.EventAttempt, retry.EventHedge, retry.EventSuccess}
	if got := evs.kinds(); !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	got := log.get() // the warming call's, and the call's
	if len(got) != 2 || got[1].Hedges != 1 || got[1].Retries != 0 || got[1].Method != unaryMethod || got[1].Target != cc.Target() {
		t.Errorf("call stats = %+v, want the call with 1 hedge, no retry, method %s, target %s", got, unaryMethod, cc.Target())
	}
}

// Only the named methods are hedged; a service's wildcard names all of its
// methods, and a call's own WithHedging hedges that call.
func TestUnaryHedgeOnlyNamedMethods(t *testing.T) {
	type opts = []grpcretry.Option
	for _, tc := range []struct {
		name     string
		ic, call func(*retry.Hedging) opts
		hedged   bool
	}{
		{name: "other method named", ic: func(h *retry.Hedging) opts {
			return opts{grpcretry.WithHedging(h, "/grpc.testing.TestService/EmptyCall")}
		}},
		{name: "other service", ic: func(h *retry.Hedging) opts { return opts{grpcretry.WithHedging(h, "/grpc.testing.Other/*")} }},
		{name: "method named", ic: func(h *retry.Hedging) opts { return opts{grpcretry.WithHedging(h, unaryMethod)} }, hedged: true},
		{name: "service named", ic: func(h *retry.Hedging) opts {
			return opts{grpcretry.WithHedging(h, "/grpc.testing.TestService/*")}
		}, hedged: true},
		{name: "per call", call: func(h *retry.Hedging) opts { return opts{grpcretry.WithHedging(h)} }, hedged: true},
		{name: "per call, other method", call: func(h *retry.Hedging) opts {
			return opts{grpcretry.WithHedging(h, "/grpc.testing.TestService/EmptyCall")}
		}},
		{name: "disabled per call",
			ic:   func(h *retry.Hedging) opts { return opts{grpcretry.WithHedging(h, unaryMethod)} },
			call: func(*retry.Hedging) opts { return opts{grpcretry.Disable()} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _, _ := newStandard(t)
			h := newHedging(t, time.Millisecond)
			ic := opts{grpcretry.WithStrategy(s)}
			if tc.ic != nil {
				ic = append(ic, tc.ic(h)...)
			}
			var callOpts []grpc.CallOption
			if tc.call != nil {
				for _, o := range tc.call(h) {
					callOpts = append(callOpts, o)
				}
			}
			srv, client, cc := setup(t, []reply{{wait: 200 * time.Millisecond}}, ic...)
			if _, err := unaryCall(client, t.Context(), "x", callOpts...); err != nil {
				t.Fatalf("UnaryCall: %v", err)
			}
			calls, hedges := srv.Calls(), h.Stats(cc.Target()).Hedges
			if tc.hedged && (calls != 2 || hedges != 1) {
				t.Errorf("server calls = %d, hedges = %d; want the call hedged (2, 1)", calls, hedges)
			}
			if !tc.hedged && (calls != 1 || hedges != 0) {
				t.Errorf("server calls = %d, hedges = %d; want the call not hedged (1, 0)", calls, hedges)
			}
		})
	}
}

// An attempt that fails with a code the classifier does not retry ends the
// call at once, as gRFC A6's fatal codes do, and cancels the others.
func TestUnaryHedgeFatalCode(t *testing.T) {
	s, _, _ := newStandard(t)
	h := newHedging(t, 5*time.Millisecond)
	srv, client, _ := setup(t, []reply{{block: true}, {code: codes.InvalidArgument, msg: "bad"}},
		grpcretry.WithStrategy(s), grpcretry.WithHedging(h, unaryMethod))
	warm(t, client)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := unaryCall(client, ctx, "x")
	if status.Code(err) != codes.InvalidArgument || !errors.Is(err, retry.ErrNotRetryable) {
		t.Errorf("err = %v (%v), want INVALID_ARGUMENT, not retryable", err, status.Code(err))
	}
	if got := attemptsOf(err); got != 1 {
		t.Errorf("attempts = %d, want 1 (hedges are not attempts of the strategy)", got)
	}
	if got := srv.Calls(); got != 2 {
		t.Errorf("server calls = %d, want 2", got)
	}
}

// A failed round is retried by the strategy; each round may be hedged again.
func TestUnaryHedgeRoundsRetried(t *testing.T) {
	s, evs, _ := newStandard(t)
	h := newHedging(t, time.Hour) // no hedge: the rounds alone
	var log statsLog
	srv, client, _ := setup(t, []reply{{code: codes.Unavailable}, {code: codes.ResourceExhausted}},
		grpcretry.WithStrategy(s), grpcretry.WithHedging(h, unaryMethod), grpcretry.WithCallStats(log.record))
	if _, err := unaryCall(client, t.Context(), "x"); err != nil {
		t.Fatalf("UnaryCall: %v", err)
	}
	if got := srv.Calls(); got != 3 {
		t.Errorf("server calls = %d, want 3", got)
	}
	want := []retry.EventKind{retry.EventAttempt, retry.EventRetry, retry.EventRetry, retry.EventSuccess}
	if got := evs.kinds(); !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if got := log.get(); len(got) != 1 || got[0].Retries != 2 || got[0].Hedges != 0 {
		t.Errorf("call stats = %+v, want 2 retries, no hedge", got)
	}
}

// A server's pushback stops the scope's hedges: the next slow call is not
// hedged. A negative pushback ends the call, hedges and all.
func TestUnaryHedgePushback(t *testing.T) {
	s, _, _ := newStandard(t)
	h := newHedging(t, 100*time.Millisecond) // the pushback arrives long before
	srv, client, cc := setup(t, []reply{{code: codes.Unavailable, pushback: []string{"10"}}, {}, {wait: 300 * time.Millisecond}},
		grpcretry.WithStrategy(s), grpcretry.WithHedging(h, unaryMethod))
	warm(t, client)
	if _, err := unaryCall(client, t.Context(), "x"); err != nil {
		t.Fatalf("UnaryCall: %v", err)
	}
	if st := h.Stats(cc.Target()); st.Paused <= 0 {
		t.Fatalf("hedging stats after a pushback = %+v, want the scope paused", st)
	}
	before := srv.Calls()
	if _, err := unaryCall(client, t.Context(), "x"); err != nil {
		t.Fatalf("UnaryCall: %v", err)
	}
	if got := srv.Calls() - before; got != 1 {
		t.Errorf("server calls of a slow call while paused = %d, want 1 (no hedge)", got)
	}

	h2 := newHedging(t, 5*time.Millisecond)
	srv2, client2, _ := setup(t, []reply{{block: true}, {code: codes.Unavailable, pushback: []string{"-1"}}},
		grpcretry.WithStrategy(s), grpcretry.WithHedging(h2, unaryMethod))
	warm(t, client2)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	_, err := unaryCall(client2, ctx, "x")
	if status.Code(err) != codes.Unavailable || !errors.Is(err, retry.ErrNoRetryAnswer) {
		t.Errorf("err = %v, want UNAVAILABLE with retry.ErrNoRetryAnswer", err)
	}
	if got := srv2.Calls(); got != 2 {
		t.Errorf("server calls = %d, want 2 (the attempt and the hedge that was told no)", got)
	}
}

// Every attempt of a round, the hedges too, carries the round's number.
func TestUnaryHedgeSendAttempts(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	intercept := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		seen = append(seen, md.Get("amz-sdk-request")...)
		mu.Unlock()
		return h(ctx, req)
	}
	addr := serveWith(t, newServer(reply{code: codes.Unavailable}, reply{block: true}), grpc.UnaryInterceptor(intercept))
	s, _, _ := newStandard(t)
	h := newHedging(t, 100*time.Millisecond) // the first round fails long before
	client := testpb.NewTestServiceClient(dial(t, addr, grpcretry.WithStrategy(s), grpcretry.SendAttempts(), grpcretry.WithHedging(h, unaryMethod)))
	warm(t, client)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := client.UnaryCall(ctx, &testpb.SimpleRequest{}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"attempt=1; max=3", "attempt=2; max=3", "attempt=2; max=3"}
	if !slices.Equal(seen, want) {
		t.Errorf("attempt metadata %q, want %q", seen, want)
	}
}

// A reply that is not a proto.Message cannot be copied for a hedge: the
// call is made without hedging.
func TestUnaryHedgeNeedsProtoReply(t *testing.T) {
	s, _, _ := newStandard(t)
	h := newHedging(t, time.Millisecond)
	var calls int
	invoker := func(ctx context.Context, _ string, _, reply any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		calls++
		time.Sleep(50 * time.Millisecond) // slow: a hedging call would hedge
		*reply.(*string) = "done"
		return nil
	}
	var got string
	ic := grpcretry.UnaryClientInterceptor(grpcretry.WithStrategy(s), grpcretry.WithHedging(h, unaryMethod))
	if err := ic(t.Context(), unaryMethod, "req", &got, nil, invoker); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || got != "done" || h.Stats("").Hedges != 0 {
		t.Errorf("calls = %d, reply = %q, hedges = %d; want 1, done, 0", calls, got, h.Stats("").Hedges)
	}
}

// WithCallStats reports retries and the time with no attempt in flight,
// and CountTransparentRetries adds gRPC's own retries below the
// interceptor.
func TestCallStats(t *testing.T) {
	backoff := 20 * time.Millisecond
	s, err := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(backoff)))
	if err != nil {
		t.Fatal(err)
	}
	var log statsLog
	_, client, cc := setup(t, []reply{{code: codes.Unavailable}, {code: codes.Unavailable}},
		grpcretry.WithStrategy(s), grpcretry.WithCallStats(log.record))
	if _, err := unaryCall(client, t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	got := log.get()
	if len(got) != 1 || got[0].Retries != 2 || got[0].Hedges != 0 || got[0].TransparentRetries != 0 ||
		got[0].Method != unaryMethod || got[0].Target != cc.Target() {
		t.Fatalf("call stats = %+v, want 2 retries of %s on %s", got, unaryMethod, cc.Target())
	}
	if got[0].RetryDelay < 2*backoff {
		t.Errorf("retry delay = %v, want at least the two backoffs, %v", got[0].RetryDelay, 2*backoff)
	}

	// gRPC reports its transparent retries to the stats handler with the
	// attempt's context, which the interceptor's context is the parent of.
	counter := grpcretry.CountTransparentRetries()
	invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		ctx = counter.TagRPC(ctx, &stats.RPCTagInfo{FullMethodName: unaryMethod})
		counter.HandleRPC(ctx, &stats.Begin{Client: true})
		counter.HandleRPC(ctx, &stats.Begin{Client: true, IsTransparentRetryAttempt: true})
		counter.HandleRPC(ctx, &stats.Begin{Client: true, IsTransparentRetryAttempt: true})
		return nil
	}
	log = statsLog{}
	ic := grpcretry.UnaryClientInterceptor(grpcretry.WithStrategy(s), grpcretry.WithCallStats(log.record))
	if err := ic(t.Context(), unaryMethod, nil, nil, nil, invoker); err != nil {
		t.Fatal(err)
	}
	if got := log.get(); len(got) != 1 || got[0].TransparentRetries != 2 || got[0].Retries != 0 {
		t.Errorf("call stats = %+v, want 2 transparent retries", got)
	}
	// Without WithCallStats, the handler has nothing to count into.
	counter.HandleRPC(t.Context(), &stats.Begin{IsTransparentRetryAttempt: true})
}

// A stream reports its figures once, when it can no longer be retried, and
// is never hedged.
func TestStreamCallStats(t *testing.T) {
	s, _, _ := newStandard(t)
	h := newHedging(t, time.Millisecond)
	var log statsLog
	srv, client, _ := setup(t, []reply{{code: codes.Unavailable}, {messages: 1, wait: 50 * time.Millisecond}},
		grpcretry.WithStrategy(s), grpcretry.WithCallStats(log.record), grpcretry.WithHedging(h, "/grpc.testing.TestService/*"))
	stream, err := client.StreamingOutputCall(t.Context(), &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := stream.Recv(); err != nil {
			break
		}
	}
	got := log.get()
	if len(got) != 1 || got[0].Retries != 1 || got[0].Hedges != 0 || got[0].Method != "/grpc.testing.TestService/StreamingOutputCall" {
		t.Errorf("call stats = %+v, want one report of 1 retry", got)
	}
	if got := srv.Calls(); got != 2 {
		t.Errorf("server calls = %d, want 2", got)
	}
}

func TestHedgingBadOptions(t *testing.T) {
	h := newHedging(t, time.Millisecond)
	for _, tc := range []struct {
		name    string
		ic      []grpcretry.Option
		call    []grpc.CallOption
		message string
	}{
		{name: "nil hedging", ic: []grpcretry.Option{grpcretry.WithHedging(nil, unaryMethod)}, message: "grpcretry.WithHedging = a nil *retry.Hedging"},
		{name: "no method", ic: []grpcretry.Option{grpcretry.WithHedging(h)}, message: "no method, given to the interceptor"},
		{name: "not a method", ic: []grpcretry.Option{grpcretry.WithHedging(h, "UnaryCall")}, message: `methods ["UnaryCall"]`},
		{name: "too deep", ic: []grpcretry.Option{grpcretry.WithHedging(h, "/a/b/c")}, message: `methods ["/a/b/c"]`},
		{name: "partial wildcard", ic: []grpcretry.Option{grpcretry.WithHedging(h, "/a/Get*")}, message: `methods ["/a/Get*"]`},
		{name: "empty service", ic: []grpcretry.Option{grpcretry.WithHedging(h, "//M")}, message: `methods ["//M"]`},
		{name: "nil per call", call: []grpc.CallOption{grpcretry.WithHedging(nil)}, message: "a nil *retry.Hedging"},
		{name: "nil call stats", ic: []grpcretry.Option{grpcretry.WithCallStats(nil)}, message: "grpcretry.WithCallStats = nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, client, _ := setup(t, nil, tc.ic...)
			_, err := unaryCall(client, t.Context(), "x", tc.call...)
			if !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.message) {
				t.Errorf("err = %v, want retry.ErrInvalidConfig saying %q", err, tc.message)
			}
			if srv.Calls() != 0 {
				t.Errorf("server calls = %d, want none", srv.Calls())
			}
		})
	}
}
