package redisretry

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/retrytest"
)

// The fleet simulation: processes that send to a token-bucket service, on
// virtual time, with a real Redis whose scripts are given the virtual time.
// Every process is what a user would run: a Fleet (or, to compare, a
// local retry.RateLimiter, or a fixed-rate sender), fed by requests that
// arrive at random (a Poisson stream at the process's demand). An attempt
// reaches the service after a latency drawn from [20, 50] ms and its answer
// comes back after another; a request that finds no send slot (the local
// limiter's, or one within 2 s under exact admission) is refused locally
// and not sent. Requests are not retried: the figures are the attempts'.

// simMode is how the processes of a run pace their sends.
type simMode struct {
	name    string
	fleet   []Option // nil: not a Fleet
	local   []retry.RateLimiterOption
	isLocal bool
	fixed   float64 // > 0: each process sends at exactly this rate
}

// simShape is a run's fleet and service.
type simShape struct {
	name      string
	demands   []float64 // sends a second each process wants
	rate      float64   // the service's rate (at the start: see rates)
	burst     float64   // the tokens its bucket holds
	duration  time.Duration
	warmup    time.Duration // not measured
	lat       [2]time.Duration
	events    []simEvent // changes during the run
	rates     []simRate  // changes of the service's rate during the run
	noise     float64    // the share of admitted attempts throttled all the same, at random
	redisDown [2]time.Duration
	snapshots []time.Duration // when to record the shares of the live fleets
}

// simEvent changes a process's demand at a time (0: it stops).
type simEvent struct {
	at     time.Duration
	proc   int
	demand float64
}

// simRate changes the service's rate at a time.
type simRate struct {
	at   time.Duration
	rate float64
}

// simResult is what a run measured after its warm-up.
type simResult struct {
	attempts, throttled, refused int
	used                         float64 // successes over the service's rate and time
	fairness                     float64 // worst over best successes of the processes with the largest demand
	worstWindow                  float64 // the largest throttled share of a 1-s window
	maxSendRate                  float64 // the largest send rate of a 1-s window, over the rate
	shares                       []float64
	redisCalls                   int64
	admissions, admitted         int            // exact admission's calls and the attempts it admitted, after the warm-up
	windows                      map[int][2]int // second -> attempts, throttled
	snapshots                    [][]float64    // the live members' shares at each snapshot
	procs                        []simProc      // each process's counts at the end
}

func (r simResult) throttledShare() float64 {
	if r.attempts == 0 {
		return 0
	}
	return float64(r.throttled) / float64(r.attempts)
}

// event queue
type simItem struct {
	at  time.Duration
	seq int
	do  func()
}
type simQueue []simItem

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simItem)) }
func (q *simQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

type simulation struct {
	clock  *retrytest.Clock
	start  time.Time
	queue  simQueue
	seq    int
	rng    *rand.Rand
	tokens float64
	last   time.Duration
	rate   float64 // the service's rate now
	shape  simShape
}

func (s *simulation) now() time.Duration { return s.clock.Now().Sub(s.start) }

// run handles the events in time order until the time until, and reports
// false if it stopped because they never ended (events scheduled without
// time passing).
func (s *simulation) run(until time.Duration) bool {
	for n := 0; s.queue.Len() > 0; n++ {
		it := heap.Pop(&s.queue).(simItem)
		if it.at > until {
			return true
		}
		if n > 50_000_000 {
			return false
		}
		s.clock.Advance(it.at - s.now())
		it.do()
	}
	return true
}

func (s *simulation) at(t time.Duration, do func()) {
	s.seq++
	heap.Push(&s.queue, simItem{at: t, seq: s.seq, do: do})
}

// admit is the service's token bucket: it reports whether an attempt
// arriving now is accepted.
func (s *simulation) admit() bool {
	s.refill()
	if s.tokens >= 1 {
		s.tokens--
		return !(s.shape.noise > 0 && s.rng.Float64() < s.shape.noise)
	}
	return false
}

// refill adds the tokens the service's bucket earned since the last call.
func (s *simulation) refill() {
	now := s.now()
	s.tokens = min(s.shape.burst, s.tokens+(now-s.last).Seconds()*s.rate)
	s.last = now
}

func (s *simulation) latency() time.Duration {
	lo, hi := s.shape.lat[0], s.shape.lat[1]
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)+1))
}

// simProc is one process.
type simProc struct {
	fleet     *Fleet
	limiter   *retry.RateLimiter
	demand    float64
	gen       int // bumped when the demand changes: stale arrivals stop
	successes int
	refused   int      // requests refused locally, after the warm-up
	news      []func() // attempts waiting for Redis to say how long the queue is
}

