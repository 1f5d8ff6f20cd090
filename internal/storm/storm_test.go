package storm

import (
	"bytes"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/retrykit/retry"
)

// short returns sc cut to d, keeping its incident if it fits.
func short(sc Scenario, d time.Duration) Scenario {
	sc.Duration = d
	return sc
}

func scenario(t *testing.T, name string) Scenario {
	t.Helper()
	for _, sc := range Scenarios() {
		if sc.Name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %q", name)
	return Scenario{}
}

func runMode(t *testing.T, sc Scenario, m Mode) Result {
	t.Helper()
	r, err := Run(sc, m, 1)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDeterministic(t *testing.T) {
	for _, name := range []string{"overload", "fleet", "hot-key"} {
		sc := short(scenario(t, name), 40*time.Second)
		for _, m := range Modes {
			a, b := runMode(t, sc, m), runMode(t, sc, m)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s/%v: two runs with the same seed differ:\n%+v\n%+v", name, m, a, b)
			}
			c, err := Run(sc, m, 2)
			if err != nil {
				t.Fatal(err)
			}
			if m != None && reflect.DeepEqual(a.Series, c.Series) {
				t.Errorf("%s/%v: seeds 1 and 2 gave the same series", name, m)
			}
		}
	}
}

func TestInvariants(t *testing.T) {
	outage := scenario(t, "outage")
	outage.Duration, outage.Incident.Start, outage.Incident.End = 90*time.Second, 30*time.Second, 60*time.Second
	overload := short(scenario(t, "overload"), 60*time.Second)
	for _, sc := range []Scenario{outage, overload} {
		rs := map[Mode]Result{}
		for _, m := range Modes {
			r := runMode(t, sc, m)
			rs[m] = r
			if r.Requests != r.Succeeded+r.Failed || r.Requests == 0 {
				t.Errorf("%s/%v: %d requests, %d succeeded, %d failed", sc.Name, m, r.Requests, r.Succeeded, r.Failed)
			}
			attempts := 0
			for _, s := range r.Series {
				attempts += s.Attempts
				if float64(s.Successes) > s.Capacity+1 {
					t.Errorf("%s/%v: %d successes in a second of capacity %v", sc.Name, m, s.Successes, s.Capacity)
				}
			}
			if attempts < r.Attempts {
				t.Errorf("%s/%v: series holds %d attempts, result %d", sc.Name, m, attempts, r.Attempts)
			}
		}
		if a := rs[None].Amplification; a != 1 {
			t.Errorf("%s: amplification without retries = %v, want 1", sc.Name, a)
		}
		if rs[Naive].Amplification < rs[Standard].Amplification {
			t.Errorf("%s: naive amplification %v < standard %v", sc.Name, rs[Naive].Amplification, rs[Standard].Amplification)
		}
	}
	if r := runMode(t, outage, Naive); r.OutageAmplification < 2.9 {
		t.Errorf("naive retries in an outage: %v attempts per request, want 3", r.OutageAmplification)
	}
	a, s := runMode(t, overload, Adaptive), runMode(t, overload, Standard)
	if a.ThrottledShare >= s.ThrottledShare/5 {
		t.Errorf("overload: adaptive throttled %.3f, standard %.3f", a.ThrottledShare, s.ThrottledShare)
	}
}

// compare runs standard mode, adaptive mode and the published algorithm
// in sc (seed 1) and logs what each did, so a failing target shows its
// peers in the same run.
func compare(t *testing.T, sc Scenario) (standard, adaptive, published Result) {
	t.Helper()
	rs := make([]Result, 3)
	for i, m := range []Mode{Standard, Adaptive, AdaptivePublished} {
		rs[i] = runMode(t, sc, m)
		r := rs[i]
		t.Logf("%s %-18s ok %6d failed %6d (refused %6d) throttled %5.1f%% goodput %5.1f%% p50 %v p99 %v fail p50 %v recovery %v",
			sc.Name, r.Mode, r.Succeeded, r.Failed, r.Refused, 100*r.ThrottledShare, 100*r.Goodput,
			r.LatencyP50.Round(time.Millisecond), r.LatencyP99.Round(time.Millisecond), r.FailP50.Round(time.Millisecond), r.Recovery)
	}
	return rs[0], rs[1], rs[2]
}

// The targets of the adaptive mode, each on a demo scenario at full length
// (5 minutes of virtual time; under a second of real time each).

func TestTargetOverloadOneClient(t *testing.T) {
	standard, a, published := compare(t, scenario(t, "overload"))
	if a.ThrottledShare > 0.05 || a.Goodput < 0.95 {
		t.Errorf("3x overload, one client: adaptive throttled %.1f%% (want <= 5%%), goodput %.1f%% (want >= 95%%)", 100*a.ThrottledShare, 100*a.Goodput)
	}
	if a.ThrottledShare >= standard.ThrottledShare/10 || a.Goodput <= published.Goodput {
		t.Errorf("adaptive (%.1f%% throttled, %.1f%% goodput) is no better than standard (%.1f%%) and published (%.1f%% goodput)",
			100*a.ThrottledShare, 100*a.Goodput, 100*standard.ThrottledShare, 100*published.Goodput)
	}
}

func TestTargetOverloadFleet(t *testing.T) {
	sc := scenario(t, "fleet")
	if sc.Clients != 10 || sc.Server != Bucket || sc.NetMin == 0 {
		t.Fatalf("the fleet scenario is %+v, want 10 clients, a token-bucket server and network latency", sc)
	}
	_, a, _ := compare(t, sc)
	if a.ThrottledShare > 0.05 || a.Goodput < 0.95 {
		t.Errorf("3x overload, fleet of 10: adaptive throttled %.1f%% (want <= 5%%), goodput %.1f%% (want >= 95%%)", 100*a.ThrottledShare, 100*a.Goodput)
	}
}

func TestTargetOverload10x(t *testing.T) {
	_, a, published := compare(t, scenario(t, "overload-10x"))
	if a.Goodput < 0.95 {
		t.Errorf("10x overload: adaptive goodput %.1f%%, want >= 95%%", 100*a.Goodput)
	}
	// Requests that cannot be served fail fast: refused after the bounded
	// wait for a send slot, not queued until their deadline.
	if a.Refused < a.Failed*9/10 || a.FailP50 > MaxSendWait+time.Second {
		t.Errorf("10x overload: adaptive failed %d requests, %d refused locally, in %v (median); want most refused within the %v bound",
			a.Failed, a.Refused, a.FailP50, MaxSendWait)
	}
	if a.LatencyP99 > MaxSendWait+time.Second || published.LatencyP99 < 2*a.LatencyP99 {
		t.Errorf("10x overload: p99 latency %v adaptive, %v published; want adaptive's bounded and well below", a.LatencyP99, published.LatencyP99)
	}
}

func TestTargetLoadIndependentThrottling(t *testing.T) {
	standard, a, published := compare(t, scenario(t, "hot-key"))
	if float64(a.Succeeded) < 0.95*float64(standard.Succeeded) {
		t.Errorf("5%% throttled whatever the load: adaptive completed %d requests, standard %d; want at least 95%%", a.Succeeded, standard.Succeeded)
	}
	if published.Succeeded >= a.Succeeded {
		t.Errorf("the published algorithm completed %d requests, adaptive %d", published.Succeeded, a.Succeeded)
	}
}

func TestTargetStartupBurst(t *testing.T) {
	_, a, _ := compare(t, scenario(t, "startup"))
	if a.Recovery < 0 || a.Recovery > 2*time.Second {
		t.Errorf("one second of throttles at start-up: adaptive back to full demand %v after it, want within 2s", a.Recovery)
	}
}

func TestTargetBrownoutRecovery(t *testing.T) {
	_, a, _ := compare(t, scenario(t, "brownout"))
	if a.Recovery < 0 || a.Recovery > 5*time.Second {
		t.Errorf("capacity a third, then healed: adaptive at full rate %v after the heal, want within 5s", a.Recovery)
	}
}

func TestTargetOutage(t *testing.T) {
	if r := runMode(t, scenario(t, "outage"), Standard); r.OutageAmplification > 1.05 {
		t.Errorf("(a) standard: %.3f attempts per request once the quota drained, want <= 1.05", r.OutageAmplification)
	}
}

func TestRecoveryWithoutRetries(t *testing.T) {
	// Without retries nothing holds clients back after the heal.
	for _, name := range []string{"outage", "brownout"} {
		if r := runMode(t, scenario(t, name), None); r.Recovery < 0 || r.Recovery > time.Second {
			t.Errorf("%s: no retries recovered after %v", name, r.Recovery)
		}
	}
}

func TestServerWindows(t *testing.T) {
	sc := Scenario{Duration: 3 * time.Second, Capacity: 100.0 / 3}
	sv := newServer(&sc, nil)
	for w, want := range []int{33, 33, 34} {
		served := 0
		for range 50 {
			if sv.answer(time.Duration(w)*time.Second) == nil {
				served++
			}
		}
		if served != want {
			t.Errorf("window %d served %d, want %d", w, served, want)
		}
	}
}

func TestReports(t *testing.T) {
	scs := []Scenario{short(scenario(t, "outage"), 20*time.Second)}
	scs[0].Incident = Incident{Start: 5 * time.Second, End: 10 * time.Second, Outage: true}
	rs, err := RunAll(scs, Modes, 1)
	if err != nil {
		t.Fatal(err)
	}
	var table, svg bytes.Buffer
	if err := WriteTable(&table, scs, rs); err != nil {
		t.Fatal(err)
	}
	for _, m := range Modes {
		if !strings.Contains(table.String(), "  "+m.String()+" ") {
			t.Errorf("table lacks %v:\n%s", m, table.String())
		}
	}
	if err := WriteSVG(&svg, scs, rs, 1); err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(&svg)
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("chart is not well-formed XML: %v", err)
			}
			break
		}
	}
}

