package storm_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrykit/retry/internal/storm"
)

// frontierRun returns the limits table's tiny-burst scenario, shortened to
// a minute, and its summaries over one seed.
func frontierRun(t *testing.T) ([]storm.LimitScenario, []storm.LimitSummary) {
	t.Helper()
	i := slices.IndexFunc(storm.LimitScenarios(), func(ls storm.LimitScenario) bool { return ls.Name == "tiny-burst" })
	ls := storm.LimitScenarios()[i]
	ls.Duration = time.Minute
	scs := []storm.LimitScenario{ls}
	sums, err := storm.CompareLimits(scs, storm.Seeds(1)[:1])
	if err != nil {
		t.Fatal(err)
	}
	return scs, sums
}

// The chart is well-formed SVG with the frontier's line and a box for each
// fixed-rate sender and each mode.
func TestWriteFrontierSVG(t *testing.T) {
	scs, sums := frontierRun(t)
	var b strings.Builder
	if err := storm.WriteFrontierSVG(&b, scs, sums, 1); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	wellFormed(t, svg)
	if n := strings.Count(svg, "<polyline"); n != 1 {
		t.Errorf("%d frontier lines, want 1", n)
	}
	if n, want := strings.Count(svg, "<circle"), len(scs[0].Frontier)+1+len(storm.LimitModes); n != want {
		t.Errorf("%d boxes, want %d", n, want)
	}
}

func TestWriteFrontierSVGBadInput(t *testing.T) {
	scs, sums := frontierRun(t)
	noFrontier := slices.Clone(scs)
	noFrontier[0].Frontier = nil
	missing := slices.DeleteFunc(slices.Clone(sums), func(s storm.LimitSummary) bool { return s.Mode == storm.Adaptive.String() })
	nan := slices.Clone(sums)
	nan[0].Throttled[1] = math.NaN()
	swapped := slices.Clone(sums)
	swapped[1].Goodput = [2]float64{0.9, 0.1}
	for name, c := range map[string]struct {
		scs  []storm.LimitScenario
		sums []storm.LimitSummary
	}{
		"no frontier":         {noFrontier, sums},
		"no scenarios":        {nil, sums},
		"a mode missing":      {scs, missing},
		"NaN throttled":       {scs, nan},
		"min above max":       {scs, swapped},
		"no summaries at all": {scs, nil},
	} {
		var b strings.Builder
		if err := storm.WriteFrontierSVG(&b, c.scs, c.sums, 1); err == nil {
			t.Errorf("%s: no error", name)
		} else if b.Len() != 0 {
			t.Errorf("%s: wrote %d bytes with the error %v", name, b.Len(), err)
		}
	}
}

// A fleet that nothing throttles still gets a chart with a scale.
func TestWriteFrontierSVGNoThrottles(t *testing.T) {
	scs, sums := frontierRun(t)
	for i := range sums {
		sums[i].Throttled = [2]float64{0, 0}
	}
	var b strings.Builder
	if err := storm.WriteFrontierSVG(&b, scs, sums, 1); err != nil {
		t.Fatal(err)
	}
	if svg := b.String(); strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
		t.Errorf("chart holds NaN or Inf:\n%s", svg)
	}
	wellFormed(t, b.String())
}