// runSim runs one shape in one mode with one seed.
func runSim(t testing.TB, rdb *redis.Client, shape simShape, mode simMode, seed uint64) simResult {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("sim-%s-%s-%d", shape.name, mode.name, seed)
	clock := newVClock()
	s := &simulation{clock: clock, start: clock.Now(), rng: rand.New(rand.NewPCG(seed, 7)), shape: shape, tokens: shape.burst, rate: shape.rate}
	procs := make([]*simProc, len(shape.demands))
	measured := func() bool { return s.now() >= shape.warmup }
	var res simResult
	result := &res              // for the closures below, in which res is exact admission's answer
	windows := map[int][2]int{} // second -> attempts, throttled
	down := func() bool { return s.now() >= shape.redisDown[0] && s.now() < shape.redisDown[1] }
	callsBefore := commandCalls(t, rdb, "evalsha")
	var fleets []*Fleet
	for i, d := range shape.demands {
		p := &simProc{demand: d}
		procs[i] = p
		switch {
		case mode.fleet != nil:
			opts := append([]Option{WithMember(fmt.Sprint(i)), WithLimiterOptions(retry.WithFailFast(true))}, mode.fleet...)
			p.fleet = newTestFleet(t, rdb, name, clock, opts...)
			p.limiter = p.fleet.limiter
			fleets = append(fleets, p.fleet)
		case mode.isLocal:
			l, err := retry.NewRateLimiter(append([]retry.RateLimiterOption{retry.WithClock(clock), retry.WithFailFast(true)}, mode.local...)...)
			if err != nil {
				t.Fatal(err)
			}
			p.limiter = l
		}
	}
	// send sends one attempt of process p now.
	send := func(p *simProc) {
		out := s.latency()
		s.at(s.now()+out, func() {
			ok := s.admit()
			sec := int(s.now() / time.Second)
			w := windows[sec]
			w[0]++
			if !ok {
				w[1]++
			}
			windows[sec] = w
			if measured() {
				res.attempts++
				if !ok {
					res.throttled++
				} else {
					p.successes++
				}
			}
			s.at(s.now()+s.latency(), func() {
				if p.limiter != nil {
					p.limiter.Update(!ok)
				}
			})
		})
	}
	// heard wakes the attempts of p that wait for Redis to say how long the
	// fleet's queue is, as the news channel does in admit.
	heard := func(p *simProc) {
		for _, again := range p.news {
			s.at(s.now(), again)
		}
		p.news = nil
	}
	// arrive handles one request of process p, and schedules the next.
	var arrive func(p *simProc, gen int)
	arrive = func(p *simProc, gen int) {
		if gen != p.gen || p.demand <= 0 {
			return
		}
		s.at(s.now()+time.Duration(s.rng.ExpFloat64()/p.demand*float64(time.Second)), func() { arrive(p, gen) })
		refuse := func() {
			if measured() {
				res.refused++
				p.refused++
			}
		}
		if mode.fixed > 0 {
			return // sends on its own schedule
		}
		// Like retry.Do: wait up to 2 s for a send slot of the local
		// limiter, asking again when it says a slot is due; then, under
		// exact admission, up to 2 s more for the fleet's slot.
		deadline := s.now() + 2*time.Second
		var local, fleetSlot func()
		local = func() {
			if gen != p.gen {
				return // the process stopped: its waiting requests with it
			}
			if p.limiter != nil {
				if d, err := p.limiter.Acquire(); err != nil {
					if d <= 0 {
						t.Fatalf("%s: a refusal without a wait: %+v", mode.name, p.limiter.Stats())
					}
					if d > deadline-s.now() {
						if p.fleet != nil {
							p.fleet.wanted(retry.ErrRateLimited) // as exactStrategy counts it
						}
						refuse()
						return
					}
					s.at(s.now()+d, local)
					return
				}
			}
			if p.fleet == nil || !p.fleet.exact.Load() {
				send(p)
				return
			}
			p.fleet.wanted(nil) // as exactStrategy counts it, once per attempt
			fleetSlot()
		}
		// fleetSlot is admit's loop: the fleet's slot in Redis, asked for
		// again when the process's own slot is due, or when Redis says
		// again how long the fleet's queue is; when Redis does not answer,
		// a local slot.
		fleetSlot = func() {
			if gen != p.gen {
				return
			}
			if down() {
				// Redis does not answer: the Fleet falls back, and the
				// attempt waits for a local slot, as admit does.
				p.fleet.mu.Lock()
				p.fleet.failLocked(clock.Now(), p.fleet.measure(clock.Now()), fmt.Errorf("redis down"))
				p.fleet.mu.Unlock()
				local()
				return
			}
			if d, no, unsure := p.fleet.heldBack(deadline - s.now()); no || d > 0 || unsure > 0 {
				// As admit: what Redis said last refuses the attempt, or
				// says when to ask, or to wait for Redis to say again.
				p.fleet.refusals.Add(1)
				switch {
				case no:
					refuse()
				case d > 0:
					s.at(s.now()+d, fleetSlot)
				default:
					once := false
					again := func() {
						if !once {
							once = true
							fleetSlot()
						}
					}
					p.news = append(p.news, again)
					s.at(s.now()+unsure, again)
				}
				return
			}
			res, wait, err := p.fleet.reserve(ctx, deadline-s.now())
			if err == nil {
				heard(p)
			}
			if measured() {
				result.admissions++
				if res == slotReserved {
					result.admitted++
				}
			}
			switch {
			case err != nil:
				t.Fatal(err)
			case res == slotReserved:
				s.at(s.now()+wait, func() { send(p) })
			case res == slotOverShare && wait <= deadline-s.now():
				s.at(s.now()+wait, fleetSlot) // as admit: ask again when due
			default:
				refuse()
			}
		}
		local()
	}
	// startRefresh starts the refreshes of p's Fleet at the time at, once
	// an interval while p wants to send.
	startRefresh := func(p *simProc, at time.Duration) {
		f := p.fleet
		var refresh func()
		refresh = func() {
			if p.demand <= 0 {
				return
			}
			if down() {
				f.mu.Lock()
				f.failLocked(clock.Now(), f.measure(clock.Now()), fmt.Errorf("redis down"))
				f.mu.Unlock()
			} else if err := f.refresh(ctx); err != nil {
				t.Fatal(err)
			} else if f.exact.Load() {
				heard(p) // the lease said how long the queue is (see booked)
			}
			s.at(s.now()+f.cfg.interval, refresh)
		}
		s.at(at, refresh)
	}
	for i, p := range procs {
		if mode.fixed > 0 {
			var tick func()
			tick = func() {
				if p.demand > 0 {
					send(p)
				}
				s.at(s.now()+time.Duration(float64(time.Second)/mode.fixed), tick)
			}
			s.at(time.Duration(s.rng.Float64()*float64(time.Second)/mode.fixed), tick)
		} else {
			s.at(0, func() { arrive(p, 0) })
		}
		if p.fleet != nil && p.demand > 0 {
			startRefresh(p, time.Duration(s.rng.Float64()*float64(p.fleet.cfg.interval)))
		}
		_ = i
	}
	for _, e := range shape.events {
		s.at(e.at, func() {
			p := procs[e.proc]
			joins := p.demand == 0 && e.demand > 0
			p.demand = e.demand
			p.gen++
			switch {
			case p.fleet != nil && e.demand == 0:
				_ = p.fleet.Close() // leaves; its refreshes stop
			case p.fleet != nil && joins:
				startRefresh(p, s.now())
			}
			gen := p.gen
			s.at(s.now(), func() { arrive(p, gen) })
		})
	}
	for _, r := range shape.rates {
		s.at(r.at, func() {
			s.refill() // at the old rate until now
			s.rate = r.rate
		})
	}
	for _, at := range shape.snapshots {
		s.at(at, func() {
			var shares []float64
			for _, p := range procs {
				if p.fleet != nil && p.demand > 0 {
					shares = append(shares, p.fleet.Stats().Share)
				}
			}
			res.snapshots = append(res.snapshots, shares)
		})
	}
	if shape.redisDown[1] > 0 {
		s.at(shape.redisDown[1], func() {
			if err := rdb.FlushAll(ctx).Err(); err != nil { // back, empty
				t.Fatal(err)
			}
		})
	}
	if !s.run(shape.duration) {
		t.Fatalf("%s: the simulation runs away at %v", mode.name, s.now())
	}
	res.redisCalls = commandCalls(t, rdb, "evalsha") - callsBefore

	span := (shape.duration - shape.warmup).Seconds()
	total := 0
	var top []int
	maxDemand := slices.Max(shape.demands)
	for i, p := range procs {
		total += p.successes
		if shape.demands[i] == maxDemand {
			top = append(top, p.successes)
		}
		if p.fleet != nil {
			res.shares = append(res.shares, p.fleet.Stats().Share)
		}
		res.procs = append(res.procs, simProc{demand: p.demand, successes: p.successes, refused: p.refused})
	}
	res.used = float64(total) / (shape.rate * span)
	if slices.Max(top) > 0 {
		res.fairness = float64(slices.Min(top)) / float64(slices.Max(top))
	}
	for sec, w := range windows {
		if time.Duration(sec)*time.Second < shape.warmup || w[0] == 0 {
			continue
		}
		res.worstWindow = max(res.worstWindow, float64(w[1])/float64(w[0]))
		res.maxSendRate = max(res.maxSendRate, float64(w[0])/shape.rate)
	}
	for _, f := range fleets {
		_ = f.Close()
	}
	res.windows = windows
	return res
}

