package grpcretry_test

import (
	"testing"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/grpcretry"
	"github.com/retrykit/retry/retrytest"
)

// Classify returns on an error chain that leads back to itself (before,
// it never did), as retry.Classify classifies it.
func TestClassifyCyclicChain(t *testing.T) {
	for _, err := range []error{retrytest.CyclicError(), retrytest.CyclicJoin()} {
		if got, want := grpcretry.Classify(err), retry.Classify(err); got != want {
			t.Errorf("Classify(%v) = %+v, want retry.Classify's %+v", err, got, want)
		}
	}
}
