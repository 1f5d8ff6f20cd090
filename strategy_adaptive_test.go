package retry_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

var errThrottled = retry.Throttled(errors.New("slow down"))

func TestAdaptiveTakesEveryStandardOption(t *testing.T) {
	q, err := retry.NewTokenBucket()
	require.NoError(t, err)
	opts := []retry.StandardOption{
		retry.WithMaxAttempts(4),
		retry.WithBackoff(retry.NoBackoff),
		retry.WithThrottleBackoff(retry.NoBackoff),
		retry.WithRetryQuota(q),
		retry.WithClassifier(retry.Classify),
		retry.WithClock(newManualClock()),
		retry.WithMaxScopes(3),
		retry.WithProfile(retry.ProfileAWS2026),
		retry.WithRetryAfterLimit(time.Second),
		retry.WithLongPolling(true),
	}
	var aopts []retry.AdaptiveOption
	for _, o := range opts {
		aopts = append(aopts, o)
	}
	a, err := retry.NewAdaptive(aopts...)
	require.NoError(t, err)
	assert.Equal(t, 4, a.MaxAttempts())
	assert.Same(t, q, a.RetryQuota())
}

// A profile and WithPublishedCUBIC each select defaults, and every other
// option overrides both, whatever the order.
func TestAdaptiveProfileAndPublishedOptionOrder(t *testing.T) {
	opts := []retry.AdaptiveOption{retry.WithProfile(retry.ProfileLegacy), retry.WithPublishedCUBIC(), retry.WithBeta(0.6)}
	for _, order := range [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		clock := newManualClock()
		a, err := retry.NewAdaptive(opts[order[0]], opts[order[1]], opts[order[2]], retry.WithClock(clock))
		require.NoError(t, err)
		assert.Nil(t, a.RetryQuota(), "%v: the legacy profile has no retry quota", order)
		l := a.RateLimiter()
		warmUp(l, clock)
		l.Update(true)
		s := l.Stats()
		assert.InDelta(t, 0.6*s.LastMaxRate, s.FillRate, 1e-12, "%v: one throttle cuts the rate to WithBeta's 0.6 of it", order)
		assert.Zero(t, s.LearnedShare, "%v: the published algorithm learns no share", order)
	}
}

func TestAdaptiveDoesNotDelayBeforeThrottling(t *testing.T) {
	a, err := retry.NewAdaptive(retry.WithClock(newManualClock()))
	require.NoError(t, err)
	for range 100 {
		tok, err := a.PlanInitialToken("")
		require.NoError(t, err)
		assert.Equal(t, time.Duration(0), tok.Delay())
		d, err := a.Admit(tok)
		require.NoError(t, err)
		assert.Equal(t, time.Duration(0), d)
		tok, err = plan(a, tok, errTransient)
		require.NoError(t, err)
		require.NoError(t, a.RecordSuccess(tok))
	}
	assert.False(t, a.RateLimiter().Stats().Enabled)
}

func TestAdaptiveSlowsAfterThrottling(t *testing.T) {
	clock := newManualClock()
	a, err := retry.NewAdaptive(retry.WithClock(clock), retry.WithBackoff(retry.NoBackoff), retry.WithThrottleBackoff(retry.NoBackoff))
	require.NoError(t, err)

	// 20 sends a second for 2 s, then 10 more, every other one throttled:
	// a throttled share of 50% in the window [2 s, 2.5 s).
	for range 40 {
		tok, _ := a.PlanInitialToken("")
		_, err := a.Admit(tok)
		require.NoError(t, err)
		require.NoError(t, a.RecordSuccess(tok))
		clock.Advance(50 * time.Millisecond)
	}
	var tok retry.RetryToken
	for i := range 10 {
		tok, _ = a.PlanInitialToken("")
		_, err = a.Admit(tok)
		require.NoError(t, err)
		if i%2 == 0 {
			_, err = plan(a, tok, errThrottled)
		} else {
			err = a.RecordSuccess(tok)
		}
		require.NoError(t, err)
		clock.Advance(50 * time.Millisecond)
	}
	require.False(t, a.RateLimiter().Stats().Enabled, "the limiter decides when the window closes")
	// The window closes at the next outcome: the rate is cut.
	tok, _ = a.PlanInitialToken("")
	_, err = a.Admit(tok)
	require.NoError(t, err)
	tok, err = plan(a, tok, errThrottled)
	require.NoError(t, err)
	stats := a.RateLimiter().Stats()
	require.True(t, stats.Enabled, "a high throttled share enables the limiter")
	assert.Less(t, stats.FillRate, stats.MeasuredRate, "the rate was cut below the measured send rate")

	// Take every slot there is now; the next attempt must wait for one.
	admitted := 0
	var wait time.Duration
	for {
		next, err := a.PlanInitialToken("")
		require.NoError(t, err)
		if wait, err = a.Admit(next); err != nil || wait > 0 {
			require.NoError(t, err)
			break
		}
		admitted++
		require.Less(t, admitted, 1000)
	}
	assert.Positive(t, wait)
	clock.Advance(wait)
	d, err := a.Admit(tok)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), d, "after the wait, a slot is due")
	d, err = a.Admit(tok)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), d, "an admitted token stays admitted")
}

