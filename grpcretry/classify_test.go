package grpcretry_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestClassify(t *testing.T) {
	yes, no := retry.SafetyYes, retry.SafetyNo
	client, server := retry.FaultClient, retry.FaultServer
	cases := []struct {
		err  error
		want retry.Classification
	}{
		{nil, retry.Classification{}},
		{status.Error(codes.OK, ""), retry.Classification{}},
		{status.Error(codes.Unavailable, ""), retry.Classification{Safety: yes, Fault: server}},
		{status.Error(codes.ResourceExhausted, ""), retry.Classification{Safety: yes, Throttle: true, Fault: server}},
		{status.Error(codes.DeadlineExceeded, ""), retry.Classification{Safety: yes, Timeout: true, Fault: retry.FaultOther}},
		{status.Error(codes.Canceled, ""), retry.Classification{Safety: no, Fault: client}},
		{status.Error(codes.InvalidArgument, ""), retry.Classification{Safety: no, Fault: client}},
		{status.Error(codes.NotFound, ""), retry.Classification{Safety: no, Fault: client}},
		{status.Error(codes.AlreadyExists, ""), retry.Classification{Safety: no, Fault: client}},
		{status.Error(codes.PermissionDenied, ""), retry.Classification{Safety: no, Fault: client}},
		{status.Error(codes.FailedPrecondition, ""), retry.Classification{Safety: no, Fault: client}},
		{status.Error(codes.OutOfRange, ""), retry.Classification{Safety: no, Fault: client}},
		{status.Error(codes.Unimplemented, ""), retry.Classification{Safety: no, Fault: client}},
		{status.Error(codes.Unauthenticated, ""), retry.Classification{Safety: no, Fault: client}},
		{status.Error(codes.Unknown, ""), retry.Classification{Safety: no, Fault: server}},
		{status.Error(codes.Aborted, ""), retry.Classification{Safety: no, Fault: server}},
		{status.Error(codes.Internal, ""), retry.Classification{Safety: no, Fault: server}},
		{status.Error(codes.DataLoss, ""), retry.Classification{Safety: no, Fault: server}},
		{status.Error(codes.Code(99), ""), retry.Classification{Safety: no, Fault: server}},
		// A status anywhere in the chain counts.
		{fmt.Errorf("calling inventory: %w", status.Error(codes.Unavailable, "")), retry.Classification{Safety: yes, Fault: server}},
		// No status: retry.Classify decides.
		{syscall.ECONNREFUSED, retry.Classify(syscall.ECONNREFUSED)},
		{context.Canceled, retry.Classification{Safety: no}},
		{errors.New("unknown"), retry.Classification{}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.err), func(t *testing.T) {
			if got := grpcretry.Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %+v, want %+v", tc.err, got, tc.want)
			}
		})
	}
}

func TestPushback(t *testing.T) {
	cases := []struct {
		values   []string // nil: no trailer value
		wantWait time.Duration
		wantStop bool
	}{
		{nil, 0, false},
		{[]string{"0"}, 0, false},
		{[]string{"1"}, time.Millisecond, false},
		{[]string{"1500"}, 1500 * time.Millisecond, false},
		{[]string{"+20"}, 20 * time.Millisecond, false},
		{[]string{"86400000"}, 24 * time.Hour, false},
		{[]string{"86400001"}, 0, true},
		{[]string{"9223372036854775807"}, 0, true},
		{[]string{"9223372036854775808"}, 0, true},
		{[]string{"-1"}, 0, true},
		{[]string{"-0"}, 0, false}, // an integer, and not negative
		{[]string{""}, 0, true},
		{[]string{" 5"}, 0, true},
		{[]string{"5ms"}, 0, true},
		{[]string{"0x10"}, 0, true},
		{[]string{"1e3"}, 0, true},
		{[]string{"5", "5"}, 0, true},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.values), func(t *testing.T) {
			md := metadata.MD{}
			if tc.values != nil {
				md["grpc-retry-pushback-ms"] = tc.values
			}
			wait, stop := grpcretry.Pushback(md)
			if wait != tc.wantWait || stop != tc.wantStop {
				t.Errorf("pushback(%q) = %v, %v; want %v, %v", tc.values, wait, stop, tc.wantWait, tc.wantStop)
			}
		})
	}
	if wait, stop := grpcretry.Pushback(nil); wait != 0 || stop {
		t.Errorf("pushback(nil) = %v, %v; want 0, false", wait, stop)
	}
}

// TestConcurrentCalls runs unary and stream calls at once through one
// strategy, for the race detector.
func TestConcurrentCalls(t *testing.T) {
	s, _, _ := newStandard(t, retry.WithMaxAttempts(10)) // more than the failures: no call gives up
	script := make([]reply, 8)
	for i := range script {
		script[i] = reply{code: codes.Unavailable}
	}
	srv, client, _ := setup(t, script, grpcretry.WithStrategy(s))
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for range n {
		wg.Go(func() {
			_, err := unaryCall(client, t.Context(), "x")
			errs <- err
		})
		wg.Go(func() {
			_, _, err := streamOutput(t, client, "x")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("call: %v", err)
		}
	}
	if got := srv.Calls(); got != 2*n+len(script) {
		t.Errorf("server calls = %d, want %d", got, 2*n+len(script))
	}
}
