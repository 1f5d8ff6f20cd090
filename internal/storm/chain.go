package storm

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/retrykit/retry"
)

// ChainScenario is a call chain: user requests arrive at the first of
// Layers client layers, each layer's request is an attempt's worth of work
// for the layer below, and the last layer calls the bottom service. Every
// layer is a fleet of Clients clients, each with a Standard strategy of its
// own (MaxAttempts attempts of that layer's configuration, the default
// backoff and retry quota). The layers below the first serve each request
// with a retry.Layer, as retry.NewHandler does, under the configuration's
// policy: a request whose own call gave up answers "don't retry"
// (X-Should-Retry: false) under retry.RetryNearestFailure, which the layer
// above honours as Transport does.
//
// The bottom service either fails every attempt at once (Failing) or
// serves Capacity attempts per second from a queue, rejecting at once,
// for RejectCost of a served attempt's work, any attempt that would wait
// more than MaxQueue: a service that sheds load, whose rejections are
// cheap but not free. Each hop takes Latency each way.
type ChainScenario struct {
	Name       string
	Layers     int
	Clients    int           // per layer
	Rate       float64       // user requests per second, Poisson arrivals
	Duration   time.Duration // arrivals stop then; the run ends when every request has
	Failing    bool          // the bottom fails every attempt
	Capacity   float64       // attempts per second the bottom serves
	MaxQueue   time.Duration // the longest an attempt waits in the bottom's queue
	RejectCost float64       // a rejection's work, as a fraction of a served attempt's
	Latency    time.Duration // each way, per hop
}

// ChainScenarios returns the demo's two chains: three layers of ten
// clients calling a bottom service that fails every attempt (20 user
// requests per second for 2 s, too few to drain any retry quota), and the
// same chain at twice the bottom's capacity (100 attempts per second,
// 100 ms of queue, rejections at a tenth of a request's work), for 20 s.
func ChainScenarios() []ChainScenario {
	return []ChainScenario{
		{Name: "bottom failing", Layers: 3, Clients: 10, Rate: 20, Duration: 2 * time.Second,
			Failing: true, Latency: 5 * time.Millisecond},
		{Name: "bottom overloaded 2x", Layers: 3, Clients: 10, Rate: 200, Duration: 20 * time.Second,
			Capacity: 100, MaxQueue: 100 * time.Millisecond, RejectCost: 0.1, Latency: 5 * time.Millisecond},
	}
}

func (sc *ChainScenario) validate() error {
	switch {
	case sc.Layers < 1 || sc.Clients < 1:
		return errors.New("storm: ChainScenario.Layers and Clients must be >= 1")
	case !(sc.Rate > 0) || math.IsInf(sc.Rate, 0) || sc.Duration <= 0:
		return errors.New("storm: ChainScenario.Rate and Duration must be > 0")
	case !sc.Failing && (!(sc.Capacity > 0) || math.IsInf(sc.Capacity, 0) || sc.MaxQueue < 0 || !(sc.RejectCost >= 0)):
		return errors.New("storm: ChainScenario.Capacity must be > 0, MaxQueue and RejectCost >= 0")
	case sc.Latency < 0:
		return errors.New("storm: ChainScenario.Latency must be >= 0")
	}
	return nil
}

// A ChainConfig is how the layers of a chain retry: the attempts of each
// layer, from the users' down, and the policy of the layers that serve.
type ChainConfig struct {
	Name     string
	Attempts []int
	Policy   retry.LayerPolicy
	// QuotaOnly turns the retry budget off (WithRetryBudget(0)): each
	// layer's retries are bound by its quota alone, as in the AWS SDKs.
	QuotaOnly bool
}

