package storm

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/retrykit/retry"
)

// The limits of what one process can know: the shapes in which a
// client-side limiter sees little of the service's state (many small
// clients, a bucket that holds almost no burst, throttles that do not come
// from load, a service that throttles from the first attempt), each beside
// a fixed-rate sender that is told its share of the capacity and never
// learns anything. See LimitScenarios.

// A LimitScenario is a scenario of the limits table and the figures it is
// judged by.
type LimitScenario struct {
	Scenario
	// Target is what the scenario asks of the adaptive mode, for the
	// table.
	Target string
	// Frontier, if set, lists the multiples of each client's share of
	// the capacity at which a fixed-rate sender also runs: the points of
	// the fixed-rate frontier (throttled share against goodput), which no
	// limiter of independent clients gets below. Each mode is then judged
	// by how far above the frontier it sends at its goodput.
	Frontier []float64
}

// limitBase is the shape every limit scenario starts from: a token-bucket
// server of 100 requests/s holding 0.2 s of capacity, 20-50 ms of network
// latency each way, workers that think 0.5-1.5 s.
func limitBase() Scenario {
	b := workload()
	b.Duration = 2 * time.Minute
	b.Server, b.Burst = Bucket, 20
	b.NetMin, b.NetMax = 20*time.Millisecond, 50*time.Millisecond
	return b
}

