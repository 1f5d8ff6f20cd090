package redisretry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newVClock returns a virtual clock, which the tests move by hand.
func newVClock() *retrytest.Clock {
	return retrytest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

// newTestFleet returns a Fleet on virtual time, Redis's included, that
// refreshes only when the test says.
func newTestFleet(t testing.TB, rdb redis.UniversalClient, name string, clock *retrytest.Clock, opts ...Option) *Fleet {
	t.Helper()
	// The clock is virtual but the calls to Redis are real: an admission
	// is given as long as a busy machine takes to answer it, so that what
	// a test sees does not depend on the load (opts may set a shorter
	// timeout, to test one).
	f, err := newFleet(rdb, name, append([]Option{WithClock(clock), WithAdmitTimeout(10 * time.Second)}, opts...))
	require.NoError(t, err)
	f.redisNow = clock.Now
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// attempts records n attempts, throttled as throttled says, spread over
// the next second of the clock.
func attempts(f *Fleet, n int, throttled func(i int) bool) {
	for i := range n {
		f.limiter.Update(throttled != nil && throttled(i))
	}
}

// stepper returns step: each call advances the clock a second and, for
// each of fleets in turn, records n attempts, throttled as throttled says,
// and refreshes it.
func stepper(t *testing.T, clock *retrytest.Clock, n int, fleets ...*Fleet) (step func(throttled func(i int) bool)) {
	return func(throttled func(i int) bool) {
		t.Helper()
		clock.Advance(time.Second)
		for _, f := range fleets {
			attempts(f, n, throttled)
			require.NoError(t, f.refresh(context.Background()))
		}
	}
}

func TestNewBadOptions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	for _, tc := range []struct {
		opt  Option
		want string
	}{
		{WithRate(0), "WithRate"},
		{WithRate(-5), "WithRate"},
		{WithRate(math.NaN()), "WithRate"},
		{WithRate(math.Inf(1)), "WithRate"},
		{WithHeadroom(1), "WithHeadroom"},
		{WithHeadroom(-0.1), "WithHeadroom"},
		{WithInterval(time.Millisecond), "WithInterval"},
		{WithLease(time.Millisecond), "WithLease"},
		{WithExactBelow(-1), "WithExactBelow"},
		{WithExactBelow(math.NaN()), "WithExactBelow"},
		{WithBurst(0), "WithBurst"},
		{WithMaxWait(-time.Second), "WithMaxWait"},
		{WithAdmitTimeout(0), "WithAdmitTimeout"},
		{WithRetryBudget(-1, 10, 10*time.Second), "WithRetryBudget"},
		{WithRetryBudget(0.2, math.Inf(1), 10*time.Second), "WithRetryBudget"},
		{WithRetryBudget(0.2, 10, time.Millisecond), "WithRetryBudget"},
		{WithPrefix("a{b"), "WithPrefix"},
		{WithMember("a b"), "WithMember"},
		{WithClock(nil), "WithClock"},
		{Option{}, "zero Option"},
		{WithStrategyOptions(retry.WithMaxAttempts(0)), "WithStrategyOptions"},
		{WithLimiterOptions(retry.WithBeta(2)), "WithLimiterOptions"},
	} {
		f, err := New(context.Background(), rdb, "x", tc.opt)
		require.ErrorIs(t, err, retry.ErrInvalidConfig, tc.want)
		assert.Contains(t, err.Error(), tc.want)
		assert.Nil(t, f)
	}
	_, err := New(context.Background(), nil, "x")
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	for _, name := range []string{"", "a{b", "a}"} {
		_, err = New(context.Background(), rdb, name)
		require.ErrorIs(t, err, retry.ErrInvalidConfig, name)
		assert.Contains(t, err.Error(), "limit name")
	}
}

// TestSharesMaxMinFair: a configured rate of 10 between members that send
// 1, 2 and 10 a second, and so want 10% more: 1.1, 2.2 and the 6.7 left.
func TestSharesMaxMinFair(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	wants := map[string]int{"a": 1, "b": 2, "c": 10}
	fleets := map[string]*Fleet{}
	for id := range wants {
		fleets[id] = newTestFleet(t, rdb, "fair", clock, WithRate(10), WithHeadroom(0), WithMember(id), WithExactBelow(0))
	}
	ctx := context.Background()
	for range 4 {
		clock.Advance(time.Second)
		for id, f := range fleets {
			attempts(f, wants[id], nil)
			require.NoError(t, f.refresh(ctx))
		}
	}
	for id, want := range map[string]float64{"a": 1.1, "b": 2.2, "c": 6.7} {
		s := fleets[id].Stats()
		assert.InDelta(t, want, s.Share, 1e-9, id)
		assert.Equal(t, 10.0, s.Capacity)
		assert.Equal(t, 3, s.Members)
		assert.True(t, s.Connected)
		assert.InDelta(t, want, fleets[id].limiter.Stats().FillRate, 1e-9, "the limiter paces at the share")
	}
}

// TestSharesCountMarginsOnce: with leases and the default headroom, what a
// member below the level leaves to the others is counted from what it
// sends, not from its want with the margin: members sending 1, 2 and 10
// a second of a configured 10 (8.75 with the headroom) get 1.1, 2.2 and the
// 5.75 the first two do not send; 9.05 in all, within the capacity and
// the margins (9.625) and the configured rate.
func TestSharesCountMarginsOnce(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	sends := map[string]int{"a": 1, "b": 2, "c": 10}
	fleets := map[string]*Fleet{}
	for id := range sends {
		fleets[id] = newTestFleet(t, rdb, "margins", clock, WithRate(10), WithMember(id), WithExactBelow(0))
	}
	ctx := context.Background()
	for range 4 {
		clock.Advance(time.Second)
		for id, f := range fleets {
			attempts(f, sends[id], nil)
			require.NoError(t, f.refresh(ctx))
		}
	}
	for id, want := range map[string]float64{"a": 1.1, "b": 2.2, "c": 5.75} {
		assert.InDelta(t, want, fleets[id].Stats().Share, 1e-9, id)
	}
}

// TestSharesNeverExceedCapacity: members joining, leaving and changing
// what they want; at every moment the shares held add up to at most the
// capacity, without headroom; with the default headroom, at most the
// capacity and the members' margins, within the configured rate.
func TestSharesNeverExceedCapacity(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	ctx := context.Background()
	for _, headroom := range []float64{0, DefaultHeadroom} {
		clock := newVClock()
		room := min(8*(1-headroom)*(1+wantMargin), 8)
		var fleets []*Fleet
		for i := range 12 {
			fleets = append(fleets, newTestFleet(t, rdb, fmt.Sprint("cap", headroom), clock, WithRate(8), WithHeadroom(headroom),
				WithMember(string(rune('a'+i))), WithExactBelow(0)))
		}
		most := 0.0
		for round := range 30 {
			clock.Advance(time.Second)
			for i, f := range fleets {
				active := i < 4 || round >= 5 && (i < 8 || round < 20) // 4, then 12, then 8
				if !active {
					continue
				}
				attempts(f, 1+(i+round)%5, nil)
				require.NoError(t, f.refresh(ctx))
				sum := 0.0
				for _, g := range fleets {
					// A member that stopped refreshing holds its share
					// until its lease ends, when the fleet drops it.
					if s := g.Stats(); s.LeaseUntil.After(clock.Now()) {
						sum += s.Share
					}
				}
				most = max(most, sum)
				require.LessOrEqual(t, sum, room*(1+12e-6), "headroom %v, round %d: the shares held add up to more than they may", headroom, round)
			}
		}
		if headroom > 0 {
			assert.Greater(t, most, 8*(1-headroom)*(1+1e-3), "the margins are counted once: the shares add up to more than the capacity at times")
		}
	}
}

// TestLearnedCapacity: without a configured rate the fleet has no limit
// until its attempts are throttled; then it cuts to what the service
// accepted, and grows again while nothing is throttled.
func TestLearnedCapacity(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	a := newTestFleet(t, rdb, "learn", clock, WithMember("a"), WithExactBelow(0))
	step := stepper(t, clock, 100, a)
	for range 3 {
		step(nil)
	}
	require.True(t, math.IsInf(a.Stats().Share, 1), "no limit before a throttle: %+v", a.Stats())
	require.True(t, math.IsInf(a.limiter.Stats().FillRate, 1), "the limiter does not pace")
	// 100 attempts a second, 40 throttled: the service accepts 60. The
	// evidence holds the three intervals before too: 400 attempts, 360
	// accepted, in 3.5 s (the first interval counts from the first
	// refresh, half an interval).
	step(func(i int) bool { return i%5 < 2 })
	capacity := a.Stats().Capacity
	w := 360 / 3.5
	assert.InDelta(t, learnStart*w, capacity, 1e-6, "the first cut: 90% of the accepted rate")
	assert.InDelta(t, capacity, a.Stats().Share, 1e-6)
	// 2 throttles in 100 are within the tolerance: no cut. The capacity
	// grows along the cubic curve: back to the estimate in about 10 s.
	k := math.Cbrt((1 - learnStart) / learnGrowth)
	for i := 1; i <= 10; i++ {
		step(func(i int) bool { return i%50 == 0 })
		x := float64(i) - k
		assert.InDelta(t, w*(1+learnGrowth*x*x*x), a.Stats().Capacity, 1e-6, "%d s after the cut", i)
	}
}

// Under exact admission, the first throttles do not set the estimate:
// sends that arrive at random are throttled well below the rate of a
// service that holds little burst. The fleet spaces its sends at the rate
// it sent, and after the cooldown cuts on what the service accepted of
// them; if it throttled too few to cut, the rate sent is the estimate,
// and the curve grows past it.
func TestLearnedCapacitySpacesFirst(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	for _, tc := range []struct {
		name      string
		throttled func(i int) bool // after the first throttles
		want      float64          // the capacity once the cooldown is over
	}{
		// Spaced, a service of 5 a second admits 5 of the 20: 90% of 5.
		{"cut", func(i int) bool { return i%4 != 0 }, learnStart * 5},
		{"no cut", nil, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newVClock()
			a := newTestFleet(t, rdb, "learn-spaced-"+strings.ReplaceAll(tc.name, " ", "-"), clock, WithMember("a"))
			require.Greater(t, float64(DefaultExactBelow), 20.0)
			step := stepper(t, clock, 20, a)
			for range 3 {
				step(nil)
			}
			require.True(t, math.IsInf(a.Stats().Capacity, 1), "no limit before a throttle: %+v", a.Stats())
			// 20 attempts a second, 12 throttled: the rate accepted, 8,
			// is not the estimate; the sends are spaced at the 20 sent.
			step(func(i int) bool { return i%5 < 3 })
			assert.InDelta(t, 20, a.Stats().Capacity, 1e-6, "spaced at the rate sent")
			require.True(t, a.Stats().Exact)
			assert.Equal(t, a.limiter.Stats().Throttles, a.toldThrottles.Load(), "the throttles under leases are not told to exact admission")
			cooldown := a.cooldown()
			for at := time.Second; at <= cooldown; at += time.Second {
				step(tc.throttled)
				if at < cooldown {
					assert.InDelta(t, 20, a.Stats().Capacity, 1e-6, "%v after: within the cooldown", at)
				}
			}
			assert.InDelta(t, tc.want, a.Stats().Capacity, 1e-6, "after the cooldown")
			step(nil)
			assert.Greater(t, a.Stats().Capacity, tc.want, "the curve grows")
		})
	}
}

