package grpcretry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

func unaryCall(client testpb.TestServiceClient, ctx context.Context, body string, opts ...grpc.CallOption) (*testpb.SimpleResponse, error) {
	return client.UnaryCall(ctx, &testpb.SimpleRequest{Payload: &testpb.Payload{Body: []byte(body)}}, opts...)
}

// attemptsOf returns the attempts a *retry.Error in err's chain counts, or
// -1 if there is none.
func attemptsOf(err error) int {
	var re *retry.Error
	if !errors.As(err, &re) {
		return -1
	}
	return re.Attempts
}

func TestUnaryRetriesUnavailable(t *testing.T) {
	s, evs, clk := newStandard(t)
	srv, client, _ := setup(t, []reply{{code: codes.Unavailable}, {code: codes.Unavailable}}, grpcretry.WithStrategy(s))

	resp, err := unaryCall(client, t.Context(), "hello")
	if err != nil {
		t.Fatalf("UnaryCall: %v", err)
	}
	if got := string(resp.GetPayload().GetBody()); got != "hello" {
		t.Errorf("reply payload = %q, want %q", got, "hello")
	}
	if got := srv.Calls(); got != 3 {
		t.Errorf("server calls = %d, want 3", got)
	}
	want := []retry.EventKind{retry.EventAttempt, retry.EventRetry, retry.EventRetry, retry.EventSuccess}
	if got := evs.kinds(); !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if got, want := clk.Slept(), []time.Duration{time.Millisecond, time.Millisecond}; !slices.Equal(got, want) {
		t.Errorf("strategy waited %v, want %v", got, want)
	}
	// Hooks see the attempt's error as it is.
	for _, ev := range evs.of(retry.EventRetry) {
		if want := status.Error(codes.Unavailable, "").Error(); ev.Err.Error() != want || status.Code(ev.Err) != codes.Unavailable {
			t.Errorf("retry event error = %q (%v), want %q", ev.Err, status.Code(ev.Err), want)
		}
	}
}

