package grpcretry_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the test binary if any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
