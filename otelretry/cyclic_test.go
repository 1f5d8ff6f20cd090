package otelretry_test

import (
	"testing"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/retrytest"
)

// The hook returns on an event whose error, or reason, has a chain that
// leads back to itself (before, it never did): error.type is the error's
// type, the give-up reason _OTHER.
func TestHookCyclicChain(t *testing.T) {
	m, reader := newMetrics(t)
	hook := m.Hook()
	hook(retry.Event{Kind: retry.EventRetry, Attempt: 2, Err: retrytest.CyclicError()})
	hook(retry.Event{Kind: retry.EventGiveUp, Attempt: 2, Err: retrytest.CyclicJoin(), Reason: retrytest.CyclicError()})
	got := collect(t, reader)
	for _, key := range []string{
		"retry.client.retries{error.type=*retrytest.cyclic,retry.reason=transient,retry.scope=}",
		"retry.client.give_ups{error.type=*retrytest.cyclicJoin,retry.reason=_OTHER,retry.scope=}",
	} {
		if got[key] != 1 {
			t.Errorf("%s = %v, want 1; got %v", key, got[key], got)
		}
	}
}