func TestUnaryGivesUp(t *testing.T) {
	s, _, _ := newStandard(t)
	down := reply{code: codes.Unavailable, msg: "down for maintenance"}
	srv, client, _ := setup(t, []reply{down, down, down, down}, grpcretry.WithStrategy(s))

	_, err := unaryCall(client, t.Context(), "x")
	if !errors.Is(err, retry.ErrMaxAttemptsExceeded) {
		t.Errorf("err = %v, want it to wrap ErrMaxAttemptsExceeded", err)
	}
	if got := attemptsOf(err); got != 3 {
		t.Errorf("attempts = %d, want 3", got)
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable || st.Message() != down.msg {
		t.Errorf("status = %v (ok %v), want the last attempt's: code Unavailable, message %q", st, ok, down.msg)
	}
	var last interface{ GRPCStatus() *status.Status }
	var re *retry.Error
	if !errors.As(err, &re) || !errors.As(re.Err, &last) || last.GRPCStatus().Code() != codes.Unavailable {
		t.Errorf("err = %v, want a *retry.Error whose Err is the last attempt's status error", err)
	}
	if got := srv.Calls(); got != 3 {
		t.Errorf("server calls = %d, want 3", got)
	}
}

func TestUnaryThrottle(t *testing.T) {
	t.Run("standard", func(t *testing.T) {
		s, evs, _ := newStandard(t)
		srv, client, _ := setup(t, []reply{{code: codes.ResourceExhausted}}, grpcretry.WithStrategy(s))
		if _, err := unaryCall(client, t.Context(), "x"); err != nil {
			t.Fatalf("UnaryCall: %v", err)
		}
		retries := evs.of(retry.EventRetry)
		if len(retries) != 1 || !retries[0].Classification.Throttle {
			t.Errorf("retry events = %+v, want one classified as a throttle", retries)
		}
		if got := srv.Calls(); got != 2 {
			t.Errorf("server calls = %d, want 2", got)
		}
	})
	t.Run("adaptive", func(t *testing.T) {
		a, err := retry.NewAdaptive(retry.WithClock(newClock()), retry.WithBackoff(retry.NoBackoff), retry.WithPublishedCUBIC()) // paces from the first throttle
		if err != nil {
			t.Fatal(err)
		}
		srv, client, cc := setup(t, []reply{{code: codes.ResourceExhausted}}, grpcretry.WithStrategy(a))
		if _, err := unaryCall(client, t.Context(), "x"); err != nil {
			t.Fatalf("UnaryCall: %v", err)
		}
		st, ok := a.Stats(cc.Target())
		if !ok || st.RateLimiter == nil || !st.RateLimiter.Enabled {
			t.Errorf("Stats(%q) = %+v, %v; want a rate limiter enabled by the throttle", cc.Target(), st, ok)
		}
		if got := srv.Calls(); got != 2 {
			t.Errorf("server calls = %d, want 2", got)
		}
	})
	t.Run("unavailable is not a throttle", func(t *testing.T) {
		a, err := retry.NewAdaptive(retry.WithClock(newClock()), retry.WithBackoff(retry.NoBackoff), retry.WithPublishedCUBIC()) // paces from the first throttle
		if err != nil {
			t.Fatal(err)
		}
		_, client, cc := setup(t, []reply{{code: codes.Unavailable}}, grpcretry.WithStrategy(a))
		if _, err := unaryCall(client, t.Context(), "x"); err != nil {
			t.Fatalf("UnaryCall: %v", err)
		}
		if st, ok := a.Stats(cc.Target()); !ok || st.RateLimiter == nil || st.RateLimiter.Enabled {
			t.Errorf("Stats(%q) = %+v, %v; want a rate limiter not enabled", cc.Target(), st, ok)
		}
	})
}

func TestUnaryNotRetried(t *testing.T) {
	for _, code := range []codes.Code{
		codes.Canceled, codes.Unknown, codes.InvalidArgument, codes.NotFound, codes.AlreadyExists,
		codes.PermissionDenied, codes.FailedPrecondition, codes.Aborted, codes.OutOfRange,
		codes.Unimplemented, codes.Internal, codes.DataLoss, codes.Unauthenticated,
	} {
		t.Run(code.String(), func(t *testing.T) {
			s, evs, _ := newStandard(t)
			srv, client, _ := setup(t, []reply{{code: code, msg: "no"}}, grpcretry.WithStrategy(s))
			_, err := unaryCall(client, t.Context(), "x")
			if got := status.Code(err); got != code {
				t.Errorf("status code = %v, want %v", got, code)
			}
			if !errors.Is(err, retry.ErrNotRetryable) {
				t.Errorf("err = %v, want it to wrap ErrNotRetryable", err)
			}
			if got := srv.Calls(); got != 1 {
				t.Errorf("server calls = %d, want 1", got)
			}
			if got := len(evs.of(retry.EventGiveUp)); got != 1 {
				t.Errorf("give-up events = %d, want 1", got)
			}
		})
	}
}

func TestUnaryDeadline(t *testing.T) {
	t.Run("the caller's is not retried", func(t *testing.T) {
		s, evs, _ := newStandard(t)
		srv, client, _ := setup(t, []reply{{block: true}}, grpcretry.WithStrategy(s))
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := unaryCall(client, ctx, "x")
		if got := status.Code(err); got != codes.DeadlineExceeded {
			t.Errorf("status code = %v, want DeadlineExceeded", got)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want it to wrap context.DeadlineExceeded", err)
		}
		if got := attemptsOf(err); got != 1 {
			t.Errorf("attempts = %d, want 1", got)
		}
		if got := srv.Calls(); got != 1 {
			t.Errorf("server calls = %d, want 1", got)
		}
		if got := evs.of(retry.EventRetry); len(got) != 0 {
			t.Errorf("retry events = %+v, want none", got)
		}
	})
	t.Run("the caller's, passed before its timer fired, is not retried", func(t *testing.T) {
		// gRPC reports DEADLINE_EXCEEDED once the deadline has passed by the
		// clock, which may be before the context's timer fires.
		s, evs, _ := newStandard(t)
		ctx := lateContext{Context: t.Context(), deadline: time.Now().Add(time.Hour)}
		calls := 0
		invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			calls++
			if calls == 1 {
				// The deadline passes during the attempt.
				ctx.deadline = time.Now()
			}
			return status.Error(codes.DeadlineExceeded, "deadline exceeded")
		}
		err := grpcretry.UnaryClientInterceptor(grpcretry.WithStrategy(s))(&ctx, "/m", nil, nil, nil, invoker)
		if got := status.Code(err); got != codes.DeadlineExceeded {
			t.Errorf("status code = %v, want DeadlineExceeded", got)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want it to wrap context.DeadlineExceeded", err)
		}
		if calls != 1 {
			t.Errorf("attempts = %d, want 1", calls)
		}
		if got := evs.of(retry.EventRetry); len(got) != 0 {
			t.Errorf("retry events = %+v, want none", got)
		}
	})
	t.Run("the server's is retried as a timeout", func(t *testing.T) {
		s, evs, _ := newStandard(t)
		srv, client, _ := setup(t, []reply{{code: codes.DeadlineExceeded}}, grpcretry.WithStrategy(s))
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		if _, err := unaryCall(client, ctx, "x"); err != nil {
			t.Fatalf("UnaryCall: %v", err)
		}
		if got := srv.Calls(); got != 2 {
			t.Errorf("server calls = %d, want 2", got)
		}
		retries := evs.of(retry.EventRetry)
		if len(retries) != 1 || !retries[0].Classification.Timeout {
			t.Errorf("retry events = %+v, want one classified as a timeout", retries)
		}
	})
}