func TestAdaptiveFailFast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The published algorithm: its first throttle enables the limiter.
		a, err := retry.NewAdaptive(retry.WithPublishedCUBIC(), retry.WithFailFast(true), retry.WithBackoff(retry.NoBackoff),
			retry.WithThrottleBackoff(retry.NoBackoff), retry.WithMaxAttempts(10))
		require.NoError(t, err)
		calls := 0
		_, err = retry.Do(t.Context(), func(context.Context) (int, error) {
			calls++
			return 0, errThrottled
		}, retry.WithStrategy(a))
		require.ErrorIs(t, err, retry.ErrRateLimited, "the limiter refused an attempt instead of delaying it")
		require.ErrorIs(t, err, errThrottled)
		assert.Less(t, calls, 10)

		calls = 0
		_, err = retry.Do(t.Context(), func(context.Context) (int, error) { calls++; return 1, nil }, retry.WithStrategy(a))
		require.ErrorIs(t, err, retry.ErrRateLimited)
		var e *retry.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, 0, e.Attempts)
		assert.Equal(t, 0, calls, "no send slot, no attempt")
	})
}

func TestAdaptiveDoWaitsForSendSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, err := retry.NewAdaptive(retry.WithPublishedCUBIC(), retry.WithBackoff(retry.NoBackoff), retry.WithThrottleBackoff(retry.NoBackoff),
			retry.WithMaxAttempts(3))
		require.NoError(t, err)
		// One throttle enables the published limiter at the minimum rate.
		_, _ = retry.Do(t.Context(), func(context.Context) (int, error) { return 0, retry.Permanent(errThrottled) }, retry.WithStrategy(a))
		require.True(t, a.RateLimiter().Stats().Enabled)

		start := time.Now()
		var sends []time.Duration
		for range 5 {
			_, err := retry.Do(t.Context(), func(context.Context) (int, error) {
				sends = append(sends, time.Since(start))
				return 1, nil
			}, retry.WithStrategy(a))
			require.NoError(t, err)
		}
		require.Len(t, sends, 5)
		assert.Positive(t, sends[4]-sends[0], "sends were spread out by the limiter")
	})
}

func TestAdaptiveSharedLimiter(t *testing.T) {
	l, err := retry.NewRateLimiter(retry.WithPublishedCUBIC())
	require.NoError(t, err)
	a1, err := retry.NewAdaptive(retry.WithRateLimiter(l))
	require.NoError(t, err)
	a2, err := retry.NewAdaptive(retry.WithRateLimiter(l))
	require.NoError(t, err)
	assert.Same(t, l, a1.RateLimiter())
	tok, _ := a2.PlanInitialToken("some-scope")
	_, err = plan(a2, tok, errThrottled)
	require.NoError(t, err)
	assert.True(t, a1.RateLimiter().Stats().Enabled, "a2's throttle slowed a1 too")
}

func TestAdaptiveScopesHaveTheirOwnLimiter(t *testing.T) {
	a, err := retry.NewAdaptive(retry.WithPublishedCUBIC())
	require.NoError(t, err)
	tok, _ := a.PlanInitialToken("table-a")
	_, err = plan(a, tok, errThrottled)
	require.NoError(t, err)
	assert.False(t, a.RateLimiter().Stats().Enabled, "the default scope was not throttled")
	tok, _ = a.PlanInitialToken("")
	d, err := a.Admit(tok)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), d)
}

func TestAdaptiveInvalidTokens(t *testing.T) {
	a, err := retry.NewAdaptive()
	require.NoError(t, err)
	s, err := retry.NewStandard()
	require.NoError(t, err)
	foreign, _ := s.PlanInitialToken("")
	used, _ := a.PlanInitialToken("")
	require.NoError(t, a.RecordSuccess(used))
	for _, tok := range []retry.RetryToken{nil, foreign, used, customToken{}} {
		_, err := a.Admit(tok)
		require.ErrorIs(t, err, retry.ErrInvalidToken)
		_, err = plan(a, tok, errTransient)
		require.ErrorIs(t, err, retry.ErrInvalidToken)
	}
}

