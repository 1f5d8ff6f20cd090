package bench_test

import (
	"context"
	"net"
	"testing"
	"time"

	grpcmw "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
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
// answers the next, over and over: with fail 0 every call succeeds. It is
// not safe for concurrent use.
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

// grpcConn serves srv over an in-memory connection and dials it with
// opts. Both end with the test.
func grpcConn(tb testing.TB, srv testpb.TestServiceServer, opts ...grpc.DialOption) *grpc.ClientConn {
	tb.Helper()
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
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cc.Close()
		gs.Stop()
		<-done
	})
	return cc
}

// grpcRetryConfig is gRPC's own retry policy, as fast as the others: 3
// attempts, UNAVAILABLE retried, the shortest backoff gRPC allows.
const grpcRetryConfig = `{"methodConfig": [{"name": [{"service": "grpc.testing.TestService"}],
  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.000000001s", "maxBackoff": "0.000000001s",
    "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`

// grpcCallers returns the callers of a unary call over an in-memory
// connection to a server that fails fail times with UNAVAILABLE and then
// answers: with no retries (fail 0 only), gRPC's own retry policy,
// go-grpc-middleware's retry interceptor, and grpcretry's interceptor,
// unhedged and hedged (a delay of a second, never reached), each with 3
// attempts and no backoff. The server and the connection are gRPC's, so
// the rows show what each way of retrying adds to a whole call.
func grpcCallers(tb testing.TB, fail int) []caller {
	strategy := must(retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithoutRetryQuota()))
	hedging := must(retry.NewHedging(retry.WithHedgeDelay(time.Second)))
	ways := []struct {
		name string
		opts []grpc.DialOption
	}{
		{"direct", []grpc.DialOption{grpc.WithDisableRetry()}},
		{"grpc-retry", []grpc.DialOption{grpc.WithDefaultServiceConfig(grpcRetryConfig)}},
		{"grpc-middleware", []grpc.DialOption{grpc.WithDisableRetry(), grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(
			grpcmw.WithMax(3), grpcmw.WithCodes(codes.Unavailable), grpcmw.WithBackoff(grpcmw.BackoffLinear(0))))}},
		{"retrykit", []grpc.DialOption{grpc.WithDisableRetry(),
			grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor(grpcretry.WithStrategy(strategy)))}},
		{"retrykit-hedged", []grpc.DialOption{grpc.WithDisableRetry(),
			grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor(grpcretry.WithStrategy(strategy),
				grpcretry.WithHedging(hedging, "/grpc.testing.TestService/UnaryCall")))}},
	}
	var callers []caller
	for _, w := range ways {
		if fail > 0 && w.name == "direct" {
			continue // it would fail
		}
		client := testpb.NewTestServiceClient(grpcConn(tb, &cyclingServer{fail: fail}, w.opts...))
		req := &testpb.SimpleRequest{}
		callers = append(callers, caller{w.name, func(ctx context.Context) (int, error) {
			_, err := client.UnaryCall(ctx, req)
			return 0, err
		}})
	}
	return callers
}

// BenchmarkGRPC: a unary gRPC call that succeeds at once.
func BenchmarkGRPC(b *testing.B) { runEach(b, grpcCallers(b, 0)) }

// BenchmarkGRPCFailFailOK: a unary gRPC call that fails twice with
// UNAVAILABLE and then succeeds.
func BenchmarkGRPCFailFailOK(b *testing.B) { runEach(b, grpcCallers(b, 2)) }
