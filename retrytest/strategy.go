package retrytest

import (
	"context"
	"testing"

	"github.com/retrykit/retry"
)

// Standard returns a new Standard strategy built from opts, of the test's
// own: its retry quota and scopes are shared with no other test. Bad
// options fail the test at once (t.Fatal), with the error of
// retry.NewStandard.
//
//	s := retrytest.Standard(t, retry.WithBackoff(retry.NoBackoff))
func Standard(t testing.TB, opts ...retry.StandardOption) *retry.Standard {
	t.Helper()
	s, err := retry.NewStandard(opts...)
	return built(t, "Standard", s, err)
}

// Adaptive returns a new Adaptive strategy built from opts, of the test's
// own: its retry quota, rate limiters and scopes are shared with no other
// test. Bad options fail the test at once (t.Fatal), with the error of
// retry.NewAdaptive.
//
//	a := retrytest.Adaptive(t, retry.WithClock(clock))
func Adaptive(t testing.TB, opts ...retry.AdaptiveOption) *retry.Adaptive {
	t.Helper()
	a, err := retry.NewAdaptive(opts...)
	return built(t, "Adaptive", a, err)
}

// built returns s, the strategy a constructor built, or fails the test
// with err, naming fn, and returns nil (for a testing.TB whose Fatalf
// returns).
func built[S *retry.Standard | *retry.Adaptive](t testing.TB, fn string, s S, err error) S {
	t.Helper()
	if err != nil {
		t.Fatalf("retrytest.%s: %v", fn, err)
		return nil
	}
	return s
}

// AdaptiveContext is Context for adaptive mode: it returns t.Context()
// carrying a new Adaptive strategy built from opts, for code under test
// that calls retry.Do without a strategy of its own, and the strategy.
func AdaptiveContext(t testing.TB, opts ...retry.AdaptiveOption) (context.Context, *retry.Adaptive) {
	t.Helper()
	a, err := retry.NewAdaptive(opts...)
	if a = built(t, "AdaptiveContext", a, err); a == nil {
		return nil, nil
	}
	return retry.ContextWithStrategy(t.Context(), a), a
}
