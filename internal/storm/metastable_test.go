package storm_test

import (
	"os"
	"testing"
	"time"

	"github.com/retrykit/retry/internal/storm"
)

// TestMetastableTargets runs Brooker's trigger over 10, 100 and 1,000
// clients, seeds 1-5, and checks what the table in the README says: naive
// retries stay collapsed at every client count; the AWS SDKs' quota alone
// recovers only where each client's quota runs dry (10 clients); retrykit's
// standard and adaptive modes, with the retry budget, are back to full
// goodput within 10 s of the spike's end with 10 and 100 clients and
// within 25 s with 1,000 (5-22 s: the 10 s is missed there on four
// seeds of five. A client of 1,000 sends a request every 25 s, and its
// first request in the collapse retries once before the client knows of
// the collapse; a thousand such retries keep the service near the edge
// until most clients have had theirs.)
func TestMetastableTargets(t *testing.T) {
	seeds := storm.Seeds(1)
	sums, err := storm.CompareMetastable(storm.MetastableScenarios(), storm.MetastableModes, seeds)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		_ = storm.WriteMetastableTable(os.Stdout, sums, len(seeds))
	}
	checkREADMEMetastable(t, sums)
	for _, s := range sums {
		worst := time.Duration(0)
		for _, d := range s.Recovered {
			if d < 0 {
				worst = -1
				break
			}
			worst = max(worst, d)
		}
		switch {
		case s.Mode == storm.Naive.String():
			if worst >= 0 {
				t.Errorf("%s, %s: recovered within %v on every seed: the trigger shows nothing", s.Scenario, s.Mode, worst)
			}
		case s.Mode == storm.QuotaOnly.String() && s.Scenario != "10 clients":
			if worst >= 0 {
				t.Errorf("%s, %s: recovered within %v on every seed, where the quotas cannot run dry", s.Scenario, s.Mode, worst)
			}
		case s.Mode == storm.Standard.String() || s.Mode == storm.Adaptive.String():
			bound := 10 * time.Second
			if s.Scenario == "1000 clients" {
				bound = 25 * time.Second
			}
			if worst < 0 || worst > bound {
				t.Errorf("%s, %s: back after %v (each seed), want within %v", s.Scenario, s.Mode, s.Recovered, bound)
			}
		}
	}
}

func TestMetastableBadInput(t *testing.T) {
	for _, bad := range []func(*storm.MetastableScenario){
		func(s *storm.MetastableScenario) { s.Clients = 0 },
		func(s *storm.MetastableScenario) { s.Calm = 0 },
		func(s *storm.MetastableScenario) { s.Spike = -1 },
		func(s *storm.MetastableScenario) { s.SpikeTo = s.Duration + 1 },
		func(s *storm.MetastableScenario) { s.SpikeFrom = s.SpikeTo + 1 },
		func(s *storm.MetastableScenario) { s.Timeout = 0 },
		func(s *storm.MetastableScenario) { s.PerConcurrent = -1 },
	} {
		s := storm.MetastableScenarios()[0]
		bad(&s)
		if _, err := storm.RunMetastable(s, storm.Standard, 1); err == nil {
			t.Errorf("RunMetastable(%+v) succeeded", s)
		}
	}
}

// The same seed gives the same run.
func TestMetastableDeterministic(t *testing.T) {
	sc := storm.MetastableScenarios()[1]
	a, err := storm.RunMetastable(sc, storm.Adaptive, 7)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := storm.RunMetastable(sc, storm.Adaptive, 7)
	if a.Attempts != b.Attempts || a.Succeeded != b.Succeeded || a.Recovered != b.Recovered {
		t.Errorf("two runs of seed 7 differ: %+v / %+v", a, b)
	}
}