// lateContext is a context whose deadline has passed before its timer
// fired: its Err is still nil.
type lateContext struct {
	context.Context
	deadline time.Time
}

func (c *lateContext) Deadline() (time.Time, bool) { return c.deadline, true }

// cancelClock is a retry.Sleeper whose waits are cut short by cancelling
// the caller's context, as a caller giving up during a backoff would.
type cancelClock struct {
	cancel context.CancelCauseFunc
	cause  error
}

func (cancelClock) Now() time.Time { return time.Unix(0, 0) }

func (c cancelClock) Sleep(ctx context.Context, d time.Duration) error {
	c.cancel(c.cause)
	<-ctx.Done()
	return ctx.Err()
}

func TestUnaryCancelledDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	cause := errors.New("user went away")
	s, err := retry.NewStandard(retry.WithClock(cancelClock{cancel, cause}), retry.WithBackoff(retry.ConstantBackoff(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	srv, client, _ := setup(t, []reply{{code: codes.Unavailable}}, grpcretry.WithStrategy(s))
	_, err = unaryCall(client, ctx, "x")
	if got := status.Code(err); got != codes.Canceled {
		t.Errorf("status code = %v, want Canceled (the caller's context ended)", got)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Errorf("err = %v, want it to wrap context.Canceled and the cause", err)
	}
	if got := attemptsOf(err); got != 1 {
		t.Errorf("attempts = %d, want 1", got)
	}
	if got := srv.Calls(); got != 1 {
		t.Errorf("server calls = %d, want 1", got)
	}
}

func TestUnaryPushback(t *testing.T) {
	honoured := []struct {
		name     string
		pushback []string
		want     time.Duration // the strategy's wait before the retry
	}{
		{"longer than the backoff", []string{"250"}, 250 * time.Millisecond},
		{"shorter than the backoff", []string{"0"}, time.Millisecond},
		{"leading plus", []string{"+7"}, 7 * time.Millisecond},
		{"at the ceiling", []string{"60000"}, retry.DefaultMaxRetryAfter},
	}
	for _, tc := range honoured {
		t.Run(tc.name, func(t *testing.T) {
			s, evs, clk := newStandard(t)
			srv, client, _ := setup(t, []reply{{code: codes.Unavailable, pushback: tc.pushback}}, grpcretry.WithStrategy(s))
			if _, err := unaryCall(client, t.Context(), "x"); err != nil {
				t.Fatalf("UnaryCall: %v", err)
			}
			if got := clk.Slept(); !slices.Equal(got, []time.Duration{tc.want}) {
				t.Errorf("strategy waited %v, want [%v]", got, tc.want)
			}
			retries := evs.of(retry.EventRetry)
			if len(retries) != 1 || retries[0].Delay != tc.want {
				t.Errorf("retry events = %+v, want one with Delay %v", retries, tc.want)
			}
			if got := srv.Calls(); got != 2 {
				t.Errorf("server calls = %d, want 2", got)
			}
		})
	}

	refused := []struct {
		name     string
		code     codes.Code
		pushback []string
	}{
		{"negative", codes.Unavailable, []string{"-1"}},
		{"not a number", codes.Unavailable, []string{"soon"}},
		{"fractional", codes.Unavailable, []string{"1.5"}},
		{"empty", codes.Unavailable, []string{""}},
		{"two values", codes.Unavailable, []string{"10", "20"}},
		{"over 24 hours", codes.Unavailable, []string{"86400001"}},
		{"overflowing", codes.ResourceExhausted, []string{"99999999999999999999"}},
		{"valid, on a code not retried", codes.NotFound, []string{"10"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			s, _, clk := newStandard(t)
			srv, client, _ := setup(t, []reply{{code: tc.code, pushback: tc.pushback}}, grpcretry.WithStrategy(s))
			_, err := unaryCall(client, t.Context(), "x")
			if !errors.Is(err, retry.ErrNotRetryable) {
				t.Errorf("err = %v, want it to wrap ErrNotRetryable", err)
			}
			if got := status.Code(err); got != tc.code {
				t.Errorf("status code = %v, want %v", got, tc.code)
			}
			if got := srv.Calls(); got != 1 {
				t.Errorf("server calls = %d, want 1", got)
			}
			if got := clk.Slept(); len(got) != 0 {
				t.Errorf("strategy waited %v, want no wait", got)
			}
		})
	}
}

func TestUnaryPerCallOptions(t *testing.T) {
	t.Run("WithStrategy", func(t *testing.T) {
		a, aEvents, _ := newStandard(t)
		b, bEvents, _ := newStandard(t)
		_, client, _ := setup(t, []reply{{code: codes.Unavailable}}, grpcretry.WithStrategy(a))
		if _, err := unaryCall(client, t.Context(), "x", grpcretry.WithStrategy(b)); err != nil {
			t.Fatalf("UnaryCall: %v", err)
		}
		if got := aEvents.kinds(); len(got) != 0 {
			t.Errorf("the interceptor's strategy saw %v, want nothing", got)
		}
		want := []retry.EventKind{retry.EventAttempt, retry.EventRetry, retry.EventSuccess}
		if got := bEvents.kinds(); !slices.Equal(got, want) {
			t.Errorf("the call's strategy saw %v, want %v", got, want)
		}
	})
	t.Run("scopes", func(t *testing.T) {
		s, _, _ := newStandard(t)
		_, client, cc := setup(t, nil, grpcretry.WithStrategy(s))
		if _, err := unaryCall(client, t.Context(), "x"); err != nil {
			t.Fatal(err)
		}
		if _, err := unaryCall(client, t.Context(), "x", grpcretry.WithScope("tenant-a")); err != nil {
			t.Fatal(err)
		}
		byMethod := grpcretry.WithScopeFunc(func(_ context.Context, method string, _ *grpc.ClientConn) string { return method })
		if _, err := unaryCall(client, t.Context(), "x", byMethod); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, st := range s.AllStats() {
			got = append(got, st.Scope)
		}
		want := []string{"", "/grpc.testing.TestService/UnaryCall", "tenant-a", cc.Target()}
		if !slices.Equal(got, want) {
			t.Errorf("scopes = %q, want %q", got, want)
		}
	})
	t.Run("Disable", func(t *testing.T) {
		s, evs, _ := newStandard(t)
		srv, client, _ := setup(t, []reply{{code: codes.Unavailable, msg: "down"}}, grpcretry.WithStrategy(s))
		_, err := unaryCall(client, t.Context(), "x", grpcretry.Disable())
		if st, ok := status.FromError(err); !ok || st.Code() != codes.Unavailable || st.Message() != "down" {
			t.Errorf("err = %v, want the attempt's own status", err)
		}
		if got := attemptsOf(err); got != -1 {
			t.Errorf("err = %v is a *retry.Error, want the attempt's error as it is", err)
		}
		if got := srv.Calls(); got != 1 {
			t.Errorf("server calls = %d, want 1", got)
		}
		if got := evs.kinds(); len(got) != 0 {
			t.Errorf("strategy saw %v, want nothing", got)
		}
	})
	t.Run("WithStrategy after Disable", func(t *testing.T) {
		s, _, _ := newStandard(t)
		srv, client, _ := setup(t, []reply{{code: codes.Unavailable}, {code: codes.Unavailable}}, grpcretry.Disable())
		if _, err := unaryCall(client, t.Context(), "x"); status.Code(err) != codes.Unavailable {
			t.Fatalf("UnaryCall = %v, want Unavailable (retries disabled)", err)
		}
		if _, err := unaryCall(client, t.Context(), "x", grpcretry.WithStrategy(s)); err != nil {
			t.Fatalf("UnaryCall with WithStrategy: %v", err)
		}
		if got := srv.Calls(); got != 3 {
			t.Errorf("server calls = %d, want 3", got)
		}
	})
	t.Run("WithClassifier", func(t *testing.T) {
		s, _, _ := newStandard(t)
		notFoundIsTransient := func(err error) retry.Classification {
			if status.Code(err) == codes.NotFound {
				return retry.Classification{Safety: retry.SafetyYes}
			}
			return grpcretry.Classify(err)
		}
		srv, client, _ := setup(t, []reply{{code: codes.NotFound}}, grpcretry.WithStrategy(s))
		if _, err := unaryCall(client, t.Context(), "x", grpcretry.WithClassifier(notFoundIsTransient)); err != nil {
			t.Fatalf("UnaryCall: %v", err)
		}
		if got := srv.Calls(); got != 2 {
			t.Errorf("server calls = %d, want 2", got)
		}
	})
}

func TestBadOptions(t *testing.T) {
	cases := []struct {
		name string
		opt  grpcretry.Option
		want string // in the message
	}{
		{"nil strategy", grpcretry.WithStrategy(nil), "grpcretry.WithStrategy = nil"},
		{"nil classifier", grpcretry.WithClassifier(nil), "grpcretry.WithClassifier = nil"},
		{"nil scope func", grpcretry.WithScopeFunc(nil), "grpcretry.WithScopeFunc = nil"},
		{"zero Option", grpcretry.Option{}, "the zero Option"},
	}
	check := func(t *testing.T, srv *server, err error, want string) {
		t.Helper()
		if !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want one wrapping ErrInvalidConfig that says %q", err, want)
		}
		if got := status.Code(err); got != codes.Internal {
			t.Errorf("status code = %v, want Internal", got)
		}
		if got := attemptsOf(err); got != 0 {
			t.Errorf("attempts = %d, want 0", got)
		}
		if got := srv.Calls(); got != 0 {
			t.Errorf("server calls = %d, want 0", got)
		}
	}
	for _, tc := range cases {
		t.Run("interceptor/"+tc.name, func(t *testing.T) {
			srv, client, _ := setup(t, nil, tc.opt)
			_, err := unaryCall(client, t.Context(), "x")
			check(t, srv, err, tc.want)
			stream, err := client.StreamingOutputCall(t.Context(), &testpb.StreamingOutputCallRequest{})
			if stream != nil {
				t.Errorf("StreamingOutputCall returned a stream")
			}
			check(t, srv, err, tc.want)
		})
		t.Run("call/"+tc.name, func(t *testing.T) {
			srv, client, _ := setup(t, nil)
			_, err := unaryCall(client, t.Context(), "x", tc.opt)
			check(t, srv, err, tc.want)
		})
	}
	t.Run("nil *Standard", func(t *testing.T) {
		srv, client, _ := setup(t, nil, grpcretry.WithStrategy((*retry.Standard)(nil)))
		_, err := unaryCall(client, t.Context(), "x")
		check(t, srv, err, "strategy")
	})
	t.Run("zero Adaptive", func(t *testing.T) {
		srv, client, _ := setup(t, nil, grpcretry.WithStrategy(new(retry.Adaptive)))
		_, err := unaryCall(client, t.Context(), "x")
		check(t, srv, err, "strategy")
	})
	t.Run("nil context", func(t *testing.T) {
		invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
			t.Error("invoker called with a nil context")
			return nil
		}
		var nilCtx context.Context
		err := grpcretry.UnaryClientInterceptor()(nilCtx, "/m", nil, nil, nil, invoker)
		if !errors.Is(err, retry.ErrInvalidConfig) {
			t.Errorf("err = %v, want one wrapping ErrInvalidConfig", err)
		}
	})
}