// TestLearnedProbeEndsOnAThrottle: past its estimate, the learned rate
// probes for a rate that has risen. Under exact admission the sends are
// spaced, and the first throttle ends the probe: a cut back to 90% of the
// estimate, which it keeps. With leases one throttle in a hundred attempts
// is noise, and the probe goes on. A probe that ends in significant
// throttles is cut on them, and the cut is not tested for the throttles'
// cause: they are the probe's own.
func TestLearnedProbeEndsOnAThrottle(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name               string
		exact, significant bool
	}{{"exact", true, false}, {"exact-significant", true, true}, {"leases", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newVClock()
			opts := []Option{WithMember("a")}
			if !tc.exact {
				opts = append(opts, WithExactBelow(0))
			}
			a := newTestFleet(t, rdb, "learn-probe-"+tc.name, clock, opts...)
			step := stepper(t, clock, 20, a)
			for range 3 {
				step(nil)
			}
			// A cut: under exact admission, first spaced at the 20 sent,
			// then (nothing throttled after the cooldown) the estimate is
			// 20; with leases the estimate is what was accepted.
			step(func(i int) bool { return i%5 < 3 })
			for range 8 {
				step(nil)
			}
			w, err := rdb.HGet(ctx, a.keys[1], "w").Float64()
			require.NoError(t, err)
			if tc.exact {
				require.InDelta(t, 20, w, 1e-6, "the estimate")
			}
			for i := 0; a.Stats().Capacity <= w; i++ {
				require.Less(t, i, 30, "the curve never passes the estimate")
				step(nil)
			}
			probe := a.Stats().Capacity
			if tc.exact {
				// The process tells exact admission of the throttle with
				// its next attempt: the fleet's sends go back to 90% of
				// the estimate at once, not at the end of the interval.
				a.limiter.Update(true)
				_, _, err := a.reserve(ctx, time.Second)
				require.NoError(t, err)
				field := func(name string) float64 {
					v, err := rdb.HGet(ctx, a.keys[1], name).Float64()
					require.NoError(t, err, name)
					return v
				}
				assert.InDelta(t, learnStart*w, field("cap"), 1e-6, "the fleet's sends at once")
				assert.InDelta(t, probe, field("probed"), 1e-6, "the capacity probed, for the cut")
				_, _, err = a.reserve(ctx, time.Second)
				require.NoError(t, err)
				assert.InDelta(t, learnStart*w, field("cap"), 1e-6, "told once")
			}
			if tc.significant {
				step(func(i int) bool { return i%5 == 0 })
				assert.Less(t, a.Stats().Capacity, learnStart*probe, "cut on the throttles")
				assert.Empty(t, rdb.HGet(ctx, a.keys[1], "test").Val(), "a cut that ends a probe is not tested")
				return
			}
			step(func(i int) bool { return i == 0 })
			if tc.exact {
				assert.InDelta(t, learnStart*w, a.Stats().Capacity, 1e-6, "the probe ends: 90% of the estimate, kept")
				assert.Empty(t, rdb.HGet(ctx, a.keys[1], "probed").Val(), "the cut made")
			} else {
				assert.Greater(t, a.Stats().Capacity, probe, "one throttle in 100 attempts is noise: the probe goes on")
			}
		})
	}
}

