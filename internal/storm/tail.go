package storm

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/retrykit/retry"
)

// TailScenario is a service with a slow tail, called by a fleet of
// clients that may hedge. Requests arrive at Rate per second (Poisson),
// spread evenly over Clients clients, each with a retry.Hedging of its
// own, for Duration. The service has Slots attempts in service at once
// and a FIFO queue; an attempt takes FastMin to FastMax (uniformly), or,
// with probability SlowShare, Slow. When QueueLimit attempts wait, the
// service throttles each further attempt at once (a 429, which a
// Hedging takes as pushback). An attempt whose caller cancels it (a
// losing hedge, or the slow attempt a hedge beat) leaves the queue, or
// frees its slot, when the cancellation arrives. Each message takes
// Latency each way. Requests are not retried: the scenario measures what
// hedging does, and a request whose attempts all fail fails.
type TailScenario struct {
	Name             string
	Clients          int
	Rate             float64 // requests per second, all clients
	Duration         time.Duration
	Slots            int
	QueueLimit       int // 0: no limit
	FastMin, FastMax time.Duration
	SlowShare        float64
	Slow             time.Duration
	Latency          time.Duration
	// FinishesCancelled makes the service finish the work of an attempt
	// its caller cancelled, holding its slot, as a service that cannot
	// stop a request it started does; the answer is then dropped.
	FinishesCancelled bool
}

// TailScenarios returns the demo's four scenarios: the service of issue
// 19 (attempts of 10-20 ms, 1% of them 1 s; 50 slots, so about 2,000
// attempts a second at most) at half its capacity with 1 ms of network
// each way, the same with 20 ms each way, and the same at twice its
// capacity, where it throttles what its queue of 100 cannot hold: once
// stopping the work of a cancelled attempt, once finishing it.
func TailScenarios() []TailScenario {
	base := TailScenario{Clients: 10, Duration: 30 * time.Second, Slots: 50, QueueLimit: 100,
		FastMin: 10 * time.Millisecond, FastMax: 20 * time.Millisecond, SlowShare: 0.01, Slow: time.Second,
		Latency: time.Millisecond}
	moderate, far, overloaded, stubborn := base, base, base, base
	moderate.Name, moderate.Rate = "moderate load (50%)", 1000
	far.Name, far.Rate, far.Latency = "moderate, 20 ms network", 1000, 20*time.Millisecond
	overloaded.Name, overloaded.Rate = "overloaded (2x)", 4000
	stubborn.Name, stubborn.Rate, stubborn.FinishesCancelled = "overloaded, no cancel", 4000, true
	return []TailScenario{moderate, far, overloaded, stubborn}
}

func (sc *TailScenario) validate() error {
	switch {
	case sc.Clients < 1 || sc.Slots < 1 || sc.QueueLimit < 0:
		return errors.New("storm: TailScenario.Clients and Slots must be >= 1, QueueLimit >= 0")
	case !(sc.Rate > 0) || math.IsInf(sc.Rate, 0) || sc.Duration <= 0:
		return errors.New("storm: TailScenario.Rate and Duration must be > 0")
	case sc.FastMin <= 0 || sc.FastMax < sc.FastMin || sc.Slow <= 0 || !(sc.SlowShare >= 0 && sc.SlowShare <= 1):
		return errors.New("storm: TailScenario needs 0 < FastMin <= FastMax, Slow > 0 and SlowShare in [0, 1]")
	case sc.Latency < 0:
		return errors.New("storm: TailScenario.Latency must be >= 0")
	}
	return nil
}

// A TailConfig is how the clients hedge: Hedging's options, or no hedging
// at all when Off.
type TailConfig struct {
	Name    string
	Off     bool
	Options []retry.HedgingOption
}

