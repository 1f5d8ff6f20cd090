package grpcretry_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// streamOutput opens a server-streaming call with request body and
// receives until the stream ends. It returns the bodies received and the
// error that ended the stream (nil for io.EOF).
func streamOutput(t *testing.T, client testpb.TestServiceClient, body string, opts ...grpc.CallOption) (testpb.TestService_StreamingOutputCallClient, []string, error) {
	t.Helper()
	stream, err := client.StreamingOutputCall(t.Context(), &testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte(body)}}, opts...)
	if err != nil {
		return nil, nil, err
	}
	var got []string
	for {
		resp, err := stream.Recv()
		if err == io.EOF {
			return stream, got, nil
		}
		if err != nil {
			return stream, got, err
		}
		got = append(got, string(resp.GetPayload().GetBody()))
	}
}

func TestServerStreamRetriedBeforeFirstMessage(t *testing.T) {
	s, evs, clk := newStandard(t)
	srv, client, _ := setup(t, []reply{
		{code: codes.Unavailable},
		{code: codes.ResourceExhausted, pushback: []string{"250"}},
	}, grpcretry.WithStrategy(s))

	stream, got, err := streamOutput(t, client, "req")
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if want := []string{"req", "req"}; !slices.Equal(got, want) {
		t.Errorf("received %q, want %q", got, want)
	}
	if got, want := srv.Payloads(), [][]byte{[]byte("req"), []byte("req"), []byte("req")}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("server received requests %q, want the request sent on each of 3 attempts", got)
	}
	wantEvents := []retry.EventKind{retry.EventAttempt, retry.EventRetry, retry.EventRetry, retry.EventSuccess}
	if got := evs.kinds(); !slices.Equal(got, wantEvents) {
		t.Errorf("events = %v, want %v", got, wantEvents)
	}
	if retries := evs.of(retry.EventRetry); len(retries) != 2 || !retries[1].Classification.Throttle {
		t.Errorf("retry events = %+v, want the second classified as a throttle", retries)
	}
	if got, want := clk.Slept(), []time.Duration{time.Millisecond, 250 * time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("strategy waited %v, want %v (backoff, then the trailer's pushback)", got, want)
	}
	if tr := stream.Trailer(); len(tr.Get("grpc-retry-pushback-ms")) != 0 {
		t.Errorf("Trailer() = %v, want the last attempt's, without pushback", tr)
	}
	if h, err := stream.Header(); err != nil || !slices.Equal(h.Get("call"), []string{"3"}) {
		t.Errorf("Header() = %v, %v; want the last attempt's (call 3)", h, err)
	}
}

func TestStreamOpenGivesUp(t *testing.T) {
	s, _, _ := newStandard(t)
	srv := newServer()
	cc := dialWith(t, serve(t, srv), grpc.WithChainStreamInterceptor(
		grpcretry.StreamClientInterceptor(grpcretry.WithStrategy(s)), failOpen(3)))
	stream, err := testpb.NewTestServiceClient(cc).StreamingOutputCall(t.Context(), &testpb.StreamingOutputCallRequest{})
	if stream != nil {
		t.Errorf("StreamingOutputCall returned a stream")
	}
	if !errors.Is(err, retry.ErrMaxAttemptsExceeded) || status.Code(err) != codes.Unavailable || attemptsOf(err) != 3 {
		t.Errorf("err = %v, want Unavailable wrapping ErrMaxAttemptsExceeded after 3 attempts", err)
	}
	if got := srv.Calls(); got != 0 {
		t.Errorf("server calls = %d, want 0", got)
	}
}

func TestServerStreamNotRetriedAfterFirstMessage(t *testing.T) {
	s, evs, _ := newStandard(t)
	srv, client, _ := setup(t, []reply{{code: codes.Unavailable, msg: "broke", messages: 1}}, grpcretry.WithStrategy(s))

	_, got, err := streamOutput(t, client, "req")
	if st, ok := status.FromError(err); !ok || st.Code() != codes.Unavailable || st.Message() != "broke" {
		t.Errorf("err = %v, want the stream's own Unavailable", err)
	}
	if attemptsOf(err) != -1 {
		t.Errorf("err = %v is a *retry.Error, want the stream's error as it is", err)
	}
	if !slices.Equal(got, []string{"req"}) {
		t.Errorf("received %q, want the one message sent", got)
	}
	if got := srv.Calls(); got != 1 {
		t.Errorf("server calls = %d, want 1", got)
	}
	want := []retry.EventKind{retry.EventAttempt, retry.EventSuccess}
	if got := evs.kinds(); !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v (success recorded at the first message)", got, want)
	}
}

