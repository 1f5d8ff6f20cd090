// Package storm is a deterministic simulation of a retry storm: clients
// that retry, or do not, against a server that fails or throttles, driven by
// virtual time.
//
// The simulation is a discrete-event loop. The strategies under test are
// the retry package's own, driven through their non-blocking API (for the
// storm runs, the calls are in driver.go), on a Clock that the event loop
// advances.
// Nothing sleeps: five minutes of traffic take milliseconds. Every random
// draw (think times, backoff jitter, network delays, load-independent
// throttles) comes from generators seeded by the run's seed, so the same
// seed gives the same numbers.
//
// # Model
//
// Clients are closed-loop workers: each worker starts a request, makes
// attempts until it succeeds or the strategy gives up, then thinks for a
// time drawn uniformly from [ThinkMin, ThinkMax] and starts the next one.
// The workers are dealt out to Clients clients (processes), each with a
// strategy of its own; by default all share one. A request also gives up,
// as retry.Do does under a context deadline, when the next attempt could
// not start within RequestTimeout of the request's start; and an adaptive
// mode's attempt that finds no send slot within MaxSendWait is not made
// (it fails fast, as with WithMaxSendWait). A request that gives up, for
// whatever reason, is a failed request.
//
// An attempt reaches the server after a network delay (NetMin to NetMax,
// drawn per attempt; none by default); the server decides at once and
// answers after Latency, and the response takes another network delay.
// The server throttles ThrottleShare of the attempts whatever the load (a
// hot key); of the others, it serves its capacity (per 1-second window, or
// by a token bucket, see ServerModel) and throttles the rest with HTTP
// 429. During an outage it answers every attempt with HTTP 503. Both are
// classified by retry.Classify: 429 is a throttle, 503 a transient error.
//
// Only the server, the network and the number of workers and clients are
// scenario-specific: every mode runs the same scenario with the same
// workload.
package storm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/retrykit/retry"
)

// A Mode is a retry configuration under test.
type Mode int

const (
	// None makes one attempt per request: WithMaxAttempts(1).
	None Mode = iota
	// Naive makes up to 3 attempts with a constant 50 ms wait and no retry
	// quota: WithoutRetryQuota, WithMaxAttempts(3), ConstantBackoff.
	Naive
	// Standard is NewStandard with its defaults.
	Standard
	// Adaptive is NewAdaptive with its defaults.
	Adaptive
	// AdaptivePublished is NewAdaptive with the published algorithm of the
	// AWS SDKs: WithPublishedCUBIC(), a reduction on every throttle.
	AdaptivePublished
	// QuotaOnly is NewStandard without the retry budget,
	// WithRetryBudget(0): the AWS SDKs' standard mode, whose quota alone
	// bounds retries. Only the metastable comparison shows it.
	QuotaOnly
	// AdaptiveDemand is NewAdaptive with WithDemandClock(DemandClock):
	// the growth curve's time counted in the attempts each client asks
	// for as well as in seconds. Only the limits table shows it.
	AdaptiveDemand
)

// DemandClock is the AdaptiveDemand mode's WithDemandClock: attempts
// asked for that count as a second of the growth curve.
const DemandClock = 10

// Modes lists every mode, in the order reports show them.
var Modes = []Mode{None, Naive, Standard, Adaptive, AdaptivePublished}