// span is a min-max over seeds.
type span struct{ lo, hi float64 }

func (s *span) add(v float64) {
	if math.IsNaN(s.lo) || v < s.lo {
		s.lo = v
	}
	if math.IsNaN(s.hi) || v > s.hi {
		s.hi = v
	}
}

func newSpan() span { return span{math.NaN(), math.NaN()} }

// format formats the span times scale with verb: "lo-hi", or one value
// when both print alike.
func (s span) format(verb string, scale float64) string {
	lo, hi := fmt.Sprintf(verb, scale*s.lo), fmt.Sprintf(verb, scale*s.hi)
	if lo == hi {
		return lo
	}
	return lo + "-" + hi
}

func (s span) pct() string { return s.format("%.1f", 100) + "%" }

func (s span) num() string { return s.format("%.2f", 1) }

// route53 is the shape of the Route 53 case: 20 processes each wanting 1
// request a second, one limit of 5 a second.
func route53(burst float64) simShape {
	return simShape{
		name:     fmt.Sprintf("route53-burst%g", burst),
		demands:  slices.Repeat([]float64{1}, 20),
		rate:     5,
		burst:    burst,
		duration: 130 * time.Second,
		warmup:   10 * time.Second,
		lat:      [2]time.Duration{20 * time.Millisecond, 50 * time.Millisecond},
	}
}

// route53Modes are the ways the Route 53 fleet is run side by side.
func route53Modes() []simMode {
	return []simMode{
		{name: "fleet, configured, exact", fleet: []Option{WithRate(5)}},
		{name: "fleet, configured, leases", fleet: []Option{WithRate(5), WithExactBelow(0)}},
		{name: "fleet, learned, exact", fleet: []Option{}},
		{name: "fleet, learned, leases", fleet: []Option{WithExactBelow(0)}},
		{name: "local adaptive", isLocal: true},
		{name: "local published", isLocal: true, local: []retry.RateLimiterOption{retry.WithPublishedCUBIC()}},
		{name: "fixed 0.25/s each", fixed: 0.25},
	}
}

var simSeeds = []uint64{1, 2, 3, 4, 5}

// seedRange returns the seeds REDISRETRY_SEEDS names ("6-15"), or
// simSeeds, and how to print them.
func seedRange(t *testing.T) ([]uint64, string) {
	v := os.Getenv("REDISRETRY_SEEDS")
	if v == "" {
		return simSeeds, "1-5"
	}
	var lo, hi uint64
	if n, err := fmt.Sscanf(v, "%d-%d", &lo, &hi); err != nil || n != 2 || lo < 1 || hi < lo || hi-lo >= 100 {
		t.Fatalf("REDISRETRY_SEEDS=%q: want first-last, from 1, at most 100 seeds", v)
	}
	var seeds []uint64
	for seed := lo; seed <= hi; seed++ {
		seeds = append(seeds, seed)
	}
	return seeds, v
}

// TestRoute53Targets runs the Route 53 shape in every mode for two
// minutes over five seeds (REDISRETRY_SEEDS=6-15 names others) and prints
// the table; with -v it is the command behind the README's fleet figures.
// It holds each fleet mode to what it reaches on these seeds (see the
// checks below, and the README for the targets and where two
// minutes miss them; TestRoute53Long holds them over ten).
func TestRoute53Targets(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet simulation takes a while")
	}
	// The targets are <= 1% throttled, >= 85% used and fairness
	// >= 0.9 configured; <= 5%, >= 80% learned. The checks hold what the
	// design reaches in two minutes on these seeds (the README gives the
	// misses): a change that makes it worse fails here. Fairness over two
	// minutes compares counts of 21-33 successes, and which seeds come low
	// moves with any change of timing: the checks allow for it (over seeds
	// 1-15, configured 0.89-0.96, learned 0.78-0.90; TestRoute53Long holds
	// 0.9 over ten minutes).
	route53Table(t, 130*time.Second, "| service burst | mode | throttled | limit used | fairness | refused |", func(burst float64, mode string) (limits, bool) {
		switch {
		case mode == "fleet, configured, exact":
			return limits{throttled: 0.01, used: 0.85, fairness: 0.88}, true
		case mode == "fleet, configured, leases" && burst > 1:
			return limits{throttled: 0.05, used: 0.8, fairness: 0.7}, true
		case mode == "fleet, learned, exact" && burst > 1:
			return limits{throttled: 0.05, used: 0.95, fairness: 0.75}, true
		case mode == "fleet, learned, exact":
			return limits{throttled: 0.05, used: 0.78, fairness: 0.75}, true
		}
		return limits{}, false
	})
}

// TestRoute53Long runs the Route 53 shape for ten minutes and holds exact
// admission to the targets, configured and learned, against both
// services: at most 1% throttled, at least 85% of the limit used and
// fairness at least 0.9 configured; at most 5%, at least 80% and 0.9
// learned. Fairness counts each process's successes: under a learned rate
// the throttles (0 to 3 a process over two minutes) and the refusals of
// the queue's margin (see Fleet.drift) fall on processes at random, and
// over two minutes, 21-33 successes a process, spread the counts by more
// than 0.9 allows (TestRoute53Targets; the README has a trace); over ten
// they average out.
func TestRoute53Long(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet simulation takes a while")
	}
	route53Table(t, 610*time.Second, "| service burst | mode | throttled | limit used | fairness | calls an admitted attempt |", func(burst float64, mode string) (limits, bool) {
		switch mode {
		case "fleet, configured, exact":
			return limits{throttled: 0.01, used: 0.85, fairness: 0.9}, true
		case "fleet, learned, exact":
			return limits{throttled: 0.05, used: 0.8, fairness: 0.9}, true
		}
		return limits{}, false
	})
}

// limits are what a run must reach: at most throttled, at least used
// and fairness.
type limits struct{ throttled, used, fairness float64 }

