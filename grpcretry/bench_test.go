package grpcretry_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// cyclingServer fails fail calls in every fail+1 with UNAVAILABLE and
// answers the next, over and over: with fail 0 every call succeeds.
type cyclingServer struct {
	testpb.UnimplementedTestServiceServer
	fail, n int
	reply   testpb.SimpleResponse
}

func (s *cyclingServer) UnaryCall(context.Context, *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if s.n++; s.n <= s.fail {
		return nil, status.Error(codes.Unavailable, "")
	}
	s.n = 0
	return &s.reply, nil
}

// benchConn serves srv over an in-memory connection and dials it with
// opts. Both end with the benchmark.
func benchConn(b *testing.B, srv testpb.TestServiceServer, opts ...grpc.DialOption) *grpc.ClientConn {
	b.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	testpb.RegisterTestServiceServer(gs, srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) { return lis.Dial() }))
	cc, err := grpc.NewClient("passthrough:///bufnet", opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cc.Close()
		gs.Stop()
		<-done
	})
	return cc
}

// grpcRetryConfig is gRPC's own retry policy, as fast as the strategy's:
// 3 attempts, UNAVAILABLE retried, the shortest backoff gRPC allows.
const grpcRetryConfig = `{"methodConfig": [{"name": [{"service": "grpc.testing.TestService"}],
  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.000000001s", "maxBackoff": "0.000000001s",
    "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`

// BenchmarkUnary is a unary call over an in-memory connection, succeeding
// at once (fail=0) or after two UNAVAILABLE attempts (fail=2): with no
// retries, with gRPC's own retry policy, and with the interceptor (no
// backoff), in the same run. The server and the connection are gRPC's, so
// the rows show what each way of retrying adds to a whole call.
func BenchmarkUnary(b *testing.B) {
	strategy, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithoutRetryQuota())
	if err != nil {
		b.Fatal(err)
	}
	hedging, err := retry.NewHedging(retry.WithHedgeDelay(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	for _, fail := range []int{0, 2} {
		for _, c := range []struct {
			name string
			opts []grpc.DialOption
		}{
			{"none", []grpc.DialOption{grpc.WithDisableRetry()}},
			{"grpc-retry", []grpc.DialOption{grpc.WithDefaultServiceConfig(grpcRetryConfig)}},
			{"grpcretry", []grpc.DialOption{grpc.WithDisableRetry(),
				grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor(grpcretry.WithStrategy(strategy)))}},
			{"grpcretry-hedged", []grpc.DialOption{grpc.WithDisableRetry(),
				grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor(grpcretry.WithStrategy(strategy),
					grpcretry.WithHedging(hedging, "/grpc.testing.TestService/UnaryCall")))}},
		} {
			if fail > 0 && c.name == "none" {
				continue // fails
			}
			b.Run(c.name+"/fail="+string(rune('0'+fail)), func(b *testing.B) {
				client := testpb.NewTestServiceClient(benchConn(b, &cyclingServer{fail: fail}, c.opts...))
				ctx := context.Background()
				req := &testpb.SimpleRequest{}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := client.UnaryCall(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
