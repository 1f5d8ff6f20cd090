package storm

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/retrykit/retry"
)

// A JitterKind is one way of spreading retries over time: the jitter
// kinds compared by the AWS Architecture Blog's "Exponential Backoff And
// Jitter".
type JitterKind int

const (
	// NoJitter is exponential backoff without jitter:
	// NewExponentialBackoff(WithJitter(0)).
	NoJitter JitterKind = iota
	// FullJitter draws each delay from (0, d]:
	// NewExponentialBackoff(WithJitter(retry.FullJitter)).
	FullJitter
	// EqualJitter draws each delay from (d/2, d]:
	// NewExponentialBackoff(WithJitter(retry.EqualJitter)).
	EqualJitter
	// DecorrelatedJitter draws each delay from [base, 3×previous), capped:
	// NewDecorrelatedJitter.
	DecorrelatedJitter
)

// JitterKinds lists every jitter kind, in the order tables show them.
var JitterKinds = []JitterKind{NoJitter, FullJitter, EqualJitter, DecorrelatedJitter}

// String returns the kind's short name.
func (k JitterKind) String() string {
	switch k {
	case NoJitter:
		return "none"
	case FullJitter:
		return "full"
	case EqualJitter:
		return "equal"
	case DecorrelatedJitter:
		return "decorrelated"
	}
	return fmt.Sprintf("JitterKind(%d)", int(k))
}

// JitterScale is the growth factor of the exponential kinds' delays (the
// blog's base×2^attempt). Decorrelated jitter grows by its own factor,
// retry.DefaultDecorrelatedScale.
const JitterScale = 2

// exponentialJitter is the share of each delay that the exponential kinds
// draw at random (retry.WithJitter).
var exponentialJitter = map[JitterKind]float64{NoJitter: 0, FullJitter: retry.FullJitter, EqualJitter: retry.EqualJitter}

// Backoff returns the kind's backoff with the initial delay base and the
// cap maxDelay, drawing from random, which must return values in [0, 1).
func (k JitterKind) Backoff(base, maxDelay time.Duration, random func() float64) (retry.Backoff, error) {
	opts := []retry.BackoffOption{retry.WithInitialDelay(base), retry.WithMaxBackoff(maxDelay), retry.WithRandom(random)}
	if jitter, ok := exponentialJitter[k]; ok {
		return retry.NewExponentialBackoff(append(opts, retry.WithScaleFactor(JitterScale), retry.WithJitter(jitter))...)
	}
	if k == DecorrelatedJitter {
		return retry.NewDecorrelatedJitter(opts...)
	}
	return nil, fmt.Errorf("storm: unknown jitter kind %d", int(k))
}

// A JitterScenario is a shared failure that a group of clients retry
// through: every client sends its first attempt at time 0, and every
// attempt fails until the server heals at HealAt. From then on the server
// serves at most Capacity attempts in each Window (windows aligned with
// time 0) and throttles the rest with HTTP 429. A client retries until an
// attempt succeeds or it has made MaxAttempts attempts.
//
// Each client retries with a Standard strategy without a retry quota
// (WithoutRetryQuota), so that the backoff alone shapes the load. The
// zero JitterScenario is not valid; start from DefaultJitterScenario.
type JitterScenario struct {
	Clients     int
	HealAt      time.Duration // before it, every attempt fails with HTTP 503
	Capacity    int           // attempts served per Window once healed
	Window      time.Duration // the server's window, and the bin of PeakLoad
	Latency     time.Duration // from an attempt to its response
	Base, Cap   time.Duration // every kind's initial delay and largest delay
	MaxAttempts int           // per client, the first included
}

// DefaultJitterScenario returns the storm demo's jitter comparison: 100
// clients; a failure that heals at 2 s; then a server that serves 10
// attempts per 100 ms (100 per second, so serving every client takes at
// least a second); a latency of 10 ms; every kind backing off from 100 ms
// up to 10 s; and at most 50 attempts per client.
func DefaultJitterScenario() JitterScenario {
	return JitterScenario{
		Clients:     100,
		HealAt:      2 * time.Second,
		Capacity:    10,
		Window:      100 * time.Millisecond,
		Latency:     10 * time.Millisecond,
		Base:        100 * time.Millisecond,
		Cap:         10 * time.Second,
		MaxAttempts: 50,
	}
}

func (sc *JitterScenario) validate() error {
	switch {
	case sc.Clients < 1:
		return errors.New("storm: JitterScenario.Clients must be >= 1")
	case sc.HealAt < 0 || sc.Latency < 0:
		return errors.New("storm: JitterScenario.HealAt and Latency must be >= 0")
	case sc.Capacity < 1 || sc.Window <= 0:
		return errors.New("storm: JitterScenario.Capacity must be >= 1 and Window > 0")
	case sc.MaxAttempts < 1:
		return errors.New("storm: JitterScenario.MaxAttempts must be >= 1")
	}
	return nil // Base and Cap are checked by the backoff constructors
}

// JitterResult is what the clients of one jitter kind did in a
// JitterScenario.
type JitterResult struct {
	Kind      JitterKind
	Succeeded int // clients whose attempt was served
	Failed    int // clients that spent MaxAttempts

	// Completion times, from time 0 to the successful response, of the
	// clients that succeeded (nearest-rank percentiles); 0 if none did.
	P50, P99, Max time.Duration

	Attempts int // sent by all clients, the first attempts included
	// PeakLoad is the most retries (attempts after the first) sent in one
	// Window. The first attempts all go at time 0 whatever the backoff, so
	// they are left out.
	PeakLoad int
	// PeakAfterHeal is the most attempts in one Window from HealAt on:
	// the burst a healed server meets.
	PeakAfterHeal int
}

