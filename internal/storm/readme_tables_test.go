package storm_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/retrykit/retry/internal/storm"
)

// readmeTable returns the rows of the README's table whose header row
// begins with header, after the header and its rule: each row's cells,
// trimmed, without bold marks, a row's empty first cell taking the row
// above's. It fails t if there is no such table.
func readmeTable(t *testing.T, header string) [][]string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), header) })
	if start < 0 {
		t.Fatalf("no table in the README begins %q", header)
	}
	var rows [][]string
	for _, line := range lines[start+2:] {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i, c := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(c, "**", ""))
		}
		if cells[0] == "" && len(rows) > 0 {
			cells[0] = rows[len(rows)-1][0]
		}
		rows = append(rows, cells)
	}
	return rows
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
