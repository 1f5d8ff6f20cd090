package storm_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/retrykit/retry/internal/storm"
)

// TestFairnessOverTime runs the limits table's two fleets of equal clients
// (fair-3x, fair-10x) for ten minutes instead of two, over seeds 1-5, and
// prints the table (-v). Fairness counts each client's successes over the
// run: over two minutes the default algorithm's worst client gets
// 0.18-0.58 of the best's (TestLimits); the longer run tells a client held
// back for the whole run from clients that take turns. The target
// is 0.8; the check holds today's worst seed.
func TestFairnessOverTime(t *testing.T) {
	if testing.Short() {
		t.Skip("ten-minute fleets take a while")
	}
	var scs []storm.LimitScenario
	for _, s := range storm.LimitScenarios() {
		if s.Name == "fair-3x" || s.Name == "fair-10x" {
			s.Duration = 10 * time.Minute
			s.Title = fmt.Sprintf("%s, over 10 minutes", s.Title)
			scs = append(scs, s)
		}
	}
	sums := compareLimits(t, scs)
	// Today's worst seeds: 0.37 at 3x, 0.59 at 10x.
	bound := map[string]float64{"fair-3x": 0.3, "fair-10x": 0.5}
	for _, s := range sums {
		if s.Mode == storm.Adaptive.String() && s.Fairness[0] < bound[s.Scenario] {
			t.Errorf("%s: adaptive fairness %v over ten minutes, worse than today's bound %g", s.Scenario, s.Fairness, bound[s.Scenario])
		}
	}
}