// String returns the mode's short name.
func (m Mode) String() string {
	switch m {
	case None:
		return "none"
	case Naive:
		return "naive"
	case Standard:
		return "standard"
	case Adaptive:
		return "adaptive"
	case AdaptivePublished:
		return "adaptive-published"
	case QuotaOnly:
		return "standard, quota only"
	case AdaptiveDemand:
		return "adaptive, demand clock"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Description says how the mode's strategy is built.
func (m Mode) Description() string {
	switch m {
	case None:
		return "NewStandard(WithMaxAttempts(1)): no retries"
	case Naive:
		return "NewStandard(WithoutRetryQuota(), WithMaxAttempts(3), WithBackoff(ConstantBackoff(50ms))): fixed attempts, no quota"
	case Standard:
		return "NewStandard(): defaults (3 attempts, exponential backoff, 500-token quota)"
	case Adaptive:
		return "NewAdaptive(): defaults (standard + rate limiter that cuts by the throttled share above what it tolerates); waits at most MaxSendWait (2s) for a send slot"
	case AdaptivePublished:
		return "NewAdaptive(WithPublishedCUBIC()): the AWS SDKs' published algorithm, a reduction on every throttle"
	case QuotaOnly:
		return "NewStandard(WithRetryBudget(0)): the AWS SDKs' standard mode, the quota alone"
	case AdaptiveDemand:
		return fmt.Sprintf("NewAdaptive(WithDemandClock(%d)): the growth curve's time counted in attempts asked for as well", DemandClock)
	}
	return m.String()
}

// MaxSendWait is the longest an attempt of the Adaptive mode waits for a
// send slot, in all, by default: retry.DefaultMaxSendWait. Past it the
// attempt is not made and its request fails with an error wrapping
// retry.ErrRateLimited.
const MaxSendWait = retry.DefaultMaxSendWait

// maxSendWait returns the mode's bound on an attempt's wait for a send
// slot in sc; 0: none. The published algorithm has none: the AWS SDKs wait
// for the slot until the request's deadline.
func (m Mode) maxSendWait(sc *Scenario) time.Duration {
	switch {
	case m != Adaptive && m != AdaptiveDemand || sc.MaxSendWait < 0:
		return 0
	case sc.MaxSendWait == 0:
		return MaxSendWait
	}
	return sc.MaxSendWait
}

// newStrategy builds the mode's strategy with maxSendWait as the adaptive
// modes' bound on the wait for a send slot; 0: none.
func (m Mode) newStrategy(clock retry.Clock, random func() float64, maxSendWait time.Duration) (Stepper, error) {
	if maxSendWait == 0 {
		maxSendWait = math.MaxInt64
	}
	backoff, err := retry.NewExponentialBackoff(retry.WithRandom(random))
	if err != nil {
		return nil, err
	}
	switch m {
	case None:
		return retry.NewStandard(retry.WithClock(clock), retry.WithMaxAttempts(1))
	case Naive:
		return retry.NewStandard(retry.WithClock(clock), retry.WithoutRetryQuota(),
			retry.WithMaxAttempts(3), retry.WithBackoff(retry.ConstantBackoff(50*time.Millisecond)))
	case Standard:
		return retry.NewStandard(retry.WithClock(clock), retry.WithBackoff(backoff))
	case Adaptive:
		return retry.NewAdaptive(retry.WithClock(clock), retry.WithBackoff(backoff), retry.WithMaxSendWait(maxSendWait))
	case AdaptivePublished:
		return retry.NewAdaptive(retry.WithClock(clock), retry.WithBackoff(backoff), retry.WithPublishedCUBIC(),
			retry.WithMaxSendWait(maxSendWait))
	case AdaptiveDemand:
		return retry.NewAdaptive(retry.WithClock(clock), retry.WithBackoff(backoff), retry.WithMaxSendWait(maxSendWait),
			retry.WithDemandClock(DemandClock))
	case QuotaOnly:
		return retry.NewStandard(retry.WithClock(clock), retry.WithBackoff(backoff), retry.WithRetryBudget(0))
	}
	return nil, fmt.Errorf("storm: unknown mode %d", int(m))
}

// An Incident is a period in which the server is degraded.
type Incident struct {
	Start, End time.Duration // from the start of the run; End is when the server heals
	Outage     bool          // answer every attempt with 503
	Capacity   float64       // requests per second served during the incident, when not an outage (0: throttle all)
}

// A ServerModel is how the server decides which attempts to throttle.
type ServerModel int

const (
	// Windows serves at most the capacity in each 1-second window
	// (windows aligned with the start of the run; fractional capacities
	// carry over, so a capacity of 100/3 serves 33, 33, 34, ...) and
	// throttles the rest.
	Windows ServerModel = iota
	// Bucket admits by a token bucket that fills at the capacity and
	// holds at most Burst tokens; an attempt that finds no token is
	// throttled. It starts full.
	Bucket
)

// String returns the model's name.
func (m ServerModel) String() string {
	switch m {
	case Windows:
		return "1-s windows"
	case Bucket:
		return "token bucket"
	}
	return fmt.Sprintf("ServerModel(%d)", int(m))
}

// A Scenario is a server and a workload.
type Scenario struct {
	Name  string // short name, such as "outage"
	Title string // one line for reports and charts

	Duration time.Duration // length of the run
	Capacity float64       // requests per second the healthy server serves
	Incident Incident      // the zero Incident: none

	Server ServerModel // how the server throttles; the zero value is Windows
	Burst  float64     // Bucket: the most tokens the bucket holds, >= 1

	// ThrottleShare is the share of attempts the server throttles
	// whatever the load, as a hot partition key or a per-operation limit
	// does: each attempt is throttled with this probability, before and
	// without using capacity.
	ThrottleShare float64

	Workers int // closed-loop workers, in all
	// Clients is the number of clients the workers are dealt out to,
	// round-robin, each with a strategy of its own (a fleet of processes);
	// 0 or 1: one client that every worker shares.
	Clients int
	// ClientWorkers, if set, gives each client its number of workers
	// instead of dealing them out evenly: client c has ClientWorkers[c],
	// and Clients and Workers must be its length and its sum.
	ClientWorkers []int

	ThinkMin, ThinkMax time.Duration // a worker's pause between requests, uniform
	Latency            time.Duration // the server's time to answer an attempt
	// NetMin and NetMax bound the one-way network latency: each attempt
	// reaches the server, and its response the client, after a delay drawn
	// uniformly from [NetMin, NetMax] (two draws per attempt).
	NetMin, NetMax time.Duration
	RequestTimeout time.Duration // a request's deadline, from its start; 0: none

	// DrainGrace is how long into an outage the retry quota is taken to
	// have drained: OutageAmplification counts the requests that start
	// after it, until the server heals.
	DrainGrace time.Duration

	// MaxSendWait bounds the Adaptive mode's wait for a send slot, per
	// attempt: 0 means the package's MaxSendWait, a negative value no
	// bound.
	MaxSendWait time.Duration
}

// Seeds returns the five seeds from first on over which the demo's
// comparisons run and the README quotes min-max figures: Seeds(1) is 1-5.
func Seeds(first uint64) []uint64 { return []uint64{first, first + 1, first + 2, first + 3, first + 4} }

// DefaultDuration is the length of the demo's scenarios.
const DefaultDuration = 5 * time.Minute

// Scenarios returns the scenarios of the storm demo, each 5 minutes long:
//
//   - outage: a server of 100 requests/s, 50 workers (half its capacity),
//     and a full outage of 60 s at 2:00;
//   - overload: the closed-loop model of SEEDS.md: a server of 20
//     requests/s and 60 workers, offering 3x its capacity for the whole
//     run;
//   - overload-100: the same at five times the scale (100 requests/s, 300
//     workers), since a limiter may behave differently at other rates;
//   - fleet: the overload of overload-100 from 10 clients with a strategy
//     each (30 workers each), 20-50 ms of network latency each way, and a
//     server that admits by a token bucket (burst: 0.1 s of capacity);
//   - overload-10x: a server of 20 requests/s and 200 workers, offering
//     10x its capacity;
//   - hot-key: a server of 100 requests/s, 50 workers, and 5% of attempts
//     throttled whatever the load;
//   - startup: a server of 100 requests/s, 50 workers, that throttles
//     everything in the first second;
//   - brownout: a server of 100 requests/s, 50 workers, and the capacity
//     dropping to a third at 2:00 for 60 s.
//
// Every worker thinks 0.5-1.5 s (1 s on average), the server takes 20 ms
// to answer, and every request has a 10-s deadline. The outage and
// brownout run at 100 requests/s so that a 1-second window holds enough
// requests to time the recovery.
func Scenarios() []Scenario {
	base := workload()
	base.Workers = 50
	outage, overload, overload100, fleet, overload10x, hotKey, startup, brownout := base, base, base, base, base, base, base, base
	outage.Name = "outage"
	outage.Title = "(a) full outage 2:00-3:00; 100 req/s server, offered 0.5x"
	outage.Incident = Incident{Start: 2 * time.Minute, End: 3 * time.Minute, Outage: true}
	overload.Name = "overload"
	overload.Title = "(b) sustained overload; 20 req/s server, offered 3x"
	overload.Capacity, overload.Workers = 20, 60
	overload100.Name = "overload-100"
	overload100.Title = "(b') sustained overload; 100 req/s server, offered 3x"
	overload100.Workers = 300
	fleet.Name = "fleet"
	fleet.Title = "(d) fleet of 10 clients, 20-50 ms network; 100 req/s token-bucket server, offered 3x"
	fleet.Workers, fleet.Clients = 300, 10
	fleet.Server, fleet.Burst = Bucket, 10
	fleet.NetMin, fleet.NetMax = 20*time.Millisecond, 50*time.Millisecond
	overload10x.Name = "overload-10x"
	overload10x.Title = "(e) sustained overload; 20 req/s server, offered 10x"
	overload10x.Capacity, overload10x.Workers = 20, 200
	hotKey.Name = "hot-key"
	hotKey.Title = "(f) 5% of attempts throttled whatever the load; 100 req/s server, offered 0.5x"
	hotKey.ThrottleShare = 0.05
	startup.Name = "startup"
	startup.Title = "(g) every attempt throttled in the first second; 100 req/s server, offered 0.5x"
	startup.Incident = Incident{Start: 0, End: time.Second}
	brownout.Name = "brownout"
	brownout.Title = "(c) capacity a third 2:00-3:00; 100 req/s server, offered 0.5x"
	brownout.Incident = Incident{Start: 2 * time.Minute, End: 3 * time.Minute, Capacity: 100.0 / 3}
	return []Scenario{outage, overload, overload100, brownout, fleet, overload10x, hotKey, startup}
}

// workload returns what the demo's scenarios share: a server of 100
// requests/s that answers in 20 ms, workers that think 0.5-1.5 s between
// requests with a 10-s deadline each, 5-minute runs; no workers yet.
func workload() Scenario {
	return Scenario{
		Duration:       DefaultDuration,
		Capacity:       100,
		ThinkMin:       500 * time.Millisecond,
		ThinkMax:       1500 * time.Millisecond,
		Latency:        20 * time.Millisecond,
		RequestTimeout: 10 * time.Second,
		DrainGrace:     10 * time.Second,
	}
}

func (s *Scenario) validate() error {
	switch {
	case s.Duration <= 0:
		return errors.New("storm: Duration must be > 0")
	case !(s.Capacity > 0):
		return errors.New("storm: Capacity must be > 0")
	case s.Workers < 1:
		return errors.New("storm: Workers must be >= 1")
	case s.Clients < 0 || s.Clients > s.Workers:
		return errors.New("storm: want 0 <= Clients <= Workers")
	case s.ClientWorkers != nil && (len(s.ClientWorkers) != s.clients() || sum(s.ClientWorkers) != s.Workers || slices.Min(s.ClientWorkers) < 1):
		return errors.New("storm: ClientWorkers needs one count >= 1 per client, adding up to Workers")
	case s.ThinkMin < 0 || s.ThinkMax < s.ThinkMin:
		return errors.New("storm: want 0 <= ThinkMin <= ThinkMax")
	case s.Latency < 0 || s.RequestTimeout < 0:
		return errors.New("storm: Latency and RequestTimeout must be >= 0")
	case s.NetMin < 0 || s.NetMax < s.NetMin:
		return errors.New("storm: want 0 <= NetMin <= NetMax")
	case s.Server != Windows && s.Server != Bucket:
		return errors.New("storm: unknown Server model")
	case s.Server == Bucket && !(s.Burst >= 1):
		return errors.New("storm: a Bucket server needs Burst >= 1")
	case !(s.ThrottleShare >= 0 && s.ThrottleShare < 1):
		return errors.New("storm: want 0 <= ThrottleShare < 1")
	case s.hasIncident() && (s.Incident.Start < 0 || s.Incident.End <= s.Incident.Start || s.Incident.End > s.Duration):
		return errors.New("storm: want 0 <= Incident.Start < Incident.End <= Duration")
	case s.hasIncident() && !s.Incident.Outage && !(s.Incident.Capacity >= 0):
		return errors.New("storm: Incident.Capacity must be >= 0")
	}
	return nil
}

func (s *Scenario) hasIncident() bool { return s.Incident != Incident{} }

// clients returns the number of clients, at least 1.
func (s *Scenario) clients() int { return max(s.Clients, 1) }

// clientOf returns the client of worker i: round-robin, or by
// ClientWorkers.
func (s *Scenario) clientOf(i int) int {
	if s.ClientWorkers == nil {
		return i % s.clients()
	}
	for c, n := range s.ClientWorkers {
		if i < n {
			return c
		}
		i -= n
	}
	return len(s.ClientWorkers) - 1 // not reached: validate checks the sum
}

// workersOf returns how many workers client c has.
func (s *Scenario) workersOf(c int) int {
	if s.ClientWorkers != nil {
		return s.ClientWorkers[c]
	}
	n := s.Workers / s.clients()
	if c < s.Workers%s.clients() {
		n++
	}
	return n
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// capacityAt returns the server's capacity at t, in requests per second,
// and whether it is down.
func (s *Scenario) capacityAt(t time.Duration) (float64, bool) {
	if s.hasIncident() && t >= s.Incident.Start && t < s.Incident.End {
		if s.Incident.Outage {
			return 0, true
		}
		return s.Incident.Capacity, false
	}
	return s.Capacity, false
}

// Clock is the simulation's virtual clock: the event loop sets it, and the
// strategies read it. It is safe for concurrent use, as retry.Clock asks.
type Clock struct {
	origin time.Time
	offset atomic.Int64 // nanoseconds since origin
}

// NewClock returns a Clock that reads origin.
func NewClock(origin time.Time) *Clock { return &Clock{origin: origin} }

// Now returns the virtual time.
func (c *Clock) Now() time.Time { return c.origin.Add(c.Elapsed()) }

// Elapsed returns the virtual time since the origin.
func (c *Clock) Elapsed() time.Duration { return time.Duration(c.offset.Load()) }

// set moves the clock to origin + d; it never moves back.
func (c *Clock) set(d time.Duration) {
	if d > c.Elapsed() {
		c.offset.Store(int64(d))
	}
}

// origin is the virtual time at which every run starts.
var origin = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// statusError is a server's error response.
type statusError struct{ status int }

func (e *statusError) Error() string       { return fmt.Sprintf("HTTP %d", e.status) }
func (e *statusError) HTTPStatusCode() int { return e.status }

var (
	errThrottled   error = &statusError{429}
	errUnavailable error = &statusError{503}
)

// seeds derives independent generator seeds from the run's seed, so that
// the workload (think times) is the same in every mode and the strategy's
// jitter draws do not shift it.
func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream^0x9e3779b97f4a7c15))
}