func TestServerStreamGivesUp(t *testing.T) {
	t.Run("not retryable", func(t *testing.T) {
		s, _, _ := newStandard(t)
		srv, client, _ := setup(t, []reply{{code: codes.NotFound}}, grpcretry.WithStrategy(s))
		stream, _, err := streamOutput(t, client, "req")
		if !errors.Is(err, retry.ErrNotRetryable) || status.Code(err) != codes.NotFound || attemptsOf(err) != 1 {
			t.Errorf("err = %v, want NotFound wrapping ErrNotRetryable after 1 attempt", err)
		}
		if again := stream.RecvMsg(new(testpb.StreamingOutputCallResponse)); again != err {
			t.Errorf("RecvMsg again = %v, want the same error %v", again, err)
		}
		if got := srv.Calls(); got != 1 {
			t.Errorf("server calls = %d, want 1", got)
		}
	})
	t.Run("max attempts", func(t *testing.T) {
		s, _, _ := newStandard(t)
		down := reply{code: codes.Unavailable}
		srv, client, _ := setup(t, []reply{down, down, down}, grpcretry.WithStrategy(s))
		_, _, err := streamOutput(t, client, "req")
		if !errors.Is(err, retry.ErrMaxAttemptsExceeded) || status.Code(err) != codes.Unavailable || attemptsOf(err) != 3 {
			t.Errorf("err = %v, want Unavailable wrapping ErrMaxAttemptsExceeded after 3 attempts", err)
		}
		if got := srv.Calls(); got != 3 {
			t.Errorf("server calls = %d, want 3", got)
		}
	})
	t.Run("pushback forbids", func(t *testing.T) {
		s, _, _ := newStandard(t)
		srv, client, _ := setup(t, []reply{{code: codes.Unavailable, pushback: []string{"-1"}}}, grpcretry.WithStrategy(s))
		_, _, err := streamOutput(t, client, "req")
		if !errors.Is(err, retry.ErrNotRetryable) {
			t.Errorf("err = %v, want it to wrap ErrNotRetryable", err)
		}
		if got := srv.Calls(); got != 1 {
			t.Errorf("server calls = %d, want 1", got)
		}
	})
	t.Run("Disable", func(t *testing.T) {
		s, evs, _ := newStandard(t)
		srv, client, _ := setup(t, []reply{{code: codes.Unavailable}}, grpcretry.WithStrategy(s))
		_, _, err := streamOutput(t, client, "req", grpcretry.Disable())
		if status.Code(err) != codes.Unavailable || attemptsOf(err) != -1 {
			t.Errorf("err = %v, want the stream's own Unavailable", err)
		}
		if got := srv.Calls(); got != 1 {
			t.Errorf("server calls = %d, want 1", got)
		}
		if got := evs.kinds(); len(got) != 0 {
			t.Errorf("strategy saw %v, want nothing", got)
		}
	})
}

func TestServerStreamEmptyIsSuccess(t *testing.T) {
	s, evs, _ := newStandard(t)
	srv, client, _ := setup(t, []reply{{messages: 0}}, grpcretry.WithStrategy(s))
	_, got, err := streamOutput(t, client, "req")
	if err != nil || len(got) != 0 {
		t.Errorf("stream = %q, %v; want no message and io.EOF", got, err)
	}
	want := []retry.EventKind{retry.EventAttempt, retry.EventSuccess}
	if got := evs.kinds(); !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if got := srv.Calls(); got != 1 {
		t.Errorf("server calls = %d, want 1", got)
	}
}

