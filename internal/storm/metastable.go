package storm

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/retrykit/retry"
)

// MetastableScenario is the metastable trigger of M. Brooker's "What is
// Backoff For?" (2022). Requests arrive open-loop (a Poisson stream that
// does not slow down when the service does) at Calm per second, and at
// Spike per second from SpikeFrom to SpikeTo, dealt out at random to
// Clients clients, each with a strategy of its own. The service takes
// Base + PerConcurrent x the attempts in progress when an attempt
// arrives, and finishes every attempt it started, whether its caller is
// still waiting or not. A caller gives up on an attempt after Timeout (an
// error that retry.Classify takes for a retryable timeout) and retries as
// its strategy says. There is no network delay.
//
// Brooker's point: once the spike has pushed the service time past the
// timeout, every attempt times out, and if each timeout adds a retry, the
// load that keeps the service slow outlives the spike. The service stays
// up (it keeps finishing work), but nobody is served.
type MetastableScenario struct {
	Name          string
	Clients       int
	Calm, Spike   float64 // arrivals per second
	SpikeFrom     time.Duration
	SpikeTo       time.Duration
	Duration      time.Duration
	Base          time.Duration
	PerConcurrent time.Duration
	Timeout       time.Duration
}

// MetastableScenarios returns Brooker's trigger with the load split over
// 10, 100 and 1,000 clients: 40 arrivals a second, 80 from 10 s to 18 s,
// a service time of 1 s + 10 ms x concurrency, a 3 s timeout, 70 s in
// all. At 40 a second the service takes about 1.7 s; it keeps up with
// fewer than about 67 attempts a second within the timeout.
func MetastableScenarios() []MetastableScenario {
	var scs []MetastableScenario
	for _, n := range []int{10, 100, 1000} {
		scs = append(scs, MetastableScenario{
			Name: fmt.Sprintf("%d clients", n), Clients: n, Calm: 40, Spike: 80,
			SpikeFrom: 10 * time.Second, SpikeTo: 18 * time.Second, Duration: 70 * time.Second,
			Base: time.Second, PerConcurrent: 10 * time.Millisecond, Timeout: 3 * time.Second,
		})
	}
	return scs
}

func (sc *MetastableScenario) validate() error {
	switch {
	case sc.Clients < 1:
		return errors.New("storm: MetastableScenario.Clients must be >= 1")
	case !(sc.Calm > 0) || !(sc.Spike > 0) || math.IsInf(sc.Calm, 0) || math.IsInf(sc.Spike, 0):
		return errors.New("storm: MetastableScenario.Calm and Spike must be finite and > 0")
	case sc.Duration < time.Second || sc.SpikeFrom < 0 || sc.SpikeTo < sc.SpikeFrom || sc.SpikeTo > sc.Duration:
		return errors.New("storm: MetastableScenario needs 0 <= SpikeFrom <= SpikeTo <= Duration and Duration >= 1s")
	case sc.Base <= 0 || sc.PerConcurrent < 0 || sc.Timeout <= 0:
		return errors.New("storm: MetastableScenario needs Base > 0, PerConcurrent >= 0 and Timeout > 0")
	}
	return nil
}

// MetastableResult is what one strategy did in one MetastableScenario run.
type MetastableResult struct {
	Scenario, Mode string
	Requests       int // arrivals
	Succeeded      int
	Attempts       int
	Retries        int
	// Arrived counts the requests that arrived in each second of the run,
	// and Goodput those of them that succeeded (by the second they
	// arrived in, so that the service's delay does not blur the count).
	Goodput, Arrived []int
	// Recovered is how long after the spike's end goodput came back for
	// good: from then on, at least MetastableLevel of the requests that
	// arrive in any MetastableWindow seconds succeed. -1: never within
	// the run.
	Recovered time.Duration
}

// The recovery criterion: at least 90% of the requests that arrive in any
// 5 s succeed.
const (
	MetastableWindow = 5
	MetastableLevel  = 0.9
)

// RetryShare is the share of attempts that were retries.
func (r MetastableResult) RetryShare() float64 {
	return float64(r.Retries) / float64(max(r.Attempts, 1))
}

// metastable is one run's state.
type metastable struct {
	sc          MetastableScenario
	clock       *Clock
	events      chainEvents
	seq         uint64
	drivers     []driver
	concurrency int
	res         MetastableResult
}

