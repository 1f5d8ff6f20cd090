package retry_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newHedging(t *testing.T, opts ...retry.HedgingOption) *retry.Hedging {
	t.Helper()
	h, err := retry.NewHedging(opts...)
	require.NoError(t, err)
	return h
}

// slowThenFast is a function whose nth call (from 1) takes latency(n), or
// until its context ends, and then returns n.
type slowThenFast struct {
	calls   atomic.Int32
	latency func(n int) time.Duration
	ended   atomic.Int32 // calls that returned because their context ended
}

func (s *slowThenFast) call(ctx context.Context) (int, error) {
	n := int(s.calls.Add(1))
	select {
	case <-time.After(s.latency(n)):
		return n, nil
	case <-ctx.Done():
		s.ended.Add(1)
		return 0, ctx.Err()
	}
}

func TestHedgeWinsAndCancelsTheSlowAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond))
		f := &slowThenFast{latency: func(n int) time.Duration {
			if n == 1 {
				return time.Second
			}
			return 15 * time.Millisecond
		}}
		start := time.Now()
		v, err := retry.DoHedged(t.Context(), f.call, h, retry.WithStrategy(newStandard(t)))
		require.NoError(t, err)
		assert.Equal(t, 2, v, "the hedge's value")
		assert.Equal(t, 25*time.Millisecond, time.Since(start), "the hedge's delay and latency, not the slow attempt's second")
		assert.EqualValues(t, 1, f.ended.Load(), "the slow attempt was cancelled")
		s := h.Stats("")
		assert.EqualValues(t, 1, s.Calls)
		assert.EqualValues(t, 1, s.Hedges)
		assert.EqualValues(t, 1, s.Wins)
	})
}

func TestHedgeNotSentWhenTheAttemptIsQuick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond))
		f := &slowThenFast{latency: func(int) time.Duration { return 9 * time.Millisecond }}
		for range 5 {
			_, err := retry.DoHedged(t.Context(), f.call, h, retry.WithStrategy(newStandard(t)))
			require.NoError(t, err)
		}
		assert.EqualValues(t, 5, f.calls.Load())
		assert.EqualValues(t, 0, h.Stats("").Hedges)
	})
}

// closer is a value that records whether it was closed.
type closer struct{ closed atomic.Bool }

func (c *closer) Close() error { c.closed.Store(true); return nil }

func TestHedgeLosingValueIsClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The first attempt answers at 20 ms, its hedge (sent at 10 ms)
		// at 20 ms too, ignoring its context: one value wins, the other
		// is closed.
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond))
		var calls atomic.Int32
		var made [2]*closer
		fn := func(ctx context.Context) (*closer, error) {
			n := calls.Add(1)
			c := new(closer)
			made[n-1] = c
			if n == 1 {
				time.Sleep(20 * time.Millisecond)
			} else {
				time.Sleep(10 * time.Millisecond)
			}
			return c, nil
		}
		v, err := retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(newStandard(t)))
		require.NoError(t, err)
		require.EqualValues(t, 2, calls.Load())
		assert.False(t, v.closed.Load(), "the winner is the caller's")
		loser := made[0]
		if v == made[0] {
			loser = made[1]
		}
		assert.True(t, loser.closed.Load(), "the loser was closed")
	})
}

func TestHedgesAndRetriesCompose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Round 1: the attempt fails at 30 ms, its hedge (10 ms) fails at
		// 20 ms: both retryable, so the strategy retries; round 2
		// succeeds at once.
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond))
		var calls atomic.Int32
		fn := func(ctx context.Context) (int, error) {
			switch n := calls.Add(1); n {
			case 1:
				time.Sleep(30 * time.Millisecond)
				return 0, retry.Transient(errors.New("attempt"))
			case 2:
				time.Sleep(10 * time.Millisecond)
				return 0, retry.Transient(errors.New("hedge"))
			default:
				return int(n), nil
			}
		}
		var events []retry.EventKind
		var mu sync.Mutex
		s, err := retry.NewStandard(retry.WithHook(func(ev retry.Event) {
			mu.Lock()
			events = append(events, ev.Kind)
			mu.Unlock()
		}), retry.WithBackoff(retry.ConstantBackoff(time.Millisecond)))
		require.NoError(t, err)
		v, err := retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(s))
		require.NoError(t, err)
		assert.Equal(t, 3, v)
		assert.Equal(t, []retry.EventKind{retry.EventAttempt, retry.EventHedge, retry.EventRetry, retry.EventSuccess}, events)
	})
}

func TestHedgeFatalAnswerEndsTheCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The hedge gets an answer not to retry (a 404) while the attempt
		// hangs: the call ends with it, and the attempt is cancelled.
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond))
		notFound := &retry.StatusError{StatusCode: 404}
		var calls atomic.Int32
		fn := func(ctx context.Context) (int, error) {
			if calls.Add(1) == 1 {
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return 0, notFound
		}
		start := time.Now()
		_, err := retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(newStandard(t)))
		require.ErrorIs(t, err, retry.ErrNotRetryable)
		require.ErrorIs(t, err, notFound)
		assert.Equal(t, 10*time.Millisecond, time.Since(start))
	})
}

func TestHedgeBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every call is slow: with a burst of 2 and 0.25 of a hedge per
		// call, 20 calls send 6 hedges, not 20: 2 from the burst (the
		// first call's share finds the budget full), then one every 4
		// calls, within the bound of 2 + 20×0.25 = 7.
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond), retry.WithHedgeBurst(2), retry.WithHedgeBudget(0.25))
		f := &slowThenFast{latency: func(int) time.Duration { return 50 * time.Millisecond }}
		for range 20 {
			_, err := retry.DoHedged(t.Context(), f.call, h, retry.WithStrategy(newStandard(t)))
			require.NoError(t, err)
		}
		s := h.Stats("")
		assert.EqualValues(t, 20, s.Calls)
		assert.EqualValues(t, 6, s.Hedges)
		assert.Less(t, s.Budget, 1.0)
	})
}

func TestHedgePausedByThrottleAndRetryHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond), retry.WithHedgePause(time.Second))
		slow := func(ctx context.Context) (int, error) {
			return after(ctx, 50*time.Millisecond, 1)
		}
		var throttled atomic.Bool
		throttle := func(ctx context.Context) (int, error) {
			if throttled.CompareAndSwap(false, true) {
				return 0, &retry.StatusError{StatusCode: 429}
			}
			return 1, nil
		}
		do := func(fn func(context.Context) (int, error)) {
			_, err := retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(newStandard(t)))
			require.NoError(t, err)
		}
		do(slow)
		require.EqualValues(t, 1, h.Stats("").Hedges)
		do(throttle) // a 429, then a retry that succeeds after its backoff
		assert.InDelta(t, time.Second, h.Stats("").Paused, float64(50*time.Millisecond))
		do(slow)
		assert.EqualValues(t, 1, h.Stats("").Hedges, "no hedge during the pause")
		time.Sleep(time.Second)
		do(slow)
		assert.EqualValues(t, 2, h.Stats("").Hedges, "hedging again after the pause")

		// A Retry-After longer than the pause pauses for its length.
		hint := func(ctx context.Context) (int, error) {
			return 0, retry.Permanent(retry.WithRetryAfter(errors.New("busy"), 3*time.Second))
		}
		_, err := retry.DoHedged(t.Context(), hint, h, retry.WithStrategy(newStandard(t)))
		require.Error(t, err)
		assert.Equal(t, 3*time.Second, h.Stats("").Paused)
	})
}

func TestHedgePushbackStopsTheRoundsHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Two hedges allowed, 10 ms apart: the first hedge is throttled
		// at 15 ms, so the second is never sent.
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond), retry.WithMaxHedges(2))
		var calls atomic.Int32
		fn := func(ctx context.Context) (int, error) {
			if calls.Add(1) == 2 {
				time.Sleep(5 * time.Millisecond)
				return 0, &retry.StatusError{StatusCode: 503, Code: "ThrottlingException"}
			}
			return after(ctx, 100*time.Millisecond, 1)
		}
		_, err := retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(newStandard(t)))
		require.NoError(t, err)
		assert.EqualValues(t, 2, calls.Load())
		assert.EqualValues(t, 1, h.Stats("").Hedges)
	})
}

// A losing attempt that is throttled after the round was won still stops
// the scope's hedges: the service pushed back.
func TestHedgeLoserThrottlePauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond), retry.WithHedgePause(time.Second))
		var calls atomic.Int32
		fn := func(ctx context.Context) (int, error) {
			if calls.Add(1) == 1 {
				time.Sleep(30 * time.Millisecond) // does not watch ctx: returns its throttle after the hedge won
				return 0, &retry.StatusError{StatusCode: 429}
			}
			return 2, nil
		}
		v, err := retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(newStandard(t)))
		require.NoError(t, err)
		assert.Equal(t, 2, v)
		assert.Equal(t, time.Second, h.Stats("").Paused, "paused for a second from the throttle, which DoHedged waited for")
	})
}

func TestHedgeGatedByRetryQuotaAndRateLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := func(ctx context.Context) (int, error) {
			return after(ctx, 50*time.Millisecond, 1)
		}
		// A retry quota below half full: no hedges.
		bucket, err := retry.NewTokenBucket(retry.WithMaxCapacity(10))
		require.NoError(t, err)
		_, err = bucket.Acquire(6)
		require.NoError(t, err)
		s, err := retry.NewStandard(retry.WithRetryQuota(bucket))
		require.NoError(t, err)
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond))
		_, err = retry.DoHedged(t.Context(), slow, h, retry.WithStrategy(s))
		require.NoError(t, err)
		assert.EqualValues(t, 0, h.Stats("").Hedges, "quota below half")
		require.NoError(t, bucket.Release(6))
		_, err = retry.DoHedged(t.Context(), slow, h, retry.WithStrategy(s))
		require.NoError(t, err)
		assert.EqualValues(t, 1, h.Stats("").Hedges, "quota full")

		// An adaptive limiter with no send slot free: no hedge, and none
		// waits for one.
		limiter, err := retry.NewRateLimiter(retry.WithPublishedCUBIC())
		require.NoError(t, err)
		limiter.Update(true) // a throttle turns the published algorithm's limiter on
		require.True(t, limiter.Stats().Enabled)
		for i := 0; ; i++ {
			// Take every slot, and reserve the next.
			require.Less(t, i, 1000, "the limiter never ran out of slots")
			if d, err := limiter.Acquire(); err != nil || d > 0 {
				break
			}
		}
		a, err := retry.NewAdaptive(retry.WithRateLimiter(limiter), retry.WithMaxSendWait(time.Minute))
		require.NoError(t, err)
		h = newHedging(t, retry.WithHedgeDelay(10*time.Millisecond))
		_, err = retry.DoHedged(t.Context(), slow, h, retry.WithStrategy(a))
		require.NoError(t, err)
		assert.EqualValues(t, 0, h.Stats("").Hedges, "no send slot")
	})
}

func TestHedgePanicIsRaisedOnTheCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond))
		var calls atomic.Int32
		var firstEnded atomic.Bool
		fn := func(ctx context.Context) (int, error) {
			if calls.Add(1) == 2 {
				panic("hedge went wrong")
			}
			<-ctx.Done()
			firstEnded.Store(true)
			return 0, ctx.Err()
		}
		assert.PanicsWithValue(t, "hedge went wrong", func() {
			_, _ = retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(newStandard(t)))
		})
		assert.True(t, firstEnded.Load(), "the attempt was cancelled and waited for")

		// A panic in the attempt itself cancels and waits for its hedge.
		var hedgeEnded atomic.Bool
		calls.Store(0)
		fn = func(ctx context.Context) (int, error) {
			if calls.Add(1) == 1 {
				time.Sleep(20 * time.Millisecond)
				panic("attempt went wrong")
			}
			<-ctx.Done()
			hedgeEnded.Store(true)
			return 0, ctx.Err()
		}
		assert.PanicsWithValue(t, "attempt went wrong", func() {
			_, _ = retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(newStandard(t)))
		})
		assert.True(t, hedgeEnded.Load())
	})
}

func TestHedgeAdaptiveDelayTracksLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedging(t) // adaptive, p95
		rng := rand.New(rand.NewPCG(1, 2))
		var mu sync.Mutex // rng's, for the hedges
		var base atomic.Int64
		base.Store(int64(10 * time.Millisecond))
		fn := func(ctx context.Context) (int, error) {
			// base to 2×base, uniformly: the p95 is 1.95×base.
			mu.Lock()
			d := time.Duration(base.Load()) + time.Duration(rng.Int64N(base.Load()))
			mu.Unlock()
			return after(ctx, d, 1)
		}
		s := newStandard(t)
		call := func() {
			_, err := retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(s))
			require.NoError(t, err)
		}
		assert.Zero(t, h.Stats("").Delay, "no delay before any latency is known")
		for range 19 {
			call()
		}
		assert.Zero(t, h.Stats("").Delay, "19 latencies are too few")
		assert.Zero(t, h.Stats("").Hedges)
		for range 400 {
			call()
		}
		within := func(want time.Duration) {
			t.Helper()
			got := h.Stats("").Delay
			assert.GreaterOrEqual(t, float64(got), 0.97*float64(want), "delay %v, want about %v", got, want)
			assert.LessOrEqual(t, float64(got), 1.07*float64(want), "delay %v, want about %v", got, want)
		}
		within(19500 * time.Microsecond)
		hedges := h.Stats("").Hedges
		assert.InDelta(t, 0.05*400, float64(hedges), 0.05*400, "about 5%% of calls hedge: %d of 400", hedges)

		// The latency shifts to 50-100 ms: within two windows (20 s) the
		// delay follows.
		base.Store(int64(50 * time.Millisecond))
		deadline := time.Now().Add(25 * time.Second)
		for time.Now().Before(deadline) {
			call()
		}
		within(97500 * time.Microsecond)
	})
}

func TestHedgeDelayFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedging(t, retry.WithMinHedgeDelay(5*time.Millisecond))
		fn := func(context.Context) (int, error) { return 1, nil } // takes no time
		for range 40 {
			_, err := retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(newStandard(t)))
			require.NoError(t, err)
		}
		assert.Equal(t, 5*time.Millisecond, h.Stats("").Delay)
	})
}

func TestHedgeScopesAreSeparate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond), retry.WithHedgePause(time.Minute))
		throttle := func(context.Context) (int, error) { return 0, &retry.StatusError{StatusCode: 429} }
		_, err := retry.DoHedged(t.Context(), throttle, h, retry.WithScope("a"), retry.WithStrategy(newStandard(t, retry.WithMaxAttempts(1))))
		require.Error(t, err)
		assert.Equal(t, time.Minute, h.Stats("a").Paused)
		assert.Zero(t, h.Stats("b").Paused)
		assert.Zero(t, h.Stats("").Paused)
		assert.EqualValues(t, retry.DefaultHedgeBurst, h.Stats("never used").Budget)
	})
}