// TestLearnedCauseTest: a significant cut under exact admission is
// tested. If the throttled share stays where it was though the fleet sends
// less, the throttles do not depend on the load: the fleet goes back to
// the capacity before the cut and tolerates that share. If it falls as
// congestion's would, the cut stands.
func TestLearnedCauseTest(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	ctx := context.Background()
	quarter := func(i int) bool { return i%4 == 0 }
	for _, tc := range []struct {
		name  string
		after func(i int) bool // the throttles after the cut
	}{{"independent", quarter}, {"congestion", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newVClock()
			a := newTestFleet(t, rdb, "learn-cause-"+tc.name, clock, WithMember("a"))
			step := stepper(t, clock, 20, a)
			for range 3 {
				step(nil)
			}
			// A quarter throttled: first spaced at the 20 sent, then,
			// after the cooldown, a cut to 90% of the 15 accepted.
			step(quarter)
			require.InDelta(t, 20, a.Stats().Capacity, 1e-6, "spaced at the rate sent")
			for i := 0; a.Stats().Capacity == 20; i++ {
				require.Less(t, i, 10, "no cut")
				step(quarter)
			}
			require.InDelta(t, learnStart*15, a.Stats().Capacity, 1e-6, "the cut")
			// The test: once the cooldown is over and 40 attempts are in.
			cut := a.cooldown()
			for at := time.Second; at <= cut; at += time.Second {
				step(tc.after)
				if at < cut {
					require.Less(t, a.Stats().Capacity, 20.0, "%v after the cut: within the cooldown", at)
				}
			}
			if tc.after == nil {
				for range 5 {
					step(nil)
					assert.Less(t, a.Stats().Capacity, 20.0, "congestion: the cut stands, the curve grows from it")
				}
				return
			}
			assert.InDelta(t, 20, a.Stats().Capacity, 1e-6, "independent: back to the capacity before the cut")
			q, err := rdb.HGet(ctx, a.keys[1], "q").Float64()
			require.NoError(t, err)
			assert.InDelta(t, 0.25, q, 1e-9, "the share tolerated")
			// A quarter throttled is now no cause to cut.
			for range 10 {
				step(quarter)
				assert.GreaterOrEqual(t, a.Stats().Capacity, 20.0, "no cut on the tolerated share")
			}
			// Nor is a share two standard deviations above it (of the
			// tolerated share, an estimate from qn attempts, on the last
			// five intervals' 100): a cut takes three.
			qn, err := rdb.HGet(ctx, a.keys[1], "qn").Float64()
			require.NoError(t, err)
			sd := math.Sqrt(0.25*100 + 0.25*0.75*100*100/qn)
			require.True(t, 40 > 25+2*sd && 40 < 25+3*sd, "40 of 100 throttled is between two and three deviations (%v) above 25", sd)
			for range learnEpochs + 2 {
				step(func(i int) bool { return i%5 < 2 })
				assert.GreaterOrEqual(t, a.Stats().Capacity, 20.0, "no cut two deviations above the tolerated share")
			}
			for i := 0; a.Stats().Capacity >= 20; i++ {
				require.Less(t, i, 3, "no cut at 80% throttled")
				step(func(i int) bool { return i%5 < 4 })
			}
		})
	}
}

