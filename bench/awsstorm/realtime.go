package awsstorm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/internal/storm"
)

// RealtimeResult is what one retryer did in a real-time run.
type RealtimeResult struct {
	Mode                          string
	Requests, Succeeded, Failed   int // requests that ended within the run
	Attempts, Throttled           int // attempts those requests sent, and those answered 429
	Amplification, ThrottledShare float64
	Goodput                       float64 // successes / (capacity x duration)
}

// The retryers of a real-time run.
var RealtimeModes = []string{storm.Adaptive.String(), AWSAdaptive}

// RunRealtime runs retrykit's adaptive mode (NewAdaptive, as the
// simulation's "adaptive") and the SDK's adaptive retryer (NewAdaptiveMode)
// side by side for sc.Duration of wall time, each against a server of its
// own that works as the simulation's: it serves sc.Capacity attempts in
// each 1-second window of the real clock (from the run's start) and
// answers the others 429, after sc.Latency, in-process, with no network.
// The workers too are the simulation's: sc.Workers goroutines per
// retryer, each sending a request, thinking ThinkMin-ThinkMax, and sending
// the next; a request has RequestTimeout from its start.
//
// retrykit runs through retry.Do, the SDK's retryer through the loop of
// the SDK's retry middleware, each on the real clock and its own sleeps:
// no go:linkname redirection. The numbers depend on the machine's
// scheduling and timers, so they vary from run to run; think times and
// backoff jitter come from seed. sc must have no incident.
func RunRealtime(sc storm.Scenario, seed uint64) ([]RealtimeResult, error) {
	switch {
	case sc.Incident != storm.Incident{}:
		return nil, errors.New("awsstorm: the real-time run has no incidents")
	case sc.Duration <= 0 || !(sc.Capacity > 0) || sc.Workers < 1 || sc.ThinkMax < sc.ThinkMin || sc.ThinkMin < 0:
		return nil, errors.New("awsstorm: invalid scenario")
	}
	if err := checkMode(); err != nil {
		return nil, err
	}
	// The SDK's adaptive retryer needs the real clock for the run.
	sdkClock.Lock()
	defer sdkClock.Unlock()

	// retrykit's adaptive mode with its defaults, on the system clock,
	// which its waits need.
	backoff, err := retry.NewExponentialBackoff(retry.WithRandom(lockedRandom(seed, 0)))
	if err != nil {
		return nil, err
	}
	rk, err := retry.NewAdaptive(retry.WithBackoff(backoff))
	if err != nil {
		return nil, err
	}
	rkStrategy := retry.WithStrategy(rk)
	sdk := awsretry.NewAdaptiveMode(func(o *awsretry.AdaptiveModeOptions) {
		o.StandardOptions = append(o.StandardOptions, seeded(lockedRandom(seed, 1)))
	})

	results := make([]RealtimeResult, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		results[0] = runClients(sc, seed, RealtimeModes[0], func(ctx context.Context, call func(context.Context) error) error {
			return retry.Run(ctx, call, rkStrategy)
		})
	})
	wg.Go(func() {
		results[1] = runClients(sc, seed, RealtimeModes[1], func(ctx context.Context, call func(context.Context) error) error {
			_, err := SDKDo(ctx, sdk, func(ctx context.Context) (struct{}, error) { return struct{}{}, SDKError(call(ctx)) })
			return err
		})
	})
	wg.Wait()
	return results, nil
}

// lockedRandom returns a seeded source of [0, 1) safe for concurrent use.
func lockedRandom(seed, stream uint64) func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, stream^0x5851f42d4c957f2d))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

// statusError is the real-time server's error response; retrykit
// classifies it by its status, and SDKError turns it into the SDK's.
type statusError int

func (e statusError) Error() string       { return fmt.Sprintf("HTTP %d", int(e)) }
func (e statusError) HTTPStatusCode() int { return int(e) }

// realServer serves a capacity per 1-second window of the real clock.
type realServer struct {
	mu         sync.Mutex
	start      time.Time
	rate       float64
	window     int64
	allowance  int
	cumulative float64
}

// answer decides the response to an attempt that arrives now, as the
// simulation's server does: fractional capacities carry over.
func (sv *realServer) answer() error {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if w := int64(time.Since(sv.start) / time.Second); w != sv.window {
		// A new window: its allowance is what the capacity adds to the
		// cumulative total, in whole requests. Windows nobody asked in
		// served nothing.
		before := math.Floor(sv.cumulative)
		sv.cumulative += sv.rate
		sv.allowance = int(math.Floor(sv.cumulative) - before)
		sv.window = w
	}
	if sv.allowance <= 0 {
		return statusError(429)
	}
	sv.allowance--
	return nil
}

// runClients runs sc.Workers closed-loop workers that send their requests
// through do for sc.Duration, and counts the requests that ended within
// it.
func runClients(sc storm.Scenario, seed uint64, mode string, do func(context.Context, func(context.Context) error) error) RealtimeResult {
	start := time.Now()
	sv := &realServer{start: start, rate: sc.Capacity, window: -1}
	end := start.Add(sc.Duration)
	runCtx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()

	var mu sync.Mutex
	res := RealtimeResult{Mode: mode}
	var wg sync.WaitGroup
	for i := range sc.Workers {
		r := rand.New(rand.NewPCG(seed, uint64(i)+1))
		think := func() time.Duration {
			return sc.ThinkMin + time.Duration(r.Int64N(int64(sc.ThinkMax-sc.ThinkMin)+1))
		}
		wg.Go(func() {
			// Spread the first requests over one think time.
			if sleep(runCtx, time.Duration(r.Int64N(int64(sc.ThinkMax)+1))) != nil {
				return
			}
			for {
				var attempts, throttled int
				call := func(ctx context.Context) error {
					attempts++
					err := sv.answer()
					if err != nil {
						throttled++
					}
					if e := sleep(ctx, sc.Latency); e != nil {
						return e
					}
					return err
				}
				ctx, cancelReq := runCtx, context.CancelFunc(func() {})
				if sc.RequestTimeout > 0 {
					ctx, cancelReq = context.WithTimeout(runCtx, sc.RequestTimeout)
				}
				err := do(ctx, call)
				cancelReq()
				if time.Now().After(end) || runCtx.Err() != nil {
					return // ended after the run: not counted
				}
				mu.Lock()
				res.Requests++
				res.Attempts += attempts
				res.Throttled += throttled
				if err == nil {
					res.Succeeded++
				} else {
					res.Failed++
				}
				mu.Unlock()
				if sleep(runCtx, think()) != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	res.Amplification = ratio(res.Attempts, res.Requests)
	res.ThrottledShare = ratio(res.Throttled, res.Attempts)
	res.Goodput = float64(res.Succeeded) / (sc.Capacity * sc.Duration.Seconds())
	return res
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
