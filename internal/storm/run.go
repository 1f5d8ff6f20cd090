package storm

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
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
	// Refused counts the failed requests whose last attempt the client
	// did not send because it found no send slot in time (an error
	// wrapping retry.ErrRateLimited: the bounded send-slot wait, or a
	// fail-fast limiter).
	Refused int

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

	// LatencyP50 and LatencyP99 are percentiles of the latency of the
	// requests that succeeded, on the client: from the request's start to
	// its success, waits for backoff and send slots included. FailP50 is
	// the median time from the start of a failed request to its failure.
	LatencyP50, LatencyP99, FailP50 time.Duration

	// OutageAmplification is attempts per request for the requests that
	// started during an outage, DrainGrace or more after it began; 0
	// when the scenario has no outage.
	OutageAmplification float64

	// Recovery is how long after the server healed its clients got back
	// to full rate: the least t, on a 100-ms grid from the heal, at which
	// the requests that succeed in [heal+t, heal+t+1s) reach 95% of the
	// baseline rate of success. The baseline is the mean over the 60 s
	// before the incident, or, when the incident starts earlier than
	// that, over the last 60 s of the run. Negative when the scenario has
	// no incident, or the rate never recovers within the run.
	Recovery time.Duration

	// Fairness is the worst client's successes per worker divided by the
	// best client's: 1 when the clients were served in proportion to
	// their demand, towards 0 as one starves. 1 with a single client.
	Fairness float64

	// ClientSucceeded counts each client's requests that succeeded.
	ClientSucceeded []int

	// Series are per-second counts over the run, by the second in which
	// they happened: attempts by when they were sent, throttles by when
	// the server answered, successes by when the request succeeded.
	Series []Sample

	// Fine counts the successes in each FineBin of the run, for a closer
	// look at recoveries.
	Fine []int
}

// FineBin is the width of the bins of Result.Fine.
const FineBin = recoveryStep

// A Sample is one bin of a Result's time series.
type Sample struct {
	Attempts, Throttled, Successes int
	Capacity                       float64 // the server's capacity at the bin's start, per second
	// FillRate is the allowed send rate of an adaptive strategy's rate
	// limiter at the bin's end, summed over the clients whose limiter has
	// seen a throttle; 0 when none has.
	FillRate float64
}

// Recovery threshold and baseline.
const (
	recoveryLevel    = 0.95
	recoveryBaseline = 60 * time.Second
)

// Run simulates mode in scenario with the given seed. The same arguments
// give the same Result.
func Run(sc Scenario, mode Mode, seed uint64) (Result, error) {
	bound := mode.maxSendWait(&sc)
	return RunStrategy(sc, mode.String(), func(clock retry.Clock, random func() float64) (Stepper, error) {
		return mode.newStrategy(clock, random, bound)
	}, seed)
}

// A Builder builds a strategy that reads time from clock and draws its
// backoff jitter from random.
type Builder func(clock retry.Clock, random func() float64) (Stepper, error)

// Streams of the random generators of a run, so that each draws its own
// numbers: worker i's think times come from stream i+1, whatever the mode.
const (
	streamJitter = 1 << 40 // + client index; client 0's is stream 0
	streamNet    = 1 << 61
	streamServer = 1 << 62
)

// RunStrategy simulates the strategy that build returns in scenario, with
// the given seed, and names the Result's mode name. Each client of the
// scenario gets a strategy of its own from build. The same arguments give
// the same Result, if build's strategy reads time and draws random numbers
// only from the clock and random it is given. Attempts wait for send
// slots as long as the strategy lets them (an Adaptive strategy's
// WithMaxSendWait).
func RunStrategy(sc Scenario, name string, build Builder, seed uint64) (Result, error) {
	if err := sc.validate(); err != nil {
		return Result{}, err
	}
	clock := NewClock(origin)
	s := &sim{
		sc:      sc,
		clock:   clock,
		clients: make([]client, sc.clients()),
		workers: make([]worker, sc.Workers),
		bins:    make([]Sample, int((sc.Duration+Bin-1)/Bin)),
		fine:    make([]int, int((sc.Duration+recoveryStep-1)/recoveryStep)),
		net:     newRand(seed, streamNet),
	}
	sampled := false
	for c := range s.clients {
		stream := uint64(0)
		if c > 0 {
			stream = streamJitter + uint64(c)
		}
		strategy, err := build(clock, newRand(seed, stream).Float64)
		if err != nil {
			return Result{}, err
		}
		s.clients[c].drv = driver{strategy}
		if a, ok := strategy.(*retry.Adaptive); ok {
			s.clients[c].limiter = a.RateLimiter()
			sampled = true
		}
	}
	s.server = newServer(&s.sc, newRand(seed, streamServer))
	for i := range s.workers {
		w := &s.workers[i]
		w.rand = newRand(seed, uint64(i)+1)
		w.client = sc.clientOf(i)
		// Spread the first requests over one think time.
		s.schedule(time.Duration(w.rand.Int64N(int64(sc.ThinkMax)+1)), i, evStart)
	}
	if sampled {
		s.schedule(Bin-1, -1, evSample)
	}
	s.loop()
	return s.result(name), nil
}

type eventKind uint8