// TestLearnedCapacitySlowFleet: a fleet that sends fewer attempts in the
// last learnEpochs intervals than a cut is decided on (learnMinAttempts)
// decides on as many intervals as hold them, up to learnMaxEpochs, so a
// fleet of a few attempts a second still cuts when most are throttled.
func TestLearnedCapacitySlowFleet(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	a := newTestFleet(t, rdb, "learn-slow", clock, WithMember("a"), WithExactBelow(0))
	require.Less(t, 3*learnEpochs, learnMinAttempts, "the last learnEpochs intervals hold too few attempts")
	// 3 attempts a second, 2 of them throttled: the cut waits for 20
	// attempts in all, 7 intervals (the first counts from the first
	// refresh, so the seventh report completes them).
	step := stepper(t, clock, 3, a)
	for i := 1; i <= 7; i++ {
		step(func(i int) bool { return i < 2 })
		if i < 7 {
			require.True(t, math.IsInf(a.Stats().Capacity, 1), "%d attempts: too few to decide on: %+v", 3*i, a.Stats())
		}
	}
	// The evidence: 21 attempts, 7 accepted, in 6.5 s.
	assert.InDelta(t, learnStart*7/6.5, a.Stats().Capacity, 1e-6, "the cut, on the seven intervals")
}

// TestRetryBudget: the fleet's retries are bounded by its ratio of first
// attempts, or its floor if that is more, for the fleet as a whole.
func TestRetryBudget(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	// fleet makes four members of a fleet named name, and granted adds up
	// their grants, which their quotas hold.
	fleet := func(name string) []*Fleet {
		var fleets []*Fleet
		for _, id := range []string{"a", "b", "c", "d"} {
			fleets = append(fleets, newTestFleet(t, rdb, name, clock, WithMember(id), WithExactBelow(0),
				WithRetryBudget(0.2, 1, 10*time.Second)))
		}
		return fleets
	}
	granted := func(fleets []*Fleet) int {
		total := 0
		for _, f := range fleets {
			total += f.Stats().RetryGrant
			assert.Equal(t, f.Stats().RetryGrant, int(f.quota.Stats().Available), "the quota holds the grant")
		}
		return total
	}

	// Each member sends 100 first attempts a second: the budget over 10 s
	// is the larger of 0.2 * 4 * 100 * (seconds so far) and 1 * 10.
	fleets := fleet("budget")
	second := stepper(t, clock, 100, fleets...)
	for range 3 {
		second(nil)
	}
	// The last epoch closed at a's third refresh: 9 reports of 100 first
	// attempts each.
	assert.InDelta(t, 0.2*900, granted(fleets), 4, "the members' grants add up to the fleet's budget, the ratio's part: the floor is not added to it")

	// Member a spends its whole grant on retries; at the next epoch the
	// fleet's budget has that much less.
	a := fleets[0]
	spent := 0
	for {
		if _, err := a.quota.Acquire(1); err != nil {
			break
		}
		spent++
	}
	second(nil)
	// 13 reports of 100 attempts, spent of them retries.
	assert.InDelta(t, 0.2*float64(1300-spent)-float64(spent), granted(fleets), 6)

	// A fleet that sends little: 4 members, one first attempt a second
	// each. The ratio allows 0.2 * 4 * 3 retries; the floor, 10.
	fleets = fleet("budget-low")
	second = stepper(t, clock, 1, fleets...)
	for range 3 {
		second(nil)
	}
	assert.InDelta(t, 10, granted(fleets), 4, "a fleet that sends little gets the floor")
}

