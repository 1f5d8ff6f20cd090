package storm_test

import (
	"os"
	"strings"
	"testing"

	"github.com/retrykit/retry/internal/storm"
)

// The chain's targets: with the bottom failing every attempt, three layers
// of 3 attempts send it 27 attempts per user request, and at most 3 when
// the services keep to the layer nearest the failure; with the bottom
// overloaded 2x, that policy's goodput is no lower than the best
// single-layer configuration's.
func TestChainTargets(t *testing.T) {
	seeds := storm.Seeds(1)
	sums, err := storm.CompareChains(storm.ChainScenarios(), storm.ChainConfigs(), seeds)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		_ = storm.WriteChainTable(os.Stdout, sums, len(seeds))
	}
	checkREADMEChain(t, sums)
	get := func(scenario, config string) storm.ChainSummary {
		for _, s := range sums {
			if s.Scenario == scenario && s.Config == config {
				return s
			}
		}
		t.Fatalf("no summary for %s / %s", scenario, config)
		return storm.ChainSummary{}
	}
	failing, overloaded := storm.ChainScenarios()[0].Name, storm.ChainScenarios()[1].Name
	// Up to 27 with the quota alone: on some seeds the retry quotas of the
	// clients that call the bottom start to run dry before the end. The
	// retry budget keeps each failing layer's retries to a fifth of its
	// requests once a request has given up: (1.2)^3 and the requests that
	// gave up first.
	if s := get(failing, "every layer 3/3/3, quota only"); s.AttemptsMax != 27 || s.AttemptsMin < 20 {
		t.Errorf("failing, every layer, quota only: %v-%v attempts per request, want up to 27", s.AttemptsMin, s.AttemptsMax)
	}
	if s := get(failing, "every layer 3/3/3"); s.AttemptsMax > 4 {
		t.Errorf("failing, every layer with the retry budget: up to %v attempts per request, want at most 4", s.AttemptsMax)
	}
	if s := get(failing, "nearest failure 3/3/3"); s.AttemptsMax > 3 {
		t.Errorf("failing, nearest failure: up to %v attempts per request, want at most 3", s.AttemptsMax)
	}
	// Keeping to the nearest layer is a single-layer configuration chosen
	// per failure, so its goodput is theirs, within the seeds' spread
	// (1%); without coordination it is well below.
	mid := func(s storm.ChainSummary) float64 { return (s.GoodputMin + s.GoodputMax) / 2 }
	best := 0.0
	for _, cfg := range []string{"top only 3/1/1", "bottom only 1/1/3"} {
		best = max(best, mid(get(overloaded, cfg)))
	}
	if s := get(overloaded, "nearest failure 3/3/3"); mid(s) < 0.99*best {
		t.Errorf("overloaded: nearest failure's goodput %v-%v, below the best single layer's %v", s.GoodputMin, s.GoodputMax, best)
	}
	if s := get(overloaded, "every layer 3/3/3"); mid(s) > 0.9*best {
		t.Errorf("overloaded: every layer's goodput %v-%v is not below the best single layer's %v: the scenario shows nothing", s.GoodputMin, s.GoodputMax, best)
	}
}

func TestChainBadInput(t *testing.T) {
	sc := storm.ChainScenarios()[0]
	for _, bad := range []func(*storm.ChainScenario){
		func(s *storm.ChainScenario) { s.Layers = 0 },
		func(s *storm.ChainScenario) { s.Rate = 0 },
		func(s *storm.ChainScenario) { s.Failing, s.Capacity = false, 0 },
		func(s *storm.ChainScenario) { s.Latency = -1 },
	} {
		s := sc
		bad(&s)
		if _, err := storm.RunChain(s, storm.ChainConfigs()[0], 1); err == nil {
			t.Errorf("RunChain(%+v) succeeded", s)
		}
	}
	if _, err := storm.RunChain(sc, storm.ChainConfig{Name: "short", Attempts: []int{3}}, 1); err == nil {
		t.Error("a configuration for the wrong number of layers was accepted")
	}
}

func TestWriteChainSVG(t *testing.T) {
	sums, err := storm.CompareChains(storm.ChainScenarios(), storm.ChainConfigs(), storm.Seeds(1)[:1])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	cs := storm.ChainScenarios()
	if err := storm.WriteChainSVG(&b, sums, cs[0].Name, cs[1].Name); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if !strings.HasPrefix(svg, "<svg") || strings.Count(svg, "<rect") != 2*len(storm.ChainConfigs()) {
		t.Errorf("chart has %d bars, want %d", strings.Count(svg, "<rect"), 2*len(storm.ChainConfigs()))
	}
}
