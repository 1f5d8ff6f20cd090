package retry_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/internal/mdtable"
	"github.com/retrykit/retry/internal/storm"
)

// The default algorithm's growth is relative to each client's own rate and
// counted in seconds, so many small clients cut and grow as one big client
// does, and nothing in it draws equal clients' rates together. This
// measures four families of designs around it, on the limits table's two
// shapes that pull against each other, fairness between 10 equal clients
// at 3x and the throttled share of 100 small clients at 3x, and on two that
// show the price: the big client's share in a mixed fleet, and when a
// client of 3 workers on its own is back at full rate after a dip in
// capacity (seeds 1-5, min-max):
//
//	go test -run TestGrowthTradeoff -v .
//
// Growth in absolute sends per second (Chiu and Jain's additive increase,
// which draws rates together), W*(1 + 0.003*t^3) + g*t^3 with g from 0 to
// the published algorithm's 0.4, makes equal clients fairer, never 0.8,
// and small clients more throttled. Time counted in the client's own
// attempts as well as in seconds, t the lesser of the seconds since the
// cut and the attempts since it over a, throttles small clients far less,
// but a client that falls behind grows more slowly than the others and
// falls further behind: fairness collapses, with an absolute term or
// without. Cuts decided on n attempts made since the last cut, so that a
// client decides as often as it sends n attempts, draw equal clients
// together as the published algorithm's cut on every throttle does, but
// a client waits for its evidence before it cuts: more throttled at 3x,
// small clients most. Time counted in the attempts the client asks for
// (WithDemandClock) throttles small clients less, as fair as the default,
// and a small client on its own pays: it is back at full rate after a dip
// in capacity far later. Two more run beside them for comparison, as the
// limits table runs them: the published algorithm (an attempt waits for
// its send slot until its request's deadline), and a sender told its share
// of the capacity, as redisretry tells a fleet's processes, which learns
// nothing and is in the target corner.
//
// docs/adaptive-limits.md ("Growth and fairness") has the table, and the
// test holds it to what it prints. The README says why the default stays
// where it is: relative
// growth behaves alike at every scale of rates, it cuts as soon as a
// second's evidence is significant, and a client on its own is not made to
// pay for a fleet.
//
// A second table sets each design's fairness beside what the Cramér-Rao
// bound allows it (storm.FairnessAllowed), from its throttles and its
// rate's elasticity to the throttled share, measured with the capacity
// 1.5625 times lower and higher; docs/adaptive-limits.md ("What fairness
// costs") has the derivation and the table, which the test holds to what
// it prints, and no design's median seed may be fairer than the bound
// allows by more than 0.05. With -tradeoff-svg and -bound-svg the test
// draws the two charts to files (the README's):
//
//	go test -run TestGrowthTradeoff . -args -tradeoff-svg docs/tradeoff.svg -bound-svg docs/bound.svg
func TestGrowthTradeoff(t *testing.T) {
	if testing.Short() {
		t.Skip("about 40 s of simulation")
	}
	storm.SkipUnderRace(t)
	var small, fair, fair10, mixed, lone storm.LimitScenario
	for _, ls := range storm.LimitScenarios() {
		switch ls.Name {
		case "small-clients":
			small = ls
		case "fair-3x":
			fair = ls
		case "fair-10x":
			fair10 = ls
		case "mixed":
			mixed = ls
		case "small-step":
			lone = ls
		}
	}
	seeds := storm.Seeds(1)
	// The families of designs.
	const (
		absolute  = iota + 1 // growth in absolute sends per second
		clocked              // the curve's time counted in attempts
		evidence             // cuts decided on a number of attempts
		demand               // the curve's time counted in attempts asked for
		published            // the published algorithm, for comparison
		told                 // a sender told its share, for comparison
	)
	families := map[int]string{
		absolute:  "growth in sends per second too (+ g·t³)",
		clocked:   "the curve's time in attempts sent too (a a second)",
		evidence:  "cuts decided on n attempts",
		demand:    "the curve's time in attempts asked for too (WithDemandClock)",
		published: "the published algorithm (AWS SDKs)",
		told:      "a sender told its share, learning nothing",
	}
	type design struct {
		name   string
		opts   []retry.RateLimiterOption // none: the default
		family int                       // 0: the default
	}
	designs := []design{{name: "default (g = 0, seconds)"}}
	for _, g := range []float64{0.003, 0.01, 0.03, 0.1, 0.4} {
		designs = append(designs, design{fmt.Sprintf("g = %g", g), []retry.RateLimiterOption{retry.WithAbsoluteGrowth(g)}, absolute})
	}
	for _, a := range []float64{5, 10, 20} {
		designs = append(designs, design{fmt.Sprintf("attempts, a = %g", a), []retry.RateLimiterOption{retry.WithAttemptClock(a)}, clocked})
	}
	for _, g := range []float64{0.03, 0.4} { // the two mixed
		designs = append(designs, design{fmt.Sprintf("attempts, a = 20, and g = %g", g),
			[]retry.RateLimiterOption{retry.WithAttemptClock(20), retry.WithAbsoluteGrowth(g)}, clocked})
	}
	for _, n := range []int{10, 20, 40} {
		designs = append(designs, design{fmt.Sprintf("cuts on %d attempts", n), []retry.RateLimiterOption{retry.WithEvidenceAttempts(n)}, evidence})
	}
	designs = append(designs, design{"cuts on 20 attempts, and g = 0.01",
		[]retry.RateLimiterOption{retry.WithEvidenceAttempts(20), retry.WithAbsoluteGrowth(0.01)}, evidence})
	for _, a := range []float64{5, 10, 20} {
		designs = append(designs, design{fmt.Sprintf("asked for, a = %g (WithDemandClock)", a), []retry.RateLimiterOption{retry.WithDemandClock(a)}, demand})
	}
	designs = append(designs, design{"the published algorithm (WithPublishedCUBIC)", []retry.RateLimiterOption{retry.WithPublishedCUBIC()}, published})
	designs = append(designs, design{"a fixed rate at its share (told it, as by redisretry)", nil, told})
	type point struct {
		design
		smallThrottled, fairness [2]float64 // min, max over seeds
		bigShare, back           [2]float64 // the mixed fleet's big client's share; the lone client's recovery (s)
		// The ten equal clients at 3x against the Cramér-Rao bound:
		// their throttled share, throttles a client and elasticity,
		// the fairness the bound allows, and the median fairness.
		share, throttles, elasticity, allowed, median float64
	}
	// The elasticity of a design's rate to the throttled share is
	// measured on the ten equal clients at 3x with the capacity, and the
	// bucket's burst, 1.5625 times lower and higher: over less, the share
	// of some designs moves too little to measure its slope.
	scaled := func(k float64) storm.Scenario {
		sc := fair.Scenario
		sc.Capacity *= k
		sc.Burst *= k
		return sc
	}
	lower, higher := scaled(0.64), scaled(1.5625)
	var curve []point
	var b strings.Builder
	b.WriteString("| growth | 100 small clients, 3x: throttled | 10 equal clients, 3x: fairness | throttled | 10 equal clients, 10x: throttled | " +
		"1 big + 9 small clients: the big one's share | 1 client of 3 workers: full rate after a dip |\n|---|---|---|---|---|---|---|\n")
	var rows [][]string // each design's cells after its name, as docs/adaptive-limits.md gives them
	for _, d := range designs {
		build := func(clock retry.Clock, random func() float64) (storm.Stepper, error) {
			backoff, err := retry.NewExponentialBackoff(retry.WithRandom(random))
			if err != nil {
				return nil, err
			}
			wait := storm.MaxSendWait
			if d.family == published {
				wait = math.MaxInt64 // as the AWS SDKs and the limits table: until the request's deadline
			}
			opts := []retry.AdaptiveOption{retry.WithClock(clock), retry.WithBackoff(backoff), retry.WithMaxSendWait(wait)}
			for _, o := range d.opts {
				opts = append(opts, o)
			}
			return retry.NewAdaptive(opts...)
		}
		empty := [2]float64{math.Inf(1), math.Inf(-1)}
		p := point{design: d, smallThrottled: empty, fairness: empty, bigShare: empty, back: empty}
		fairThrottled, fair10Throttled := empty, empty
		var fairness []float64
		var rate, share [3]float64 // means over seeds: a client's successes a second, the throttled share; at 0.64, 1 and 1.5625 times the capacity
		for _, seed := range seeds {
			run := func(sc storm.Scenario) storm.Result {
				strategy := build
				if d.family == told {
					strategy = storm.FixedRateSender(sc, 1)
				}
				r, err := storm.RunStrategy(sc, "adaptive", strategy, seed)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			rs, rf, r10, rm, rl := run(small.Scenario), run(fair.Scenario), run(fair10.Scenario), run(mixed.Scenario), run(lone.Scenario)
			fairness = append(fairness, rf.Fairness)
			p.throttles += float64(rf.Throttled) / float64(fair.Clients) / float64(len(seeds))
			for i, r := range []storm.Result{run(lower), rf, run(higher)} {
				rate[i] += float64(r.Succeeded) / float64(fair.Clients) / fair.Duration.Seconds() / float64(len(seeds))
				share[i] += r.ThrottledShare / float64(len(seeds))
			}
			big, _, _ := mixed.Shares(rm)
			widen(&p.bigShare, big)
			back := math.Inf(1)
			if rl.Recovery >= 0 {
				back = rl.Recovery.Seconds()
			}
			widen(&p.back, back)
			widen(&fair10Throttled, r10.ThrottledShare)
			widen(&p.smallThrottled, rs.ThrottledShare)
			widen(&p.fairness, rf.Fairness)
			widen(&fairThrottled, rf.ThrottledShare)
		}
		slices.Sort(fairness)
		p.median, p.share = fairness[len(fairness)/2], share[1]
		switch {
		case d.family == told: // told its share, a sender does not respond to throttles
			p.elasticity = 0
		case share[0] <= share[2]: // its rate does not settle on the share
			p.elasticity = math.Inf(1)
		default:
			p.elasticity = math.Log(rate[2]/rate[0]) / math.Log(share[0]/share[2])
		}
		allowed, err := storm.FairnessAllowed(fair.Clients, p.elasticity, p.share, p.throttles)
		if err != nil {
			t.Fatalf("%s: %v (its throttled share %.4f, %.4f, %.4f at 0.64, 1, 1.5625 times the capacity)", d.name, err, share[0], share[1], share[2])
		}
		p.allowed = allowed
		curve = append(curve, p)
		row := []string{percentRange(p.smallThrottled), ratioRange(p.fairness), percentRange(fairThrottled), percentRange(fair10Throttled),
			ratioRange(p.bigShare), secondsRange(p.back)}
		rows = append(rows, row)
		fmt.Fprintf(&b, "| %s | %s |\n", d.name, strings.Join(row, " | "))
	}
	t.Logf("the default's growth W*(1 + 0.003*t^3), four families around it, the published algorithm, and a sender told its share; seeds 1-5 (min-max)\n%s", b.String())
	checkTable(t, "docs/adaptive-limits.md", "| growth | 100 small clients, 3×: throttled |", rows)
	writeSVG(t, *tradeoffSVG, func(w io.Writer) error {
		points := make([]storm.TradeoffPoint, len(curve))
		for i, p := range curve {
			points[i] = storm.TradeoffPoint{Label: p.name, Family: families[p.family], SmallThrottled: p.smallThrottled, Fairness: p.fairness}
		}
		note := fmt.Sprintf("seeds 1-%d; 100 req/s, a token bucket holding 0.2 s, 20-50 ms each way; go test -run TestGrowthTradeoff . -args -tradeoff-svg FILE", len(seeds))
		return storm.WriteTradeoffSVG(w, points, note)
	})

	// What the throttles allow: each design's fairness between the ten
	// equal clients at 3x beside the Cramér-Rao bound's (see
	// storm.FairnessAllowed), from its throttled share, the throttles a
	// client met over the run and its rate's elasticity to the share.
	b.Reset()
	b.WriteString("| growth | 10 equal clients, 3x: throttled | throttles a client (K) | elasticity (e) | fairness the bound allows | fairness measured (median) |\n|---|---|---|---|---|---|\n")
	var bound [][]string // each design's cells after its name, as docs/adaptive-limits.md gives them
	for _, p := range curve {
		e := fmt.Sprintf("%.2f", p.elasticity)
		if math.IsInf(p.elasticity, 1) {
			e = "∞"
		}
		row := []string{percentRange([2]float64{p.share, p.share}), fmt.Sprintf("%.0f", p.throttles), e, fmt.Sprintf("%.2f", p.allowed),
			fmt.Sprintf("%s (%.2f)", ratioRange(p.fairness), p.median)}
		bound = append(bound, row)
		fmt.Fprintf(&b, "| %s | %s |\n", p.name, strings.Join(row, " | "))
	}
	checkTable(t, "docs/adaptive-limits.md", "| growth | 10 equal clients, 3×: throttled |", bound)
	const want = 0.8 // target 2's fairness
	def := curve[0]
	spread, err := storm.FairnessAllowed(fair.Clients, 1, def.share, def.throttles) // exp(-R sqrt((1-p)/K)): allowed at e = 1
	if err != nil {
		t.Fatal(err)
	}
	needed := math.Log(want) / math.Log(spread) // the elasticity at which the default's throttles allow 0.8
	run := fair.Duration.Seconds()
	acrossRates, err := storm.ShareFloorAcrossRates(fair.Clients, want, run, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	acrossLoads, err := storm.ShareFloorAcrossOverloads(fair.Clients, want, run, 10, 3, 10, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the fairness between ten equal clients at 3x the Cramér-Rao bound allows each design, from its throttles and its rate's elasticity to the throttled share "+
		"(measured at 0.64 and 1.56 times the capacity); seeds 1-%d\n%s\n"+
		"At the default's %.1f%% throttled (%.0f throttles a client over %.0f s), fairness %.1f needs an elasticity of at most %.2f.\n"+
		"A rate law that ignores demand, keeping ten equal clients %.1f fair over %.0f s at every share from 1 to 10 req/s: at least %.1f%% throttled at 1 req/s (target 1: at most 5%%).\n"+
		"A rate law that scales with demand, the same from 3x to 10x at 10 req/s, 5%% throttled at 3x: at least %.1f%% throttled at 10x.",
		len(seeds), b.String(), 100*def.share, def.throttles, run, want, needed, want, run, 100*acrossRates, 100*acrossLoads)
	// The README and the page of the derivation give the three figures,
	// the default's throttles, and some designs' fairness beside the
	// default's.
	byName := map[string]point{}
	for _, p := range curve {
		byName[p.name] = p
	}
	g03, g1, n20, pub := byName["g = 0.03"], byName["g = 0.1"], byName["cuts on 20 attempts"], byName["the published algorithm (WithPublishedCUBIC)"]
	both := []string{fmt.Sprintf("elasticity of at most %.2f", needed),
		fmt.Sprintf("at least %.1f%% throttled at 1", 100*acrossRates), fmt.Sprintf("at least %.1f%% throttled at 10×", 100*acrossLoads),
		fmt.Sprintf("At the default's %.1f%% throttled, %.0f throttles a client", 100*def.share, def.throttles)}
	says := map[string][]string{
		"README.md": slices.Concat(both, []string{
			fmt.Sprintf("the median seed %.2f and %.2f at 3× with g = 0.03 and 0.1, the default %.2f", g03.median, g1.median, def.median),
			fmt.Sprintf("The published algorithm is on the bound (%.2f allowed, %s measured), cuts on 20 attempts near it (%.2f allowed at %.1f%% throttled, %s), the default below it (%.2f allowed, %s)",
				pub.allowed, ratioRange(pub.fairness), n20.allowed, 100*n20.share, ratioRange(n20.fairness), def.allowed, ratioRange(def.fairness))}),
		"docs/adaptive-limits.md": slices.Concat(both, []string{
			fmt.Sprintf("from %.2f to %.2f and %.2f (g = 0.03 and 0.1; the worst seed's from %.2f to %.2f and %.2f)",
				def.median, g03.median, g1.median, def.fairness[0], g03.fairness[0], g1.fairness[0])}),
	}
	for file, wants := range says {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		flat := strings.Join(strings.Fields(string(text)), " ")
		for _, want := range wants {
			if !strings.Contains(flat, want) {
				t.Errorf("%s does not say %q", file, want)
			}
		}
	}
	writeSVG(t, *boundSVG, func(w io.Writer) error {
		points := make([]storm.BoundPoint, len(curve))
		for i, p := range curve {
			points[i] = storm.BoundPoint{Label: p.name, Family: families[p.family], Allowed: p.allowed, Fairness: p.fairness}
		}
		note := fmt.Sprintf("seeds 1-%d; 10 clients x 30 workers, 100 req/s, a token bucket holding 0.2 s; go test -run TestGrowthTradeoff . -args -bound-svg FILE", len(seeds))
		return storm.WriteBoundSVG(w, points, note)
	})
	// No design is fairer than its throttles allow: the bound is on the
	// expected fairness, so the median seed may pass it by a little.
	for _, p := range curve {
		if p.median > p.allowed+0.05 {
			t.Errorf("%s: median fairness %.2f, above the %.2f the bound allows (e %.2f, %.0f throttles a client at %.1f%%)",
				p.name, p.median, p.allowed, p.elasticity, p.throttles, 100*p.share)
		}
	}

	// The trade-off the default is chosen on: every absolute term and
	// every count of evidence costs small clients throttles, every attempt
	// clock costs equal clients their fairness, and nothing makes equal
	// clients fair on every seed.
	for _, p := range curve[1:] {
		if p.family == told {
			// Told its share, a sender needs no growth: it is in the
			// target corner, where coordination puts a fleet.
			if p.smallThrottled[1] > 0.05 || p.fairness[0] < 0.8 {
				t.Errorf("%s: small clients %v throttled, fairness %v: not in the target corner", p.name, p.smallThrottled, p.fairness)
			}
			continue
		}
		if p.family == demand {
			// Counted in attempts asked for, small clients are throttled
			// less, and a lone small client pays for it: it is back at
			// full rate later after a dip.
			if p.smallThrottled[1] >= def.smallThrottled[0] || p.back[1] <= def.back[1] {
				t.Errorf("%s: small clients %v throttled, a lone one back after %v s: not below the default's %v, and not after its %v",
					p.name, p.smallThrottled, p.back, def.smallThrottled, def.back)
			}
			continue
		}
		if p.family != clocked && p.smallThrottled[0] <= def.smallThrottled[1] {
			t.Errorf("%s: small clients %.3f throttled, no more than the default's %.3f", p.name, p.smallThrottled[0], def.smallThrottled[1])
		}
		if p.family == clocked && (p.smallThrottled[1] >= def.smallThrottled[0] || p.fairness[1] >= def.fairness[1]) {
			t.Errorf("%s: small clients %v throttled, fairness %v: not below the default's %v and %v",
				p.name, p.smallThrottled, p.fairness, def.smallThrottled, def.fairness)
		}
		if p.fairness[0] >= 0.8 {
			t.Errorf("%s reaches fairness %.2f on every seed: the default should be chosen again", p.name, p.fairness[0])
		}
	}
}

// tradeoffSVG and boundSVG are where TestGrowthTradeoff draws its charts;
// none if empty.
var (
	tradeoffSVG = flag.String("tradeoff-svg", "", "where TestGrowthTradeoff writes its trade-off chart (empty: no chart)")
	boundSVG    = flag.String("bound-svg", "", "where TestGrowthTradeoff writes its chart of fairness against the bound (empty: no chart)")
)

// writeSVG writes the chart write draws to the file at path; nothing if
// path is empty.
func writeSVG(t *testing.T, path string, write func(io.Writer) error) {
	t.Helper()
	if path == "" {
		return
	}
	var svg bytes.Buffer
	if err := write(&svg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, svg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func widen(mm *[2]float64, v float64) { mm[0], mm[1] = min(mm[0], v), max(mm[1], v) }

// The tables' forms of a min-max: one value when both are alike.
func percentRange(mm [2]float64) string { return storm.FormatSpan(mm, "%.1f", 100, "-") + "%" }
func ratioRange(mm [2]float64) string   { return storm.FormatSpan(mm, "%.2f", 1, "-") }

// secondsRange formats a min-max of seconds, +Inf as never.
func secondsRange(mm [2]float64) string {
	switch {
	case math.IsInf(mm[0], 1):
		return "never"
	case math.IsInf(mm[1], 1):
		return fmt.Sprintf("%.1f s to never", mm[0])
	}
	return storm.FormatSpan(mm, "%.1f", 1, "-") + " s"
}

// checkTable holds the table of a markdown file whose header begins with
// header to rows, the figures the test printed: the table's rows in order,
// each's cells after the design's name, bold or not.
func checkTable(t *testing.T, file, header string, rows [][]string) {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	table, err := mdtable.Find(string(text), header)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(table.Rows) != len(rows) {
		t.Fatalf("%s: the table %q has %d rows, the test prints %d", file, header, len(table.Rows), len(rows))
	}
	for i, cells := range table.Rows {
		name, cells := cells[0], cells[1:]
		if len(cells) != len(rows[i]) {
			t.Errorf("%s: row %q has %d cells after its name, want %d", file, name, len(cells), len(rows[i]))
			continue
		}
		for j, cell := range cells {
			if cell != rows[i][j] {
				t.Errorf("%s: row %q, column %d: %q, the simulation gives %q", file, name, j+2, cell, rows[i][j])
			}
		}
	}
}