func TestNewHedgingErrors(t *testing.T) {
	for _, tc := range []struct {
		opt  retry.HedgingOption
		want string
	}{
		{retry.WithHedgeDelay(-1), "WithHedgeDelay = -1ns, want > 0"},
		{retry.WithHedgeQuantile(0.4), "WithHedgeQuantile = 0.4, want 0.5 to 0.999"},
		{retry.WithHedgeQuantile(1), "WithHedgeQuantile = 1, want 0.5 to 0.999"},
		{retry.WithHedgeQuantile(math.NaN()), "WithHedgeQuantile = NaN, want 0.5 to 0.999"},
		{retry.WithMinHedgeDelay(-time.Second), "WithMinHedgeDelay = -1s, want >= 0"},
		{retry.WithMaxHedges(0), "WithMaxHedges = 0, want 1 to 4"},
		{retry.WithMaxHedges(5), "WithMaxHedges = 5, want 1 to 4"},
		{retry.WithHedgeBudget(0), "WithHedgeBudget = 0, want 0.0001 to 1"},
		{retry.WithHedgeBudget(1.5), "WithHedgeBudget = 1.5, want 0.0001 to 1"},
		{retry.WithHedgeBudget(math.Inf(1)), "WithHedgeBudget = +Inf, want 0.0001 to 1"},
		{retry.WithHedgeBurst(0), "WithHedgeBurst = 0, want 1 to 1000"},
		{retry.WithHedgeBurst(math.MaxInt), "want 1 to 1000"},
		{retry.WithHedgePause(-time.Second), "WithHedgePause = -1s, want 0 to 1h0m0s"},
		{retry.WithHedgePause(2 * time.Hour), "WithHedgePause = 2h0m0s, want 0 to 1h0m0s"},
		{nil, "HedgingOption = nil"},
	} {
		h, err := retry.NewHedging(tc.opt)
		assert.Nil(t, h)
		require.ErrorIs(t, err, retry.ErrInvalidConfig, tc.want)
		assert.ErrorContains(t, err, tc.want)
	}
	_, err := retry.NewHedging(retry.WithHedgeDelay(time.Millisecond), retry.WithHedgeQuantile(0.9))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.ErrorContains(t, err, "not both")

	// A nil or zero Hedging given to Do is refused before any attempt.
	for _, h := range []*retry.Hedging{nil, new(retry.Hedging)} {
		called := false
		err := retry.RunHedged(t.Context(), func(context.Context) error { called = true; return nil }, h)
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
		assert.ErrorContains(t, err, "DoHedged = a nil or zero *Hedging")
		assert.False(t, called)
	}
	err = retry.RunHedged(t.Context(), nil, newHedging(t))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.ErrorContains(t, err, "RunHedged = a nil function")
	assert.Equal(t, retry.HedgingStats{}, (*retry.Hedging)(nil).Stats(""))
}

// TestHedgeStress checks, under the race detector, that concurrent hedged
// calls with random latencies and failures keep the budget's bound
// (hedges at most budget × calls + burst), return each call's own value,
// and leave nothing running (goleak, in TestMain).
func TestHedgeStress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget, burst = 0.2, 5
		h := newHedging(t, retry.WithHedgeDelay(time.Millisecond), retry.WithMaxHedges(3),
			retry.WithHedgeBudget(budget), retry.WithHedgeBurst(burst), retry.WithHedgePause(0))
		s, err := retry.NewStandard(retry.WithoutRetryQuota(), retry.WithMaxAttempts(5),
			retry.WithBackoff(retry.ConstantBackoff(time.Millisecond)))
		require.NoError(t, err)
		var wg sync.WaitGroup
		var failures atomic.Int32
		for g := range 16 {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(g), 7))
				var mu sync.Mutex
				for i := range 50 {
					want := g*1000 + i
					fn := func(ctx context.Context) (int, error) {
						mu.Lock()
						d := time.Duration(rng.Int64N(int64(4 * time.Millisecond)))
						fail := rng.IntN(5) == 0
						mu.Unlock()
						select {
						case <-time.After(d):
						case <-ctx.Done():
							return 0, ctx.Err()
						}
						if fail {
							return 0, retry.Transient(errors.New("flaky"))
						}
						return want, nil
					}
					v, err := retry.DoHedged(t.Context(), fn, h, retry.WithStrategy(s), retry.WithScope("s"))
					if err != nil {
						failures.Add(1)
						continue
					}
					if v != want {
						t.Errorf("call %d got %d", want, v)
					}
				}
			})
		}
		wg.Wait()
		st := h.Stats("s")
		assert.EqualValues(t, 16*50, st.Calls)
		assert.LessOrEqual(t, float64(st.Hedges), budget*float64(st.Calls)+burst)
		assert.Greater(t, st.Hedges, uint64(burst), "hedges were sent")
		assert.LessOrEqual(t, st.Wins, st.Hedges)
		assert.Less(t, int(failures.Load()), 16*50/10)
	})
}