// RunMetastable simulates mode in sc with seed. The same arguments give
// the same result.
func RunMetastable(sc MetastableScenario, mode Mode, seed uint64) (MetastableResult, error) {
	return RunMetastableStrategy(sc, mode.String(), func(clock retry.Clock, random func() float64) (Stepper, error) {
		return mode.newStrategy(clock, random, 0)
	}, seed)
}

// RunMetastableStrategy simulates the strategy build returns in sc, one
// per client, with seed, and names the result's mode name.
func RunMetastableStrategy(sc MetastableScenario, name string, build Builder, seed uint64) (MetastableResult, error) {
	if err := sc.validate(); err != nil {
		return MetastableResult{}, err
	}
	seconds := int(sc.Duration / time.Second)
	s := &metastable{sc: sc, clock: NewClock(origin)}
	s.res = MetastableResult{Scenario: sc.Name, Mode: name, Goodput: make([]int, seconds), Arrived: make([]int, seconds)}
	for c := range sc.Clients {
		stream := uint64(0)
		if c > 0 {
			stream = streamJitter + uint64(c)
		}
		st, err := build(s.clock, newRand(seed, stream).Float64)
		if err != nil {
			return MetastableResult{}, err
		}
		s.drivers = append(s.drivers, driver{st})
	}
	arrivals := newRand(seed, streamNet)
	for t := time.Duration(0); ; {
		r := sc.Calm
		if t >= sc.SpikeFrom && t < sc.SpikeTo {
			r = sc.Spike
		}
		t += time.Duration(arrivals.ExpFloat64() / r * float64(time.Second))
		if t >= sc.Duration {
			break
		}
		c := arrivals.IntN(sc.Clients)
		s.at(t, func() { s.request(c) })
	}
	for s.events.Len() > 0 {
		e := heap.Pop(&s.events).(chainEvent)
		s.clock.set(e.at)
		e.fn()
	}
	s.res.Recovered = s.recovered()
	return s.res, nil
}

func (s *metastable) now() time.Duration { return s.clock.Elapsed() }

func (s *metastable) at(t time.Duration, fn func()) {
	s.seq++
	heap.Push(&s.events, chainEvent{at: t, seq: s.seq, fn: fn})
}

// second returns the index of the second t falls in.
func (s *metastable) second(t time.Duration) int { return int(t / time.Second) }

// request starts a request of client c.
func (s *metastable) request(c int) {
	s.res.Requests++
	arrived := s.second(s.now())
	s.res.Arrived[arrived]++ // arrivals stop before the run's end
	d := s.drivers[c]
	tok, wait, err := d.initial()
	if errors.Is(err, retry.ErrRateLimited) {
		return // no attempt made
	}
	if err != nil {
		tok = nil // one attempt, no retries
	}
	s.after(wait, func() { s.admit(d, tok, arrived) })
}

// after runs fn d from now, or at once for no wait.
func (s *metastable) after(d time.Duration, fn func()) {
	if d <= 0 {
		fn()
		return
	}
	s.at(s.now()+d, fn)
}

// admit sends tok's attempt, of a request that arrived in second
// arrived, when the strategy lets it.
func (s *metastable) admit(d driver, tok retry.RetryToken, arrived int) {
	if tok != nil {
		wait, err := d.admit(tok)
		if err != nil {
			d.release(tok)
			return
		}
		if wait > 0 {
			s.at(s.now()+wait, func() { s.admit(d, tok, arrived) })
			return
		}
	}
	s.send(d, tok, arrived)
}

// timeoutError is what the caller sees when it gives up on an attempt.
var timeoutError = retry.TimedOut(errors.New("attempt timed out"))

// send makes an attempt: the service takes it in at once and works on it
// for its service time, and the caller waits at most Timeout.
func (s *metastable) send(d driver, tok retry.RetryToken, arrived int) {
	s.res.Attempts++
	if tok != nil && tok.RetryCount() > 0 {
		s.res.Retries++
	}
	service := s.sc.Base + time.Duration(s.concurrency)*s.sc.PerConcurrent
	s.concurrency++
	s.at(s.now()+service, func() { s.concurrency-- }) // finished, abandoned or not
	if service <= s.sc.Timeout {
		s.at(s.now()+service, func() {
			s.res.Goodput[arrived]++
			s.res.Succeeded++
			if tok != nil {
				d.success(tok)
			}
		})
		return
	}
	s.at(s.now()+s.sc.Timeout, func() {
		if tok == nil {
			return
		}
		next, wait, _, err := d.retry(tok, timeoutError)
		if err != nil {
			return
		}
		s.after(wait, func() { s.admit(d, next, arrived) })
	})
}