// LimitScenarios returns the scenarios of the limits table, each two
// minutes long and on limitBase's server unless said (the throttled start
// 80 s and the step 150 s, to have a minute of baseline after the
// incident):
//
//   - small-clients: 100 clients of 3 workers (about 3 requests/s each),
//     offering 3x;
//   - fair-3x, fair-10x: 10 clients of 30 and of 100 workers, offering 3x
//     and 10x;
//   - mixed: one client of 30 workers and nine of 3 against 19
//     requests/s, a third of the demand;
//   - tiny-burst: 10 clients of 3 workers against 10 requests/s holding
//     2 tokens, offering 3x, for 10 minutes (the fixed-rate senders'
//     phases average out over a few hundred requests each);
//   - many-tiny: 50 clients of 1 or 2 workers against 20.5 requests/s
//     holding 4 tokens, offering 3.3x, for 10 minutes;
//   - share-10, share-25, share-50: one client of 50 workers, capacity
//     ample (0.5x), and 10%, 25%, 50% of attempts throttled whatever the
//     load;
//   - share-25-overload, share-5-overload: one client of 300 workers
//     offering 3x, and 25% or 5% of attempts throttled whatever the load;
//   - throttled-start: one client of 50 workers, every attempt throttled
//     for the first 10 s, then capacity ample, on a server of 1-s windows
//     (a token bucket would admit its first burst);
//   - step: one client of 50 workers, capacity 100 → 30 at 60 s → 100 at
//     90 s;
//   - small-share-25, small-step: share-25 and step for one client of 3
//     workers (about 3 requests/s), the step to 1.8 requests/s, the same
//     share of its demand: a client too small to test the throttles'
//     cause, and the price WithDemandClock makes it pay.
func LimitScenarios() []LimitScenario {
	b := limitBase()
	small, fair3, fair10, mixed, tiny := b, b, b, b, b
	small.Name, small.Workers, small.Clients = "small-clients", 300, 100
	small.Title = "100 clients x 3 workers, 100 req/s, burst 20, offered 3x"
	fair3.Name, fair3.Workers, fair3.Clients = "fair-3x", 300, 10
	fair3.Title = "10 clients x 30 workers, 100 req/s, burst 20, offered 3x"
	fair10.Name, fair10.Workers, fair10.Clients = "fair-10x", 1000, 10
	fair10.Title = "10 clients x 100 workers, 100 req/s, burst 20, offered 10x"
	mixed.Name, mixed.Capacity, mixed.Burst = "mixed", 19, 4
	mixed.ClientWorkers = []int{30, 3, 3, 3, 3, 3, 3, 3, 3, 3}
	mixed.Workers, mixed.Clients = sum(mixed.ClientWorkers), len(mixed.ClientWorkers)
	mixed.Title = "1 client x 30 workers + 9 x 3, 19 req/s, burst 4, offered 3x"
	tiny.Name, tiny.Capacity, tiny.Burst, tiny.Workers, tiny.Clients = "tiny-burst", 10, 2, 30, 10
	tiny.Duration = 10 * time.Minute // a few requests a second: long enough to average the phases out
	tiny.Title = "10 clients x 3 workers, 10 req/s, burst 2, offered 3x"

	// Fifty clients of one or two workers (about 1 or 2 requests/s),
	// against 20.5 requests/s: their minimum rates alone would add up to
	// more than the capacity.
	many := b
	many.Name, many.Capacity, many.Burst, many.Clients = "many-tiny", 20.5, 4, 50
	many.Duration = 10 * time.Minute
	for c := range many.Clients {
		many.ClientWorkers = append(many.ClientWorkers, 1+c%3/2) // 1, 1, 2, ...
	}
	many.Workers = sum(many.ClientWorkers)
	many.Title = fmt.Sprintf("50 clients x 1-2 workers (%d in all), 20.5 req/s, burst 4, offered 3.3x", many.Workers)

	one := b
	one.Workers = 50 // 0.5x of 100 req/s
	share10, share25, share50, start, step, shareOver := one, one, one, one, one, one
	share10.Name, share10.ThrottleShare = "share-10", 0.10
	share10.Title = "1 client x 50 workers, 100 req/s, 10% throttled whatever the load"
	share25.Name, share25.ThrottleShare = "share-25", 0.25
	share25.Title = "1 client x 50 workers, 100 req/s, 25% throttled whatever the load"
	share50.Name, share50.ThrottleShare = "share-50", 0.50
	share50.Title = "1 client x 50 workers, 100 req/s, 50% throttled whatever the load"
	shareOver.Name, shareOver.ThrottleShare, shareOver.Workers = "share-25-overload", 0.25, 300
	shareOver.Title = "1 client x 300 workers, 100 req/s, offered 3x, and 25% throttled whatever the load"
	shareOver5 := shareOver
	shareOver5.Name, shareOver5.ThrottleShare = "share-5-overload", 0.05
	shareOver5.Title = "1 client x 300 workers, 100 req/s, offered 3x, and 5% throttled whatever the load"
	start.Name, start.Duration, start.Server = "throttled-start", 80*time.Second, Windows
	start.Incident = Incident{Start: 0, End: 10 * time.Second}
	start.Title = "1 client x 50 workers, every attempt throttled for 10 s, then 100 req/s (1-s windows)"
	step.Name, step.Duration = "step", 150*time.Second
	step.Incident = Incident{Start: 60 * time.Second, End: 90 * time.Second, Capacity: 30}
	step.Title = "1 client x 50 workers, 100 → 30 req/s at 60 s → 100 at 90 s"
	smallShare, smallStep := share25, step
	smallShare.Name, smallShare.Workers, smallShare.Duration = "small-share-25", 3, 10*time.Minute
	smallShare.Title = "1 client x 3 workers, 100 req/s, 25% throttled whatever the load"
	smallStep.Name, smallStep.Workers, smallStep.Incident.Capacity = "small-step", 3, 1.8
	smallStep.Title = "1 client x 3 workers, 100 → 1.8 req/s at 60 s → 100 at 90 s"

	return []LimitScenario{
		{Scenario: small, Target: "<= 5% throttled, >= 95% goodput"},
		{Scenario: fair3, Target: "fairness >= 0.8"},
		{Scenario: fair10, Target: "fairness >= 0.8"},
		{Scenario: mixed, Target: "each group within 20% of its share"},
		{Scenario: tiny, Target: "<= 3 points above the fixed-rate frontier", Frontier: []float64{0.5, 0.7, 0.95, 1.3, 2}},
		{Scenario: many, Target: "<= 3 points above the fixed-rate frontier", Frontier: []float64{0.5, 0.7, 0.95, 1.3, 2}},
		{Scenario: share10, Target: ">= 95% of standard's completions"},
		{Scenario: share25, Target: ">= 95% of standard's completions"},
		{Scenario: share50, Target: ">= 95% of standard's completions"},
		{Scenario: shareOver, Target: ">= 95% of standard's completions"},
		{Scenario: shareOver5, Target: ">= 95% of standard's completions"},
		{Scenario: start, Target: "sends near 0 within 2 s; full rate within 2 s of the heal"},
		{Scenario: step, Target: "full rate within 5 s of the heal"},
		{Scenario: smallShare, Target: ">= 95% of standard's completions"},
		{Scenario: smallStep, Target: "full rate within 5 s of the heal"},
	}
}