// route53Table runs the Route 53 shape for d (the first 10 s not
// measured) against a service holding 1 s of burst and one holding 1
// token, in each of route53Modes over five seeds (REDISRETRY_SEEDS names
// others), logs the table and fails a run that misses the limits check
// gives for its burst and mode (none: not checked). On the default seeds
// it holds the README's table whose header begins with readme to what it
// printed.
func route53Table(t *testing.T, d time.Duration, readme string, check func(burst float64, mode string) (limits, bool)) {
	t.Helper()
	srv := startRedis(t)
	rdb := srv.client(t)
	var b strings.Builder
	printed := map[string]map[string]string{} // by burst and mode, then column
	seeds, named := seedRange(t)
	fmt.Fprintf(&b, "\n20 processes wanting 1 req/s each, one 5 req/s limit, latency 20-50 ms each way, %v after 10 s of warm-up, seeds %s (min-max)\n", d-10*time.Second, named)
	fmt.Fprintf(&b, "%-8s  %-26s  %-12s  %-12s  %-12s  %-10s  %-14s  %s\n", "burst", "mode", "throttled", "limit used", "fairness", "refused", "Redis calls/s", "calls/admitted")
	for _, burst := range []float64{5, 1} {
		for _, mode := range route53Modes() {
			th, used, fair, refused, calls, perAdmitted := newSpan(), newSpan(), newSpan(), newSpan(), newSpan(), newSpan()
			for _, seed := range seeds {
				shape := route53(burst)
				shape.duration = d
				r := runSim(t, rdb, shape, mode, seed)
				th.add(r.throttledShare())
				used.add(r.used)
				fair.add(r.fairness)
				refused.add(float64(r.refused) / float64(r.refused+r.attempts))
				calls.add(float64(r.redisCalls) / shape.duration.Seconds())
				if r.admitted > 0 {
					perAdmitted.add(float64(r.admissions) / float64(r.admitted))
				}
				if want, ok := check(burst, mode.name); ok && !(r.throttledShare() <= want.throttled && r.used >= want.used && r.fairness >= want.fairness) {
					t.Errorf("burst %g, %s, seed %d: throttled %.2f%%, used %.1f%%, fairness %.2f; want <= %g%%, >= %g%%, >= %g",
						burst, mode.name, seed, 100*r.throttledShare(), 100*r.used, r.fairness, 100*want.throttled, 100*want.used, want.fairness)
				}
			}
			burstName := fmt.Sprintf("%g s", burst/5)
			if burst == 1 {
				burstName = "1 token"
			}
			pa := "-" // no exact admission
			if !math.IsNaN(perAdmitted.lo) {
				pa = perAdmitted.num()
			}
			perSecond := calls.num()
			if calls.lo == 0 && calls.hi == 0 {
				perSecond = "0" // no Redis at all
			}
			fmt.Fprintf(&b, "%-8s  %-26s  %-12s  %-12s  %-12s  %-10s  %-14s  %s\n", burstName, mode.name, th.pct(), used.pct(), fair.num(), refused.pct(), perSecond, pa)
			printed[burstName+" / "+mode.name] = map[string]string{"throttled": th.pct(), "limit used": used.pct(), "fairness": fair.num(),
				"refused": refused.pct(), "Redis calls/s": perSecond, "calls an admitted attempt": pa}
		}
	}
	t.Log(b.String())
	if named == "1-5" {
		checkREADMETable(t, readme, func(row map[string]string) (map[string]string, bool) {
			mode, _, _ := strings.Cut(row["mode"], " (") // the README says what some modes are
			got, ok := printed[row["service burst"]+" / "+mode]
			return got, ok
		})
	}
}

// checkREADMETable holds the table of the module's README whose header
// row begins with header to what a test printed: want gives, for a row
// (its cells by column, bold marks dropped), the printed cells by column,
// or false if the test printed no such row (nil and true: a row the test
// does not hold, such as history). Every column want gives must match the
// README's.
func checkREADMETable(t *testing.T, header string, want func(row map[string]string) (map[string]string, bool)) {
	t.Helper()
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(text), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), header) })
	if start < 0 {
		t.Fatalf("no table in the README begins %q", header)
	}
	split := func(line string) []string {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i, c := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(c, "**", ""))
		}
		return cells
	}
	columns := split(lines[start])
	rows := 0
	for _, line := range lines[start+2:] {
		if !strings.HasPrefix(strings.TrimSpace(line), "|") {
			break
		}
		cells := split(line)
		row := map[string]string{}
		for i, c := range cells {
			if i < len(columns) {
				row[columns[i]] = c
			}
		}
		got, ok := want(row)
		if !ok {
			t.Errorf("README row %q: the test printed no such row", cells)
			continue
		}
		rows++
		for _, column := range columns {
			if g, ok := got[column]; ok && g != row[column] {
				t.Errorf("README row %q, %s: %q; the test printed %q", cells, column, row[column], g)
			}
		}
	}
	if rows == 0 {
		t.Errorf("the README's table %q has no rows", header)
	}
}