// TestExactAdmissionSpaces: exact admission gives the fleet's sends
// slots spaced at its rate, and refuses a slot beyond the maximum wait.
func TestExactAdmissionSpaces(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	ctx := context.Background()
	a := newTestFleet(t, rdb, "exact", clock, WithRate(10), WithHeadroom(0), WithMember("a"))
	b := newTestFleet(t, rdb, "exact", clock, WithRate(10), WithHeadroom(0), WithMember("b"))
	for range 3 { // both send plenty: each gets half, and a has made room for b
		clock.Advance(time.Second)
		attempts(a, 20, nil)
		attempts(b, 20, nil)
		require.NoError(t, a.refresh(ctx))
		require.NoError(t, b.refresh(ctx))
	}
	require.InDelta(t, 5, b.Stats().Share, 1e-9)
	require.True(t, a.Stats().Exact, "%+v", a.Stats())
	// A new member's first slot is due at once, its next one a slot of its
	// share (5 a second) later, not before.
	res, wait, err := a.reserve(ctx, time.Second)
	require.NoError(t, err)
	require.Equal(t, slotReserved, res)
	require.Zero(t, wait)
	res, wait, err = a.reserve(ctx, time.Second)
	require.NoError(t, err)
	require.Equal(t, slotOverShare, res, "a new member takes no slot before it is due")
	require.Equal(t, 200*time.Millisecond, wait)
	res, wait, err = b.reserve(ctx, time.Second)
	require.NoError(t, err)
	require.Equal(t, slotReserved, res)
	require.Equal(t, 100*time.Millisecond, wait, "the fleet's next slot")
	// A member idle for a while may be late by a slot of its burst (5)
	// less one: it takes up to 4 slots more at once, as the fleet's rate
	// spaces them.
	clock.Advance(time.Second)
	var waits []time.Duration
	for i := range 3 {
		f := a
		if i%2 == 1 {
			f = b
		}
		res, wait, err := f.reserve(ctx, 250*time.Millisecond)
		require.NoError(t, err)
		require.Equal(t, slotReserved, res)
		waits = append(waits, wait)
	}
	assert.Equal(t, []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond}, waits)
	res, wait, err = a.reserve(ctx, 250*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, slotRefused, res, "the slot 300 ms away is beyond the maximum wait")
	assert.Equal(t, 300*time.Millisecond, wait)
	res, wait, err = b.reserve(ctx, 300*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, slotReserved, res, "a refused slot was not taken")
	assert.Equal(t, 300*time.Millisecond, wait)
	// Time passes: slots are free again, no burst beyond one.
	clock.Advance(10 * time.Second)
	res, wait, err = a.reserve(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, slotReserved, res)
	assert.Zero(t, wait)
	res, _, err = b.reserve(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, slotRefused, res, "a burst of one")
}

