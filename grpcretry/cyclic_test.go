package grpcretry_test

import (
	"errors"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
)

// cyclic is an error whose Unwrap returns itself: errors.Is and errors.As
// never return on it.
type cyclic struct{}

func (e *cyclic) Error() string { return "cyclic" }
func (e *cyclic) Unwrap() error { return e }

// cyclicJoin is one whose Unwrap() []error leads back to itself.
type cyclicJoin struct{}

func (e *cyclicJoin) Error() string   { return "cyclic join" }
func (e *cyclicJoin) Unwrap() []error { return []error{errors.New("x"), e} }

// returns fails the test if f does not return: a hang detector, not a
// timing assertion (f takes microseconds; the bound is generous).
func returns(t *testing.T, name string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return on a cyclic error chain", name)
	}
}

func TestClassifyCyclicChain(t *testing.T) {
	for _, err := range []error{&cyclic{}, &cyclicJoin{}} {
		var c retry.Classification
		returns(t, "grpcretry.Classify", func() { c = grpcretry.Classify(err) })
		if c != retry.Classify(err) {
			t.Errorf("Classify(%v) = %+v, want retry.Classify's %+v", err, c, retry.Classify(err))
		}
	}
}