// TestSkewedShares: 200 processes, 10 heavy (20 requests a second each)
// and 190 light (0.2 each), share a configured 100 a second (87.5 with the
// headroom; leases, as the rate is above WithExactBelow). Max-min fair,
// each light process gets its 0.2 and each heavy one (87.5-38)/10 = 4.95.
// The light ones ask 10% more than they send (wantMargin), for the
// randomness of their sends, which the division counts once (see
// refresh.lua): the heavy ones do not pay for it. The target is
// every share within 10% of the fair one; the test holds it for the heavy
// processes and the invariant that the shares never add up to more than
// the capacity and the margins (96.25 of the 100). A light process's share
// follows its own noisy demand (a few attempts in five intervals); the
// test prints the share of the light processes' requests refused locally.
// It prints the same for a fleet of fewer, busier light processes (below),
// where the heavy processes lose part of their share.
func TestSkewedShares(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet simulation takes a while")
	}
	srv := startRedis(t)
	rdb := srv.client(t)
	demands := append(slices.Repeat([]float64{20}, 10), slices.Repeat([]float64{0.2}, 190)...)
	shape := simShape{
		name: "skewed", demands: demands, rate: 100, burst: 100,
		duration: 60 * time.Second, warmup: 10 * time.Second,
		lat:       [2]time.Duration{20 * time.Millisecond, 50 * time.Millisecond},
		snapshots: []time.Duration{30 * time.Second, 45 * time.Second, 59 * time.Second},
	}
	const fairHeavy, fairLight = (87.5 - 190*0.2) / 10, 0.2
	heavy, light, th, sum, lightRefused := newSpan(), newSpan(), newSpan(), newSpan(), newSpan()
	for _, seed := range simSeeds[:3] {
		r := runSim(t, rdb, shape, simMode{name: "leases", fleet: []Option{WithRate(100)}}, seed)
		th.add(r.throttledShare())
		refused, served := 0, 0
		for _, p := range r.procs[10:] {
			refused += p.refused
			served += p.successes
		}
		lightRefused.add(float64(refused) / float64(refused+served))
		for _, snap := range r.snapshots {
			total := 0.0
			for i, share := range snap {
				total += share
				if i < 10 {
					heavy.add(share / fairHeavy)
				} else {
					light.add(share / fairLight)
				}
			}
			sum.add(total / 87.5)
		}
	}
	t.Logf("\n200 processes (10 wanting 20/s, 190 wanting 0.2/s), a configured 100/s, seeds 1-3, shares at 30, 45 and 59 s over the max-min fair ones (4.95 and 0.2):\nheavy %.2f-%.2f, light %.2f-%.2f, all together %.3f-%.3f of the capacity; throttled %s; the light processes' requests refused locally %s",
		heavy.lo, heavy.hi, light.lo, light.hi, sum.lo, sum.hi, th.pct(), lightRefused.pct())
	if heavy.lo < 0.9 || heavy.hi > 1.1 || sum.hi > 1+wantMargin+1e-3 {
		t.Errorf("heavy shares %.2f-%.2f of the fair one, all shares %.3f of the capacity", heavy.lo, heavy.hi, sum.hi)
	}

	// Fewer light processes that each send more: 10 wanting 20/s and 40
	// wanting 1/s. Max-min fair, each light one gets its 1/s and each heavy
	// one (87.5-40)/10 = 4.75. A light process at 1/s waits for a slot of
	// its own share now and then (its requests come at random, and its
	// bucket holds two sends); a wait counts as being held back, and its
	// bids rise above what it sends, at the heavy ones' expense. The test
	// prints where that leaves the fleet, and holds it to today's figures
	// (0.76-0.77 of the limit got through; the README has what was tried).
	// Exact admission, at one Redis call a request, holds each light
	// process to the level, not to its share: its own bursts do not hold
	// it back (see ownRate). Held to its share, the fleet got 65% through,
	// each heavy process 0.54 of its fair share.
	mixedDemands := append(slices.Repeat([]float64{20}, 10), slices.Repeat([]float64{1}, 40)...)
	mixed := shape
	mixed.name, mixed.demands, mixed.snapshots = "mixed", mixedDemands, nil
	var b strings.Builder
	fmt.Fprintf(&b, "\n50 processes (10 wanting 20/s, 40 wanting 1/s), a configured 100/s, seeds 1-3: the limit got through (at most 87.5%%), what a heavy process got of its fair 4.75/s, the light processes' requests refused locally, Redis calls a second\n")
	for _, m := range []struct {
		mode           simMode
		least, leastHv float64 // held: today's figures, less a margin
	}{
		{simMode{name: "leases", fleet: []Option{WithRate(100)}}, 0.74, 0.7},
		// Exact admission (the default below 50/s), with each light
		// process held to the level, not to its share (see ownRate).
		{simMode{name: "exact", fleet: []Option{WithRate(100), WithExactBelow(100)}}, 0.77, 0.8},
	} {
		used, heavyGot, lightRefused, calls := newSpan(), newSpan(), newSpan(), newSpan()
		for _, seed := range simSeeds[:3] {
			r := runSim(t, rdb, mixed, m.mode, seed)
			used.add(r.used)
			got, served, refused := 0, 0, 0
			for i, p := range r.procs {
				if i < 10 {
					got += p.successes
				} else {
					served += p.successes
					refused += p.refused
				}
			}
			span := (mixed.duration - mixed.warmup).Seconds()
			heavyGot.add(float64(got) / span / 10 / 4.75)
			lightRefused.add(float64(refused) / float64(refused+served))
			calls.add(float64(r.redisCalls) / mixed.duration.Seconds())
		}
		fmt.Fprintf(&b, "%-8s  %-12s  heavy %.2f-%.2f  light refused %-10s  %s calls/s\n", m.mode.name, used.pct(), heavyGot.lo, heavyGot.hi, lightRefused.pct(), calls.num())
		if used.lo < m.least || heavyGot.lo < m.leastHv {
			t.Errorf("mixed fleet, %s: %s of the limit got through, a heavy process %.2f of its fair share; want at least %.0f%% and %.2f",
				m.mode.name, used.pct(), heavyGot.lo, 100*m.least, m.leastHv)
		}
	}
	t.Log(b.String())
}

// TestJoinLeave: ten processes share a configured 5 a second; ten more
// join at 30 s and ten leave at 60 s, against a service holding 1 token
// and one holding 1 s of its rate. The targets are the shares
// divided again within two intervals and no second above 5% throttled;
// the test prints how far the shares are from the fair ones two and ten
// intervals after each change, and the worst second, and holds the
// invariant that the shares held never add up to more than the capacity,
// and the worst second against the service holding 1 s. (Against 1 token,
// the fleet's sends 1/4.375 s = 229 ms apart reach the service up to 30 ms
// closer, by the spread of latency: now and then two come less than the
// service's 200 ms apart, and one throttle is 20-25% of a second.)
func TestJoinLeave(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet simulation takes a while")
	}
	srv := startRedis(t)
	rdb := srv.client(t)
	demands := append(slices.Repeat([]float64{1}, 10), slices.Repeat([]float64{0}, 10)...)
	var events []simEvent
	for i := range 10 {
		events = append(events, simEvent{at: 30 * time.Second, proc: 10 + i, demand: 1}, simEvent{at: 60 * time.Second, proc: i, demand: 0})
	}
	at := []time.Duration{32 * time.Second, 40 * time.Second, 62 * time.Second, 70 * time.Second}
	shape := simShape{
		name: "joinleave", demands: demands, rate: 5,
		duration: 90 * time.Second, warmup: 10 * time.Second, events: events,
		lat:       [2]time.Duration{20 * time.Millisecond, 50 * time.Millisecond},
		snapshots: at,
	}
	var b strings.Builder
	for _, burst := range []float64{1, 5} {
		shape.name, shape.burst = fmt.Sprintf("joinleave-%v", burst), burst // keys of their own
		worst := newSpan()
		off := []span{newSpan(), newSpan(), newSpan(), newSpan()}
		for _, seed := range simSeeds {
			r := runSim(t, rdb, shape, simMode{name: "exact", fleet: []Option{WithRate(5)}}, seed)
			worst.add(r.worstWindow)
			for i, want := range []float64{4.375 / 20, 4.375 / 20, 4.375 / 10, 4.375 / 10} {
				total := 0.0
				for _, share := range r.snapshots[i] {
					off[i].add(math.Abs(share-want) / want)
					total += share
				}
				if total > 4.375*(1+1e-3) {
					t.Errorf("burst %v, seed %d, at %v: the shares add up to %.3f, over the capacity", burst, seed, at[i], total)
				}
			}
		}
		if burst > 1 && worst.hi > 0.05 {
			t.Errorf("a service holding %v tokens: the worst second %s throttled, want at most 5%%", burst, worst.pct())
		}
		fmt.Fprintf(&b, "\na service holding %v token(s): shares off the fair ones by %s at 32 s, %s at 40 s, %s at 62 s, %s at 70 s; the worst second %s throttled",
			burst, off[0].pct(), off[1].pct(), off[2].pct(), off[3].pct(), worst.pct())
	}
	t.Logf("\njoin at 30 s, leave at 60 s, seeds 1-5:%s", b.String())
}

