package storm_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrykit/retry/internal/mdtable"
	"github.com/retrykit/retry/internal/storm"
)

// readme returns the README's text, failing t if it cannot read it.
func readme(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

// readmeTable returns the rows of the README's table whose header row
// begins with header (see mdtable.Find), failing t if there is none.
func readmeTable(t *testing.T, header string) [][]string {
	t.Helper()
	table, err := mdtable.Find(readme(t), header)
	if err != nil {
		t.Fatal(err)
	}
	return table.Rows
}

// rangeCell formats a min-max as the README's tables do: "lo-hi" and the
// unit, or one value when both are alike, without decimals when whole.
func rangeCell(lo, hi float64, format, unit string) string {
	a, b := fmt.Sprintf(format, lo), fmt.Sprintf(format, hi)
	if a != b {
		return a + "-" + b + unit
	}
	if lo == math.Trunc(lo) {
		return fmt.Sprintf("%.0f", lo) + unit
	}
	return a + unit
}

// checkREADMEChain holds the README's table of the call chain
// (TestChainTargets's seeds) to sums. A row's retries cell is the
// configuration's name and, in brackets, what it is; "a, or b" is two
// configurations in one row, their min-max together.
func checkREADMEChain(t *testing.T, sums []storm.ChainSummary) {
	t.Helper()
	rows := readmeTable(t, "| chain | retries per layer |")
	seen := map[string]bool{}
	for _, row := range rows {
		if len(row) != 5 {
			t.Errorf("README chain row %q: %d cells, want 5", row, len(row))
			continue
		}
		name, _, _ := strings.Cut(row[1], " (")
		var got []storm.ChainSummary
		for _, config := range strings.Split(name, ", or ") {
			i := slices.IndexFunc(sums, func(s storm.ChainSummary) bool { return s.Scenario == row[0] && s.Config == config })
			if i < 0 {
				t.Errorf("README chain row %q: no %q in %q", row, config, row[0])
				continue
			}
			got = append(got, sums[i])
			seen[row[0]+"/"+config] = true
		}
		if len(got) == 0 {
			continue
		}
		u := got[0]
		for _, s := range got[1:] {
			u.AttemptsMin, u.AttemptsMax = min(u.AttemptsMin, s.AttemptsMin), max(u.AttemptsMax, s.AttemptsMax)
			u.GoodputMin, u.GoodputMax = min(u.GoodputMin, s.GoodputMin), max(u.GoodputMax, s.GoodputMax)
			u.SucceededMin, u.SucceededMax = min(u.SucceededMin, s.SucceededMin), max(u.SucceededMax, s.SucceededMax)
		}
		for i, want := range []string{rangeCell(u.AttemptsMin, u.AttemptsMax, "%.2f", ""), rangeCell(u.GoodputMin, u.GoodputMax, "%.1f", ""),
			rangeCell(100*u.SucceededMin, 100*u.SucceededMax, "%.1f", "%")} {
			if row[2+i] != want {
				t.Errorf("README chain row %s / %s, column %d: %q; the simulation gives %q", row[0], row[1], 3+i, row[2+i], want)
			}
		}
	}
	// Every configuration of the overloaded chain is in the table; the
	// failing chain's leaves out the one without retries.
	for _, s := range sums {
		if s.Scenario == storm.ChainScenarios()[1].Name && !seen[s.Scenario+"/"+s.Config] {
			t.Errorf("README chain table lacks %s / %s", s.Scenario, s.Config)
		}
	}
}

// checkREADMEMetastable holds the README's table of the metastable
// trigger (TestMetastableTargets's seeds) to sums: for each client count,
// when naive retries, standard mode with its quota alone, standard and
// adaptive mode (one column: alike), and no retries are back after the
// spike, min-max over the seeds.
func checkREADMEMetastable(t *testing.T, sums []storm.MetastableSummary) {
	t.Helper()
	back := func(scenario string, m storm.Mode) string {
		i := slices.IndexFunc(sums, func(s storm.MetastableSummary) bool { return s.Scenario == scenario && s.Mode == m.String() })
		if i < 0 {
			t.Fatalf("no summary of %s in %s", m, scenario)
		}
		lo, hi, never := math.Inf(1), math.Inf(-1), 0
		for _, d := range sums[i].Recovered {
			if d < 0 {
				never++
				continue
			}
			lo, hi = min(lo, d.Seconds()), max(hi, d.Seconds())
		}
		switch {
		case never == len(sums[i].Recovered):
			return "never"
		case never > 0:
			return fmt.Sprintf("%.0f s to never", lo)
		}
		return rangeCell(lo, hi, "%.0f", " s")
	}
	rows := readmeTable(t, "| clients | naive 3 attempts |")
	if len(rows) != len(storm.MetastableScenarios()) {
		t.Errorf("README metastable table: %d rows, want one for each of %d client counts", len(rows), len(storm.MetastableScenarios()))
	}
	for _, row := range rows {
		scenario := strings.ReplaceAll(row[0], ",", "") + " clients"
		standard, adaptive := back(scenario, storm.Standard), back(scenario, storm.Adaptive)
		if standard != adaptive {
			t.Errorf("%s: standard back after %s, adaptive %s: the README gives them one column", scenario, standard, adaptive)
		}
		for i, want := range []string{back(scenario, storm.Naive), back(scenario, storm.QuotaOnly), standard, back(scenario, storm.None)} {
			if i+1 >= len(row) || row[i+1] != want {
				t.Errorf("README metastable row %q, column %d: the simulation gives %q", row, i+2, want)
			}
		}
	}
}

// TestREADMETailTable holds the README's table of hedging's tail-latency
// scenarios to what the simulation gives over seeds 1-5: p99, p99.9,
// extra attempts and goodput, min-max. The README names the scenarios
// for what they are; tailNames maps them to the simulation's.
func TestREADMETailTable(t *testing.T) {
	storm.SkipUnderRace(t)
	if testing.Short() {
		t.Skip("about 10 s of simulation")
	}
	seeds := storm.Seeds(1)
	sums, err := storm.CompareTails(storm.TailScenarios(), storm.TailConfigs(), seeds)
	if err != nil {
		t.Fatal(err)
	}
	tailNames := map[string]string{
		"moderate load (50%), 1 ms network":        "moderate load (50%)",
		"moderate load, 20 ms network":             "moderate, 20 ms network",
		"overloaded (2x), cancelled work stops":    "overloaded (2x)",
		"overloaded (2x), cancelled work finishes": "overloaded, no cancel",
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	rows := readmeTable(t, "| scenario | hedging | p99 ms |")
	if len(rows) == 0 {
		t.Fatal("the README's tail table has no rows")
	}
	for _, row := range rows {
		config := row[1]
		if config == "none" {
			config = "no hedging"
		}
		i := slices.IndexFunc(sums, func(s storm.TailSummary) bool { return s.Scenario == tailNames[row[0]] && s.Config == config })
		if len(row) != 6 || i < 0 {
			t.Errorf("README tail row %q: no such scenario and hedging, or not 6 cells", row)
			continue
		}
		s := sums[i]
		for j, want := range []string{rangeCell(ms(s.P99Min), ms(s.P99Max), "%.1f", ""), rangeCell(ms(s.P999Min), ms(s.P999Max), "%.1f", ""),
			rangeCell(100*s.ExtraMin, 100*s.ExtraMax, "%.2f", "%"), rangeCell(s.GoodputMin, s.GoodputMax, "%.0f", "")} {
			if row[2+j] != want {
				t.Errorf("README tail row %s / %s, column %d: %q; the simulation gives %q", row[0], row[1], 3+j, row[2+j], want)
			}
		}
	}
}

// TestREADMEStormTable checks the README's table of the storm demo on
// seed 1 (under "Where adaptive mode loses" in "Retry storms") against
// what the simulation gives: for each of its rows, the throttled share,
// goodput, failures and refusals, latencies and recovery of standard,
// adaptive and published modes. The README's figures are what users
// quote; a change that moves one fails here until the README says what
// the demo prints.
func TestREADMEStormTable(t *testing.T) {
	storm.SkipUnderRace(t)
	scenarios := storm.Scenarios()
	modes := []storm.Mode{storm.Standard, storm.Adaptive, storm.AdaptivePublished}
	results, err := storm.RunAll(scenarios, modes, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Each scenario by its label, "(b)", "(b')", as its title begins.
	byLabel := make(map[string][]storm.Result)
	for i, sc := range scenarios {
		label, _, _ := strings.Cut(sc.Title, " ")
		byLabel[label] = results[i*len(modes) : (i+1)*len(modes)]
	}
	rows := 0
	for _, cells := range readmeTable(t, "| scenario (seed 1) | mode |") {
		if len(cells) != 7 || cells[1] != "standard / adaptive / published" {
			t.Errorf("README storm row %q: want 7 cells, standard / adaptive / published", cells)
			continue
		}
		label, _, _ := strings.Cut(strings.ReplaceAll(cells[0], "′", "'"), " ")
		rs, ok := byLabel[label]
		if !ok {
			t.Errorf("README row %q: no scenario has that label", cells[0])
			continue
		}
		rows++
		check := func(column, cell string, format func(storm.Result) string) {
			t.Helper()
			parts := make([]string, len(rs))
			for i, r := range rs {
				parts[i] = format(r)
			}
			if got := strings.Join(parts, " / "); cell != got {
				t.Errorf("README row %s, %s: %q; the simulation gives %q", label, column, cell, got)
			}
		}
		check("throttled", cells[2], func(r storm.Result) string { return percent(r.ThrottledShare) })
		check("goodput", cells[3], func(r storm.Result) string { return percent(r.Goodput) })
		check("failed (refused)", cells[4], func(r storm.Result) string {
			if r.Mode == storm.Adaptive.String() { // the README gives its refusals alone
				return thousands(r.Failed) + " (" + thousands(r.Refused) + ")"
			}
			return thousands(r.Failed)
		})
		latencies := make([]string, len(rs))
		for i, r := range rs {
			latencies[i] = strings.TrimSuffix(storm.Seconds(r.LatencyP50), "s") + "/" + strings.TrimSuffix(storm.Seconds(r.LatencyP99), "s") + " s"
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
		check("recovery", cells[6], func(r storm.Result) string {
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

// TestREADMEJitterTable holds the README's table of the jitter kinds
// (seed 1) to what the simulation gives: completion times, attempts and
// peaks.
func TestREADMEJitterTable(t *testing.T) {
	results, err := storm.CompareJitter(storm.DefaultJitterScenario(), storm.JitterKinds, 1)
	if err != nil {
		t.Fatal(err)
	}
	rows := readmeTable(t, "| jitter | p50 / p99 / max time to success |")
	if len(rows) != len(results) {
		t.Fatalf("README jitter table: %d rows, want one for each of %d kinds", len(rows), len(results))
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%.3g s", d.Seconds()) }
	for i, r := range results {
		row := rows[i]
		if name, _, _ := strings.Cut(row[0], " ("); name != r.Kind.String() || len(row) != 4 {
			t.Errorf("README jitter row %d %q: want %s's, 4 cells", i+1, row, r.Kind)
			continue
		}
		for j, want := range []string{secs(r.P50) + " / " + secs(r.P99) + " / " + secs(r.Max), thousands(r.Attempts),
			fmt.Sprintf("%d / %d", r.PeakLoad, r.PeakAfterHeal)} {
			if row[1+j] != want {
				t.Errorf("README jitter row %s, column %d: %q; the simulation gives %q", row[0], 2+j, row[1+j], want)
			}
		}
	}
}

// TestREADMESendWaitTable holds the README's table of adaptive mode's
// bound on the wait for a send slot (seed 1, `go run ./examples/storm
// -max-send-wait 1s` and so on) to what the simulation gives: scenarios
// (b), (d), (e) and (c) with each bound.
func TestREADMESendWaitTable(t *testing.T) {
	storm.SkipUnderRace(t)
	byLabel := map[string]storm.Scenario{}
	for _, sc := range storm.Scenarios() {
		label, _, _ := strings.Cut(sc.Title, " ")
		byLabel[label] = sc
	}
	rows := readmeTable(t, "| bound | (b) goodput / p99 / failed |")
	if len(rows) == 0 {
		t.Fatal("the README's send-wait table has no rows")
	}
	for _, row := range rows {
		bound := time.Duration(-1) // none
		if row[0] != "none" {
			d, err := time.ParseDuration(strings.ReplaceAll(row[0], " ", ""))
			if err != nil {
				t.Errorf("README send-wait row %q: %v", row, err)
				continue
			}
			bound = d
		}
		run := func(label string) storm.Result {
			sc, ok := byLabel[label]
			if !ok {
				t.Fatalf("no scenario %s", label)
			}
			sc.MaxSendWait = bound
			r, err := storm.Run(sc, storm.Adaptive, 1)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		p99 := func(r storm.Result) string { return strings.TrimSuffix(storm.Seconds(r.LatencyP99), "s") + " s" }
		b, d, e, c := run("(b)"), run("(d)"), run("(e)"), run("(c)")
		for i, want := range []string{percent(b.Goodput) + " / " + p99(b) + " / " + thousands(b.Failed),
			percent(d.Goodput) + " / " + p99(d), percent(e.Goodput) + " / " + p99(e), thousands(c.Failed)} {
			if i+1 >= len(row) || row[i+1] != want {
				t.Errorf("README send-wait row %q, column %d: the simulation gives %q", row, i+2, want)
			}
		}
	}
}

// hotKeyRuns is what TestHotKeyOverSeeds measured of one scenario: the
// median and worst runs' completions as a share of standard's, and the
// runs below 95% and below half.
type hotKeyRuns struct {
	median, worst      float64
	below95, belowHalf int
	first20            float64 // the worst of seeds 1-20
}

// checkREADMEHotKey holds the README's table of the hot key over seeds
// (TestHotKeyOverSeeds) to what the test measured, one row for each
// scenario: "10%" is share-10, "25%, on top of 3× overload"
// share-25-overload. It holds the README's sentences that quote the same
// runs too: the limits table's counts over seeds 1-200, the 5% key's
// median, and the worst of seeds 1-20.
func checkREADMEHotKey(t *testing.T, measured map[string]hotKeyRuns) {
	t.Helper()
	checked := 0
	for _, row := range readmeTable(t, "| throttled whatever the load | median run |") {
		share, overload := strings.CutSuffix(row[0], ", on top of 3× overload")
		name := "share-" + strings.TrimSuffix(share, "%")
		if overload {
			name += "-overload"
		}
		m, ok := measured[name]
		if !ok {
			t.Errorf("README hot-key row %q: the test measures no such scenario", row)
			continue
		}
		checked++
		for i, want := range []string{fmt.Sprintf("%.1f%%", 100*m.median), fmt.Sprintf("%.1f%%", 100*m.worst),
			strconv.Itoa(m.below95), strconv.Itoa(m.belowHalf)} {
			if i+1 >= len(row) || row[i+1] != want {
				t.Errorf("README hot-key row %q, column %d: the test gives %q", row, i+2, want)
			}
		}
	}
	if checked != len(measured) {
		t.Errorf("README hot-key table: %d rows of the %d scenarios the test measures", checked, len(measured))
	}

	// The same runs, quoted in the README's text and its limits table.
	share := func(n int) float64 { return 100 * float64(n) / 200 }
	lo95, hi95, loHalf, hiHalf := 100.0, 0.0, 100.0, 0.0
	for _, name := range []string{"share-10", "share-25", "share-50"} {
		m := measured[name]
		lo95, hi95 = min(lo95, share(m.below95)), max(hi95, share(m.below95))
		loHalf, hiHalf = min(loHalf, share(m.belowHalf)), max(hiHalf, share(m.belowHalf))
	}
	o25, o5 := measured["share-25-overload"], measured["share-5-overload"]
	holdText(t, readmeText(t),
		fmt.Sprintf("over seeds 1-200 missed: below 95%% on %s of runs, below half on %s",
			rangeCell(lo95, hi95, "%g", "%"), rangeCell(loHalf, hiHalf, "%g", "%")),
		fmt.Sprintf("over seeds 1-200 on %g%%", share(o25.below95)),
		fmt.Sprintf("over seeds 1-200 below 95%% on %g%%, below half on %g%%", share(o5.below95), share(o5.belowHalf)),
		fmt.Sprintf("completes %.1f%% of standard's completions in the median run over seeds 1-200, but less than 95%% on %d runs and less than half on %d",
			100*o5.median, o5.below95, o5.belowHalf),
		fmt.Sprintf("Over seeds 1-20 the worst seeds are %.1f%% at 10%%, %.1f%% at 25%%, %.1f%% at 50%% and %.1f%% on top of overload",
			100*measured["share-10"].first20, 100*measured["share-25"].first20, 100*measured["share-50"].first20, 100*o25.first20))
}

// holdText fails t for each of says that text does not contain.
func holdText(t *testing.T, text string, says ...string) {
	t.Helper()
	for _, s := range says {
		if !strings.Contains(text, s) {
			t.Errorf("README does not say %q", s)
		}
	}
}

// readmeText is the README with every run of white space one space, for
// finding a sentence that the text wraps.
func readmeText(t *testing.T) string {
	t.Helper()
	return strings.Join(strings.Fields(readme(t)), " ")
}
