package retry_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// windowServer serves at most capacity attempts in each 1-second window of
// (virtual) time and throttles the rest, answering after latency.
type windowServer struct {
	capacity int
	latency  time.Duration
	start    time.Time

	mu                  sync.Mutex
	window, served      int
	attempts, throttled int
	succeeded           int
}

func (s *windowServer) call(ctx context.Context) error {
	time.Sleep(s.latency)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.attempts++
	if w := int(time.Since(s.start) / time.Second); w != s.window {
		s.window, s.served = w, 0
	}
	if s.served >= s.capacity {
		s.throttled++
		return errThrottled
	}
	s.served++
	s.succeeded++
	return nil
}

// contractLoop is a caller's own retry loop that uses nothing but the
// RetryStrategy methods, as an SDK middleware or an interceptor does: no
// timer code of its own.
func contractLoop(ctx context.Context, s retry.RetryStrategy, call func(context.Context) error) error {
	tok, err := s.AcquireInitialToken(ctx, "")
	if err != nil {
		return err // the refusals this test meets allow no attempt
	}
	for {
		attemptErr := call(ctx)
		if attemptErr == nil {
			return s.RecordSuccess(tok)
		}
		if tok, err = s.RefreshRetryToken(ctx, tok, attemptErr); err != nil {
			return err
		}
	}
}

type pacingResult struct {
	throttledShare, goodput float64
}

// overload runs 60 closed-loop workers against a 20-request/s server (3x
// overload: each thinks 0.5-1.5 s between requests, and each request has
// a 10-s deadline) for d of virtual time, each request made by run, and
// reports what the server saw: scenario (b) of the storm simulation, with
// real goroutines and timers, virtual under synctest.
func overload(t *testing.T, d time.Duration, run func(ctx context.Context, call func(context.Context) error) error) pacingResult {
	var res pacingResult
	synctest.Test(t, func(t *testing.T) {
		srv := &windowServer{capacity: 20, latency: 20 * time.Millisecond, start: time.Now()}
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		var wg sync.WaitGroup
		for w := range 60 {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			wg.Go(func() {
				// Spread the first requests over one think time, as the
				// storm simulation's scenarios do.
				time.Sleep(time.Duration(r.Int64N(int64(1500 * time.Millisecond))))
				for ctx.Err() == nil {
					rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
					_ = run(rctx, srv.call)
					rcancel()
					think := 500*time.Millisecond + time.Duration(r.Int64N(int64(time.Second)))
					select {
					case <-time.After(think):
					case <-ctx.Done():
					}
				}
			})
		}
		wg.Wait()
		srv.mu.Lock()
		defer srv.mu.Unlock()
		res.throttledShare = float64(srv.throttled) / float64(srv.attempts)
		res.goodput = float64(srv.succeeded) / (20 * d.Seconds())
	})
	return res
}

// A caller's own loop that uses only the contract gets the adaptive
// strategy's pacing, as Do does: the send slot is part of the contract,
// not an optional side interface.
func TestContractLoopIsPaced(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2-minute virtual run")
	}
	const d = 5 * time.Minute
	var standard pacingResult
	{
		var s *retry.Standard
		var once sync.Once
		standard = overload(t, d, func(ctx context.Context, call func(context.Context) error) error {
			once.Do(func() { s, _ = retry.NewStandard() })
			return contractLoop(ctx, s, call)
		})
	}
	var adaptiveLoop, adaptiveDo pacingResult
	{
		var a *retry.Adaptive
		var once sync.Once
		adaptiveLoop = overload(t, d, func(ctx context.Context, call func(context.Context) error) error {
			once.Do(func() { a = newAdaptiveDefault(t) })
			return contractLoop(ctx, a, call)
		})
	}
	{
		var a *retry.Adaptive
		var once sync.Once
		adaptiveDo = overload(t, d, func(ctx context.Context, call func(context.Context) error) error {
			once.Do(func() { a = newAdaptiveDefault(t) })
			return retry.Run(ctx, call, retry.WithStrategy(a))
		})
	}
	t.Logf("3x overload, 60 workers, %v: throttled share / goodput: standard %.1f%% / %.1f%%, adaptive contract loop %.1f%% / %.1f%%, adaptive Do %.1f%% / %.1f%%",
		d, 100*standard.throttledShare, 100*standard.goodput, 100*adaptiveLoop.throttledShare, 100*adaptiveLoop.goodput,
		100*adaptiveDo.throttledShare, 100*adaptiveDo.goodput)
	assert.Greater(t, standard.throttledShare, 0.5, "standard mode does not pace")
	for name, r := range map[string]pacingResult{"contract loop": adaptiveLoop, "Do": adaptiveDo} {
		assert.LessOrEqual(t, r.throttledShare, 0.05, "%s: throttled share", name)
		assert.GreaterOrEqual(t, r.goodput, 0.95, "%s: goodput", name)
	}
	assert.InDelta(t, adaptiveDo.throttledShare, adaptiveLoop.throttledShare, 0.01, "the contract loop is paced as Do is")
}

// newAdaptiveDefault returns an Adaptive with its defaults; it must be
// called inside the bubble that uses it, so its limiter reads virtual time.
func newAdaptiveDefault(t *testing.T) *retry.Adaptive {
	a, err := retry.NewAdaptive()
	require.NoError(t, err)
	return a
}