// TestRedisOutage: Redis is down from 30 s to 60 s, and comes back empty.
// The targets, for the Route 53 fleet: the fleet's send rate within
// 1.2x the limit throughout, at least 80% of the limit used during the
// outage, the shares back within two intervals. The test prints the
// busiest second, the seconds above 1.2x, the use and the shares over
// seeds 1-5, and the busiest second and the seconds above 1.2x over seeds
// 1-20 as well. It holds what the design reaches: at least 80% used and
// no second above 1.6x on seeds 1-5, and over seeds 1-20 at
// most 1% of the seconds above 1.2x, no two seconds above 1.3x, and
// nothing throttled during the outage. (A second of 7 or 8 sends comes
// where processes that had no request waiting for a slot send it when the
// next one arrives, off the fleet's grid: a few seconds in 1,600, and
// which seeds have one moves with any change of timing, so the bound is
// on their number. The busiest second of seeds 1-20 has been 1.6x since
// the bound of seeds 1-5 was 1.4x, and the latter was met by chance:
// holding each process below the level to the level, not its share,
// under exact admission moved a second of 8 sends into seed 3, and took
// the seconds above 1.2x over seeds 1-20 from 15 to 7.) It prints the
// same for two other fleets: twenty light processes that want less than
// the limit together, and forty that each want a little more than twice
// their share against a service holding 2 tokens; and holds the README's
// outage table to what it prints.
func TestRedisOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet simulation takes a while")
	}
	srv := startRedis(t)
	rdb := srv.client(t)
	const seeds = 20
	var b strings.Builder
	fmt.Fprintf(&b, "\nRedis down from 30 s to 60 s, back empty; the send rate on average during the outage and in the busiest second, the seconds above 1.2x the limit, the limit used during the outage; over seeds 1-20 also the busiest two seconds and the attempts throttled during the outage\n")
	fmt.Fprintf(&b, "%-40s  %-10s  %-10s  %-12s  %-12s  %-10s  %-12s  %-12s  %s\n", "fleet (seeds 1-5, then 1-20)", "mean", "busiest", "above 1.2x", "used", "busiest", "above 1.2x", "busiest 2 s", "throttled")
	printed := map[string]map[string]string{} // the README table's cells by fleet, then column
	for _, fleet := range []struct {
		name    string
		demands []float64
		rate    float64
		burst   float64
		hold    bool // the shape: hold its targets
	}{
		{"Route 53: 20 x 1/s, 5/s, 1 s of burst", slices.Repeat([]float64{1}, 20), 5, 5, true},
		{"light: 20 x 0.2/s, 5/s, 1 token", slices.Repeat([]float64{0.2}, 20), 5, 1, false},
		{"40 x 0.5/s, 10/s, 2 tokens", slices.Repeat([]float64{0.5}, 40), 10, 2, false},
	} {
		shape := simShape{
			name: "outage-" + fleet.name, demands: fleet.demands, rate: fleet.rate, burst: fleet.burst,
			duration: 90 * time.Second, warmup: 10 * time.Second,
			lat:       [2]time.Duration{20 * time.Millisecond, 50 * time.Millisecond},
			redisDown: [2]time.Duration{30 * time.Second, 60 * time.Second},
			snapshots: []time.Duration{62 * time.Second, 70 * time.Second},
		}
		limit := fleet.rate * (1 - DefaultHeadroom)
		peak, used, mean, peakAll, peak2, outThr := newSpan(), newSpan(), newSpan(), newSpan(), newSpan(), newSpan()
		off := []span{newSpan(), newSpan()}
		var above, aboveAll [2]int // seconds above 1.2x, seconds
		for seed := uint64(1); seed <= seeds; seed++ {
			r := runSim(t, rdb, shape, simMode{name: "exact", fleet: []Option{WithRate(fleet.rate)}}, seed)
			ok, sent, over, two := 0, 0, 0, 0
			for sec := shape.warmup / time.Second; sec < shape.duration/time.Second; sec++ {
				w := r.windows[int(sec)]
				if sec >= 30 && sec < 60 {
					ok += w[0] - w[1]
					sent += w[0]
				}
				if float64(w[0]) > 1.2*fleet.rate+1e-9 {
					over++
				}
				if sec+1 < shape.duration/time.Second {
					two = max(two, w[0]+r.windows[int(sec)+1][0])
				}
			}
			peak2.add(float64(two) / (2 * fleet.rate))
			outThr.add(float64(sent-ok) / float64(max(sent, 1)))
			n := int((shape.duration - shape.warmup) / time.Second)
			aboveAll[0] += over
			aboveAll[1] += n
			peakAll.add(r.maxSendRate)
			if seed > 5 {
				continue
			}
			above[0] += over
			above[1] += n
			used.add(float64(ok) / (fleet.rate * 30))
			mean.add(float64(sent) / (fleet.rate * 30))
			peak.add(r.maxSendRate)
			if fleet.hold && (r.maxSendRate > 1.6+1e-9 || float64(ok)/(fleet.rate*30) < 0.8) {
				t.Errorf("%s, seed %d: the fleet sent %.2fx the limit in its busiest second, %.0f%% of the limit got through during the outage", fleet.name, seed, r.maxSendRate, 100*float64(ok)/(fleet.rate*30))
			}
			for i := range off {
				for _, share := range r.snapshots[i] {
					off[i].add(math.Abs(share-limit/float64(len(fleet.demands))) / (limit / float64(len(fleet.demands))))
				}
			}
		}
		if fleet.hold && (float64(aboveAll[0]) > 0.01*float64(aboveAll[1]) || peak2.hi > 1.3+1e-9 || outThr.hi > 0) {
			t.Errorf("%s, seeds 1-%d: %d of %d seconds above 1.2x the limit, the busiest two %.2fx, %s throttled during the outage", fleet.name, seeds, aboveAll[0], aboveAll[1], peak2.hi, outThr.pct())
		}
		fmt.Fprintf(&b, "%-40s  %-10s  %-10s  %-12s  %-12s  %-10s  %-12s  %-12s  %s\n", fleet.name, mean.num()+"x", peak.num()+"x",
			fmt.Sprintf("%d of %d", above[0], above[1]), used.pct(), peakAll.num()+"x", fmt.Sprintf("%d of %d", aboveAll[0], aboveAll[1]),
			peak2.num()+"x", outThr.pct())
		printed[fleet.name] = map[string]string{
			"busiest second, seeds 1-5 / 1-20":        peak.num() + "x / " + peakAll.num() + "x",
			"seconds above 1.2x, of 400 / 1,600":      fmt.Sprintf("%d / %d", above[0], aboveAll[0]),
			"limit used during the outage, seeds 1-5": used.pct(),
			"throttled during the outage, seeds 1-20": outThr.pct(),
		}
		if fleet.hold {
			fmt.Fprintf(&b, "%-40s  shares off the fair ones by %s at 62 s, %s at 70 s (seeds 1-5)\n", "", off[0].pct(), off[1].pct())
		}
	}
	t.Log(b.String())
	checkREADMETable(t, "| fleet | busiest second, seeds 1-5 / 1-20 |", func(row map[string]string) (map[string]string, bool) {
		got, ok := printed[strings.ReplaceAll(row["fleet"], "×", "x")]
		return got, ok
	})
}

