package storm

import (
	"bytes"
	"encoding/xml"
	"reflect"
	"strings"
	"testing"
	"time"
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
	sc := short(scenario(t, "overload"), 40*time.Second)
	for _, m := range Modes {
		a, b := runMode(t, sc, m), runMode(t, sc, m)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%v: two runs with the same seed differ:\n%+v\n%+v", m, a, b)
		}
		c, err := Run(sc, m, 2)
		if err != nil {
			t.Fatal(err)
		}
		if m != None && reflect.DeepEqual(a.Series, c.Series) {
			t.Errorf("%v: seeds 1 and 2 gave the same series", m)
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

// TestTargets checks the targets on the demo's scenarios (full
// length: they take about a second of real time together).
func TestTargets(t *testing.T) {
	if r := runMode(t, scenario(t, "outage"), Standard); r.OutageAmplification > 1.05 {
		t.Errorf("(a) standard: %.3f attempts per request once the quota drained, want <= 1.05", r.OutageAmplification)
	}
	if r := runMode(t, scenario(t, "overload"), Adaptive); r.ThrottledShare >= 0.05 || r.Goodput < 0.95 {
		t.Errorf("(b) adaptive: %.1f%% throttled (want < 5%%), goodput %.1f%% (want >= 95%%)", 100*r.ThrottledShare, 100*r.Goodput)
	}
	if r := runMode(t, scenario(t, "brownout"), Adaptive); r.Recovery < 0 || r.Recovery > 10*time.Second {
		t.Errorf("(c) adaptive: recovered after %v, want within 10s", r.Recovery)
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
}
