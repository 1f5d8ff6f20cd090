package grpcretry_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// reply is how the test server answers one call.
type reply struct {
	code     codes.Code // OK: succeed
	msg      string
	pushback []string // values of the grpc-retry-pushback-ms trailer
	// Streams: how many messages to send before ending the call as code
	// says.
	messages int
	block    bool          // wait for the call's context to end, then fail with its status
	wait     time.Duration // wait this long first (or until the call's context ends, then fail with its status)
}

// server is a TestService that answers each call with the next reply of
// its script; once the script is used up, calls succeed. It is safe for
// concurrent use.
type server struct {
	testpb.UnimplementedTestServiceServer

	mu       sync.Mutex
	script   []reply
	calls    int
	payloads [][]byte // each call's request payload, in order
}

func newServer(script ...reply) *server { return &server{script: script} }

// next records a call and returns its reply.
func (s *server) next(payload []byte) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.payloads = append(s.payloads, payload)
	if len(s.script) == 0 {
		return reply{messages: 2}
	}
	r := s.script[0]
	s.script = s.script[1:]
	return r
}

// Calls returns the number of calls the server received.
func (s *server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Payloads returns the request payload of every call received.
func (s *server) Payloads() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.payloads...)
}

// fail ends a call as r says, or returns nil if r is a success.
func (r reply) fail(ctx context.Context, setTrailer func(metadata.MD)) error {
	if len(r.pushback) > 0 {
		setTrailer(metadata.MD{"grpc-retry-pushback-ms": r.pushback})
	}
	if r.block {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	if r.wait > 0 {
		t := time.NewTimer(r.wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	if r.code == codes.OK {
		return nil
	}
	return status.Error(r.code, r.msg)
}

func (s *server) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	r := s.next(req.GetPayload().GetBody())
	if err := r.fail(ctx, func(md metadata.MD) { _ = grpc.SetTrailer(ctx, md) }); err != nil {
		return nil, err
	}
	return &testpb.SimpleResponse{Payload: req.GetPayload()}, nil
}

func (s *server) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream testpb.TestService_StreamingOutputCallServer) error {
	r := s.next(req.GetPayload().GetBody())
	if r.messages > 0 {
		if err := stream.SendHeader(metadata.Pairs("call", strconv.Itoa(s.Calls()))); err != nil {
			return err
		}
	}
	for i := 0; i < r.messages; i++ {
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
	return r.fail(stream.Context(), stream.SetTrailer)
}

func (s *server) FullDuplexCall(stream testpb.TestService_FullDuplexCallServer) error {
	r := s.next(nil)
	if err := r.fail(stream.Context(), stream.SetTrailer); err != nil {
		return err
	}
	for {
		req, err := stream.Recv()
		if err != nil {
			return nil // the client closed its side
		}
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
	}
}

// serve starts srv on a loopback port and returns its address. The server
// stops when the test ends.
func serve(t testing.TB, srv testpb.TestServiceServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	testpb.RegisterTestServiceServer(gs, srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
	})
	return lis.Addr().String()
}

// dial connects to addr through the interceptors made with opts. The
// connection closes when the test ends.
func dial(t testing.TB, addr string, opts ...grpcretry.Option) *grpc.ClientConn {
	t.Helper()
	return dialWith(t, addr,
		grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor(opts...)),
		grpc.WithStreamInterceptor(grpcretry.StreamClientInterceptor(opts...)))
}

func dialWith(t testing.TB, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDisableRetry())
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// setup starts a server with script and returns it and a client of it,
// dialed with opts.
func setup(t testing.TB, script []reply, opts ...grpcretry.Option) (*server, testpb.TestServiceClient, *grpc.ClientConn) {
	t.Helper()
	srv := newServer(script...)
	cc := dial(t, serve(t, srv), opts...)
	return srv, testpb.NewTestServiceClient(cc), cc
}

// events records a strategy's events.
type events struct {
	mu  sync.Mutex
	all []retry.Event
}

func (e *events) hook(ev retry.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// kinds returns the kinds of the events so far, in order.
func (e *events) kinds() []retry.EventKind {
	e.mu.Lock()
	defer e.mu.Unlock()
	var ks []retry.EventKind
	for _, ev := range e.all {
		ks = append(ks, ev.Kind)
	}
	return ks
}

// of returns the events of kind k so far.
func (e *events) of(k retry.EventKind) []retry.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var evs []retry.Event
	for _, ev := range e.all {
		if ev.Kind == k {
			evs = append(evs, ev)
		}
	}
	return evs
}

// clock is a manual retry.Sleeper: Sleep returns at once, advancing the
// clock by the wait and recording it, so a test sees every wait a strategy
// makes without waiting.
type clock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	return nil
}

// Slept returns every wait so far.
func (c *clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// newStandard returns a Standard strategy on a manual clock, with a
// constant backoff of 1ms and a hook recording its events.
func newStandard(t testing.TB, opts ...retry.StandardOption) (*retry.Standard, *events, *clock) {
	t.Helper()
	evs, clk := new(events), newClock()
	opts = append([]retry.StandardOption{
		retry.WithClock(clk), retry.WithBackoff(retry.ConstantBackoff(time.Millisecond)), retry.WithHook(evs.hook),
	}, opts...)
	s, err := retry.NewStandard(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s, evs, clk
}