// stubStrategy is a RetryStrategy that refuses the initial token with
// acquireErr, and otherwise retries at once, up to three attempts.
type stubStrategy struct {
	acquireErr error
}

type stubToken int

func (stubToken) Delay() time.Duration { return 0 }
func (t stubToken) RetryCount() int    { return int(t) }

func (s stubStrategy) AcquireInitialToken(context.Context, string) (retry.RetryToken, error) {
	if s.acquireErr != nil {
		return nil, s.acquireErr
	}
	return stubToken(0), nil
}

func (stubStrategy) RefreshRetryToken(_ context.Context, tok retry.RetryToken, err error) (retry.RetryToken, error) {
	if !retry.Classify(err).Retryable() {
		return nil, retry.ErrNotRetryable
	}
	if n := tok.RetryCount(); n < 2 {
		return stubToken(n + 1), nil
	}
	return nil, retry.ErrMaxAttemptsExceeded
}

func (stubStrategy) RecordSuccess(retry.RetryToken) error { return nil }

// nilTokens is a broken RetryStrategy that returns no token and no error:
// from AcquireInitialToken if it has no stubStrategy, else from
// RefreshRetryToken.
type nilTokens struct {
	initial retry.RetryStrategy
}

func (n nilTokens) AcquireInitialToken(ctx context.Context, scope string) (retry.RetryToken, error) {
	if n.initial == nil {
		return nil, nil
	}
	return n.initial.AcquireInitialToken(ctx, scope)
}

