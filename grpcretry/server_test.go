package grpcretry_test

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
)

// relay serves each call by making it to the service below, through the
// retry interceptors of its own connection, and answering as it answered.
type relay struct {
	testpb.UnimplementedTestServiceServer
	below testpb.TestServiceClient
}

func (r *relay) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	return r.below.UnaryCall(ctx, req)
}

// serveWith is serve with server options.
func serveWith(t *testing.T, srv testpb.TestServiceServer, opts ...grpc.ServerOption) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(gs, srv)
	done := make(chan struct{})
	go func() { defer close(done); _ = gs.Serve(lis) }()
	t.Cleanup(func() { gs.Stop(); <-done })
	return lis.Addr().String()
}

// Three layers of 3 attempts (the user's client and two services), the
// bottom service failing every call: 27 attempts at the bottom per user
// call without the server interceptors, 3 with them.
func TestServerInterceptorsKeepRetriesFromMultiplying(t *testing.T) {
	failing := make([]reply, 100)
	for i := range failing {
		failing[i] = reply{code: codes.Unavailable}
	}
	for _, tc := range []struct {
		name   string
		server []grpc.ServerOption
		client []grpcretry.Option
		want   int
	}{
		{"no coordination", nil, nil, 27},
		{"nearest failure", []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpcretry.UnaryServerInterceptor())}, nil, 3},
		{"every layer", []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpcretry.UnaryServerInterceptor(grpcretry.WithLayerPolicy(retry.RetryEveryLayer)))}, nil, 27},
		// The layers below retry only on their caller's last attempt:
		// 1 + 1 + (1 + 1 + 3).
		{"if caller won't", []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpcretry.UnaryServerInterceptor(grpcretry.WithLayerPolicy(retry.RetryIfCallerWont)))},
			[]grpcretry.Option{grpcretry.SendAttempts()}, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bottom := newServer(failing...)
			addr := serve(t, bottom)
			// The quota alone, as each layer's client has it in the AWS
			// SDKs: the retry budget would keep the layers from
			// multiplying one call's retries once the bottom's first call
			// has given up, and the test is about what the server half
			// does.
			for range 2 {
				s, _, _ := newStandard(t, retry.WithRetryBudget(0))
				below := testpb.NewTestServiceClient(dial(t, addr, append(tc.client, grpcretry.WithStrategy(s))...))
				addr = serveWith(t, &relay{below: below}, tc.server...)
			}
			s, _, _ := newStandard(t, retry.WithRetryBudget(0))
			user := testpb.NewTestServiceClient(dial(t, addr, append(tc.client, grpcretry.WithStrategy(s))...))
			var trailer metadata.MD
			_, err := user.UnaryCall(t.Context(), &testpb.SimpleRequest{}, grpc.Trailer(&trailer))
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("err = %v, want Unavailable", err)
			}
			if got := bottom.Calls(); got != tc.want {
				t.Errorf("attempts at the bottom = %d, want %d", got, tc.want)
			}
		})
	}
}