// ChainConfigs returns the configurations the demo compares for a chain of
// three layers: no coordination (3 attempts at every layer, with the AWS
// SDKs' quota alone, and with the default retry budget too), the layer
// nearest the failure (NewHandler's default), retries where the caller
// will not retry (each layer sends its attempts, as Transport.SendAttempts
// does), retries at one layer only
// (the top, or the one that calls the bottom), and no retries.
func ChainConfigs() []ChainConfig {
	return []ChainConfig{
		{Name: "every layer 3/3/3, quota only", Attempts: []int{3, 3, 3}, Policy: retry.RetryEveryLayer, QuotaOnly: true},
		{Name: "every layer 3/3/3", Attempts: []int{3, 3, 3}, Policy: retry.RetryEveryLayer},
		{Name: "nearest failure 3/3/3", Attempts: []int{3, 3, 3}, Policy: retry.RetryNearestFailure},
		{Name: "if caller won't 3/3/3", Attempts: []int{3, 3, 3}, Policy: retry.RetryIfCallerWont},
		{Name: "top only 3/1/1", Attempts: []int{3, 1, 1}, Policy: retry.RetryEveryLayer},
		{Name: "bottom only 1/1/3", Attempts: []int{1, 1, 3}, Policy: retry.RetryEveryLayer},
		{Name: "no retries 1/1/1", Attempts: []int{1, 1, 1}, Policy: retry.RetryEveryLayer},
	}
}

// ChainResult is what one configuration did in one ChainScenario run.
type ChainResult struct {
	Scenario, Config string
	Requests         int     // user requests
	Succeeded        int     // user requests that succeeded
	BottomAttempts   int     // attempts that reached the bottom service
	Goodput          float64 // user requests that succeeded, per second of arrivals
}

// AttemptsPerRequest is the bottom's attempts per user request.
func (r ChainResult) AttemptsPerRequest() float64 {
	return float64(r.BottomAttempts) / float64(max(r.Requests, 1))
}

// RunChain simulates cfg in sc with seed. The same arguments give the
// same result.
func RunChain(sc ChainScenario, cfg ChainConfig, seed uint64) (ChainResult, error) {
	if err := sc.validate(); err != nil {
		return ChainResult{}, err
	}
	if len(cfg.Attempts) != sc.Layers {
		return ChainResult{}, fmt.Errorf("storm: ChainConfig %q has %d layers' attempts, want %d", cfg.Name, len(cfg.Attempts), sc.Layers)
	}
	c := &chain{sc: sc, cfg: cfg, clock: NewClock(origin), rand: newRand(seed, streamNet)}
	c.res = ChainResult{Scenario: sc.Name, Config: cfg.Name}
	c.layers = make([][]*retry.Standard, sc.Layers)
	for l := range c.layers {
		for i := range sc.Clients {
			opts := []retry.StandardOption{retry.WithClock(c.clock), retry.WithMaxAttempts(cfg.Attempts[l]),
				retry.WithBackoff(mustJitteredBackoff(newRand(seed, streamJitter+uint64(l*sc.Clients+i)).Float64))}
			if cfg.QuotaOnly {
				opts = append(opts, retry.WithRetryBudget(0))
			}
			s, err := retry.NewStandard(opts...)
			if err != nil {
				return ChainResult{}, err
			}
			c.layers[l] = append(c.layers[l], s)
		}
	}
	arrivals := newRand(seed, streamServer)
	for t := time.Duration(0); ; {
		t += time.Duration(arrivals.ExpFloat64() / sc.Rate * float64(time.Second))
		if t >= sc.Duration {
			break
		}
		c.at(t, func() {
			c.res.Requests++
			c.request(context.Background(), 0, retry.Inbound{}, func(ok, _ bool) {
				if ok {
					c.res.Succeeded++
				}
			})
		})
	}
	for c.events.Len() > 0 {
		e := heap.Pop(&c.events).(chainEvent)
		c.clock.set(e.at)
		e.fn()
	}
	c.res.Goodput = float64(c.res.Succeeded) / sc.Duration.Seconds()
	return c.res, nil
}

// mustJitteredBackoff is the default backoff, drawing its jitter from
// random.
func mustJitteredBackoff(random func() float64) retry.Backoff {
	b, err := retry.NewExponentialBackoff(retry.WithRandom(random))
	if err != nil {
		panic("storm: " + err.Error()) // unreachable: the defaults are valid
	}
	return b
}

type chain struct {
	sc     ChainScenario
	cfg    ChainConfig
	clock  *Clock
	rand   interface{ Float64() float64 }
	layers [][]*retry.Standard
	events chainEvents
	seq    uint64
	busy   time.Duration // when the bottom's queue empties
	res    ChainResult
}

func (c *chain) now() time.Duration { return c.clock.Elapsed() }

