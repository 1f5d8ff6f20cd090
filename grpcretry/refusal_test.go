package grpcretry_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
)

// A call that the adaptive strategy's own rate limiter refuses is told
// apart from the server's RESOURCE_EXHAUSTED: by errors.Is, by its message,
// and by a status detail that survives a server passing the status on.
func TestLocalRefusalIsTold(t *testing.T) {
	clk := newClock() // never advances: the limiter's bucket does not refill
	l, err := retry.NewRateLimiter(retry.WithClock(clk), retry.WithPublishedCUBIC(), retry.WithFailFast(true))
	if err != nil {
		t.Fatal(err)
	}
	a, err := retry.NewAdaptive(retry.WithClock(clk), retry.WithRateLimiter(l), retry.WithBackoff(retry.NoBackoff))
	if err != nil {
		t.Fatal(err)
	}
	srv, client, _ := setup(t, []reply{{code: codes.ResourceExhausted}}, grpcretry.WithStrategy(a))

	// The server's throttle turns the limiter on; its retry may be
	// refused: that call has the server's status.
	if _, err := unaryCall(client, t.Context(), "x"); err != nil {
		if attemptsOf(err) != 1 || grpcretry.IsLocalRefusal(err) || !errors.Is(err, retry.ErrRateLimited) {
			t.Errorf("err = %v: a refused retry is not a local refusal of the call", err)
		}
	}
	var refused error
	for range 100 {
		if _, err := unaryCall(client, t.Context(), "x"); err != nil {
			refused = err
			break
		}
	}
	if refused == nil {
		t.Fatal("the limiter never refused a call")
	}
	calls := srv.Calls()
	if !errors.Is(refused, retry.ErrRateLimited) || attemptsOf(refused) != 0 {
		t.Errorf("err = %v, want ErrRateLimited after no attempt", refused)
	}
	st := status.Convert(refused)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "refused by the client before sending") {
		t.Errorf("status = %v, want RESOURCE_EXHAUSTED saying the client refused it", st)
	}
	if !grpcretry.IsLocalRefusal(refused) {
		t.Error("IsLocalRefusal(the refusal) = false")
	}
	// The status alone, as a server that returns it passes it on.
	if passed := st.Err(); !grpcretry.IsLocalRefusal(passed) || errors.Is(passed, retry.ErrRateLimited) {
		t.Errorf("IsLocalRefusal(the status passed on) = %v, want true from the detail", grpcretry.IsLocalRefusal(passed))
	}
	if srv.Calls() != calls {
		t.Error("a refused call reached the server")
	}

	for _, err := range []error{
		nil,
		status.Error(codes.ResourceExhausted, "server throttle"),
		status.Error(codes.Unavailable, "refused by the client before sending"),
		errors.New("x"),
	} {
		if grpcretry.IsLocalRefusal(err) {
			t.Errorf("IsLocalRefusal(%v) = true", err)
		}
	}
}