// A handler's code reads what the client said of its retries.
func TestServerInterceptorInbound(t *testing.T) {
	var got []retry.Inbound
	var oks []bool
	h := grpcretry.UnaryServerInterceptor()
	for _, md := range []metadata.MD{
		metadata.Pairs("grpc-previous-rpc-attempts", "2"),
		metadata.Pairs("amz-sdk-request", "attempt=2; max=3"),
		metadata.Pairs("grpc-previous-rpc-attempts", "x"),
		metadata.Pairs("amz-sdk-request", "attempt=9; max=3"),
		nil,
	} {
		ctx := metadata.NewIncomingContext(t.Context(), md)
		_, err := h(ctx, nil, &grpc.UnaryServerInfo{}, func(ctx context.Context, _ any) (any, error) {
			in, ok := retry.InboundFromContext(ctx)
			got, oks = append(got, in), append(oks, ok)
			return nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	want := []retry.Inbound{{Attempt: 3}, {Attempt: 2, MaxAttempts: 3}, {}, {}, {}}
	wantOK := []bool{true, true, false, false, false}
	for i := range want {
		if got[i] != want[i] || oks[i] != wantOK[i] {
			t.Errorf("call %d: Inbound = %+v, %v; want %+v, %v", i, got[i], oks[i], want[i], wantOK[i])
		}
	}
}

func TestServerInterceptorBadOptions(t *testing.T) {
	for _, opts := range [][]grpcretry.ServerOption{{nil}, {grpcretry.WithLayerPolicy(5)}} {
		_, err := grpcretry.UnaryServerInterceptor(opts...)(t.Context(), nil, &grpc.UnaryServerInfo{},
			func(context.Context, any) (any, error) { t.Fatal("the handler ran"); return nil, nil })
		if status.Code(err) != codes.Internal {
			t.Errorf("err = %v, want Internal naming the option", err)
		}
		err = grpcretry.StreamServerInterceptor(opts...)(nil, fakeServerStream{t.Context()}, &grpc.StreamServerInfo{},
			func(any, grpc.ServerStream) error { t.Fatal("the handler ran"); return nil })
		if status.Code(err) != codes.Internal {
			t.Errorf("stream err = %v, want Internal", err)
		}
	}
}

// The stream interceptor gives the handler the layer, and pushes back when
// a call made for it gave up.
func TestStreamServerInterceptor(t *testing.T) {
	ss := &recordingStream{fakeServerStream: fakeServerStream{metadata.NewIncomingContext(t.Context(), metadata.Pairs("grpc-previous-rpc-attempts", "0"))}}
	err := grpcretry.StreamServerInterceptor()(nil, ss, &grpc.StreamServerInfo{}, func(_ any, s grpc.ServerStream) error {
		if in, ok := retry.InboundFromContext(s.Context()); !ok || in.Attempt != 1 {
			t.Errorf("Inbound = %+v, %v", in, ok)
		}
		_, err := retry.Do(s.Context(), func(context.Context) (int, error) {
			return 0, retry.Transient(status.Error(codes.Unavailable, "down"))
		}, retry.WithStrategy(mustStandard(t)))
		return err
	})
	if err == nil || len(ss.trailer.Get("grpc-retry-pushback-ms")) != 1 || ss.trailer.Get("grpc-retry-pushback-ms")[0] != "-1" {
		t.Errorf("err = %v, trailer = %v; want the pushback -1", err, ss.trailer)
	}
}

func mustStandard(t *testing.T) *retry.Standard {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type fakeServerStream struct{ ctx context.Context }

func (s fakeServerStream) SetHeader(metadata.MD) error  { return nil }
func (s fakeServerStream) SendHeader(metadata.MD) error { return nil }
func (s fakeServerStream) SetTrailer(metadata.MD)       {}
func (s fakeServerStream) Context() context.Context     { return s.ctx }
func (s fakeServerStream) SendMsg(any) error            { return nil }
func (s fakeServerStream) RecvMsg(any) error            { return nil }

type recordingStream struct {
	fakeServerStream
	trailer metadata.MD
}

func (s *recordingStream) SetTrailer(md metadata.MD) { s.trailer = metadata.Join(s.trailer, md) }

// With SendAttempts, each attempt says its number and the limit.
func TestSendAttempts(t *testing.T) {
	var seen []string
	intercept := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		seen = append(seen, md.Get("amz-sdk-request")...)
		return h(ctx, req)
	}
	addr := serveWith(t, newServer(reply{code: codes.Unavailable}, reply{code: codes.Unavailable}), grpc.UnaryInterceptor(intercept))
	s, _, _ := newStandard(t)
	client := testpb.NewTestServiceClient(dial(t, addr, grpcretry.WithStrategy(s), grpcretry.SendAttempts()))
	if _, err := client.UnaryCall(t.Context(), &testpb.SimpleRequest{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"attempt=1; max=3", "attempt=2; max=3", "attempt=3; max=3"}
	if len(seen) != len(want) || seen[0] != want[0] || seen[1] != want[1] || seen[2] != want[2] {
		t.Errorf("attempt metadata %q, want %q", seen, want)
	}
}