func (c *chain) at(t time.Duration, fn func()) {
	c.seq++
	heap.Push(&c.events, chainEvent{at: t, seq: c.seq, fn: fn})
}

// errNoRetry is a failed answer that says not to retry, as Transport
// reports X-Should-Retry: false.
var errNoRetry = retry.Permanent(fmt.Errorf("%w: %w", retry.ErrNoRetryAnswer, errUnavailable))

// request serves one request at layer l, made with ctx, and calls done
// with its outcome and whether its answer says not to retry.
func (c *chain) request(ctx context.Context, l int, in retry.Inbound, done func(ok, noRetry bool)) {
	var layer *retry.Layer
	if l > 0 { // a service: it serves the request as NewHandler would
		var err error
		if layer, err = retry.NewLayer(c.cfg.Policy, in); err != nil {
			panic("storm: " + err.Error()) // unreachable: the configurations are valid
		}
		ctx = layer.Context(ctx)
	}
	s := c.layers[l][int(c.rand.Float64()*float64(len(c.layers[l])))]
	tok, tokErr := s.PlanInitialToken("")
	attempts := 0
	finish := func(ok bool) {
		done(ok, layer != nil && !ok && layer.GaveUp())
	}
	var attempt func()
	attempt = func() {
		attempts++
		c.send(ctx, l, retry.Inbound{Attempt: attempts, MaxAttempts: c.cfg.Attempts[l]}, func(ok, noRetry bool) {
			if ok {
				if tokErr == nil {
					_ = s.RecordSuccess(tok)
				}
				finish(true)
				return
			}
			failure := errUnavailable
			if noRetry {
				failure = errNoRetry
			}
			if tokErr != nil { // one attempt, no retries
				retry.ReportGiveUp(ctx, &retry.Error{Attempts: attempts, Err: failure, Reason: tokErr})
				finish(false)
				return
			}
			if retry.LayerRefusal(ctx) != nil { // RetryIfCallerWont, and the caller will retry
				finish(false)
				return
			}
			next, wait, err := s.PlanRetryToken(tok, failure)
			if err != nil {
				retry.ReportGiveUp(ctx, &retry.Error{Attempts: attempts, Err: failure, Reason: err})
				finish(false)
				return
			}
			tok = next
			c.at(c.now()+wait, attempt)
		})
	}
	attempt()
}

// send sends an attempt of layer l, which says what in says of its
// retries (as Transport.SendAttempts does): to the layer below, or to the
// bottom service; answer gets its outcome when it arrives.
func (c *chain) send(ctx context.Context, l int, in retry.Inbound, answer func(ok, noRetry bool)) {
	lat := c.sc.Latency
	if l+1 < c.sc.Layers {
		c.at(c.now()+lat, func() {
			c.request(ctx, l+1, in, func(ok, noRetry bool) {
				c.at(c.now()+lat, func() { answer(ok, noRetry) })
			})
		})
		return
	}
	c.at(c.now()+lat, func() {
		c.res.BottomAttempts++
		ok, after := c.bottom()
		c.at(c.now()+after+lat, func() { answer(ok, false) })
	})
}

// bottom serves an attempt that arrives now: whether it succeeds, and
// how long after now its answer leaves.
func (c *chain) bottom() (bool, time.Duration) {
	if c.sc.Failing {
		return false, 0
	}
	now := c.now()
	work := time.Duration(float64(time.Second) / c.sc.Capacity)
	start := max(c.busy, now)
	if start-now > c.sc.MaxQueue {
		c.busy = start + time.Duration(c.sc.RejectCost*float64(work))
		return false, 0
	}
	c.busy = start + work
	return true, c.busy - now
}

type chainEvent struct {
	at  time.Duration
	seq uint64
	fn  func()
}

type chainEvents []chainEvent

func (q chainEvents) Len() int { return len(q) }
func (q chainEvents) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q chainEvents) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *chainEvents) Push(x any)   { *q = append(*q, x.(chainEvent)) }
func (q *chainEvents) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// ChainSummary is a configuration's results over several seeds, min-max.
type ChainSummary struct {
	Scenario, Config           string
	AttemptsMin, AttemptsMax   float64 // the bottom's attempts per user request
	GoodputMin, GoodputMax     float64 // successful user requests per second
	SucceededMin, SucceededMax float64 // share of user requests that succeeded
}

