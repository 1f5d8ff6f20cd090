package grpcretry_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"sync/atomic"
	"time"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// startingServer is a health service that is not ready for its first
// check, as a server that is starting up might not be.
type startingServer struct {
	healthpb.UnimplementedHealthServer
	checks atomic.Int32
}

func (s *startingServer) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if s.checks.Add(1) == 1 {
		return nil, status.Error(codes.Unavailable, "starting")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// Dial with the interceptors, and a call that fails with UNAVAILABLE is
// retried.
func Example() {
	// A server on the loopback interface.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, &startingServer{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() { srv.Stop(); <-served }()

	// The client: a strategy, and the interceptors that use it.
	strategy, err := retry.NewStandard(
		retry.WithBackoff(retry.ConstantBackoff(10*time.Millisecond)),
		retry.WithHook(func(ev retry.Event) {
			if ev.Kind == retry.EventRetry {
				fmt.Println("retrying after", status.Code(ev.Err))
			}
		}),
	)
	if err != nil {
		log.Fatal(err)
	}
	conn, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor(grpcretry.WithStrategy(strategy))),
		grpc.WithStreamInterceptor(grpcretry.StreamClientInterceptor(grpcretry.WithStrategy(strategy))),
		grpc.WithDisableRetry(), // the strategy retries, not gRPC
	)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)
	// Output:
	// retrying after Unavailable
	// SERVING <nil>
}

// A classifier that retries ABORTED too, and leaves every other code to
// Classify.
func ExampleWithClassifier() {
	abortedToo := func(err error) retry.Classification {
		if status.Code(err) == codes.Aborted {
			return retry.Classification{Safety: retry.SafetyYes}
		}
		return grpcretry.Classify(err)
	}
	for _, code := range []codes.Code{codes.Aborted, codes.Unavailable, codes.NotFound} {
		fmt.Println(code, abortedToo(status.Error(code, "")).Retryable())
	}

	// Installed for every call of a connection:
	_ = grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor(grpcretry.WithClassifier(abortedToo)))
	// or passed to one call, as a grpc.CallOption:
	_ = []grpc.CallOption{grpcretry.WithClassifier(abortedToo)}
	// Output:
	// Aborted true
	// Unavailable true
	// NotFound false
}

// Options passed to a call apply to that call only: here, a call that must
// not be made twice.
func ExampleDisable() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, &startingServer{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() { srv.Stop(); <-served }()

	conn, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(grpcretry.UnaryClientInterceptor()),
		grpc.WithDisableRetry(),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)

	_, err = client.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpcretry.Disable())
	fmt.Println(status.Code(err))
	resp, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)
	// Output:
	// Unavailable
	// SERVING <nil>
}

// A RESOURCE_EXHAUSTED that the client's own rate limiter produced, before
// any attempt, is told from the server's throttle, even once a server has
// passed its status on.
func ExampleIsLocalRefusal() {
	passedOn, _ := status.New(codes.ResourceExhausted, "grpcretry: refused by the client before sending (no attempt made)").
		WithDetails(&errdetails.ErrorInfo{Reason: grpcretry.ReasonClientRateLimited, Domain: grpcretry.ErrorDomain})
	throttle := status.Error(codes.ResourceExhausted, "rate exceeded")

	fmt.Println(grpcretry.IsLocalRefusal(passedOn.Err()))
	fmt.Println(grpcretry.IsLocalRefusal(throttle))
	// Output:
	// true
	// false
}

// A service that calls others serves with the server interceptors, so
// that when its own retries give up it answers its clients not to retry:
// a failing service at the bottom of a chain of three sees 3 attempts per
// user call, not 27.
func ExampleUnaryServerInterceptor() {
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpcretry.UnaryServerInterceptor()),
		grpc.ChainStreamInterceptor(grpcretry.StreamServerInterceptor()),
	)
	defer srv.Stop()
	// Register the service, whose handlers call others with their context
	// through grpcretry's client interceptors, and serve.
}

// slowServer is a health service whose first check hangs until its caller
// gives up on it, as a server stuck behind a slow disk might.
type slowServer struct {
	healthpb.UnimplementedHealthServer
	checks atomic.Int32
}

func (s *slowServer) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if s.checks.Add(1) == 1 {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// Hedge the calls of a method that may run twice: when the first attempt
// has not answered within 20 ms, a second is sent, its answer is the
// call's and the first is cancelled. WithCallStats reports what each call
// took (record it with otelretry's RecordGRPCCall).
func ExampleWithHedging() {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, &slowServer{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() { srv.Stop(); <-served }()

	hedging, err := retry.NewHedging(retry.WithHedgeDelay(20 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	interceptor := grpcretry.UnaryClientInterceptor(
		grpcretry.WithHedging(hedging, "/grpc.health.v1.Health/Check"), // idempotent: may run twice
		grpcretry.WithCallStats(func(_ context.Context, s grpcretry.CallStats) {
			fmt.Printf("%s: %d hedge, %d retries\n", s.Method, s.Hedges, s.Retries)
		}),
	)
	conn, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(interceptor),
		grpc.WithDisableRetry(),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	resp, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	fmt.Println(resp.GetStatus(), err)
	// Output:
	// /grpc.health.v1.Health/Check: 1 hedge, 0 retries
	// SERVING <nil>
}
