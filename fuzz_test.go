package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// FuzzClassify classifies arbitrary status codes and error codes, wrapped
// in arbitrary chains, and checks what must hold for any of them.
func FuzzClassify(f *testing.F) {
	f.Add(503, "", uint8(0), uint8(0), false)
	f.Add(400, "ThrottlingException", uint8(2), uint8(1), true)
	f.Add(404, "NoSuchKey", uint8(1), uint8(3), false)
	f.Add(-1, "\x00", uint8(7), uint8(5), true)
	f.Add(503, "SlowDown", uint8(1), uint8(6), false)
	f.Fuzz(func(t *testing.T, status int, code string, depth, mark uint8, join bool) {
		base := &statusError{status: status, code: code}
		var err error = base
		for i := range depth % 8 {
			err = fmt.Errorf("layer %d: %w", i, err)
		}
		if join {
			err = errors.Join(errors.New("other"), err)
		}
		switch mark % 7 {
		case 1:
			err = retry.Permanent(err)
		case 2:
			err = retry.Transient(err)
		case 3:
			err = retry.Throttled(err)
		case 4:
			err = retry.TimedOut(err)
		case 5:
			err = retry.WithRetryAfter(err, time.Duration(status)*time.Millisecond)
		case 6:
			err = &retryableError{retryable: status%2 == 0, err: err}
		}
		c := retry.Classify(err)

		assert.ErrorIs(t, err, base, "marks keep the original reachable")
		assert.GreaterOrEqual(t, c.RetryAfter, time.Duration(0))
		assert.Contains(t, []retry.Safety{retry.SafetyMaybe, retry.SafetyYes, retry.SafetyNo}, c.Safety)
		switch mark % 7 {
		case 1:
			assert.Equal(t, retry.SafetyNo, c.Safety, "Permanent wins")
		case 2, 3, 4:
			assert.Equal(t, retry.SafetyYes, c.Safety, "the mark wins")
		case 6:
			assert.Equal(t, status%2 == 0, c.Retryable(), "RetryableError wins")
			assert.NotEqual(t, retry.SafetyMaybe, c.Safety, "RetryableError decides")
		}
		if mark%7 == 0 {
			switch {
			case retry.IsThrottlingCode(code):
				assert.True(t, c.Throttle && c.Retryable(), "throttling code %q", code)
			case retry.IsTransientCode(code):
				assert.True(t, c.Retryable())
			default:
				want := retry.ClassifyStatus(status)
				assert.Equal(t, want.Safety, c.Safety, "status %d", status)
				assert.Equal(t, want.Throttle, c.Throttle)
				assert.Equal(t, want.Timeout, c.Timeout)
			}
		}
	})
}

// FuzzStrategyOptions builds strategies from arbitrary option values:
// every one is either built and works, or refused with an error that wraps
// ErrInvalidConfig. Nothing panics.
func FuzzStrategyOptions(f *testing.F) {
	f.Add(3, int64(10e6), 1.5, int64(20e9), 1.0, 500, 5, 10, 0.0, true, 0.7)
	f.Add(0, int64(-1), 0.5, int64(0), 2.0, -1, -5, 0, math.NaN(), false, 1.0)
	f.Add(1, int64(0), math.Inf(1), int64(math.MaxInt64), math.Copysign(0, -1), 0, 0, 0, math.Inf(1), false, 0.0)
	f.Fuzz(func(t *testing.T, attempts int, initial int64, scale float64, maxBackoff int64, jitter float64,
		capacity, retryCost, timeoutCost int, refill float64, breaker bool, beta float64) {
		backoff, err := retry.NewExponentialBackoff(retry.WithInitialDelay(time.Duration(initial)),
			retry.WithScaleFactor(scale), retry.WithMaxBackoff(time.Duration(maxBackoff)), retry.WithJitter(jitter))
		if err != nil {
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			require.Nil(t, backoff)
			return
		}
		for n := range 100 {
			d := backoff.Delay(n * n * n)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, time.Duration(maxBackoff))
		}
		a, err := retry.NewAdaptive(retry.WithMaxAttempts(attempts), retry.WithBackoff(backoff),
			retry.WithMaxCapacity(capacity), retry.WithRetryCost(retryCost), retry.WithTimeoutRetryCost(timeoutCost),
			retry.WithRefillRate(refill), retry.WithCircuitBreaker(breaker), retry.WithBeta(beta),
			retry.WithClock(newManualClock()))
		if err != nil {
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			require.Nil(t, a)
			return
		}
		tok, err := a.PlanInitialToken("")
		require.NoError(t, err)
		for range attempts + 1 {
			if tok, err = plan(a, tok, errThrottled); err != nil {
				break
			}
			require.GreaterOrEqual(t, tok.Delay(), time.Duration(0))
		}
		st := a.RetryQuota().Stats()
		require.GreaterOrEqual(t, st.Available, 0.0)
		require.LessOrEqual(t, st.Available, float64(st.Capacity))
	})
}