// LimitModes are the modes the limits table compares, beside the
// fixed-rate sender.
var LimitModes = []Mode{Standard, Adaptive, AdaptiveDemand, AdaptivePublished}

// FixedRate names the fixed-rate sender in the limits table: an adaptive
// strategy whose limiter is assigned, for the whole run, its client's
// share of the healthy capacity (in proportion to its workers), with a
// burst of one token and a random phase; it learns nothing.
const FixedRate = "fixed rate"

// fixedRateName names the fixed-rate sender at mult times its share in
// the limits table's summaries.
func fixedRateName(mult float64) string {
	if mult == 1 {
		return FixedRate
	}
	return fmt.Sprintf("%s x%g", FixedRate, mult)
}

// FixedRateSender returns a Builder of the limits table's fixed-rate
// senders in sc, each at mult times its client's share of the capacity
// (see FixedRate). A Builder is for one run: the n-th strategy it builds
// is client n's.
func FixedRateSender(sc Scenario, mult float64) Builder { return fixedRate(&sc, mult) }

// fixedRate returns a Builder of fixed-rate senders for sc, each at mult
// times its client's share of the capacity: the n-th strategy it builds
// is client n's.
func fixedRate(sc *Scenario, mult float64) Builder {
	next := 0
	return func(clock retry.Clock, random func() float64) (Stepper, error) {
		c := next
		next++
		// Each client's clock is off by up to 1%, as independent clocks
		// are: senders at exactly the same rate would keep their phases,
		// and one whose sends fall just after another's would lose every
		// time.
		share := mult * sc.Capacity * float64(sc.workersOf(c)) / float64(sc.Workers) * (0.99 + 0.02*random())
		l, err := retry.NewRateLimiter(retry.WithClock(clock))
		if err != nil {
			return nil, err
		}
		forever := clock.Now().Add(100 * 365 * 24 * time.Hour)
		if err := l.Assign(retry.Assignment{Rate: share, Burst: 1, Phase: random(), Until: forever}); err != nil {
			return nil, err
		}
		backoff, err := retry.NewExponentialBackoff(retry.WithRandom(random))
		if err != nil {
			return nil, err
		}
		return retry.NewAdaptive(retry.WithClock(clock), retry.WithBackoff(backoff), retry.WithRateLimiter(l),
			retry.WithMaxSendWait(MaxSendWait))
	}
}

// A LimitSummary is one mode's figures in one limit scenario over several
// seeds, each a [min, max] pair.
type LimitSummary struct {
	Scenario, Mode string

	Throttled [2]float64 // throttled / attempts
	Goodput   [2]float64 // successes / what the server could serve
	Fairness  [2]float64 // Result.Fairness; NaN with one client
	// BigShare and SmallShare are, in a scenario whose first client has
	// more workers than any other, that client's successes and the
	// others' over what their workers would get in proportion (1: exactly
	// their share); NaN otherwise.
	BigShare, SmallShare [2]float64
	// VsStandard is the successes over standard mode's with the same seed.
	VsStandard [2]float64
	// SendWhileThrottled is, in a scenario throttled from the start, the
	// attempts sent per second from 2 s into the incident to its end,
	// over the demand (workers / mean think time); NaN otherwise.
	SendWhileThrottled [2]float64
	// Recovery is Result.Recovery in seconds (+Inf: never); NaN without
	// an incident.
	Recovery [2]float64
	// AboveFrontier is, in a scenario with a Frontier, how much more of
	// the mode's attempts were throttled than the fixed-rate frontier's
	// at the same goodput, in the same seed (the frontier drawn through
	// its efficient points, straight between them); OffFrontier counts
	// the seeds in which the mode's goodput was outside the frontier's.
	AboveFrontier [2]float64
	OffFrontier   int
}