// TailConfigs returns the configurations the demo compares: no hedging, a
// fixed delay of 25 ms (a little above the service's usual 20 ms), the
// adaptive delay (NewHedging's defaults: the p95 of recent latency), and
// the fixed delay without a budget or a pause, as a hedging library
// without a budget sends hedges.
func TailConfigs() []TailConfig {
	return []TailConfig{
		{Name: "no hedging", Off: true},
		{Name: "fixed 25 ms", Options: []retry.HedgingOption{retry.WithHedgeDelay(25 * time.Millisecond)}},
		{Name: "adaptive p95 (default)"},
		{Name: "fixed 25 ms, no budget", Options: []retry.HedgingOption{retry.WithHedgeDelay(25 * time.Millisecond),
			retry.WithHedgeBudget(1), retry.WithHedgeBurst(1000), retry.WithHedgePause(0)}},
	}
}

// TailResult is what one configuration did in one TailScenario run.
type TailResult struct {
	Scenario, Config string
	Requests         int
	Succeeded        int
	Hedges           int // hedges sent
	Served           int // attempts the service completed (cancelled ones not counted)
	P50, P99, P999   time.Duration
	Goodput          float64 // successful requests per second of arrivals
}

// ExtraAttempts is the hedges sent per request.
func (r TailResult) ExtraAttempts() float64 { return float64(r.Hedges) / float64(max(r.Requests, 1)) }

// tailAttempt is one attempt of a request.
type tailAttempt struct {
	req       *tailRequest
	hedge     bool
	sent      time.Duration
	state     int8 // attemptQueued, attemptServing, attemptOver
	cancelled bool
}

const (
	attemptQueued int8 = iota
	attemptServing
	attemptOver
)

type tailRequest struct {
	client      int
	start       time.Duration
	first       *tailAttempt
	outstanding []*tailAttempt
	done        bool // succeeded, or failed for good
	closed      bool // sends no more hedges
}

type tail struct {
	sc      TailScenario
	clock   *Clock
	rand    *rand.Rand
	hedging []*retry.Hedging // per client; nil when off
	events  chainEvents
	seq     uint64

	busy    int
	queue   []*tailAttempt
	waiting int // queued attempts not cancelled

	latencies []time.Duration
	res       TailResult
}

// RunTail simulates cfg in sc with seed. The same arguments give the same
// result.
func RunTail(sc TailScenario, cfg TailConfig, seed uint64) (TailResult, error) {
	if err := sc.validate(); err != nil {
		return TailResult{}, err
	}
	s := &tail{sc: sc, clock: NewClock(origin), rand: newRand(seed, streamServer)}
	s.res = TailResult{Scenario: sc.Name, Config: cfg.Name}
	if !cfg.Off {
		for range sc.Clients {
			h, err := retry.NewHedging(cfg.Options...)
			if err != nil {
				return TailResult{}, err
			}
			s.hedging = append(s.hedging, h)
		}
	}
	arrivals := newRand(seed, streamNet)
	n := 0
	for t := time.Duration(0); ; n++ {
		t += time.Duration(arrivals.ExpFloat64() / sc.Rate * float64(time.Second))
		if t >= sc.Duration {
			break
		}
		client := n % sc.Clients
		s.at(t, func() { s.request(client) })
	}
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(chainEvent)
		s.clock.set(e.at)
		e.fn()
	}
	s.res.Goodput = float64(s.res.Succeeded) / sc.Duration.Seconds()
	slices.Sort(s.latencies)
	s.res.P50, s.res.P99, s.res.P999 = rank(s.latencies, 0.5), rank(s.latencies, 0.99), rank(s.latencies, 0.999)
	return s.res, nil
}

