package retrytest

import (
	"context"
	"testing"

	"github.com/retrykit/retry"
)

// Context returns t.Context() carrying a new Standard strategy, built from
// opts, for the code under test: retry.Do and retry.Run use it for calls
// with the returned context, or one derived from it, that give no strategy
// of their own (see retry.ContextWithStrategy). It also returns the
// strategy, for its Stats.
//
// Each test so gets a fresh retry quota, and no test can drain the quota
// of another, even when they run in parallel (t.Parallel): nothing
// process-wide is changed, so there is nothing to restore. The code under
// test must pass its caller's context down to Do, as Go code should.
//
//	func TestFetch(t *testing.T) {
//		t.Parallel()
//		ctx, strategy := retrytest.Context(t, retry.WithBackoff(retry.NoBackoff))
//		_, err := fetch(ctx) // calls retry.Do(ctx, ...) without WithStrategy
//		...
//	}
//
// Bad options fail the test at once (t.Fatal), with the error of
// retry.NewStandard.
func Context(t testing.TB, opts ...retry.StandardOption) (context.Context, *retry.Standard) {
	t.Helper()
	s, err := retry.NewStandard(opts...)
	if s = built(t, "Context", s, err); s == nil {
		return nil, nil
	}
	return retry.ContextWithStrategy(t.Context(), s), s
}