// CompareLimits runs LimitModes and the fixed-rate sender in every
// scenario with each seed, and the fixed-rate sender at every point of a
// scenario's Frontier.
func CompareLimits(scenarios []LimitScenario, seeds []uint64) ([]LimitSummary, error) {
	var out []LimitSummary
	for _, ls := range scenarios {
		sc := ls.Scenario
		mults := append([]float64{1}, ls.Frontier...)
		names := []string{fixedRateName(1)}
		for _, m := range ls.Frontier {
			names = append(names, fixedRateName(m))
		}
		fixed := len(names)
		for _, m := range LimitModes {
			names = append(names, m.String())
		}
		sums := make([]LimitSummary, len(names))
		for i := range sums {
			sums[i] = newLimitSummary(sc.Name, names[i])
		}
		for _, seed := range seeds {
			rs := make([]Result, len(names))
			var err error
			for i, m := range mults {
				if rs[i], err = RunStrategy(sc, names[i], fixedRate(&sc, m), seed); err != nil {
					return nil, fmt.Errorf("%s: %w", sc.Name, err)
				}
			}
			for i, m := range LimitModes {
				if rs[fixed+i], err = Run(sc, m, seed); err != nil {
					return nil, fmt.Errorf("%s: %w", sc.Name, err)
				}
			}
			standard := rs[fixed+indexOf(LimitModes, Standard)]
			var eff []Result
			if len(ls.Frontier) > 0 {
				eff = efficient(rs[:fixed])
			}
			for i, r := range rs {
				sums[i].add(&sc, r, standard)
				if eff == nil {
					continue
				}
				if f := frontier(eff, r.Goodput); math.IsNaN(f) {
					sums[i].OffFrontier++
				} else {
					span(&sums[i].AboveFrontier, r.ThrottledShare-f)
				}
			}
		}
		out = append(out, sums...)
	}
	return out, nil
}

// frontierReach is how far past the frontier's highest goodput a result
// is still compared with that point: a share of the capacity.
const frontierReach = 0.01

// efficient returns the fixed-rate results that no other beats on both
// goodput and throttled share, by goodput from the highest: the points of
// the fixed-rate frontier.
func efficient(fixed []Result) []Result {
	pts := slices.Clone(fixed)
	slices.SortFunc(pts, func(a, b Result) int { return cmp.Compare(b.Goodput, a.Goodput) })
	var eff []Result // throttled falling with goodput
	for _, p := range pts {
		if len(eff) == 0 || p.ThrottledShare < eff[len(eff)-1].ThrottledShare {
			eff = append(eff, p)
		}
	}
	return eff
}

// frontier returns the throttled share of the fixed-rate frontier eff
// (see efficient) at goodput g: on the straight line between the two
// points around g, or that of the highest within frontierReach above it;
// NaN elsewhere.
func frontier(eff []Result, g float64) float64 {
	for i := 1; i < len(eff); i++ {
		hi, lo := eff[i-1], eff[i]
		if g <= hi.Goodput && g >= lo.Goodput {
			if hi.Goodput == lo.Goodput {
				return lo.ThrottledShare
			}
			return lo.ThrottledShare + (g-lo.Goodput)*(hi.ThrottledShare-lo.ThrottledShare)/(hi.Goodput-lo.Goodput)
		}
	}
	if top := eff[0]; g >= top.Goodput && g <= top.Goodput+frontierReach {
		return top.ThrottledShare
	}
	return math.NaN()
}

func indexOf(ms []Mode, m Mode) int {
	for i, x := range ms {
		if x == m {
			return i
		}
	}
	panic("storm: mode not listed") // LimitModes holds Standard
}

func newLimitSummary(scenario, mode string) LimitSummary {
	empty := [2]float64{math.Inf(1), math.Inf(-1)}
	return LimitSummary{Scenario: scenario, Mode: mode, Throttled: empty, Goodput: empty, Fairness: empty,
		BigShare: empty, SmallShare: empty, VsStandard: empty, SendWhileThrottled: empty, Recovery: empty,
		AboveFrontier: empty}
}

// add widens the summary's spans to hold r's figures; standard is
// standard mode's result with the same seed.
func (s *LimitSummary) add(sc *Scenario, r, standard Result) {
	span(&s.Throttled, r.ThrottledShare)
	span(&s.Goodput, r.Goodput)
	span(&s.VsStandard, float64(r.Succeeded)/float64(max(standard.Succeeded, 1)))
	if sc.clients() > 1 {
		span(&s.Fairness, r.Fairness)
	}
	if big, small, ok := sc.Shares(r); ok {
		span(&s.BigShare, big)
		span(&s.SmallShare, small)
	}
	if sc.hasIncident() {
		rec := math.Inf(1)
		if r.Recovery >= 0 {
			rec = r.Recovery.Seconds()
		}
		span(&s.Recovery, rec)
	}
	if inc := sc.Incident; sc.hasIncident() && inc.Start == 0 && inc.Capacity == 0 && !inc.Outage {
		from, to := int((inc.Start+2*time.Second)/Bin), int(inc.End/Bin)
		sent := 0
		for _, b := range r.Series[from:to] {
			sent += b.Attempts
		}
		demand := float64(sc.Workers) / ((sc.ThinkMin + sc.ThinkMax) / 2).Seconds()
		span(&s.SendWhileThrottled, float64(sent)/(float64(to-from)*Bin.Seconds())/demand)
	}
}