// CompareChains runs every configuration in every scenario with each seed
// and summarizes each over the seeds.
func CompareChains(scenarios []ChainScenario, configs []ChainConfig, seeds []uint64) ([]ChainSummary, error) {
	var out []ChainSummary
	for _, sc := range scenarios {
		for _, cfg := range configs {
			sum := ChainSummary{Scenario: sc.Name, Config: cfg.Name,
				AttemptsMin: math.Inf(1), GoodputMin: math.Inf(1), SucceededMin: math.Inf(1)}
			for _, seed := range seeds {
				r, err := RunChain(sc, cfg, seed)
				if err != nil {
					return nil, err
				}
				a, share := r.AttemptsPerRequest(), float64(r.Succeeded)/float64(max(r.Requests, 1))
				sum.AttemptsMin, sum.AttemptsMax = min(sum.AttemptsMin, a), max(sum.AttemptsMax, a)
				sum.GoodputMin, sum.GoodputMax = min(sum.GoodputMin, r.Goodput), max(sum.GoodputMax, r.Goodput)
				sum.SucceededMin, sum.SucceededMax = min(sum.SucceededMin, share), max(sum.SucceededMax, share)
			}
			out = append(out, sum)
		}
	}
	return out, nil
}

// WriteChainTable writes summaries as a table, min-max over the seeds.
func WriteChainTable(w io.Writer, summaries []ChainSummary, seeds int) error {
	_, err := fmt.Fprintf(w, "%-22s %-30s %17s %19s %15s\n", "chain", "retries", "bottom attempts/req", "goodput req/s", "succeeded")
	if err != nil {
		return err
	}
	for _, s := range summaries {
		if _, err := fmt.Fprintf(w, "%-22s %-30s %8.2f-%-8.2f %9.1f-%-9.1f %6.1f-%5.1f%%\n", s.Scenario, s.Config,
			s.AttemptsMin, s.AttemptsMax, s.GoodputMin, s.GoodputMax, 100*s.SucceededMin, 100*s.SucceededMax); err != nil {
			return err
		}
	}
	_, err = fmt.Fprintf(w, "(min-max over %d seeds; three layers of 10 clients, each its own Standard strategy; 5 ms per hop each way)\n", seeds)
	return err
}

// WriteChainSVG draws summaries as two bar charts, one per measure: the
// bottom's attempts per user request with the bottom failing, and the
// goodput with it overloaded, each bar a configuration, its whisker the
// min-max over the seeds.
func WriteChainSVG(w io.Writer, summaries []ChainSummary, failing, overloaded string) error {
	const width, rowH, left, barW = 760, 22, 190, 220
	var rows []ChainSummary
	for _, s := range summaries {
		if s.Scenario == failing {
			rows = append(rows, s)
		}
	}
	height := 60 + rowH*len(rows)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-weight="bold">bottom failing: attempts at the bottom per user request</text>`+"\n", left)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-weight="bold">bottom overloaded 2x: goodput (req/s)</text>`+"\n", left+barW+60)
	panel := func(x0 int, scenario string, value func(ChainSummary) (float64, float64), top float64) {
		i := 0
		for _, s := range summaries {
			if s.Scenario != scenario {
				continue
			}
			lo, hi := value(s)
			y := 34 + i*rowH
			wLo, wHi := float64(barW)*lo/top, float64(barW)*hi/top
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="14" fill="#4878a8"/>`+"\n", x0, y, wLo)
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#222"/>`+"\n", float64(x0)+wLo, float64(x0)+wHi, y+7, y+7)
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%.3g-%.3g</text>`+"\n", float64(x0)+wHi+4, y+11, lo, hi)
			i++
		}
	}
	for i, s := range rows {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, 45+i*rowH, escape(s.Config))
	}
	panel(left, failing, func(s ChainSummary) (float64, float64) { return s.AttemptsMin, s.AttemptsMax }, 27)
	panel(left+barW+60, overloaded, func(s ChainSummary) (float64, float64) { return s.GoodputMin, s.GoodputMax }, 100)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">three layers of 10 clients, 3 or 1 attempts per layer; min-max over seeds (go run ./examples/storm)</text>`+"\n", left, height-8)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