// recovered returns how long after the spike's end goodput came back for
// good (see MetastableResult.Recovered).
func (s *metastable) recovered() time.Duration {
	g, a := s.res.Goodput, s.res.Arrived
	ok := func(from int) bool {
		var got, want int
		for i := from; i < from+MetastableWindow; i++ {
			got += g[i]
			want += a[i]
		}
		return float64(got) >= MetastableLevel*float64(want)
	}
	end := int(s.sc.SpikeTo / time.Second)
	last := len(g) - MetastableWindow
	for from := last; from >= end; from-- {
		if !ok(from) {
			if from == last {
				return -1
			}
			return time.Duration(from+1)*time.Second - s.sc.SpikeTo
		}
	}
	return 0
}

// MetastableSummary is one mode's results in one scenario over several
// seeds.
type MetastableSummary struct {
	Scenario, Mode string
	// Recovered lists each seed's MetastableResult.Recovered.
	Recovered        []time.Duration
	RetryShare       [2]float64 // min, max
	SuccessShare     [2]float64 // successes / arrivals over the run: min, max
	PostSpikeGoodput [2]float64 // successes / arrivals from the spike's end: min, max
}

// CompareMetastable runs every mode in every scenario with each seed.
func CompareMetastable(scenarios []MetastableScenario, modes []Mode, seeds []uint64) ([]MetastableSummary, error) {
	var out []MetastableSummary
	for _, sc := range scenarios {
		for _, m := range modes {
			sum := MetastableSummary{Scenario: sc.Name, Mode: m.String(),
				RetryShare: [2]float64{math.Inf(1), math.Inf(-1)}, SuccessShare: [2]float64{math.Inf(1), math.Inf(-1)},
				PostSpikeGoodput: [2]float64{math.Inf(1), math.Inf(-1)}}
			for _, seed := range seeds {
				r, err := RunMetastable(sc, m, seed)
				if err != nil {
					return nil, err
				}
				sum.Recovered = append(sum.Recovered, r.Recovered)
				span(&sum.RetryShare, r.RetryShare())
				span(&sum.SuccessShare, float64(r.Succeeded)/float64(max(r.Requests, 1)))
				end := int(sc.SpikeTo / time.Second)
				var got, want int
				for i := end; i < len(r.Goodput); i++ {
					got += r.Goodput[i]
					want += r.Arrived[i]
				}
				span(&sum.PostSpikeGoodput, float64(got)/float64(max(want, 1)))
			}
			out = append(out, sum)
		}
	}
	return out, nil
}

// span widens the [min, max] pair mm to hold v.
func span(mm *[2]float64, v float64) {
	mm[0], mm[1] = min(mm[0], v), max(mm[1], v)
}

// MetastableModes are the modes the metastable table compares: the AWS
// SDKs' standard mode (the quota alone) beside retrykit's.
var MetastableModes = []Mode{None, Naive, QuotaOnly, Standard, Adaptive}

// WriteMetastableTable writes summaries as a Markdown table.
func WriteMetastableTable(w io.Writer, summaries []MetastableSummary, seeds int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Brooker's metastable trigger, %d seeds (min-max): open-loop arrivals 40/s, 80/s from 10 s to 18 s; service 1 s + 10 ms x concurrency; 3 s timeout\n\n", seeds)
	b.WriteString("| clients | mode | back to full goodput after the spike (each seed) | goodput after the spike | retries / attempts |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, s := range summaries {
		var back []string
		for _, d := range s.Recovered {
			if d < 0 {
				back = append(back, "never")
			} else {
				back = append(back, fmt.Sprintf("%.0f s", d.Seconds()))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", s.Scenario, s.Mode, strings.Join(back, ", "),
			percentSpan(s.PostSpikeGoodput), percentSpan(s.RetryShare))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// percentSpan formats a [min, max] pair of shares as whole percentages.
func percentSpan(mm [2]float64) string { return FormatSpan(mm, "%.0f%%", 100, "-") }
