package storm

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestREADMEStormTable checks the README's table of the storm demo on
// seed 1 (under "Where adaptive mode loses" in "Retry storms") against
// what the simulation gives: for each of its rows, the throttled share,
// goodput, failures and refusals, latencies and recovery of standard,
// adaptive and published modes. The README's figures are what users
// quote; a change that moves one fails here until the README says what
// the demo prints.
func TestREADMEStormTable(t *testing.T) {
	SkipUnderRace(t)
	text, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	scenarios := Scenarios()
	modes := []Mode{Standard, Adaptive, AdaptivePublished}
	results, err := RunAll(scenarios, modes, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Each scenario by its label, "(b)", "(b')", as its title begins.
	byLabel := make(map[string][]Result)
	for i, sc := range scenarios {
		label, _, _ := strings.Cut(sc.Title, " ")
		byLabel[label] = results[i*len(modes) : (i+1)*len(modes)]
	}
	rows := 0
	for line := range strings.Lines(string(text)) {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i, c := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(c, "**", ""))
		}
		if len(cells) != 7 || cells[1] != "standard / adaptive / published" {
			continue
		}
		label, _, _ := strings.Cut(strings.ReplaceAll(cells[0], "′", "'"), " ")
		rs, ok := byLabel[label]
		if !ok {
			t.Errorf("README row %q: no scenario has that label", cells[0])
			continue
		}
		rows++
		check := func(column, readme string, format func(Result) string) {
			t.Helper()
			parts := make([]string, len(rs))
			for i, r := range rs {
				parts[i] = format(r)
			}
			if got := strings.Join(parts, " / "); readme != got {
				t.Errorf("README row %s, %s: %q; the simulation gives %q", label, column, readme, got)
			}
		}
		check("throttled", cells[2], func(r Result) string { return percent(r.ThrottledShare) })
		check("goodput", cells[3], func(r Result) string { return percent(r.Goodput) })
		check("failed (refused)", cells[4], func(r Result) string {
			if r.Mode == Adaptive.String() { // the README gives its refusals alone
				return thousands(r.Failed) + " (" + thousands(r.Refused) + ")"
			}
			return thousands(r.Failed)
		})
		latencies := make([]string, len(rs))
		for i, r := range rs {
			latencies[i] = strings.TrimSuffix(seconds(r.LatencyP50), "s") + "/" + strings.TrimSuffix(seconds(r.LatencyP99), "s") + " s"
		}
		got := strings.Join(latencies, " · ")
		if latencies[0] == latencies[1] && latencies[1] == latencies[2] {
			got = "all " + latencies[0]
		}
		if cells[5] != got {
			t.Errorf("README row %s, p50 / p99: %q; the simulation gives %q", label, cells[5], got)
		}
		if cells[6] == "–" {
			if rs[0].Recovery >= 0 {
				t.Errorf("README row %s gives no recovery; the scenario has one", label)
			}
			continue
		}
		check("recovery", cells[6], func(r Result) string {
			if r.Recovery < 0 {
				return "never"
			}
			return fmt.Sprintf("%.1f s", r.Recovery.Seconds())
		})
	}
	if want := len(scenarios) - 1; rows != want { // all but the outage
		t.Errorf("README has %d rows of the storm table; want %d", rows, want)
	}
}

// percent formats a share as the README's tables do: one decimal, and
// 100% without one.
func percent(x float64) string {
	s := fmt.Sprintf("%.1f%%", 100*x)
	if s == "100.0%" {
		return "100%"
	}
	return s
}

// thousands formats n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