func (nilTokens) RefreshRetryToken(context.Context, retry.RetryToken, error) (retry.RetryToken, error) {
	return nil, nil
}

func (nilTokens) RecordSuccess(retry.RetryToken) error { return nil }

func TestUnaryCustomStrategy(t *testing.T) {
	down := []reply{{code: codes.Unavailable}, {code: codes.Unavailable}, {code: codes.Unavailable}}
	t.Run("retries", func(t *testing.T) {
		srv, client, _ := setup(t, down[:2], grpcretry.WithStrategy(stubStrategy{}))
		if _, err := unaryCall(client, t.Context(), "x"); err != nil {
			t.Fatalf("UnaryCall: %v", err)
		}
		if got := srv.Calls(); got != 3 {
			t.Errorf("server calls = %d, want 3", got)
		}
	})
	t.Run("initial token refused: one attempt", func(t *testing.T) {
		refusal := errors.New("no quota for first attempts")
		srv, client, _ := setup(t, down, grpcretry.WithStrategy(stubStrategy{acquireErr: refusal}))
		_, err := unaryCall(client, t.Context(), "x")
		if !errors.Is(err, refusal) || status.Code(err) != codes.Unavailable || attemptsOf(err) != 1 {
			t.Errorf("err = %v, want the attempt's Unavailable, after 1 attempt, wrapping the refusal", err)
		}
		if got := srv.Calls(); got != 1 {
			t.Errorf("server calls = %d, want 1", got)
		}
	})
	t.Run("initial token rate limited: no attempt", func(t *testing.T) {
		srv, client, _ := setup(t, nil, grpcretry.WithStrategy(stubStrategy{acquireErr: retry.ErrRateLimited}))
		_, err := unaryCall(client, t.Context(), "x")
		if !errors.Is(err, retry.ErrRateLimited) || status.Code(err) != codes.ResourceExhausted || attemptsOf(err) != 0 {
			t.Errorf("err = %v, want ResourceExhausted wrapping ErrRateLimited, with no attempt", err)
		}
		if got := srv.Calls(); got != 0 {
			t.Errorf("server calls = %d, want 0", got)
		}
	})
	t.Run("strategy not configured: no attempt", func(t *testing.T) {
		broken := fmt.Errorf("%w: no scopes configured", retry.ErrInvalidConfig)
		srv, client, _ := setup(t, nil, grpcretry.WithStrategy(stubStrategy{acquireErr: broken}))
		_, err := unaryCall(client, t.Context(), "x")
		if !errors.Is(err, retry.ErrInvalidConfig) || status.Code(err) != codes.Internal || attemptsOf(err) != 0 {
			t.Errorf("err = %v (%v), want INTERNAL wrapping ErrInvalidConfig, with no attempt", err, status.Code(err))
		}
		if got := srv.Calls(); got != 0 {
			t.Errorf("server calls = %d, want 0", got)
		}
	})
	t.Run("no initial token: one attempt", func(t *testing.T) {
		srv, client, _ := setup(t, down, grpcretry.WithStrategy(nilTokens{}))
		_, err := unaryCall(client, t.Context(), "x")
		if !errors.Is(err, retry.ErrInvalidToken) || status.Code(err) != codes.Unavailable || attemptsOf(err) != 1 {
			t.Errorf("err = %v, want the attempt's Unavailable, after 1 attempt, wrapping ErrInvalidToken", err)
		}
		if got := srv.Calls(); got != 1 {
			t.Errorf("server calls = %d, want 1", got)
		}
	})
	t.Run("no refreshed token: no retry", func(t *testing.T) {
		srv, client, _ := setup(t, down, grpcretry.WithStrategy(nilTokens{stubStrategy{}}))
		_, err := unaryCall(client, t.Context(), "x")
		if !errors.Is(err, retry.ErrInvalidToken) || status.Code(err) != codes.Unavailable || attemptsOf(err) != 1 {
			t.Errorf("err = %v, want the attempt's Unavailable, after 1 attempt, wrapping ErrInvalidToken", err)
		}
		if got := srv.Calls(); got != 1 {
			t.Errorf("server calls = %d, want 1", got)
		}
	})
	t.Run("context already done: no attempt", func(t *testing.T) {
		srv, client, _ := setup(t, nil, grpcretry.WithStrategy(stubStrategy{}))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := unaryCall(client, ctx, "x")
		if !errors.Is(err, context.Canceled) || status.Code(err) != codes.Canceled || attemptsOf(err) != 0 {
			t.Errorf("err = %v, want Canceled, with no attempt", err)
		}
		if got := srv.Calls(); got != 0 {
			t.Errorf("server calls = %d, want 0", got)
		}
	})
}

// A pushback above the strategy's ceiling (WithMaxRetryAfter) ends the
// call at once, with an error that says so, instead of a wait of a day.
func TestUnaryPushbackAboveCeiling(t *testing.T) {
	s, _, clk := newStandard(t)
	srv, client, _ := setup(t, []reply{{code: codes.Unavailable, pushback: []string{"86400000"}}}, grpcretry.WithStrategy(s))
	_, err := unaryCall(client, t.Context(), "x")
	if !errors.Is(err, retry.ErrRetryAfterTooLong) {
		t.Fatalf("err = %v, want it to wrap ErrRetryAfterTooLong", err)
	}
	if got := status.Code(err); got != codes.Unavailable {
		t.Errorf("status code = %v, want the server's Unavailable", got)
	}
	if got := srv.Calls(); got != 1 {
		t.Errorf("server calls = %d, want 1", got)
	}
	if got := clk.Slept(); len(got) != 0 {
		t.Errorf("strategy waited %v, want no wait", got)
	}
}