// TestStrategyDo: the Fleet's strategy with retry.Do on real time: a
// throttled attempt is retried within the budget and counted.
func TestStrategyDo(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	ctx := context.Background()
	f, err := New(ctx, rdb, "do", WithRate(1000), WithExactBelow(math.Inf(1)),
		WithStrategyOptions(retry.WithBackoff(retry.BackoffFunc(func(int) time.Duration { return time.Millisecond }))))
	require.NoError(t, err)
	defer f.Close()
	s := f.Stats()
	require.True(t, s.Connected, "%+v", s)
	require.True(t, s.Exact)
	require.Positive(t, s.RetryGrant, "the floor's part of the budget")
	calls := 0
	got, err := retry.Do(ctx, func(context.Context) (string, error) {
		calls++
		if calls == 1 {
			return "", retry.WithRetryAfter(retry.Throttled(errors.New("slow down")), 0)
		}
		return "ok", nil
	}, retry.WithStrategy(f.Strategy()))
	require.NoError(t, err)
	assert.Equal(t, "ok", got)
	assert.Equal(t, 2, calls)
	ls := f.RateLimiter().Stats()
	assert.Equal(t, int64(2), ls.Attempts)
	assert.Equal(t, int64(1), ls.Throttles)
	require.NoError(t, f.Close())
	n, err := rdb.HLen(ctx, f.keys[0]).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "Close leaves the fleet")
}

// TestKeys: both keys carry the limit's name as a hash tag, under the
// prefix, and expire.
func TestKeys(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	f := newTestFleet(t, rdb, "route53", clock, WithPrefix("app:"), WithRate(5))
	require.NoError(t, f.refresh(context.Background()))
	keys, err := rdb.Keys(context.Background(), "*").Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"app:{route53}:members", "app:{route53}:state"}, keys)
	for _, k := range keys {
		ttl, err := rdb.PTTL(context.Background(), k).Result()
		require.NoError(t, err)
		assert.Positive(t, ttl, k)
	}
	assert.True(t, strings.HasPrefix(f.cfg.member, ""), "a default member name")
}