func TestBidiStreamNotRetriedOnceOpen(t *testing.T) {
	s, evs, _ := newStandard(t)
	srv, client, _ := setup(t, []reply{{code: codes.Unavailable, msg: "down"}}, grpcretry.WithStrategy(s))
	stream, err := client.FullDuplexCall(t.Context())
	if err != nil {
		t.Fatalf("FullDuplexCall: %v", err)
	}
	_ = stream.Send(&testpb.StreamingOutputCallRequest{}) // may see io.EOF: the status comes from Recv
	_, err = stream.Recv()
	if st, ok := status.FromError(err); !ok || st.Code() != codes.Unavailable || st.Message() != "down" {
		t.Errorf("Recv = %v, want the stream's own Unavailable", err)
	}
	if got := srv.Calls(); got != 1 {
		t.Errorf("server calls = %d, want 1", got)
	}
	want := []retry.EventKind{retry.EventAttempt, retry.EventSuccess}
	if got := evs.kinds(); !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v (success recorded at open)", got, want)
	}
}

// failOpen returns a stream interceptor that fails the first n streams it
// is asked to open with UNAVAILABLE, as gRPC does when the connection is
// down, and opens the others.
func failOpen(n int) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		if n > 0 {
			n--
			return nil, status.Error(codes.Unavailable, "connection refused")
		}
		return streamer(ctx, desc, cc, method, opts...)
	}
}

func TestStreamOpenRetried(t *testing.T) {
	t.Run("server streaming", func(t *testing.T) {
		s, evs, _ := newStandard(t)
		srv := newServer()
		cc := dialWith(t, serve(t, srv), grpc.WithChainStreamInterceptor(
			grpcretry.StreamClientInterceptor(grpcretry.WithStrategy(s)), failOpen(2)))
		_, got, err := streamOutput(t, testpb.NewTestServiceClient(cc), "req")
		if err != nil || !slices.Equal(got, []string{"req", "req"}) {
			t.Errorf("stream = %q, %v; want two messages", got, err)
		}
		want := []retry.EventKind{retry.EventAttempt, retry.EventRetry, retry.EventRetry, retry.EventSuccess}
		if got := evs.kinds(); !slices.Equal(got, want) {
			t.Errorf("events = %v, want %v", got, want)
		}
		if got := srv.Calls(); got != 1 {
			t.Errorf("server calls = %d, want 1", got)
		}
	})
	t.Run("server streaming, open fails on a retry", func(t *testing.T) {
		s, evs, _ := newStandard(t)
		srv := newServer(reply{code: codes.Unavailable})
		// The first open succeeds; the stream fails; the second open fails.
		calls := 0
		failSecond := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			if calls++; calls == 2 {
				return nil, status.Error(codes.Unavailable, "connection refused")
			}
			return streamer(ctx, desc, cc, method, opts...)
		}
		cc := dialWith(t, serve(t, srv), grpc.WithChainStreamInterceptor(
			grpcretry.StreamClientInterceptor(grpcretry.WithStrategy(s)), failSecond))
		_, got, err := streamOutput(t, testpb.NewTestServiceClient(cc), "req")
		if err != nil || !slices.Equal(got, []string{"req", "req"}) {
			t.Errorf("stream = %q, %v; want two messages", got, err)
		}
		if got := len(evs.of(retry.EventRetry)); got != 2 {
			t.Errorf("retries = %d, want 2", got)
		}
		if got := srv.Calls(); got != 2 {
			t.Errorf("server calls = %d, want 2", got)
		}
	})
	t.Run("bidirectional", func(t *testing.T) {
		s, evs, _ := newStandard(t)
		srv := newServer()
		cc := dialWith(t, serve(t, srv), grpc.WithChainStreamInterceptor(
			grpcretry.StreamClientInterceptor(grpcretry.WithStrategy(s)), failOpen(1)))
		stream, err := testpb.NewTestServiceClient(cc).FullDuplexCall(t.Context())
		if err != nil {
			t.Fatalf("FullDuplexCall: %v", err)
		}
		if err := stream.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte("ping")}}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil || string(resp.GetPayload().GetBody()) != "ping" {
			t.Errorf("Recv = %v, %v; want the echo", resp, err)
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != io.EOF {
			t.Errorf("Recv after CloseSend = %v, want io.EOF", err)
		}
		want := []retry.EventKind{retry.EventAttempt, retry.EventRetry, retry.EventSuccess}
		if got := evs.kinds(); !slices.Equal(got, want) {
			t.Errorf("events = %v, want %v", got, want)
		}
	})
}
