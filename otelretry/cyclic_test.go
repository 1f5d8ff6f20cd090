package otelretry_test

import (
	"errors"
	"testing"
	"time"

	"github.com/retrykit/retry"
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

// The hook records an event whose error, or reason, has a chain without
// end: error.type is the error's type, the give-up reason _OTHER.
func TestHookCyclicChain(t *testing.T) {
	m, reader := newMetrics(t)
	hook := m.Hook()
	returns(t, "the otelretry hook", func() {
		hook(retry.Event{Kind: retry.EventRetry, Attempt: 2, Err: &cyclic{}})
		hook(retry.Event{Kind: retry.EventGiveUp, Attempt: 2, Err: &cyclicJoin{}, Reason: &cyclic{}})
	})
	got := collect(t, reader)
	for _, key := range []string{
		"retry.client.retries{error.type=*otelretry_test.cyclic,retry.reason=transient,retry.scope=}",
		"retry.client.give_ups{error.type=*otelretry_test.cyclicJoin,retry.reason=_OTHER,retry.scope=}",
	} {
		if got[key] != 1 {
			t.Errorf("%s = %v, want 1; got %v", key, got[key], got)
		}
	}
}