// oneBigClient reports whether the first client has more workers than any
// other.
func (s *Scenario) oneBigClient() bool {
	return len(s.ClientWorkers) > 1 && s.ClientWorkers[0] > slices.Max(s.ClientWorkers[1:])
}

// Shares returns, for a scenario whose first client has more workers than
// any other, the successes of that client and of the others in r, each
// over what their part of the workers would get (1: proportional); ok is
// false for other scenarios.
func (s *Scenario) Shares(r Result) (big, small float64, ok bool) {
	if !s.oneBigClient() {
		return 0, 0, false
	}
	total := sum(r.ClientSucceeded)
	proportion := float64(s.ClientWorkers[0]) / float64(s.Workers)
	got := float64(r.ClientSucceeded[0]) / float64(max(total, 1))
	return got / proportion, (1 - got) / (1 - proportion), true
}

// WriteLimitsTable writes summaries as Markdown tables, one per scenario,
// with each scenario's target.
func WriteLimitsTable(w io.Writer, scenarios []LimitScenario, summaries []LimitSummary, seeds int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Adaptive mode at the limits, %d seeds (min-max); 20-50 ms network each way, token-bucket servers unless said, workers thinking 0.5-1.5 s\n", seeds)
	for _, ls := range scenarios {
		fmt.Fprintf(&b, "\n%s: %s; %v runs. Target: %s\n\n", ls.Name, ls.Title, ls.Duration, ls.Target)
		b.WriteString("| mode | throttled | goodput | fairness | big / small client's share | successes vs standard | sent while throttled | recovery | above the frontier |\n")
		b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range summaries {
			if s.Scenario != ls.Name {
				continue
			}
			above := points(s.AboveFrontier)
			if s.OffFrontier > 0 {
				above += fmt.Sprintf(" (%d seeds off it)", s.OffFrontier)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.Mode,
				pct(s.Throttled), pct(s.Goodput), ratioSpan(s.Fairness),
				shares(s.BigShare, s.SmallShare), pct(s.VsStandard), pct(s.SendWhileThrottled),
				secondsSpan(s.Recovery), above)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FormatSpan formats a [min, max] pair with format, each value times
// scale, joined by sep when they differ (one value when both print
// alike); "-" for an empty span (as newLimitSummary leaves it).
func FormatSpan(mm [2]float64, format string, scale float64, sep string) string {
	if math.IsInf(mm[0], 1) {
		return "-"
	}
	lo, hi := fmt.Sprintf(format, scale*mm[0]), fmt.Sprintf(format, scale*mm[1])
	if lo == hi {
		return lo
	}
	return lo + sep + hi
}

// pct formats a [min, max] pair of shares as percentages with a decimal.
func pct(mm [2]float64) string { return FormatSpan(mm, "%.1f%%", 100, "-") }

// points formats a [min, max] pair of differences of shares in
// percentage points.
func points(mm [2]float64) string { return FormatSpan(mm, "%+.1f", 100, " to ") }

// ratioSpan formats a [min, max] pair of ratios.
func ratioSpan(mm [2]float64) string { return FormatSpan(mm, "%.2f", 1, "-") }

func shares(big, small [2]float64) string {
	if math.IsInf(big[0], 1) {
		return "-"
	}
	return ratioSpan(big) + " / " + ratioSpan(small)
}

// secondsSpan formats a [min, max] pair of seconds, +Inf as "never".
func secondsSpan(mm [2]float64) string {
	if math.IsInf(mm[0], 1) && mm[1] < 0 {
		return "-"
	}
	f := func(v float64) string {
		if math.IsInf(v, 1) {
			return "never"
		}
		return fmt.Sprintf("%.1f s", v)
	}
	if f(mm[0]) == f(mm[1]) {
		return f(mm[0])
	}
	return f(mm[0]) + "-" + f(mm[1])
}