// rank returns the q-quantile of sorted by nearest rank.
func rank(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func (s *tail) now() time.Duration { return s.clock.Elapsed() }

func (s *tail) at(t time.Duration, fn func()) {
	s.seq++
	heap.Push(&s.events, chainEvent{at: t, seq: s.seq, fn: fn})
}

// request starts a request of client c, with its first attempt, and
// schedules its hedge.
func (s *tail) request(c int) {
	s.res.Requests++
	r := &tailRequest{client: c, start: s.now()}
	r.first = s.send(r, false)
	if s.hedging == nil {
		return
	}
	h := s.hedging[c]
	h.CountCall("")
	if d := h.Delay(""); d > 0 {
		s.at(s.now()+d, func() {
			if r.done || r.closed || !h.TakeHedge("", s.clock.Now()) {
				return
			}
			s.res.Hedges++
			s.send(r, true)
		})
	}
}

// send sends an attempt of r, which reaches the service after Latency.
func (s *tail) send(r *tailRequest, hedge bool) *tailAttempt {
	a := &tailAttempt{req: r, hedge: hedge, sent: s.now()}
	r.outstanding = append(r.outstanding, a)
	s.at(s.now()+s.sc.Latency, func() { s.arrive(a) })
	return a
}

// arrive takes in an attempt at the service.
func (s *tail) arrive(a *tailAttempt) {
	if a.cancelled {
		a.state = attemptOver
		return
	}
	switch {
	case s.busy < s.sc.Slots:
		s.serve(a)
	case s.sc.QueueLimit > 0 && s.waiting >= s.sc.QueueLimit:
		a.state = attemptOver
		s.at(s.now()+s.sc.Latency, func() { s.answer(a, false) })
	default:
		a.state = attemptQueued
		s.queue = append(s.queue, a)
		s.waiting++
	}
}

// serve starts serving a.
func (s *tail) serve(a *tailAttempt) {
	s.busy++
	a.state = attemptServing
	d := s.sc.FastMin + time.Duration(s.rand.Float64()*float64(s.sc.FastMax-s.sc.FastMin))
	if s.rand.Float64() < s.sc.SlowShare {
		d = s.sc.Slow
	}
	s.at(s.now()+d, func() {
		if a.state != attemptServing {
			return // cancelled, its slot already free
		}
		a.state = attemptOver
		s.res.Served++
		s.free()
		s.at(s.now()+s.sc.Latency, func() { s.answer(a, true) })
	})
}

// free ends an attempt's service and starts the next waiting one.
func (s *tail) free() {
	s.busy--
	for len(s.queue) > 0 {
		next := s.queue[0]
		s.queue = s.queue[1:]
		if next.cancelled {
			continue // a cancelled attempt that had not started is dropped
		}
		s.waiting--
		s.serve(next)
		return
	}
}

// cancel tells the service, after Latency, that a is not wanted.
func (s *tail) cancel(a *tailAttempt) {
	s.at(s.now()+s.sc.Latency, func() {
		if a.cancelled || a.state == attemptOver {
			return
		}
		a.cancelled = true
		switch {
		case a.state == attemptQueued:
			s.waiting--
		case a.state == attemptServing && !s.sc.FinishesCancelled:
			a.state = attemptOver
			s.free()
		}
	})
}

// answer takes in a's answer at its client: a success, or a throttle.
func (s *tail) answer(a *tailAttempt, ok bool) {
	r := a.req
	r.outstanding = slices.DeleteFunc(r.outstanding, func(b *tailAttempt) bool { return b == a })
	if r.done {
		return
	}
	var h *retry.Hedging
	if s.hedging != nil {
		h = s.hedging[r.client]
	}
	now := s.clock.Now()
	if a == r.first {
		h.ObserveLatency("", now, s.now()-a.sent)
	}
	if !ok {
		h.PushBack("", now, 0)
		r.closed = true
		if len(r.outstanding) == 0 {
			r.done = true
		}
		return
	}
	r.done = true
	s.res.Succeeded++
	s.latencies = append(s.latencies, s.now()-r.start)
	if a.hedge {
		h.CountWin("")
	}
	for _, b := range r.outstanding {
		if b == r.first {
			// Cancelled by the hedge that won: it took at least this long.
			h.ObserveLatency("", now, s.now()-b.sent)
		}
		s.cancel(b)
	}
	r.outstanding = nil
}

// TailSummary is a configuration's results over several seeds, min-max.
type TailSummary struct {
	Scenario, Config   string
	P50Min, P50Max     time.Duration
	P99Min, P99Max     time.Duration
	P999Min, P999Max   time.Duration
	ExtraMin, ExtraMax float64 // hedges per request
	GoodputMin         float64 // successful requests per second
	GoodputMax         float64
}

// CompareTails runs every configuration in every scenario with each seed
// and summarizes each over the seeds.
func CompareTails(scenarios []TailScenario, configs []TailConfig, seeds []uint64) ([]TailSummary, error) {
	var out []TailSummary
	for _, sc := range scenarios {
		for _, cfg := range configs {
			sum := TailSummary{Scenario: sc.Name, Config: cfg.Name, P50Min: math.MaxInt64, P99Min: math.MaxInt64,
				P999Min: math.MaxInt64, ExtraMin: math.Inf(1), GoodputMin: math.Inf(1)}
			for _, seed := range seeds {
				r, err := RunTail(sc, cfg, seed)
				if err != nil {
					return nil, err
				}
				sum.P50Min, sum.P50Max = min(sum.P50Min, r.P50), max(sum.P50Max, r.P50)
				sum.P99Min, sum.P99Max = min(sum.P99Min, r.P99), max(sum.P99Max, r.P99)
				sum.P999Min, sum.P999Max = min(sum.P999Min, r.P999), max(sum.P999Max, r.P999)
				x := r.ExtraAttempts()
				sum.ExtraMin, sum.ExtraMax = min(sum.ExtraMin, x), max(sum.ExtraMax, x)
				sum.GoodputMin, sum.GoodputMax = min(sum.GoodputMin, r.Goodput), max(sum.GoodputMax, r.Goodput)
			}
			out = append(out, sum)
		}
	}
	return out, nil
}

// WriteTailTable writes summaries as a table, min-max over the seeds.
func WriteTailTable(w io.Writer, summaries []TailSummary, seeds int) error {
	_, err := fmt.Fprintf(w, "%-24s %-24s %15s %17s %17s %13s %15s\n",
		"tail latency", "hedging", "p50 ms", "p99 ms", "p99.9 ms", "extra %", "goodput req/s")
	if err != nil {
		return err
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for _, s := range summaries {
		if _, err := fmt.Fprintf(w, "%-24s %-24s %7.1f-%-7.1f %8.1f-%-8.1f %8.1f-%-8.1f %6.2f-%-6.2f %7.0f-%-7.0f\n",
			s.Scenario, s.Config, ms(s.P50Min), ms(s.P50Max), ms(s.P99Min), ms(s.P99Max), ms(s.P999Min), ms(s.P999Max),
			100*s.ExtraMin, 100*s.ExtraMax, s.GoodputMin, s.GoodputMax); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "(min-max over %d seeds; 10 clients, each its own Hedging; attempts of 10-20 ms, 1%% of 1 s, 50 at once, queue of 100; no retries)\n", seeds)
	return err
}

// WriteTailSVG draws summaries as two bar charts side by side, a row per
// scenario and configuration: the p99.9 latency, and the extra attempts
// hedging sent; each bar is the min over the seeds, its whisker the max.
func WriteTailSVG(w io.Writer, summaries []TailSummary) error {
	const width, rowH, left, barW, gap = 980, 20, 330, 250, 110
	height := 70 + rowH*len(summaries)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-weight="bold">p99.9 latency (ms)</text>`+"\n", left)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-weight="bold">extra attempts (%% of requests)</text>`+"\n", left+barW+gap)
	bar := func(x0, y int, lo, hi, top float64, label string) {
		wLo, wHi := float64(barW)*min(lo, top)/top, float64(barW)*min(hi, top)/top
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="13" fill="#4878a8"/>`+"\n", x0, y, wLo)
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#222"/>`+"\n", float64(x0)+wLo, float64(x0)+wHi, y+6, y+6)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(x0)+wHi+4, y+11, label)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	prev := ""
	y := 30
	for _, s := range summaries {
		if s.Scenario != prev {
			y += 6
			prev = s.Scenario
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s · %s</text>`+"\n", left-8, y+11, escape(s.Scenario), escape(s.Config))
		bar(left, y, ms(s.P999Min), ms(s.P999Max), 1100, fmt.Sprintf("%.0f-%.0f", ms(s.P999Min), ms(s.P999Max)))
		bar(left+barW+gap, y, 100*s.ExtraMin, 100*s.ExtraMax, 100, fmt.Sprintf("%.2f-%.2f", 100*s.ExtraMin, 100*s.ExtraMax))
		y += rowH
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">10 clients; attempts of 10-20 ms, 1%% of 1 s; 50 in service, queue of 100; min-max over seeds (go run ./examples/storm)</text>`+"\n", 10, height-8)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
