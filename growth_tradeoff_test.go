package retry_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/internal/storm"
)

// The default algorithm's growth is relative to each client's own rate, so
// many small clients cut and grow as one big client does; but nothing in it
// draws equal clients' rates together (Chiu and Jain: additive increase
// does). This measures the family of curves that add an absolute term,
// W*(1 + c*t^3) + g*t^3 sends per second, g from 0 (the default) to the
// published algorithm's 0.4, on the limits table's two shapes that pull
// against each other: fairness between 10 equal clients at 3x, and the
// throttled share of 100 small clients at 3x. Seeds 1-5, min-max:
//
//	go test -run TestGrowthTradeoff -v .
//
// The absolute term buys little fairness (the worst seed moves from 0.23
// to 0.26-0.39, no member of the family reaches 0.8) for many more
// throttles from small clients (25% to 45%) and from equal clients at 10x
// (11-13% to as much as 59% on one seed): the default keeps g = 0. What gives the published algorithm its fairness
// (0.70-0.77) is its cut on every throttle, which a client sending more
// meets more often; the default cuts by the share, the same for every
// client of a token-bucket server.
func TestGrowthTradeoff(t *testing.T) {
	if testing.Short() {
		t.Skip("about 30 s of simulation")
	}
	var small, fair, fair10 storm.LimitScenario
	for _, ls := range storm.LimitScenarios() {
		switch ls.Name {
		case "small-clients":
			small = ls
		case "fair-3x":
			fair = ls
		case "fair-10x":
			fair10 = ls
		}
	}
	seeds := storm.Seeds(1)
	type point struct {
		g                        float64
		smallThrottled, fairness [2]float64 // min, max over seeds
	}
	var curve []point
	var b strings.Builder
	b.WriteString("| g (sends/s per s^3) | 100 small clients, 3x: throttled | 10 equal clients, 3x: fairness | throttled | 10 equal clients, 10x: throttled |\n|---|---|---|---|---|\n")
	for _, g := range []float64{0, 0.003, 0.01, 0.03, 0.1, 0.4} {
		build := func(clock retry.Clock, random func() float64) (storm.Stepper, error) {
			backoff, err := retry.NewExponentialBackoff(retry.WithRandom(random))
			if err != nil {
				return nil, err
			}
			return retry.NewAdaptive(retry.WithClock(clock), retry.WithBackoff(backoff),
				retry.WithMaxSendWait(storm.MaxSendWait), retry.WithAbsoluteGrowth(g))
		}
		p := point{g: g, smallThrottled: [2]float64{math.Inf(1), math.Inf(-1)}, fairness: [2]float64{math.Inf(1), math.Inf(-1)}}
		fairThrottled := [2]float64{math.Inf(1), math.Inf(-1)}
		fair10Throttled := fairThrottled
		for _, seed := range seeds {
			rs, err := storm.RunStrategy(small.Scenario, "adaptive", build, seed)
			if err != nil {
				t.Fatal(err)
			}
			rf, err := storm.RunStrategy(fair.Scenario, "adaptive", build, seed)
			if err != nil {
				t.Fatal(err)
			}
			r10, err := storm.RunStrategy(fair10.Scenario, "adaptive", build, seed)
			if err != nil {
				t.Fatal(err)
			}
			widen(&fair10Throttled, r10.ThrottledShare)
			widen(&p.smallThrottled, rs.ThrottledShare)
			widen(&p.fairness, rf.Fairness)
			widen(&fairThrottled, rf.ThrottledShare)
		}
		curve = append(curve, p)
		fmt.Fprintf(&b, "| %g | %.1f-%.1f%% | %.2f-%.2f | %.1f-%.1f%% | %.1f-%.1f%% |\n", g, 100*p.smallThrottled[0], 100*p.smallThrottled[1],
			p.fairness[0], p.fairness[1], 100*fairThrottled[0], 100*fairThrottled[1], 100*fair10Throttled[0], 100*fair10Throttled[1])
	}
	t.Logf("growth W*(1 + 0.003*t^3) + g*t^3, seeds 1-5 (min-max)\n%s", b.String())

	// The trade-off the default is chosen on: every absolute term costs
	// small clients throttles, and none makes equal clients fair.
	for _, p := range curve[1:] {
		if p.smallThrottled[0] <= curve[0].smallThrottled[1] {
			t.Errorf("g = %g: small clients %.3f throttled, no more than the default's %.3f", p.g, p.smallThrottled[0], curve[0].smallThrottled[1])
		}
		if p.fairness[0] >= 0.8 {
			t.Errorf("g = %g reaches fairness %.2f on every seed: the default should be chosen again", p.g, p.fairness[0])
		}
	}
}

func widen(mm *[2]float64, v float64) { mm[0], mm[1] = min(mm[0], v), max(mm[1], v) }
