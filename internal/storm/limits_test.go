package storm_test

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/retrykit/retry/internal/mdtable"
	"github.com/retrykit/retry/internal/storm"
)

// TestLimits runs the limits table over seeds 1-5 and checks, for the
// adaptive mode, the targets it meets on every seed, and that the table's
// fixed-rate sender and frontier are what they claim to be. The targets it
// misses (small clients, fairness, the mixed fleet, the many-tiny fleet's
// frontier, a hot key on top of overload on two seeds, the step on one)
// are in the README with their figures; most have a guard
// here at today's figure, so that a change that makes one worse fails.
// The README's headline figures for each shape are held to the table too
// (checkREADMELimits).
func TestLimits(t *testing.T) {
	storm.SkipUnderRace(t)
	scs := storm.LimitScenarios()
	seeds := storm.Seeds(1)
	sums, err := storm.CompareLimits(scs, seeds)
	if err != nil {
		t.Fatal(err)
	}
	if testing.Verbose() {
		_ = storm.WriteLimitsTable(os.Stdout, scs, sums, len(seeds))
	}
	get := func(scenario, mode string) storm.LimitSummary {
		t.Helper()
		i := slices.IndexFunc(sums, func(s storm.LimitSummary) bool { return s.Scenario == scenario && s.Mode == mode })
		if i < 0 {
			t.Fatalf("no %s row in %s", mode, scenario)
		}
		return sums[i]
	}
	adaptive, standard := storm.Adaptive.String(), storm.Standard.String()

	// Target 5, throttled from the first attempt for 10 s: the send rate
	// falls near the admitted rate (none) within 2 s, and is back at
	// demand within 2 s of capacity returning.
	if a := get("throttled-start", adaptive); a.SendWhileThrottled[1] > 0.05 || a.Recovery[1] > 2 {
		t.Errorf("throttled-start: adaptive sent %v of demand from 2 s in, back %v s after; want <= 5%%, <= 2 s", a.SendWhileThrottled, a.Recovery)
	}
	// Standard mode, which does not pace, keeps sending.
	if s := get("throttled-start", standard); s.SendWhileThrottled[0] < 0.5 {
		t.Errorf("throttled-start: standard sent %v of demand: the scenario does not throttle", s.SendWhileThrottled)
	}

	// Target 3, a tiny burst: no more than 3 points above the fixed-rate
	// frontier at the same goodput, on every seed.
	if a := get("tiny-burst", adaptive); a.OffFrontier > 0 || a.AboveFrontier[1] > 0.03 {
		t.Errorf("tiny-burst: adaptive %v above the frontier (%d seeds off it), want <= 3 points", a.AboveFrontier, a.OffFrontier)
	}

	// The frontier is made of fixed-rate senders, each on it, whose
	// goodput rises with their rate.
	for _, name := range []string{"tiny-burst", "many-tiny"} {
		var last float64
		for _, m := range []string{"x0.5", "x0.7", "x0.95", "x2"} {
			f := get(name, storm.FixedRate+" "+m)
			if f.Goodput[0] < last {
				t.Errorf("%s: fixed rate %s serves %v, less than a slower one's %v", name, m, f.Goodput, last)
			}
			last = f.Goodput[0]
		}
	}

	// Target 4, throttles that do not depend on the load, 10% to 50%:
	// at least 95% of standard mode's completions, on every seed of 1-5.
	// Over seeds 1-200 it is missed on 6.5-12% of the runs, 0.5-2% of
	// them starved below half (TestHotKeyOverSeeds; the README's "A hot
	// key starves the client on some runs").
	for _, name := range []string{"share-10", "share-25", "share-50"} {
		if a := get(name, adaptive); a.VsStandard[0] < 0.95 {
			t.Errorf("%s: adaptive completed %v of standard's, want >= 95%%", name, a.VsStandard)
		}
	}

	// Target 7, held: on the limits' token-bucket server with network
	// latency, one client's steps and throttled start keep goodput.
	for _, name := range []string{"step", "throttled-start"} {
		if a := get(name, adaptive); a.VsStandard[0] < 0.95 {
			t.Errorf("%s: adaptive completed %v of standard's, want >= 95%%", name, a.VsStandard)
		}
	}

	// Guards at today's figures, where the targets are missed.
	guards := []struct {
		scenario string
		what     string
		value    func(storm.LimitSummary) float64 // the worst seed's
		bound    float64
		above    bool // the value must stay above the bound (else below)
	}{
		// Target 1: 5% throttled. Today 16.9-17.4%.
		{"small-clients", "throttled", func(s storm.LimitSummary) float64 { return s.Throttled[1] }, 0.2, false},
		// Target 2: fairness 0.8. Today 0.22-0.53 and 0.29-0.55.
		{"fair-3x", "fairness", func(s storm.LimitSummary) float64 { return s.Fairness[0] }, 0.1, true},
		{"fair-10x", "fairness", func(s storm.LimitSummary) float64 { return s.Fairness[0] }, 0.1, true},
		{"fair-3x", "throttled", func(s storm.LimitSummary) float64 { return s.Throttled[1] }, 0.07, false},
		{"fair-10x", "throttled", func(s storm.LimitSummary) float64 { return s.Throttled[1] }, 0.14, false},
		// Target 4 on top of overload: 95% of standard's completions.
		// Today 89.5-98.3% (before the test at a quarter of the rate:
		// 2.9-3.3%, the rate cut for the hot key's share down to the
		// minimum).
		{"share-25-overload", "completions vs standard", func(s storm.LimitSummary) float64 { return s.VsStandard[0] }, 0.85, true},
		// The same with 5% throttled. Today 92.4-98.9%; over 200 seeds a
		// run starves where the test at half the rate finds no throttle
		// left (or runs while the client ramps up), and the cuts follow
		// the share down, one throttle at a time.
		{"share-5-overload", "completions vs standard", func(s storm.LimitSummary) float64 { return s.VsStandard[0] }, 0.85, true},
		// Target 6: back within 5 s. Today 2.1-5.3 s: the heal finds the
		// rate anywhere on its cycle of cuts and growth.
		{"step", "recovery (s)", func(s storm.LimitSummary) float64 { return s.Recovery[1] }, 7, false},
		// A client of 3 workers on its own: 95% of standard's completions
		// against a hot key, back within 5 s of a dip. Today 18.8-24.3%
		// (too few attempts to test the throttles' cause) and 0.1-7.6 s.
		{"small-share-25", "completions vs standard", func(s storm.LimitSummary) float64 { return s.VsStandard[0] }, 0.15, true},
		{"small-step", "recovery (s)", func(s storm.LimitSummary) float64 { return s.Recovery[1] }, 10, false},
	}
	for _, g := range guards {
		v := g.value(get(g.scenario, adaptive))
		if math.IsNaN(v) || g.above && v < g.bound || !g.above && v > g.bound {
			t.Errorf("%s: adaptive %s %.3f, worse than today's bound %.3f", g.scenario, g.what, v, g.bound)
		}
	}

	// WithDemandClock: what the README says it buys a fleet of small
	// clients, and what a small client on its own pays for it. Today
	// 6.7-7.0% throttled, the big client 1.10-1.37 of its share (the
	// default 0.23-0.47), and 13.7-32.7 s back after a dip.
	demand := storm.AdaptiveDemand.String()
	if d, a := get("small-clients", demand), get("small-clients", adaptive); d.Throttled[1] > 0.08 || d.Throttled[1] >= a.Throttled[0] || d.Goodput[0] < 0.95 {
		t.Errorf("small-clients: demand clock %v throttled at %v goodput, want <= 8%%, below the default's %v, >= 95%%", d.Throttled, d.Goodput, a.Throttled)
	}
	if d := get("mixed", demand); d.BigShare[0] < 0.8 || d.BigShare[1] > 1.5 {
		t.Errorf("mixed: demand clock's big client %v of its share, want 0.8-1.5", d.BigShare)
	}
	for _, name := range []string{"share-10", "share-25", "share-50", "share-25-overload", "step", "throttled-start"} {
		if d, a := get(name, demand), get(name, adaptive); d.VsStandard != a.VsStandard {
			t.Errorf("%s: demand clock %v of standard's completions, the default %v: a client asking for 10 attempts a second or more is not affected", name, d.VsStandard, a.VsStandard)
		}
	}
	if d, a := get("small-step", demand), get("small-step", adaptive); d.Recovery[1] <= a.Recovery[1] {
		t.Errorf("small-step: demand clock back after %v, the default %v: the price is not paid, check the scenario", d.Recovery, a.Recovery)
	}

	checkREADMELimits(t, scs, sums)
}