// TestRedisOutageLeases: lease fleets, Redis down from 30 s to 60 s and back
// empty. The members come back one after the other, each keeping the share
// it paces at (see refresh.lua): the fleet's sends neither dip when Redis
// returns nor go above the rate, and the shares held add up to no more than
// the capacity. (Given only what the others left, the first back took the
// whole capacity and those after it nothing for an interval: the least
// second after the return fell to 0.29-0.57x the rate, the busiest went to
// 1.16x.)
func TestRedisOutageLeases(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet simulation takes a while")
	}
	srv := startRedis(t)
	rdb := srv.client(t)
	var b strings.Builder
	fmt.Fprintf(&b, "\nLeases, Redis down from 30 s to 60 s, back empty (seeds 1-5): the send rate over the service's (its bucket holding 1 s) on average during the outage, in the busiest second and in the least of the two after the return, and the shares held at 62 s over the capacity\n")
	fmt.Fprintf(&b, "%-20s  %-10s  %-10s  %-12s  %s\n", "fleet", "mean", "busiest", "after return", "held at 62 s")
	for _, fleet := range []struct {
		name    string
		demands []float64
		rate    float64
	}{
		{"20 x 10/s, 200/s", slices.Repeat([]float64{10}, 20), 200},
		{"40 x 5/s, 100/s", slices.Repeat([]float64{5}, 40), 100},
		{"10 x 20/s, 100/s", slices.Repeat([]float64{20}, 10), 100},
	} {
		shape := simShape{
			name: "lease-outage-" + fleet.name, demands: fleet.demands, rate: fleet.rate, burst: fleet.rate,
			duration: 90 * time.Second, warmup: 10 * time.Second,
			lat:       [2]time.Duration{20 * time.Millisecond, 50 * time.Millisecond},
			redisDown: [2]time.Duration{30 * time.Second, 60 * time.Second},
			snapshots: []time.Duration{62 * time.Second},
		}
		limit := fleet.rate * (1 - DefaultHeadroom)
		mean, peak, after, held := newSpan(), newSpan(), newSpan(), newSpan()
		for seed := uint64(1); seed <= 5; seed++ {
			r := runSim(t, rdb, shape, simMode{name: "lease", fleet: []Option{WithRate(fleet.rate)}}, seed)
			sent, least := 0, math.Inf(1)
			for sec := 30; sec < 60; sec++ {
				sent += r.windows[sec][0]
			}
			for sec := 60; sec < 62; sec++ {
				least = min(least, float64(r.windows[sec][0])/fleet.rate)
			}
			sum := 0.0
			for _, share := range r.snapshots[0] {
				sum += share
			}
			mean.add(float64(sent) / (30 * fleet.rate))
			peak.add(r.maxSendRate)
			after.add(least)
			held.add(sum / limit)
			if r.maxSendRate > 1 || least < 0.75 || sum > limit*(1+1e-6) || r.throttled > 0 {
				t.Errorf("%s, seed %d: busiest second %.2fx the rate, the least after the return %.2fx, shares held at 62 s %.3f of the capacity, %d throttled",
					fleet.name, seed, r.maxSendRate, least, sum/limit, r.throttled)
			}
		}
		fmt.Fprintf(&b, "%-20s  %-10s  %-10s  %-12s  %s\n", fleet.name, mean.num()+"x", peak.num()+"x", after.num()+"x", held.num())
	}
	t.Log(b.String())
}

// withLearning sets the learning curve's constants: the tests measure the
// trade-off they make.
func withLearning(start, growth float64) Option {
	return Option{func(c *config) { c.start, c.growth = start, growth }}
}

// seconds is a min-max over seeds of recovery times, and the seeds that
// never recovered.
type seconds struct {
	span
	never int
}

func (s *seconds) add(v float64) {
	if v < 0 {
		s.never++
		return
	}
	s.span.add(v)
}

func (s seconds) String() string {
	if math.IsNaN(s.lo) {
		return "never"
	}
	r := fmt.Sprintf("%.0f-%.0f s", s.lo, s.hi)
	if s.lo == s.hi {
		r = fmt.Sprintf("%.0f s", s.lo)
	}
	if s.never > 0 {
		r += fmt.Sprintf(", never on %d", s.never)
	}
	return r
}

// throttledBetween returns the throttled share of the attempts that
// reached the service from from until until.
func throttledBetween(windows map[int][2]int, from, until time.Duration) float64 {
	a, thr := 0, 0
	for sec := int(from / time.Second); sec < int(until/time.Second); sec++ {
		a += windows[sec][0]
		thr += windows[sec][1]
	}
	return float64(thr) / float64(max(a, 1))
}

// recovery returns the seconds from from until the fleet's successes over
// the last five seconds first reach rate a second, or -1 if they never do
// before until.
func recovery(windows map[int][2]int, from, until time.Duration, rate float64) float64 {
	start := int(from / time.Second)
	for sec := start + 4; sec < int(until/time.Second); sec++ {
		ok := 0
		for s := sec - 4; s <= sec; s++ {
			ok += windows[s][0] - windows[s][1]
		}
		if float64(ok) >= 5*rate {
			return float64(sec + 1 - start)
		}
	}
	return -1
}