func TestAdaptiveBadOptions(t *testing.T) {
	l, err := retry.NewRateLimiter()
	require.NoError(t, err)
	tests := []struct {
		name   string
		opts   []retry.AdaptiveOption
		option string
	}{
		{"nil limiter", []retry.AdaptiveOption{retry.WithRateLimiter(nil)}, "WithRateLimiter"},
		{"limiter and limiter options", []retry.AdaptiveOption{retry.WithRateLimiter(l), retry.WithBeta(0.5)}, "RateLimiterOption"},
		{"bad limiter option", []retry.AdaptiveOption{retry.WithBeta(1.5)}, "WithBeta"},
		{"bad standard option", []retry.AdaptiveOption{retry.WithMaxAttempts(0)}, "WithMaxAttempts"},
		{"bad bucket option", []retry.AdaptiveOption{retry.WithMaxCapacity(-1)}, "WithMaxCapacity"},
		{"nil clock", []retry.AdaptiveOption{retry.WithClock(nil)}, "WithClock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := retry.NewAdaptive(tt.opts...)
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.Contains(t, err.Error(), tt.option)
			assert.Nil(t, a)
		})
	}
}

// The retry quota of an adaptive strategy works exactly as in standard
// mode: the SEP v2.0 outage scenario, through both.
func TestAdaptiveQuotaMatchesStandard(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  func(q *retry.TokenBucket) (planner, error)
	}{
		{"standard", func(q *retry.TokenBucket) (planner, error) {
			return retry.NewStandard(retry.WithRetryQuota(q), retry.WithMaxAttempts(10))
		}},
		{"adaptive", func(q *retry.TokenBucket) (planner, error) {
			return retry.NewAdaptive(retry.WithRetryQuota(q), retry.WithMaxAttempts(10))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := retry.NewTokenBucket(retry.WithMaxCapacity(20))
			require.NoError(t, err)
			s, err := tc.new(q)
			require.NoError(t, err)
			tok, _ := s.PlanInitialToken("")
			var levels []float64
			for range 5 {
				tok, err = plan(s, tok, errThrottled)
				levels = append(levels, q.Stats().Available)
				if err != nil {
					require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
					break
				}
			}
			assert.Equal(t, []float64{15, 10, 5, 0, 0}, levels)
		})
	}
}

// Many goroutines share one adaptive strategy against a server that
// throttles a quarter of attempts at random and takes 50 ms to
// answer; checks race-freedom and the limiter's invariants, for both
// algorithms.
func TestAdaptiveStress(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []retry.AdaptiveOption
	}{
		{"default", nil},
		{"published", []retry.AdaptiveOption{retry.WithPublishedCUBIC()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a, err := retry.NewAdaptive(append(tc.opts, retry.WithMaxAttempts(4), retry.WithMaxCapacity(1_000_000))...)
				require.NoError(t, err)
				var wg sync.WaitGroup
				for g := range 100 {
					wg.Go(func() {
						r := rand.New(rand.NewPCG(uint64(g), 1))
						for range 20 {
							_, _ = retry.Do(t.Context(), func(context.Context) (int, error) {
								time.Sleep(50 * time.Millisecond)
								if r.IntN(4) == 0 {
									return 0, errThrottled
								}
								return 1, nil
							}, retry.WithStrategy(a))
						}
					})
				}
				wg.Wait()
				st := a.RateLimiter().Stats()
				assert.True(t, st.Enabled, "a quarter of attempts throttled enables the limiter")
				assert.GreaterOrEqual(t, st.FillRate, retry.DefaultMinFillRate)
				assert.GreaterOrEqual(t, st.Capacity, float64(retry.DefaultMinCapacity))
				assert.LessOrEqual(t, a.RetryQuota().Stats().Available, 1_000_000.0)
			})
		})
	}
}

// stealingClock is a Sleeper whose waits end at once, by advancing the
// clock; the first wait ends with another client of the shared limiter
// taking the send slot the waiter was waiting for.
type stealingClock struct {
	*manualClock
	l     *retry.RateLimiter
	steal bool
}

func (c *stealingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.Advance(d)
	if c.steal {
		c.steal = false
		_, _ = c.l.Acquire()
	}
	return ctx.Err()
}

// A retry's delay adds the wait for a send slot to the backoff: the sum
// saturates instead of wrapping around to a negative delay, whatever the
// hint and the send wait allow.
func TestAdaptiveDelaySaturates(t *testing.T) {
	clock := &stealingClock{manualClock: newManualClock()}
	l, err := retry.NewRateLimiter(retry.WithClock(clock), retry.WithPublishedCUBIC())
	require.NoError(t, err)
	clock.l = l
	a, err := retry.NewAdaptive(retry.WithClock(clock), retry.WithRateLimiter(l),
		retry.WithMaxSendWait(math.MaxInt64), retry.WithoutRetryQuota(), retry.WithMaxRetryAfter(math.MaxInt64))
	require.NoError(t, err)
	ctx := context.Background()
	tok, err := a.AcquireInitialToken(ctx, "")
	require.NoError(t, err)
	clock.steal = true
	hint := time.Duration(math.MaxInt64 - int64(time.Second))
	tok, err = a.RefreshRetryToken(ctx, tok, retry.WithRetryAfter(errThrottled, hint))
	require.NoError(t, err)
	assert.Equal(t, time.Duration(math.MaxInt64), tok.Delay())
}