// FuzzTokenBucket runs arbitrary sequences of acquire, release and clock
// steps on a bucket and checks its bounds after each, and, for a bucket
// without refill in circuit-breaker mode, the exact level against a model.
func FuzzTokenBucket(f *testing.F) {
	f.Add([]byte{0, 5, 1, 5, 2, 10}, uint16(50), uint8(0), false)
	f.Add([]byte{0, 255, 0, 255, 2, 255, 1, 3}, uint16(10), uint8(3), true)
	f.Fuzz(func(t *testing.T, ops []byte, capacity uint16, refill uint8, wait bool) {
		clock := newManualClock()
		wait = wait && refill > 0
		b, err := retry.NewTokenBucket(retry.WithClock(clock), retry.WithMaxCapacity(int(capacity)),
			retry.WithRefillRate(float64(refill)), retry.WithCircuitBreaker(!wait))
		require.NoError(t, err)
		model := float64(capacity)
		for i := 0; i+1 < len(ops); i += 2 {
			n := int(ops[i+1])
			switch ops[i] % 3 {
			case 0:
				_, err := b.Acquire(n)
				if !wait && refill == 0 {
					if float64(n) <= model {
						require.NoError(t, err)
						model -= float64(n)
					} else {
						require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
					}
				}
			case 1:
				require.NoError(t, b.Release(n))
				model = min(model+float64(n), float64(capacity))
			case 2:
				clock.Advance(time.Duration(n) * 10 * time.Millisecond)
			}
			st := b.Stats()
			require.GreaterOrEqual(t, st.Available, 0.0)
			require.LessOrEqual(t, st.Available, float64(st.Capacity))
			require.GreaterOrEqual(t, st.Owed, 0.0)
			require.False(t, st.Available > 0 && st.Owed > 0, "tokens held while some are owed")
			if !wait && refill == 0 {
				require.Equal(t, model, st.Available)
			}
		}
	})
}

// TestLongStress runs 1,000 goroutines through Do on one shared strategy,
// with random failures and random cancellations, and checks that the
// bucket ends exactly where the quota rules put it: a call that made k
// attempts spent 5 for each of its k-1 retries, and got the last one's
// cost back if it then succeeded. Nothing is lost or created.
func TestLongStress(t *testing.T) {
	if testing.Short() {
		t.Skip("long stress test: run without -short")
	}
	const goroutines, calls, capacity = 1000, 20, 1_000_000
	s, err := retry.NewStandard(retry.WithMaxCapacity(capacity), retry.WithInitialTrySuccessIncrement(0),
		retry.WithBackoff(retry.ConstantBackoff(200*time.Microsecond)), retry.WithMaxAttempts(4))
	require.NoError(t, err)
	var spent atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 2))
			for range calls {
				failures := r.IntN(5) // 4 means it never succeeds
				ctx, cancel := context.WithCancel(context.Background())
				timer := time.AfterFunc(time.Duration(r.IntN(600))*time.Microsecond, cancel)
				if r.IntN(3) != 0 {
					timer.Stop()
				}
				n := 0
				_, err := retry.Do(ctx, func(context.Context) (int, error) {
					n++
					if n <= failures {
						return 0, errTransient
					}
					return n, nil
				}, retry.WithStrategy(s))
				timer.Stop()
				cancel()
				attempts := n
				delta := int64(5 * max(attempts-1, 0))
				if err == nil && attempts > 1 {
					delta -= 5
				}
				var e *retry.Error
				if err != nil && assert.ErrorAs(t, err, &e) {
					assert.Equal(t, attempts, e.Attempts)
				}
				spent.Add(delta)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, float64(capacity-spent.Load()), s.RetryQuota().Stats().Available)
}