// TestLearnedFollowsTheService measures the learned rate of the Route 53
// fleet (20 processes wanting 1 a second each, exact admission) against a
// service holding 1 token and holding 1 s of burst: steady at 5 a second;
// raised to 10 a second at 40 s (a quota raised; 7 a second is what
// spaced sends get from 10 a second holding 1 token with this latency);
// and down to 2.5 a second from 40 s to 80 s (another tenant of the
// account takes half). A learned rate probes above its estimate to find a
// rate that has risen, and every probe costs throttles: the slower it
// probes, the fewer throttles at a steady limit and the longer a raised or
// restored one goes unused. The test prints that trade-off for the
// default and, with REDISRETRY_CURVE=1, for other constants of the curve
// (start, the share of the estimate a cut restarts at; growth, the cubic's
// constant), and the fixed rates a learned one aims at; it holds the
// default to what it reaches on these seeds when the service changes (the
// steady rows are TestRoute53Targets'). It also prints the demand the
// fleet gets through from a service with room to spare that throttles 5,
// 10, 25 or 50% of attempts whatever the load, and holds the default to
// at least 70% of what is not throttled: the test of the cause (see
// refresh.lua) keeps the fleet from cutting on those as on congestion.
func TestLearnedFollowsTheService(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet simulation takes a while")
	}
	srv := startRedis(t)
	rdb := srv.client(t)
	type curve struct {
		name          string
		start, growth float64
	}
	curves := []curve{{"default", learnStart, learnGrowth}}
	if os.Getenv("REDISRETRY_CURVE") != "" {
		curves = append(curves, curve{"0.9, 1e-5", 0.9, 1e-5}, curve{"1, 1e-4", 1, 1e-4}, curve{"1, 3e-5", 1, 3e-5},
			curve{"1, 1e-5", 1, 1e-5}, curve{"1, 3e-6", 1, 3e-6})
	}
	follows := map[string]map[string]string{} // by curve and burst, then the README's column
	var b strings.Builder
	fmt.Fprintf(&b, "\nRoute 53 fleet, learned, exact admission, seeds 1-5 (min-max): steady 5/s (throttled, limit used); 5 → 10/s at 40 s (seconds until 7/s get through, throttled after 40 s); 5 → 2.5/s at 40 s, back to 5 at 80 s (throttled 40-80 s, seconds until 3.5/s get through again)\n")
	fmt.Fprintf(&b, "%-12s  %-8s  %-12s  %-12s  %-22s  %-12s  %-14s  %s\n", "start, growth", "burst", "throttled", "used", "raised: 7/s", "raised: thr.", "halved: thr.", "restored: 3.5/s")
	for _, c := range curves {
		mode := simMode{name: "learned " + c.name, fleet: []Option{withLearning(c.start, c.growth)}}
		for _, burst := range []float64{1, 5} {
			th, used, halved, upThr := newSpan(), newSpan(), newSpan(), newSpan()
			raised, restored := seconds{span: newSpan()}, seconds{span: newSpan()}
			for _, seed := range simSeeds {
				steady := route53(burst)
				steady.name += "-follow-" + c.name
				r := runSim(t, rdb, steady, mode, seed)
				th.add(r.throttledShare())
				used.add(r.used)

				up := route53(burst)
				up.name += "-raised-" + c.name
				up.rates = []simRate{{40 * time.Second, 10}}
				r = runSim(t, rdb, up, mode, seed)
				raised.add(recovery(r.windows, 40*time.Second, up.duration, 7))
				upThr.add(throttledBetween(r.windows, 40*time.Second, up.duration))

				down := route53(burst)
				down.name += "-halved-" + c.name
				down.rates = []simRate{{40 * time.Second, 2.5}, {80 * time.Second, 5}}
				r = runSim(t, rdb, down, mode, seed)
				halved.add(throttledBetween(r.windows, 40*time.Second, 80*time.Second))
				restored.add(recovery(r.windows, 80*time.Second, down.duration, 3.5))
			}
			if c.name == "default" {
				// What the default reaches on these seeds, with a margin:
				// a change that makes it worse fails here.
				if raised.never > 0 || raised.hi > 35 {
					t.Errorf("burst %g: 7/s of the raised 10/s after %v, want within 35 s", burst, raised)
				}
				if halved.hi > 0.35 {
					t.Errorf("burst %g: %s throttled while the rate is halved, want at most 35%%", burst, halved.pct())
				}
				if restored.never > 0 || restored.hi > 35 {
					t.Errorf("burst %g: 3.5/s of the restored 5/s after %v, want within 35 s", burst, restored)
				}
			}
			burstName := "1 s"
			if burst == 1 {
				burstName = "1 token"
			}
			fmt.Fprintf(&b, "%-12s  %-8s  %-12s  %-12s  %-22s  %-12s  %-14s  %s\n", c.name, burstName, th.pct(), used.pct(), raised, upThr.pct(), halved.pct(), restored)
			follows[c.name+" / "+burstName] = map[string]string{"steady: throttled": th.pct(), "limit used": used.pct(),
				"raised: 7/s after": raised.String(), "throttled after the raise": upThr.pct(), "throttled while halved": halved.pct(),
				"restored: 3.5/s after": restored.String()}
		}
	}
	if os.Getenv("REDISRETRY_CURVE") != "" {
		// What a learned rate aims at: the same fleet at a configured rate
		// without headroom, against the service holding 1 token.
		fmt.Fprintf(&b, "\nthe same fleet at a configured rate, no headroom, against the service holding 1 token: throttled, limit used\n")
		for _, rate := range []float64{4.2, 4.4, 4.5, 4.6, 4.8} {
			th, used := newSpan(), newSpan()
			for _, seed := range simSeeds {
				shape := route53(1)
				shape.name += fmt.Sprintf("-fixed-%g", rate)
				r := runSim(t, rdb, shape, simMode{name: "fixed", fleet: []Option{WithRate(rate), WithHeadroom(0)}}, seed)
				th.add(r.throttledShare())
				used.add(r.used)
			}
			fmt.Fprintf(&b, "%-12g  %-12s  %s\n", rate, th.pct(), used.pct())
		}
	}
	// Throttles that do not depend on the load: the service has room for
	// five times the fleet's demand, but throttles a share of attempts all
	// the same. Sending less does not help: every cut is lost, and the
	// most that gets through is the share not throttled.
	fmt.Fprintf(&b, "\nthe same fleet against a service of 100/s holding 1 s that throttles a share of attempts at random, whatever the load: the fleet's demand served (at most 1 - the share)\n")
	fmt.Fprintf(&b, "%-12s  %-12s  %-12s  %-12s  %s\n", "start, growth", "5%", "10%", "25%", "50%")
	var served map[string]string // the default's, by the README's column
	for _, c := range curves {
		mode := simMode{name: "learned " + c.name, fleet: []Option{withLearning(c.start, c.growth)}}
		var cols []string
		for _, noise := range []float64{0.05, 0.1, 0.25, 0.5} {
			got := newSpan()
			for _, seed := range simSeeds {
				shape := route53(100)
				shape.name += fmt.Sprintf("-noise-%g-%s", noise, c.name)
				shape.rate, shape.noise = 100, noise
				r := runSim(t, rdb, shape, mode, seed)
				got.add(r.used * shape.rate / 20)
			}
			if c.name == "default" && got.lo < 0.7*(1-noise) {
				t.Errorf("%g%% throttled whatever the load: %s of the demand served, want at least 70%% of the %g%% not throttled", 100*noise, got.pct(), 100*(1-noise))
			}
			cols = append(cols, got.pct())
		}
		fmt.Fprintf(&b, "%-12s  %-12s  %-12s  %-12s  %s\n", c.name, cols[0], cols[1], cols[2], cols[3])
		if c.name == "default" {
			served = map[string]string{"5%": cols[0], "10%": cols[1], "25%": cols[2], "50%": cols[3]}
		}
	}
	t.Log(b.String())

	// The README's three tables of this test: the default's figures, the
	// curves' (each curve's only with REDISRETRY_CURVE), and the demand
	// served under throttles at random (its row from before the test of
	// the cause is history).
	def := func(burst string) map[string]string { return follows["default / "+burst] }
	checkREADMETable(t, "| service | 7/s of the raised 10/s get through after |", func(row map[string]string) (map[string]string, bool) {
		got := def(strings.TrimPrefix(row["service"], "holding "))
		return map[string]string{"7/s of the raised 10/s get through after": got["raised: 7/s after"], "throttled after the raise": got["throttled after the raise"],
			"throttled while halved (40-80 s)": got["throttled while halved"], "3.5/s of the restored 5/s after": got["restored: 3.5/s after"]}, got != nil
	})
	checkREADMETable(t, "| start, growth | service | steady: throttled |", func(row map[string]string) (map[string]string, bool) {
		name := row["start, growth"]
		if name == "0.9, 1e-4 (default)" {
			name = "default"
		} else if os.Getenv("REDISRETRY_CURVE") == "" {
			return nil, true // not run
		}
		got := follows[name+" / "+row["service"]]
		return got, got != nil
	})
	checkREADMETable(t, "| throttled at random | 5% |", func(row map[string]string) (map[string]string, bool) {
		if row["throttled at random"] != "the fleet's demand served" {
			return nil, true // history
		}
		return served, true
	})
}