func TestValidate(t *testing.T) {
	bad := scenario(t, "outage")
	bad.Incident.End = bad.Duration + time.Second
	if _, err := Run(bad, None, 1); err == nil {
		t.Error("an incident past the end of the run was accepted")
	}
	if _, err := Run(Scenario{}, None, 1); err == nil {
		t.Error("the zero Scenario was accepted")
	}
	for name, change := range map[string]func(*Scenario){
		"more clients than workers": func(sc *Scenario) { sc.Clients = sc.Workers + 1 },
		"negative clients":          func(sc *Scenario) { sc.Clients = -1 },
		"NetMax below NetMin":       func(sc *Scenario) { sc.NetMin, sc.NetMax = 2, 1 },
		"bucket without burst":      func(sc *Scenario) { sc.Server, sc.Burst = Bucket, 0 },
		"unknown server":            func(sc *Scenario) { sc.Server = 7 },
		"throttle share 1":          func(sc *Scenario) { sc.ThrottleShare = 1 },
		"negative throttle share":   func(sc *Scenario) { sc.ThrottleShare = -0.1 },
	} {
		sc := scenario(t, "overload")
		change(&sc)
		if _, err := Run(sc, None, 1); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestServerBucket(t *testing.T) {
	sc := Scenario{Duration: 10 * time.Second, Capacity: 10, Server: Bucket, Burst: 3}
	sv := newServer(&sc, nil)
	for _, step := range []struct {
		at   time.Duration
		want bool // served
	}{
		{0, true}, {0, true}, {0, true}, {0, false}, // a full bucket of 3, then empty
		{50 * time.Millisecond, false},  // half a token
		{100 * time.Millisecond, true},  // one token after 0.1 s at 10/s
		{100 * time.Millisecond, false}, // and none left
		{10 * time.Second, true},        // refilled to the burst, not beyond
		{10 * time.Second, true}, {10 * time.Second, true}, {10 * time.Second, false},
	} {
		if got := sv.answer(step.at) == nil; got != step.want {
			t.Errorf("t=%v: served %v, want %v", step.at, got, step.want)
		}
	}
}

func TestServerThrottleShare(t *testing.T) {
	sc := Scenario{Duration: time.Hour, Capacity: 1e9, ThrottleShare: 0.05}
	sv := newServer(&sc, newRand(1, streamServer))
	throttled := 0
	const n = 100_000
	for i := range n {
		if sv.answer(time.Duration(i)*time.Millisecond) != nil {
			throttled++
		}
	}
	if share := float64(throttled) / n; share < 0.045 || share > 0.055 {
		t.Errorf("throttled %.2f%% of attempts with ample capacity, want about 5%%", 100*share)
	}
}

// Each client of a fleet has a strategy of its own, and its workers use
// it; the network delays every attempt both ways.
func TestFleet(t *testing.T) {
	sc := short(scenario(t, "fleet"), 20*time.Second)
	var clocks []retry.Clock
	build := func(clock retry.Clock, random func() float64) (Stepper, error) {
		clocks = append(clocks, clock)
		return Adaptive.newStrategy(clock, random, MaxSendWait)
	}
	r, err := RunStrategy(sc, "fleet", build, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(clocks) != sc.Clients {
		t.Errorf("%d strategies built for %d clients", len(clocks), sc.Clients)
	}
	// An attempt takes at least the server's latency and two network
	// delays: no request succeeds sooner.
	if min := sc.Latency + 2*sc.NetMin; r.LatencyP50 < min || r.Succeeded == 0 {
		t.Errorf("median latency %v with %d successes, want at least %v", r.LatencyP50, r.Succeeded, min)
	}
	one := sc
	one.Clients = 1
	r1 := runMode(t, one, Adaptive)
	if reflect.DeepEqual(r1.Series, r.Series) {
		t.Error("one client and ten clients gave the same series")
	}
	// Fairness compares the clients' successes: within (0, 1] for ten
	// clients that all got served, and 1 for one client.
	if r.Fairness <= 0 || r.Fairness > 1 || r1.Fairness != 1 {
		t.Errorf("fairness %v for 10 clients, %v for one; want (0, 1] and 1", r.Fairness, r1.Fairness)
	}
}

// Fairness is the worst client's successes per worker over the best's.
func TestFairness(t *testing.T) {
	for _, tc := range []struct {
		succeeded []int
		workers   []int // nil: one worker each
		want      float64
	}{
		{[]int{10}, nil, 1},
		{[]int{10, 10, 10}, nil, 1},
		{[]int{5, 10, 8}, nil, 0.5},
		{[]int{0, 4}, nil, 0},
		{[]int{0, 0}, nil, 1},
		{[]int{30, 3, 3}, []int{30, 3, 3}, 1},       // in proportion to demand
		{[]int{10, 3, 3}, []int{30, 3, 3}, 1.0 / 3}, // the big client short
	} {
		sc := Scenario{Workers: len(tc.succeeded), Clients: len(tc.succeeded), ClientWorkers: tc.workers}
		if tc.workers != nil {
			sc.Workers = sum(tc.workers)
		}
		s := &sim{sc: sc, clients: make([]client, len(tc.succeeded))}
		for i, n := range tc.succeeded {
			s.clients[i].succeeded = n
		}
		if got := s.fairness(); got != tc.want {
			t.Errorf("fairness of %v = %v, want %v", tc.succeeded, got, tc.want)
		}
	}
}

// With a bound on the wait for a send slot, requests that find none in
// time fail at once (refused), and no success waited longer than the
// bound plus its attempts' own time.
func TestSendWaitBound(t *testing.T) {
	sc := short(scenario(t, "overload-10x"), time.Minute)
	bounded := runMode(t, sc, Adaptive)
	if bounded.Refused == 0 || bounded.FailP50 > MaxSendWait+time.Second {
		t.Errorf("bounded: %d refused, median time to fail %v; want refusals within about %v", bounded.Refused, bounded.FailP50, MaxSendWait)
	}
	sc.MaxSendWait = -1 // no bound
	unbounded := runMode(t, sc, Adaptive)
	if unbounded.Refused != 0 || unbounded.FailP50 < 5*time.Second {
		t.Errorf("unbounded: %d refused, median time to fail %v; want none refused, failures at the deadline", unbounded.Refused, unbounded.FailP50)
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 3}, {0.99, 5}, {0.2, 1}, {0.21, 2}, {1, 5}} {
		if got := percentile(ds, tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
}

// An incident at the start of the run times the recovery against the last
// 60 s of the run.
func TestRecoveryFromStartup(t *testing.T) {
	sc := short(scenario(t, "startup"), 90*time.Second)
	if r := runMode(t, sc, None); r.Recovery < 0 || r.Recovery > time.Second {
		t.Errorf("no retries after a start-up burst: recovery %v", r.Recovery)
	}
	sc.Duration = 60 * time.Second // no baseline after the incident
	if r := runMode(t, sc, None); r.Recovery >= 0 {
		t.Errorf("recovery %v without a baseline, want -1", r.Recovery)
	}
}