// FuzzBackoffArithmetic builds backoffs and strategies from arbitrary
// durations, factors, random draws (bad ones included), retry numbers,
// retry-after hints and limits, and checks that no delay is negative or
// wrapped, that caps hold, and that a strategy's delay is exactly
// max(backoff, min(hint, backoff+limit)), the sum saturating.
func FuzzBackoffArithmetic(f *testing.F) {
	const huge = math.MaxInt64
	// The cases of issue 12.
	f.Add(int64(10e6), 1.5, int64(huge), 1.0, 0.0, 1000, int64(0), uint8(1), int64(0), int64(0))
	f.Add(int64(10e6), 1.5, int64(20e9), 1.0, 1.5, 2, int64(0), uint8(1), int64(0), int64(0))
	f.Add(int64(10e6), 1.5, int64(20e9), 0.5, math.NaN(), 2, int64(0), uint8(1), int64(0), int64(0))
	f.Add(int64(1e9), 1.0, int64(1e9), 0.0, 0.5, 1, int64(0), uint8(0), int64(5e9), int64(huge))
	f.Add(int64(huge), 1.0, int64(huge), 0.0, 0.5, 1, int64(0), uint8(0), int64(5e9), int64(time.Hour))
	f.Add(int64(1e9), 3.0, int64(10e9), 1.0, 0.5, 3, int64(huge), uint8(2), int64(huge), int64(time.Hour))
	f.Add(int64(10e6), 92.5, int64(huge-27), 1.0, 0.0, 1000, int64(-22), uint8(1), int64(0), int64(0)) // a cap that rounds up to 2^63
	f.Add(int64(-1), math.Inf(1), int64(-5), -1.0, -1.0, math.MinInt, int64(-1), uint8(2), int64(-1), int64(-1))
	f.Fuzz(func(t *testing.T, initial int64, scale float64, maxB int64, jitter, u float64, n int,
		prev int64, kind uint8, hint, limit int64) {
		opts := []retry.BackoffOption{retry.WithInitialDelay(time.Duration(initial)), retry.WithScaleFactor(scale),
			retry.WithMaxBackoff(time.Duration(maxB)), retry.WithRandom(func() float64 { return u })}
		validU := u >= 0 && u < 1
		valid := initial >= 0 && scale >= 1 && !math.IsInf(scale, 0) && maxB >= initial

		var b retry.Backoff // for the strategy; its first delay is deterministic
		switch kind % 3 {
		case 0:
			b = retry.ConstantBackoff(initial)
			valid = initial >= 0
		case 1:
			e, err := retry.NewExponentialBackoff(append(opts, retry.WithJitter(jitter))...)
			if !(valid && jitter >= 0 && jitter <= 1) {
				require.ErrorIs(t, err, retry.ErrInvalidConfig)
				return
			}
			require.NoError(t, err)
			c := e.Cap(n)
			require.GreaterOrEqual(t, c, min(time.Duration(initial), e.Cap(n)))
			require.LessOrEqual(t, c, time.Duration(maxB))
			if n < math.MaxInt {
				require.LessOrEqual(t, c, e.Cap(n+1), "Cap grows with n")
			}
			d := e.Delay(n)
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, c)
			if !validU {
				require.Equal(t, c, d, "a bad draw waits the cap")
			} else {
				// d = c*(1-jitter*u), within float64 rounding.
				require.InDelta(t, float64(c)*(1-jitter*u), float64(d), 1+float64(c)*1e-15)
			}
			b = e
		case 2:
			dj, err := retry.NewDecorrelatedJitter(opts...)
			if !valid {
				require.ErrorIs(t, err, retry.ErrInvalidConfig)
				return
			}
			require.NoError(t, err)
			base, cp := time.Duration(initial), time.Duration(maxB)
			for _, d := range []time.Duration{dj.DelayAfter(n, time.Duration(prev)), dj.Delay(n)} {
				require.GreaterOrEqual(t, d, base)
				require.LessOrEqual(t, d, cp)
			}
			if !validU && n > 1 {
				hi := float64(max(time.Duration(prev), base)) * scale
				want := cp
				if hi < float64(cp) {
					want = time.Duration(hi)
				}
				require.InDelta(t, float64(want), float64(dj.DelayAfter(n, time.Duration(prev))), 1+float64(want)*1e-15,
					"a bad draw waits the top of the range")
			}
			b = dj
		}
		if !valid {
			return
		}

		// The strategy's delay for the first retry, with a hint and a limit.
		s, err := retry.NewStandard(retry.WithBackoff(b), retry.WithRetryAfterLimit(time.Duration(limit)),
			retry.WithoutRetryQuota(), retry.WithMaxAttempts(3), retry.WithMaxRetryAfter(math.MaxInt64))
		if limit < 0 {
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			return
		}
		require.NoError(t, err)
		tok, err := planFirst(s)
		require.NoError(t, err)
		tok, err = planRetry(s, tok, retry.WithRetryAfter(errTransient, time.Duration(hint)))
		require.NoError(t, err)
		var backoff time.Duration
		if c, ok := b.(retry.ChainedBackoff); ok {
			backoff = c.DelayAfter(1, 0)
		} else {
			backoff = b.Delay(1)
		}
		h := time.Duration(max(hint, 0))
		var want time.Duration
		switch {
		case h <= backoff:
			want = backoff
		case limit == 0 || h-backoff <= time.Duration(limit): // neither side can overflow
			want = h
		default:
			want = backoff + time.Duration(limit) // below h, so no overflow
		}
		require.Equal(t, want, tok.Delay(), "backoff %v, hint %v, limit %v", backoff, h, time.Duration(limit))

		// A chained backoff's second retry starts from the first's backoff.
		if c, ok := b.(retry.ChainedBackoff); ok {
			tok, err = planRetry(s, tok, errTransient)
			require.NoError(t, err)
			require.Equal(t, c.DelayAfter(2, backoff), tok.Delay())
		}
	})
}
