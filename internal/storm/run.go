package storm

import (
	"errors"
	"math"
	"math/rand/v2"
	"time"

	"github.com/retrykit/retry"
)

// Bin is the width of the time series' bins.
const Bin = time.Second

// recoveryStep is the resolution of the recovery time.
const recoveryStep = 100 * time.Millisecond

// Result is what one mode did in one scenario.
type Result struct {
	Scenario string
	Mode     string

	// Requests counts the requests that ended (succeeded or failed) within
	// the run; requests still in progress at its end are left out of every
	// count below.
	Requests  int
	Succeeded int
	Failed    int // gave up: retries refused or spent, deadline, or rate limited

	Attempts    int // attempts sent by those requests
	Throttled   int // of which answered 429
	Unavailable int // of which answered 503

	// Amplification is Attempts / Requests: attempts per request.
	Amplification float64
	// ThrottledShare is Throttled / Attempts.
	ThrottledShare float64
	// Goodput is the requests that succeeded divided by what the server
	// could have served over the run (its capacity integrated over time,
	// outages counting zero).
	Goodput float64
	// Success is Succeeded / Requests.
	Success float64

	// OutageAmplification is attempts per request for the requests that
	// started during an outage, DrainGrace or more after it began; 0
	// when the scenario has no outage.
	OutageAmplification float64

	// Recovery is how long after the server healed its clients got back
	// to full rate: the least t, on a 100-ms grid from the heal, at which
	// the requests that succeed in [heal+t, heal+t+1s) reach 95% of the
	// mean rate of success over the 60 s before the incident. Negative
	// when the scenario has no incident, or the rate never recovers
	// within the run.
	Recovery time.Duration

	// Series are per-second counts over the run, by the second in which
	// they happened: attempts by when they were sent, successes by when
	// the request succeeded.
	Series []Sample
}

// A Sample is one bin of a Result's time series.
type Sample struct {
	Attempts, Throttled, Successes int
	Capacity                       float64 // the server's capacity at the bin's start, per second
	FillRate                       float64 // an adaptive strategy's allowed send rate at the bin's end; 0 before its first throttle
}

// Recovery threshold and baseline.
const (
	recoveryLevel    = 0.95
	recoveryBaseline = 60 * time.Second
)

// Run simulates mode in scenario with the given seed. The same arguments
// give the same Result.
func Run(sc Scenario, mode Mode, seed uint64) (Result, error) {
	return RunStrategy(sc, mode.String(), mode.NewStrategy, seed)
}

// A Stepper is a strategy driven step by step, without blocking: the
// non-blocking path of the retry package's Standard and Adaptive, which the
// simulation's event loop drives on virtual time exactly as their blocking
// methods drive it on a real clock.
type Stepper interface {
	PlanInitialToken(scope string) (retry.RetryToken, error)
	PlanRetryToken(token retry.RetryToken, err error) (retry.RetryToken, time.Duration, error)
	Admit(token retry.RetryToken) (time.Duration, error)
	ReleaseToken(token retry.RetryToken) error
	RecordSuccess(token retry.RetryToken) error
}

// A Builder builds a strategy that reads time from clock and draws its
// backoff jitter from random.
type Builder func(clock retry.Clock, random func() float64) (Stepper, error)

// RunStrategy simulates the strategy that build returns in scenario, with
// the given seed, and names the Result's mode name. The same arguments
// give the same Result, if build's strategy reads time and draws random
// numbers only from the clock and random it is given.
func RunStrategy(sc Scenario, name string, build Builder, seed uint64) (Result, error) {
	if err := sc.validate(); err != nil {
		return Result{}, err
	}
	clock := NewClock(origin)
	jitter := newRand(seed, 0)
	strategy, err := build(clock, jitter.Float64)
	if err != nil {
		return Result{}, err
	}
	s := &sim{
		sc:       sc,
		clock:    clock,
		strategy: strategy,
		workers:  make([]worker, sc.Workers),
		bins:     make([]Sample, int((sc.Duration+Bin-1)/Bin)),
		fine:     make([]int, int((sc.Duration+recoveryStep-1)/recoveryStep)),
	}
	s.server = server{sc: &s.sc, window: -1}
	for i := range s.workers {
		w := &s.workers[i]
		w.rand = newRand(seed, uint64(i)+1)
		// Spread the first requests over one think time.
		s.schedule(time.Duration(w.rand.Int64N(int64(sc.ThinkMax)+1)), i, evStart)
	}
	if a, ok := strategy.(*retry.Adaptive); ok {
		s.limiter = a.RateLimiter()
		s.schedule(Bin-1, -1, evSample)
	}
	s.loop()
	return s.result(name), nil
}