func newStandard(t *testing.T, opts ...retry.StandardOption) *retry.Standard {
	t.Helper()
	s, err := retry.NewStandard(opts...)
	require.NoError(t, err)
	return s
}

// TestHedgingDecisionsOnVirtualTime drives the exported decisions on a
// clock of the test's own, as a simulation does.
func TestHedgingDecisionsOnVirtualTime(t *testing.T) {
	h := newHedging(t, retry.WithHedgeBurst(1), retry.WithHedgeBudget(0.5), retry.WithHedgePause(time.Second))
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Zero(t, h.Delay("api"), "no latency known yet")
	for i := range 100 {
		now = now.Add(10 * time.Millisecond)
		h.ObserveLatency("api", now, time.Duration(i+1)*time.Millisecond) // 1 to 100 ms
	}
	d := h.Delay("api")
	assert.GreaterOrEqual(t, d, 95*time.Millisecond, "the p95 of 1..100 ms, never below")
	assert.LessOrEqual(t, d, 101*time.Millisecond, "within 6.25%% above")
	assert.Zero(t, h.Delay("other"), "scopes apart")

	// Budget: a burst of one, then half a hedge per call.
	assert.True(t, h.TakeHedge("api", now))
	assert.False(t, h.TakeHedge("api", now))
	h.CountCall("api")
	assert.False(t, h.TakeHedge("api", now))
	h.CountCall("api")
	assert.True(t, h.TakeHedge("api", now))

	// A pushback pauses for the longer of the pause and the hint.
	h.CountCall("api")
	h.CountCall("api")
	h.PushBack("api", now, 0)
	assert.False(t, h.TakeHedge("api", now.Add(999*time.Millisecond)))
	assert.True(t, h.TakeHedge("api", now.Add(time.Second)))
	h.CountCall("api")
	h.CountCall("api")
	h.PushBack("api", now, 3*time.Second)
	assert.False(t, h.TakeHedge("api", now.Add(2*time.Second)))
	assert.True(t, h.TakeHedge("api", now.Add(3*time.Second)))
	h.CountWin("api")
	s := h.Stats("api")
	assert.EqualValues(t, 6, s.Calls)
	assert.EqualValues(t, 4, s.Hedges)
	assert.EqualValues(t, 1, s.Wins)

	// Latencies older than two windows (20 s) no longer count.
	h.ObserveLatency("api", now.Add(30*time.Second), time.Millisecond)
	assert.Zero(t, h.Delay("api"), "one recent latency is too few")

	// The decisions of a nil or zero Hedging send nothing and record nothing.
	for _, z := range []*retry.Hedging{nil, new(retry.Hedging)} {
		z.CountCall("a")
		z.ObserveLatency("a", now, time.Second)
		z.PushBack("a", now, time.Second)
		z.CountWin("a")
		assert.False(t, z.TakeHedge("a", now))
		assert.Zero(t, z.Delay("a"))
		assert.Equal(t, retry.HedgingStats{}, z.Stats("a"))
	}
}

// after returns v once d has passed, or ctx's error as soon as ctx ends.
func after(ctx context.Context, d time.Duration, v int) (int, error) {
	select {
	case <-time.After(d):
		return v, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