const (
	evStart    eventKind = iota // start a new request
	evReady                     // the token's wait is over: admit and send
	evArrive                    // the attempt reaches the server
	evResponse                  // the attempt's response reaches the client
	evThink                     // the request ended: think, then start the next
	evSample                    // record the rate limiters' state
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

// client is one process of the fleet: a strategy that its workers share.
type client struct {
	drv       driver
	limiter   *retry.RateLimiter // of an Adaptive strategy, else nil
	succeeded int                // its requests that succeeded
}

// worker is one closed-loop caller and its request in progress.
type worker struct {
	rand   *rand.Rand
	client int

	token       retry.RetryToken
	tokenErr    bool          // the initial token was refused: one attempt, no retries
	start       time.Duration // when the request started
	attempts    int
	throttled   int   // attempts answered 429
	unavailable int   // attempts answered 503
	outcome     error // the last attempt's response
}

type sim struct {
	sc      Scenario
	clock   *Clock
	clients []client
	server  server
	net     *rand.Rand // network latencies

	queue   eventQueue
	seq     uint64
	workers []worker

	res       Result
	bins      []Sample
	fine      []int           // successes per recoveryStep
	latencies []time.Duration // of the successful requests
	failTimes []time.Duration // of the failed requests

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
		case evArrive:
			s.arrive(e.worker)
		case evResponse:
			s.response(e.worker)
		case evSample:
			for _, c := range s.clients {
				if st := c.limiter.Stats(); st.Enabled {
					s.bins[e.at/Bin].FillRate += st.FillRate
				}
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

func (s *sim) driver(i int) driver { return s.clients[s.workers[i].client].drv }

// start begins a request: the initial token, then its wait.
func (s *sim) start(i int) {
	w := &s.workers[i]
	*w = worker{rand: w.rand, client: w.client, start: s.now()}
	tok, delay, err := s.driver(i).initial()
	switch {
	case errors.Is(err, retry.ErrRateLimited):
		s.finish(i, false, true, 0) // no attempt at all, as in Do
		return
	case err != nil:
		w.tokenErr = true // one attempt, no retries, as in Do
		s.send(i)
		return
	}
	w.token = tok
	s.wait(i, delay)
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
		s.abandon(i, false)
		return
	}
	s.schedule(s.now()+d, i, evReady)
}

// ready asks for the attempt's send slot, and sends it.
func (s *sim) ready(i int) {
	w := &s.workers[i]
	d, err := s.driver(i).admit(w.token)
	switch {
	case err != nil:
		s.abandon(i, errors.Is(err, retry.ErrRateLimited))
	case d > 0:
		s.wait(i, d)
	default:
		s.send(i)
	}
}

// abandon gives the token back and fails the request, as Do does when
// its context ends or Admit refuses; refused says Admit refused.
func (s *sim) abandon(i int, refused bool) {
	s.driver(i).release(s.workers[i].token)
	s.finish(i, false, refused, 0)
}

// send sends the attempt: it reaches the server after the network's
// latency.
func (s *sim) send(i int) {
	w := &s.workers[i]
	w.attempts++
	s.bins[s.now()/Bin].Attempts++
	if up := s.netDelay(); up > 0 {
		s.schedule(s.now()+up, i, evArrive)
		return
	}
	s.arrive(i)
}

// arrive has the server answer the attempt; the response reaches the
// client after the server's and the network's latency.
func (s *sim) arrive(i int) {
	w := &s.workers[i]
	now := s.now()
	w.outcome = s.server.answer(now)
	switch w.outcome {
	case errThrottled:
		s.bins[now/Bin].Throttled++
		w.throttled++
	case errUnavailable:
		w.unavailable++
	}
	s.schedule(now+s.sc.Latency+s.netDelay(), i, evResponse)
}

// netDelay draws a one-way network latency.
func (s *sim) netDelay() time.Duration {
	if s.sc.NetMax <= 0 {
		return 0
	}
	return s.sc.NetMin + time.Duration(s.net.Int64N(int64(s.sc.NetMax-s.sc.NetMin)+1))
}

func (s *sim) response(i int) {
	w := &s.workers[i]
	if w.outcome == nil {
		if !w.tokenErr {
			s.driver(i).success(w.token)
		}
		s.finish(i, true, false, 0)
		return
	}
	if w.tokenErr || (s.sc.RequestTimeout > 0 && s.now() >= w.start+s.sc.RequestTimeout) {
		s.finish(i, false, false, 0) // Do never retries once the caller's context ended
		return
	}
	tok, delay, refusalDelay, err := s.driver(i).retry(w.token, w.outcome)
	if err != nil {
		// Do waits a refusal's delay before it gives up, and the worker
		// with it.
		s.finish(i, false, false, refusalDelay)
		return
	}
	w.token = tok
	s.wait(i, delay)
}

// finish counts the request's outcome, when it ends now, and has the
// worker think after a further wait.
func (s *sim) finish(i int, ok, refused bool, wait time.Duration) {
	w := &s.workers[i]
	now := s.now()
	s.res.Requests++
	s.res.Attempts += w.attempts
	s.res.Throttled += w.throttled
	s.res.Unavailable += w.unavailable
	if ok {
		s.res.Succeeded++
		s.clients[w.client].succeeded++
		s.bins[now/Bin].Successes++
		s.fine[now/recoveryStep]++
		s.latencies = append(s.latencies, now-w.start)
	} else {
		s.res.Failed++
		if refused {
			s.res.Refused++
		}
		s.failTimes = append(s.failTimes, now-w.start)
	}
	if inc := s.sc.Incident; inc.Outage && w.start >= inc.Start+s.sc.DrainGrace && w.start < inc.End {
		s.outageRequests++
		s.outageAttempts += w.attempts
	}
	w.token = nil
	s.schedule(now+wait, i, evThink)
}

// percentile returns the p-quantile (0 < p <= 1) of ds by the nearest-rank
// method, sorting ds; 0 for no values.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	k := int(math.Ceil(float64(len(ds))*p)) - 1
	return ds[min(max(k, 0), len(ds)-1)]
}