type eventKind uint8

const (
	evStart    eventKind = iota // start a new request
	evReady                     // the token's wait is over: admit and send
	evResponse                  // the attempt's response arrives
	evThink                     // the request ended: think, then start the next
	evSample                    // record the rate limiter's state
)

type event struct {
	at     time.Duration
	seq    uint64 // ties break in scheduling order, so runs are deterministic
	worker int
	kind   eventKind
}

// eventQueue is a binary min-heap of events, ordered by time and then by
// scheduling order. (container/heap would box every event it pushes; the
// demo runs millions of events, most of them rate-limiter polls.)
type eventQueue []event

func (q eventQueue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *eventQueue) push(e event) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *eventQueue) pop() event {
	h := *q
	e := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h = h[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && h.less(l, m) {
			m = l
		}
		if r := l + 1; r < n && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return e
}

// worker is one closed-loop client and its request in progress.
type worker struct {
	rand *rand.Rand

	token       retry.RetryToken
	tokenErr    bool          // the initial token was refused: one attempt, no retries
	start       time.Duration // when the request started
	attempts    int
	throttled   int   // attempts answered 429
	unavailable int   // attempts answered 503
	outcome     error // the last attempt's response
}

// server counts what it served in the current 1-second window.
type server struct {
	sc         *Scenario
	window     int64   // index of the current window; -1 before the first
	allowance  int     // attempts it may still serve in the window
	cumulative float64 // capacity of the windows so far
}

// answer decides the response to an attempt that arrives at t.
func (sv *server) answer(t time.Duration) error {
	rate, down := sv.sc.capacityAt(t)
	if down {
		return errUnavailable
	}
	if w := int64(t / time.Second); w != sv.window {
		// A new window: its allowance is what the capacity adds to the
		// cumulative total, in whole requests, so fractions carry over.
		// Windows the loop skipped served nothing.
		before := math.Floor(sv.cumulative)
		sv.cumulative += rate
		sv.allowance = int(math.Floor(sv.cumulative) - before)
		sv.window = w
	}
	if sv.allowance <= 0 {
		return errThrottled
	}
	sv.allowance--
	return nil
}

type sim struct {
	sc       Scenario
	clock    *Clock
	strategy Stepper
	server   server
	limiter  *retry.RateLimiter // of an Adaptive strategy

	queue   eventQueue
	seq     uint64
	workers []worker

	res  Result
	bins []Sample
	fine []int // successes per recoveryStep

	outageRequests, outageAttempts int
}

func (s *sim) schedule(at time.Duration, w int, k eventKind) {
	s.seq++
	s.queue.push(event{at: at, seq: s.seq, worker: w, kind: k})
}

func (s *sim) loop() {
	for len(s.queue) > 0 {
		e := s.queue.pop()
		if e.at >= s.sc.Duration {
			return
		}
		s.clock.set(e.at)
		switch e.kind {
		case evStart:
			s.start(e.worker)
		case evReady:
			s.ready(e.worker)
		case evResponse:
			s.response(e.worker)
		case evSample:
			if st := s.limiter.Stats(); st.Enabled {
				s.bins[e.at/Bin].FillRate = st.FillRate
			}
			s.schedule(e.at+Bin, -1, evSample)
		case evThink:
			w := &s.workers[e.worker]
			think := s.sc.ThinkMin + time.Duration(w.rand.Int64N(int64(s.sc.ThinkMax-s.sc.ThinkMin)+1))
			s.schedule(e.at+think, e.worker, evStart)
		}
	}
}

func (s *sim) now() time.Duration { return s.clock.Elapsed() }

// start begins a request: the initial token, then its wait.
func (s *sim) start(i int) {
	w := &s.workers[i]
	*w = worker{rand: w.rand, start: s.now()}
	tok, err := s.strategy.PlanInitialToken("")
	switch {
	case errors.Is(err, retry.ErrRateLimited):
		s.finish(i, false, 0) // no attempt at all, as in Do
		return
	case err != nil:
		w.tokenErr = true // one attempt, no retries, as in Do
		s.send(i)
		return
	}
	w.token = tok
	s.wait(i, tok.Delay())
}

// wait schedules the attempt after d, unless the request's deadline
// would pass first; then the request gives up at once, as Do does.
func (s *sim) wait(i int, d time.Duration) {
	if d <= 0 {
		s.ready(i)
		return
	}
	w := &s.workers[i]
	if s.sc.RequestTimeout > 0 && s.now()+d >= w.start+s.sc.RequestTimeout {
		s.abandon(i)
		return
	}
	s.schedule(s.now()+d, i, evReady)
}

// ready asks the strategy whether the attempt may go, and sends it.
func (s *sim) ready(i int) {
	w := &s.workers[i]
	d, err := s.strategy.Admit(w.token)
	switch {
	case err != nil:
		s.abandon(i)
		return
	case d > 0:
		s.wait(i, d)
		return
	}
	s.send(i)
}

// abandon gives the token back and fails the request, as the strategy's
// blocking methods do when the context ends or a send slot is refused.
func (s *sim) abandon(i int) {
	_ = s.strategy.ReleaseToken(s.workers[i].token)
	s.finish(i, false, 0)
}

func (s *sim) send(i int) {
	w := &s.workers[i]
	now := s.now()
	w.attempts++
	w.outcome = s.server.answer(now)
	b := &s.bins[now/Bin]
	b.Attempts++
	switch w.outcome {
	case errThrottled:
		b.Throttled++
		w.throttled++
	case errUnavailable:
		w.unavailable++
	}
	s.schedule(now+s.sc.Latency, i, evResponse)
}

func (s *sim) response(i int) {
	w := &s.workers[i]
	if w.outcome == nil {
		if !w.tokenErr {
			_ = s.strategy.RecordSuccess(w.token)
		}
		s.finish(i, true, 0)
		return
	}
	if w.tokenErr || (s.sc.RequestTimeout > 0 && s.now() >= w.start+s.sc.RequestTimeout) {
		s.finish(i, false, 0) // Do never retries once the caller's context ended
		return
	}
	tok, wait, err := s.strategy.PlanRetryToken(w.token, w.outcome)
	if err != nil {
		// A long-polling strategy waits before it gives up, and the worker
		// with it.
		s.finish(i, false, max(wait, 0))
		return
	}
	w.token = tok
	s.wait(i, tok.Delay())
}

// finish counts the request's outcome, when it ends now, and has the
// worker think after a further wait.
func (s *sim) finish(i int, ok bool, wait time.Duration) {
	w := &s.workers[i]
	now := s.now()
	s.res.Requests++
	s.res.Attempts += w.attempts
	s.res.Throttled += w.throttled
	s.res.Unavailable += w.unavailable
	if ok {
		s.res.Succeeded++
		s.bins[now/Bin].Successes++
		s.fine[now/recoveryStep]++
	} else {
		s.res.Failed++
	}
	if inc := s.sc.Incident; inc.Outage && w.start >= inc.Start+s.sc.DrainGrace && w.start < inc.End {
		s.outageRequests++
		s.outageAttempts += w.attempts
	}
	w.token = nil
	s.schedule(now+wait, i, evThink)
}