// checkREADMELimits holds the headline figures of the README's limits
// table, the bold ones of its adaptive column, to the table the
// simulation prints (WriteLimitsTable): each must stand in the printed
// adaptive row of its scenario. The README's rows follow the scenarios'
// order, with the three hot keys of capacity to spare in one row.
func checkREADMELimits(t *testing.T, scs []storm.LimitScenario, sums []storm.LimitSummary) {
	t.Helper()
	var printed strings.Builder
	if err := storm.WriteLimitsTable(&printed, scs, sums, len(storm.Seeds(1))); err != nil {
		t.Fatal(err)
	}
	// The printed adaptive row of each scenario, its ranges written as
	// the README writes them: 16.9%-17.4% as 16.9-17.4%, 1.2 s-1.4 s as
	// 1.2-1.4 s, 100.0% as 100%.
	rows := make(map[string]string)
	scenario := ""
	for line := range strings.Lines(printed.String()) {
		if name, _, ok := strings.Cut(line, ": "); ok && !strings.HasPrefix(line, "|") {
			scenario = name
		}
		if strings.HasPrefix(line, "| adaptive |") {
			line = strings.ReplaceAll(line, "100.0%", "100%")
			rows[scenario] = printedRange.ReplaceAllString(line, "$1-$2")
		}
	}
	var groups [][]string
	for _, sc := range scs {
		if n := len(groups); n > 0 && (sc.Name == "share-25" || sc.Name == "share-50") {
			groups[n-1] = append(groups[n-1], sc.Name) // one row with share-10
			continue
		}
		groups = append(groups, []string{sc.Name})
	}

	table, err := mdtable.Find(readme(t), "| shape | target | adaptive |")
	if err != nil {
		t.Fatal(err)
	}
	if len(table.Raw) != len(groups) {
		t.Fatalf("the README's limits table has %d rows; the scenarios make %d", len(table.Raw), len(groups))
	}
	for i, cells := range table.Raw {
		bold := boldText.FindAllStringSubmatch(cells[2], -1) // the adaptive column
		if len(bold) != 1 {
			t.Errorf("README limits row %d: %d runs of bold text in the adaptive column, want one", i+1, len(bold))
			continue
		}
		parts := []string{strings.ReplaceAll(bold[0][1], "−", "-")}
		if len(groups[i]) > 1 {
			parts = strings.Split(parts[0], " / ")
		}
		if len(parts) != len(groups[i]) {
			t.Errorf("README limits row %d: %d figures for %v", i+1, len(parts), groups[i])
			continue
		}
		for j, name := range groups[i] {
			for _, fig := range figure.FindAllString(parts[j], -1) {
				if !regexp.MustCompile(`(^|[^\d.])` + regexp.QuoteMeta(fig) + `($|[^\d])`).MatchString(rows[name]) {
					t.Errorf("README limits row %d (%s): %q is not in the printed adaptive row %q", i+1, name, fig, strings.TrimSpace(rows[name]))
				}
			}
		}
	}
}