// CompareJitter runs sc once for each kind, with seed, and returns the
// results in the order of kinds. The same arguments give the same results.
func CompareJitter(sc JitterScenario, kinds []JitterKind, seed uint64) ([]JitterResult, error) {
	if err := sc.validate(); err != nil {
		return nil, err
	}
	out := make([]JitterResult, len(kinds))
	for i, k := range kinds {
		r, err := runJitter(sc, k, seed)
		if err != nil {
			return nil, fmt.Errorf("storm: jitter %v: %w", k, err)
		}
		out[i] = r
	}
	return out, nil
}

// jitterClient is one client's retry in progress.
type jitterClient struct {
	token    retry.RetryToken
	next     time.Duration // when it sends its next attempt
	attempts int
	done     bool
}

// runJitter simulates the clients of kind k in sc. Every client sends an
// attempt at its next time, earliest first (ties in client order); the
// response arrives Latency later, when the client plans its retry.
func runJitter(sc JitterScenario, k JitterKind, seed uint64) (JitterResult, error) {
	var now time.Duration
	clock := retry.ClockFunc(func() time.Time { return origin.Add(now) })
	random := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc908^uint64(k)))
	b, err := k.Backoff(sc.Base, sc.Cap, random.Float64)
	if err != nil {
		return JitterResult{}, err
	}
	s, err := retry.NewStandard(retry.WithClock(clock), retry.WithBackoff(b),
		retry.WithoutRetryQuota(), retry.WithMaxAttempts(sc.MaxAttempts))
	if err != nil {
		return JitterResult{}, err
	}

	clients := make([]jitterClient, sc.Clients)
	for i := range clients {
		if clients[i].token, err = s.PlanInitialToken(""); err != nil {
			return JitterResult{}, err
		}
	}
	var (
		res       = JitterResult{Kind: k}
		completed []time.Duration
		retries   = map[int64]int{} // by window
		afterHeal = map[int64]int{} // by window
		served    = map[int64]int{} // by window
	)
	for {
		c := -1 // the client that sends next
		for i := range clients {
			if !clients[i].done && (c < 0 || clients[i].next < clients[c].next) {
				c = i
			}
		}
		if c < 0 {
			break
		}
		cl := &clients[c]
		t := cl.next
		w := int64(t / sc.Window)
		cl.attempts++
		res.Attempts++
		if cl.attempts > 1 {
			retries[w]++
		}
		if t >= sc.HealAt {
			afterHeal[w]++
		}
		var failure error
		switch {
		case t < sc.HealAt:
			failure = errUnavailable
		case served[w] >= sc.Capacity:
			failure = errThrottled
		default:
			served[w]++
		}

		now = t + sc.Latency // the response arrives
		if failure == nil {
			if err := s.RecordSuccess(cl.token); err != nil {
				return JitterResult{}, err
			}
			cl.done = true
			res.Succeeded++
			completed = append(completed, now)
			continue
		}
		tok, delay, err := s.PlanRetryToken(cl.token, failure)
		if err != nil { // no retry left (ErrMaxAttemptsExceeded)
			cl.done = true
			res.Failed++
			continue
		}
		cl.token, cl.next = tok, now+delay
	}
	for _, n := range retries {
		res.PeakLoad = max(res.PeakLoad, n)
	}
	for _, n := range afterHeal {
		res.PeakAfterHeal = max(res.PeakAfterHeal, n)
	}
	res.P50, res.P99, res.Max = percentile(completed, 0.50), percentile(completed, 0.99), percentile(completed, 1)
	return res, nil
}

// WriteJitterTable writes results as a fixed-width table, with the
// scenario it ran and the definitions of its columns.
func WriteJitterTable(w io.Writer, sc JitterScenario, results []JitterResult) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d clients fail at 0s; the server heals at %v, then serves %d per %v; backoff %v to %v, latency %v\n",
		sc.Clients, sc.HealAt, sc.Capacity, sc.Window, sc.Base, sc.Cap, sc.Latency)
	fmt.Fprintf(&b, "%-13s %4s %6s %8s %8s %8s %9s %10s %6s %10s\n",
		"jitter", "ok", "failed", "p50", "p99", "max", "attempts", "per client", "peak", "peak heal")
	for _, r := range results {
		fmt.Fprintf(&b, "%-13s %4d %6d %8s %8s %8s %9d %10.2f %6d %10d\n",
			r.Kind, r.Succeeded, r.Failed, jitterSeconds(r.P50), jitterSeconds(r.P99), jitterSeconds(r.Max),
			r.Attempts, ratio(r.Attempts, sc.Clients), r.PeakLoad, r.PeakAfterHeal)
	}
	fmt.Fprintf(&b, `
ok/failed   clients that got an attempt served / that spent %d attempts
p50 ... max time from 0 to a client's successful response
attempts    sent by all clients, first attempts included
peak        most retries sent in one %v window (the first attempts all
            go at 0, whatever the backoff)
peak heal   most attempts in one %v window once the server healed
`, sc.MaxAttempts, sc.Window, sc.Window)
	_, err := io.WriteString(w, b.String())
	return err
}

// jitterSeconds formats d in seconds with two decimals.
func jitterSeconds(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