var (
	// printedRange matches a range as WriteLimitsTable prints it: 16.9%-
	// or 1.2 s- before the upper end.
	printedRange = regexp.MustCompile(`(\d+(?:\.\d+)?)(?:%| s)-(\d)`)
	// boldText matches the README's bold text.
	boldText = regexp.MustCompile(`\*\*(.+?)\*\*`)
	// figure matches a figure as the README writes it: 3.9%, 16.9-17.4%,
	// 1.2-1.4 s, 0.17-0.38, -2.0 to +1.5.
	figure = regexp.MustCompile(`[-+]?\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?(?: to [-+]?\d+(?:\.\d+)?)?(?:%| s)?`)
)

// The fixed-rate sender is told its share and learns nothing: at its fair
// share of a server with ample burst it is hardly throttled, and it sends
// no more than its share whatever the demand.
func TestFixedRateSender(t *testing.T) {
	sc := storm.LimitScenarios()[1] // fair-3x: 10 clients x 30 workers, 3x
	sums, err := storm.CompareLimits([]storm.LimitScenario{sc}, []uint64{1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if s.Mode != storm.FixedRate {
			continue
		}
		if s.Throttled[1] > 0.01 || s.Goodput[0] < 0.97 || s.Fairness[0] < 0.9 {
			t.Errorf("fixed rate at its share: %+v, want about nothing throttled, the capacity served, alike", s)
		}
		return
	}
	t.Fatal("no fixed-rate row")
}

// TestHotKeyOverSeeds runs the hot-key scenarios of the limits table with
// capacity to spare, and the 25% and 5% ones under overload, over seeds
// 1-200, and prints, with -v, how adaptive mode's completions compare with
// standard mode's: the median, the worst run, and how many runs fall below
// 95% (target 4) and below half (the client starved). Target 4 is missed on
// some runs; the guards hold today's counts, so that a change that starves
// more runs fails. Like TestOverloadOverSeeds it is skipped under the race
// detector, where it takes minutes (make test runs it without).
func TestHotKeyOverSeeds(t *testing.T) {
	storm.SkipUnderRace(t)
	guards := map[string]struct{ below95, belowHalf int }{
		"share-10":          {13, 3},
		"share-25":          {24, 0},
		"share-50":          {17, 4},
		"share-25-overload": {60, 2},
		"share-5-overload":  {85, 8},
	}
	if testing.Verbose() {
		fmt.Println("Adaptive mode's completions as a share of standard mode's, seeds 1-200")
		fmt.Println()
		fmt.Println("| scenario | median | worst | runs below 95% | runs below half |")
		fmt.Println("|---|---|---|---|---|")
	}
	measured := map[string]hotKeyRuns{}
	for _, ls := range storm.LimitScenarios() {
		g, ok := guards[ls.Name]
		if !ok {
			continue
		}
		first20 := math.Inf(1) // the worst of seeds 1-20
		vs, err := storm.OverSeeds(1, 200, func(seed uint64) (float64, error) {
			a, err := storm.Run(ls.Scenario, storm.Adaptive, seed)
			if err != nil {
				return 0, err
			}
			s, err := storm.Run(ls.Scenario, storm.Standard, seed)
			v := float64(a.Succeeded) / float64(s.Succeeded)
			if seed <= 20 {
				first20 = min(first20, v)
			}
			return v, err
		})
		if err != nil {
			t.Fatal(err)
		}
		below95, belowHalf := vs.Below(0.95), vs.Below(0.5)
		if testing.Verbose() {
			fmt.Printf("| %s | %.1f%% | %.1f%% | %d | %d |\n", ls.Name, 100*vs.Median(), 100*vs[0], below95, belowHalf)
		}
		if below95 > g.below95 || belowHalf > g.belowHalf {
			t.Errorf("%s: %d runs below 95%% of standard's completions, %d below half; want at most %d, %d", ls.Name, below95, belowHalf, g.below95, g.belowHalf)
		}
		measured[ls.Name] = hotKeyRuns{median: vs.Median(), worst: vs[0], below95: below95, belowHalf: belowHalf, first20: first20}
	}
	checkREADMEHotKey(t, measured)
}

// TestRecoveryOverSeeds runs the step and the throttled start of the
// limits table over seeds 1-200 and prints, with -v, when adaptive mode is
// back at full rate after the heal: on how many runs within the target's
// time (5 s for the step, 2 s for the throttled start), the median run and
// the slowest. Target 6 is missed on some runs of the step; the guards hold
// today's counts. The step's figure depends on where the heal finds the
// rate in its cycle of cuts and growth, so on the length of the dip as
// well as on the seed: the test runs the step with dips of 20 to 40 s too.
// The README quotes the figures (and the step's over seeds 1-20), and the
// test holds its sentences to them. Like TestHotKeyOverSeeds it is skipped
// under the race detector.
func TestRecoveryOverSeeds(t *testing.T) {
	storm.SkipUnderRace(t)
	text := readmeText(t)
	for _, ls := range storm.LimitScenarios() {
		switch ls.Name {
		case "throttled-start":
			back, _ := recoveryOverSeeds(t, ls, 2*time.Second, 200)
			holdText(t, text, fmt.Sprintf("back at full rate at most %.1f s after the service's return (median %.1f s), on every one of them",
				back[len(back)-1], back.Median()))
		case "step":
			back, first20 := recoveryOverSeeds(t, ls, 5*time.Second, 170)
			within, late := back.Below(5+1e-9), 0
			for _, b := range first20 {
				if b > 5+1e-9 {
					late++
				}
			}
			seeds := map[int]string{0: "no seed", 1: "one seed", 2: "two seeds"}[late]
			if seeds == "" {
				seeds = fmt.Sprintf("%d seeds", late)
			}
			least, most := stepOverDips(t, ls.Scenario, 162)
			holdText(t, text,
				fmt.Sprintf("step is back within 5 s on %d of seeds 1-200 (median %.1f s, at most %.1f s", within, back.Median(), back[len(back)-1]),
				fmt.Sprintf("over seeds 1-200 on %g%%", 100*float64(len(back)-within)/float64(len(back))),
				fmt.Sprintf("Seeds 1-20: %s, %s over 5 s", rangeCell(slices.Min(first20), slices.Max(first20), "%.1f", " s"), seeds),
				fmt.Sprintf("with dips of 20 to 40 s (every 2.5 s) on %d to %d", least, most))
		}
	}
}

// recoveryOverSeeds runs ls over seeds 1-200, prints with -v how many runs
// are back at full rate within target, the median and the slowest, and
// fails t if fewer than within are (the guard). It returns the runs'
// recoveries, sorted, and seeds 1-20's in order.
func recoveryOverSeeds(t *testing.T, ls storm.LimitScenario, target time.Duration, within int) (back storm.Sorted, first20 []float64) {
	t.Helper()
	back, err := recoveries(ls.Scenario, &first20)
	if err != nil {
		t.Fatal(err)
	}
	n := back.Below(target.Seconds() + 1e-9)
	if testing.Verbose() {
		fmt.Printf("%s, seeds 1-200: back within %v on %d runs, median %.1f s, slowest %.1f s\n", ls.Name, target, n, back.Median(), back[len(back)-1])
	}
	if n < within {
		t.Errorf("%s: back within %v on %d runs of 200; want at least %d", ls.Name, target, n, within)
	}
	return back, first20
}

// stepOverDips runs the step sc over seeds 1-200 with dips of 20 to 40 s,
// every 2.5 s, and returns the fewest and the most runs of a dip back
// within 5 s; it fails t if the fewest are fewer than within (the guard).
func stepOverDips(t *testing.T, sc storm.Scenario, within int) (least, most int) {
	t.Helper()
	least = 200
	for dip := 20 * time.Second; dip <= 40*time.Second; dip += 2500 * time.Millisecond {
		sc.Incident.End = sc.Incident.Start + dip
		b, err := recoveries(sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := b.Below(5 + 1e-9)
		least, most = min(least, n), max(most, n)
		if testing.Verbose() {
			fmt.Printf("step, a dip of %v, seeds 1-200: back within 5s on %d runs, median %.1f s, slowest %.1f s\n", dip, n, b.Median(), b[len(b)-1])
		}
	}
	if least < within {
		t.Errorf("step, dips of 20 to 40 s: back within 5 s on as few as %d runs of 200; want at least %d", least, within)
	}
	return least, most
}

// recoveries runs sc in adaptive mode over seeds 1-200 and returns how
// long after the heal each run was back at full rate, in seconds (+Inf:
// never); and, if first20 is not nil, appends seeds 1-20's to it in order.
func recoveries(sc storm.Scenario, first20 *[]float64) (storm.Sorted, error) {
	return storm.OverSeeds(1, 200, func(seed uint64) (float64, error) {
		r, err := storm.Run(sc, storm.Adaptive, seed)
		b := math.Inf(1)
		if r.Recovery >= 0 {
			b = r.Recovery.Seconds()
		}
		if first20 != nil && seed <= 20 {
			*first20 = append(*first20, b)
		}
		return b, err
	})
}

// TestOverloadOverSeeds runs the one-client overloads, (b) and (b'), over
// seeds 1-20, on their server that counts in windows of a second and on
// token buckets holding 0.2, 1 and 2 s of its rate: target 7 (at most 5%
// throttled, at least 95% goodput) holds on seed 1 of the demo, which
// TestTargetOverloadOneClient prints, but not on every seed or server. A
// service with credit saved when the client starts (the window open then,
// a full bucket) admits up to twice its rate in the first cut's evidence,
// so at half the rate the share falls by less than congestion would make
// it, and the test of the throttles' cause takes the congestion for a
// load-independent share. The limiter checks such a verdict back at the
// client's rate and forgets the share, which costs those runs about a
// second (the README's "One client at 3× is misled at first on some
// runs"); against a bucket of 1 or 2 s, most runs pay it. The guards hold
// today's counts and worst runs, so that a change that makes them worse
// fails, and the README's table is held to what the test prints.
//
// A hundred and sixty five-minute runs take a minute or two, and far
// longer under the race detector, which finds nothing here that
// TestTargetOverloadOneClient, the same code on seed 1, does not: make
// test runs this test without it (SkipUnderRace).
func TestOverloadOverSeeds(t *testing.T) {
	storm.SkipUnderRace(t)
	guards := []struct {
		name   string
		bucket float64 // 0: the scenario's server; else a bucket of this many seconds of its rate
		above5 int     // runs above 5% throttled, at most
		worst  float64 // the worst run's throttled share, at most
	}{
		{"overload", 0, 3, 0.06},
		{"overload", 0.2, 0, 0.05},
		{"overload", 1, 13, 0.12},
		{"overload", 2, 20, 0.062},
		{"overload-100", 0, 2, 0.102},
		{"overload-100", 0.2, 0, 0.05},
		{"overload-100", 1, 5, 0.075},
		{"overload-100", 2, 10, 0.09},
	}
	byName := map[string]storm.Scenario{}
	for _, sc := range storm.Scenarios() {
		byName[sc.Name] = sc
	}
	var rows [][]string
	for _, g := range guards {
		sc, ok := byName[g.name]
		if !ok {
			t.Fatalf("no scenario %q", g.name)
		}
		server := "windows of 1 s"
		if g.bucket > 0 {
			sc.Server, sc.Burst = storm.Bucket, g.bucket*sc.Capacity
			server = fmt.Sprintf("bucket of %g s", g.bucket)
		}
		goodput := math.Inf(1)
		throttled, err := storm.OverSeeds(1, 20, func(seed uint64) (float64, error) {
			r, err := storm.Run(sc, storm.Adaptive, seed)
			goodput = min(goodput, r.Goodput)
			return r.ThrottledShare, err
		})
		if err != nil {
			t.Fatal(err)
		}
		above := len(throttled) - throttled.Below(0.05)
		worst := throttled[len(throttled)-1]
		if above > g.above5 || worst > g.worst {
			t.Errorf("%s, %s: %d runs of 20 above 5%% throttled, the worst %.1f%%; want at most %d, and %.1f%%", g.name, server, above, 100*worst, g.above5, 100*g.worst)
		}
		label, _, _ := strings.Cut(strings.ReplaceAll(sc.Title, "'", "′"), " ")
		rows = append(rows, []string{label, server, fmt.Sprintf("%.1f%%", 100*throttled.Median()),
			fmt.Sprintf("%.1f%%", 100*worst), strconv.Itoa(above), fmt.Sprintf("%.1f%%", 100*goodput)})
	}
	if testing.Verbose() {
		fmt.Println("One client offering 3x, adaptive mode, seeds 1-20")
		fmt.Println()
		fmt.Println(overloadHeader)
		fmt.Println("|---|---|---|---|---|---|")
		for _, row := range rows {
			fmt.Printf("| %s |\n", strings.Join(row, " | "))
		}
	}
	if got := readmeTable(t, overloadHeader); !slices.EqualFunc(got, rows, slices.Equal) {
		t.Errorf("README's table of one client at 3× over seeds 1-20:\n%q\nthe test gives\n%q", got, rows)
	}
}

// overloadHeader begins the header of the README's table of one client at
// 3× over seeds 1-20 (TestOverloadOverSeeds).
const overloadHeader = "| scenario | server | throttled, median | worst run | runs above 5% throttled | goodput, worst run |"

func TestLimitsBadInput(t *testing.T) {
	ls := storm.LimitScenarios()[0]
	ls.Workers = 0
	if _, err := storm.CompareLimits([]storm.LimitScenario{ls}, []uint64{1}); err == nil {
		t.Error("CompareLimits with no workers succeeded")
	}
	ls = storm.LimitScenarios()[0]
	ls.ClientWorkers = []int{1, 2}
	if _, err := storm.CompareLimits([]storm.LimitScenario{ls}, []uint64{1}); err == nil {
		t.Error("CompareLimits with ClientWorkers not matching Clients succeeded")
	}
}
