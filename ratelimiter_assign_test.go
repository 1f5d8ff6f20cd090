package retry_test

import (
	"errors"
	"fmt"
	"log"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRateLimiterAssignBadInput(t *testing.T) {
	for _, tc := range []struct {
		a    retry.Assignment
		want string
	}{
		{retry.Assignment{}, "Assignment.Rate"},
		{retry.Assignment{Rate: -1}, "Assignment.Rate"},
		{retry.Assignment{Rate: math.NaN()}, "Assignment.Rate"},
		{retry.Assignment{Rate: math.Inf(-1)}, "Assignment.Rate"},
		{retry.Assignment{Rate: 1, Ceiling: -1}, "Assignment.Ceiling"},
		{retry.Assignment{Rate: 1, Ceiling: math.NaN()}, "Assignment.Ceiling"},
		{retry.Assignment{Rate: 1, Ceiling: math.Inf(1)}, "Assignment.Ceiling"},
		{retry.Assignment{Rate: 1, Burst: -1}, "Assignment.Burst"},
		{retry.Assignment{Rate: 1, Burst: math.MaxInt32 + 1}, "Assignment.Burst"},
	} {
		l := newTestRateLimiter(t)
		err := l.Assign(tc.a)
		require.ErrorIs(t, err, retry.ErrInvalidConfig, "%+v", tc.a)
		assert.Contains(t, err.Error(), tc.want)
		assert.Zero(t, l.Stats().Assigned, "a refused assignment changes nothing")
		assert.False(t, l.Stats().Enabled)
	}
	var zero retry.RateLimiter
	require.NoError(t, zero.Assign(retry.Assignment{Rate: 1}), "the zero RateLimiter ignores an assignment")
	require.ErrorIs(t, zero.Assign(retry.Assignment{}), retry.ErrInvalidConfig, "but not a bad one")
}

// TestRateLimiterAssignPaces: an assigned rate paces at once, exactly,
// and throttles do not move it, in both algorithms.
func TestRateLimiterAssignPaces(t *testing.T) {
	for _, published := range []bool{false, true} {
		clock := newManualClock()
		opts := []retry.RateLimiterOption{retry.WithClock(clock)}
		if published {
			opts = append(opts, retry.WithPublishedCUBIC())
		}
		l := newTestRateLimiter(t, opts...)
		require.NoError(t, l.Assign(retry.Assignment{Rate: 4, Until: clock.Now().Add(time.Hour)}))
		s := l.Stats()
		require.True(t, s.Enabled, "published=%v", published)
		require.Equal(t, 4.0, s.FillRate)
		require.Equal(t, 4.0, s.Capacity)
		// Throttles and successes for 5 s at 20 attempts a second: the
		// rate stays where it was assigned.
		for range 100 {
			clock.Advance(50 * time.Millisecond)
			l.Update(true)
			l.Update(false)
		}
		s = l.Stats()
		assert.Equal(t, 4.0, s.FillRate, "published=%v", published)
		assert.Equal(t, int64(200), s.Attempts)
		assert.Equal(t, int64(100), s.Throttles)
		// The bucket, full with 4 tokens, gives 4 slots at once and then
		// one every 250 ms.
		for range 4 {
			d, err := l.Acquire()
			require.NoError(t, err)
			require.Zero(t, d)
		}
		d, err := l.Acquire()
		require.NoError(t, err)
		assert.Equal(t, 250*time.Millisecond, d)
		assert.Equal(t, int64(1), l.Stats().Refusals, "a wait counts as a refusal")
	}
}

// TestRateLimiterAssignEnds: when the assignment ends, the own algorithm
// resumes from the assigned rate, as from a cut at the assignment's end,
// and never goes above the ceiling.
func TestRateLimiterAssignEnds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ceiling float64
		// the fill rate 10 s after the end, at 100 attempts a second
		want func(float64) bool
	}{
		{"no ceiling", 0, func(r float64) bool { return r > 20 }}, // 10*(1+0.003*1000) = 40
		{"ceiling", 10, func(r float64) bool { return r == 10 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newManualClock()
			l := newTestRateLimiter(t, retry.WithClock(clock))
			until := clock.Now().Add(time.Second)
			require.NoError(t, l.Assign(retry.Assignment{Rate: 10, Until: until, Ceiling: tc.ceiling}))
			feed(l, clock, 200, 10*time.Millisecond, "s") // 2 s at 100 a second
			s := l.Stats()
			assert.Zero(t, s.Assigned, "the assignment ended")
			assert.Equal(t, 10.0, s.LastMaxRate, "the curve starts from the assigned rate")
			assert.Equal(t, until, s.LastThrottle, "at the assignment's end")
			assert.InDelta(t, 10*(1+0.003), s.FillRate, 0.1)
			feed(l, clock, 900, 10*time.Millisecond, "s")
			r := l.Stats().FillRate
			assert.True(t, tc.want(r), "fill rate %v 10 s after the end", r)
			// A new assignment lifts the ceiling.
			require.NoError(t, l.Assign(retry.Assignment{Rate: 50, Until: clock.Now().Add(time.Second)}))
			assert.Equal(t, 50.0, l.Stats().FillRate)
		})
	}
}

// TestRateLimiterAssignPublishedEnds: the published curve resumes at the
// assigned rate too, not at beta times it.
func TestRateLimiterAssignPublishedEnds(t *testing.T) {
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithPublishedCUBIC())
	until := clock.Now().Add(time.Second)
	require.NoError(t, l.Assign(retry.Assignment{Rate: 10, Until: until}))
	clock.Advance(until.Sub(clock.Now()))
	l.Update(false)
	s := l.Stats()
	assert.Zero(t, s.Assigned)
	assert.InDelta(t, 10, s.FillRate, 1e-9)
}

// TestRateLimiterAssignUnlimited: an infinite rate never paces, even a
// limiter that had cut; when it ends the own algorithm goes on.
func TestRateLimiterAssignUnlimited(t *testing.T) {
	l, clock := throttledLimiter(t)
	require.NoError(t, l.Assign(retry.Assignment{Rate: math.Inf(1), Until: clock.Now().Add(time.Second), Ceiling: 3}))
	for range 1000 {
		d, err := l.Acquire()
		require.NoError(t, err)
		require.Zero(t, d)
		l.Update(true)
	}
	assert.Zero(t, l.Stats().Refusals)
	clock.Advance(time.Second)
	l.Update(false)
	s := l.Stats()
	assert.Zero(t, s.Assigned)
	assert.False(t, math.IsInf(s.FillRate, 0), "the own algorithm's rate again: %v", s.FillRate)
}

// TestRateLimiterAssignConcurrent: assignments (some setting the bucket
// with NextSend), attempts and Stats from many goroutines; every attempt
// counted, the rate always an assigned one or the own algorithm's, never
// out of bounds, and the bucket never above its capacity.
func TestRateLimiterAssignConcurrent(t *testing.T) {
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
	const workers, each = 8, 2000
	require.NoError(t, l.Assign(retry.Assignment{Rate: 5, Until: clock.Now().Add(30 * time.Millisecond), Ceiling: 25}))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if _, err := l.Acquire(); err != nil && !errors.Is(err, retry.ErrRateLimited) {
					t.Error(err)
					return
				}
				l.Update(i%7 == 0)
				if w == 0 && i%50 == 0 {
					clock.Advance(10 * time.Millisecond)
					a := retry.Assignment{Rate: float64(1 + i%20), Until: clock.Now().Add(30 * time.Millisecond), Ceiling: 25}
					if i%100 == 0 { // half of them set the bucket, while others take tokens
						a.Burst, a.NextSend = 3, clock.Now().Add(time.Duration(i%7)*50*time.Millisecond-100*time.Millisecond)
					}
					if err := l.Assign(a); err != nil {
						t.Error(err)
						return
					}
				}
				if s := l.Stats(); !(s.FillRate > 0) || math.IsInf(s.FillRate, 0) || s.FillRate > 25 && s.Assigned.Rate == 0 || s.Tokens > s.Capacity+1e-9 {
					t.Errorf("fill rate %v with %+v", s.FillRate, s.Assigned)
					return
				}
			}
		})
	}
	wg.Wait()
	s := l.Stats()
	assert.Equal(t, int64(workers*each), s.Attempts)
	assert.Equal(t, int64(workers*((each+6)/7)), s.Throttles)
}

func ExampleRateLimiter_Assign() {
	// A clock that moves only when told to, so the output is the same
	// every time. Real code leaves out WithClock.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := retry.ClockFunc(func() time.Time { return now })
	l, err := retry.NewRateLimiter(retry.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}

	// A coordinator gives this process 2 sends a second of a limit the
	// fleet shares, for 10 s, and never more than that if it goes quiet.
	err = l.Assign(retry.Assignment{Rate: 2, Until: now.Add(10 * time.Second), Ceiling: 2})
	if err != nil {
		log.Fatal(err)
	}
	// The token bucket keeps what it held (nothing, here): an assignment
	// starts no burst.
	for range 3 {
		d, _ := l.Acquire()
		fmt.Println("wait:", d)
	}

	// The coordinator is not heard from again: after the 10 s the
	// limiter's own algorithm goes on from 2 a second, below the ceiling.
	for range 40 {
		now = now.Add(time.Second)
		l.Update(false)
	}
	s := l.Stats()
	fmt.Printf("fill rate %.1f/s, %d attempts counted\n", s.FillRate, s.Attempts)
	// Output:
	// wait: 500ms
	// wait: 1s
	// wait: 1.5s
	// fill rate 2.0/s, 40 attempts counted
}

// A coordinator that books the fleet's sends itself (redisretry's exact
// admission does) and loses its store hands the pacing back to the
// process at the cadence it kept. The last send it booked for this process
// goes at 1.2 s from now, at 2 a second: the process's own sends start one
// slot after it, not at once on top of it.
func ExampleAssignment_nextSend() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := retry.ClockFunc(func() time.Time { return now })
	l, err := retry.NewRateLimiter(retry.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	lastBooked := now.Add(1200 * time.Millisecond)
	err = l.Assign(retry.Assignment{
		Rate: 2, Burst: 2, Ceiling: 2, Until: now.Add(10 * time.Second),
		NextSend: lastBooked.Add(500 * time.Millisecond),
	})
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		d, _ := l.Acquire()
		fmt.Println("wait:", d)
	}
	// Output:
	// wait: 1.7s
	// wait: 2.2s
	// wait: 2.7s
}

// TestRateLimiterAssignBelowMinimum: an assigned rate and a ceiling hold
// below the minimum fill rate: a process's share of a small fleet limit
// may be a fraction of one send a second.
func TestRateLimiterAssignBelowMinimum(t *testing.T) {
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock))
	require.NoError(t, l.Assign(retry.Assignment{Rate: 0.2, Until: clock.Now().Add(time.Second), Ceiling: 0.2}))
	assert.Equal(t, 0.2, l.Stats().FillRate)
	feed(l, clock, 100, 100*time.Millisecond, "s")
	s := l.Stats()
	assert.Zero(t, s.Assigned)
	assert.Equal(t, 0.2, s.FillRate, "the ceiling, below the minimum fill rate of 0.5")

	// A burst: three tokens accrue at 0.2 a second, and go at once.
	require.NoError(t, l.Assign(retry.Assignment{Rate: 0.2, Burst: 3, Until: clock.Now().Add(time.Hour)}))
	assert.Equal(t, 3.0, l.Stats().Capacity)
	clock.Advance(time.Minute)
	for range 3 {
		d, err := l.Acquire()
		require.NoError(t, err)
		require.Zero(t, d)
	}
	d, err := l.Acquire()
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, d)
}

// TestRateLimiterAssignUnlimitedThenRate: a rate assigned after no limit
// paces from a sound bucket (golang.org/x/time/rate's infinite limit
// would leave its tokens NaN).
func TestRateLimiterAssignUnlimitedThenRate(t *testing.T) {
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock))
	require.NoError(t, l.Assign(retry.Assignment{Rate: math.Inf(1), Until: clock.Now().Add(time.Hour)}))
	l.Update(false)
	assert.False(t, l.Stats().Enabled, "no limit: no pacing")
	require.NoError(t, l.Assign(retry.Assignment{Rate: 2, Until: clock.Now().Add(time.Hour)}))
	s := l.Stats()
	require.False(t, math.IsNaN(s.Tokens), "tokens %v", s.Tokens)
	clock.Advance(time.Second)
	for i, want := range []time.Duration{0, 0, 500 * time.Millisecond} {
		d, err := l.Acquire()
		require.NoError(t, err)
		assert.Equal(t, want, d, "slot %d", i)
	}
}

// TestRateLimiterAssignPhase: an assignment that starts the limiter pacing
// starts the bucket with the phase given; one to a limiter that paces
// already keeps its tokens.
func TestRateLimiterAssignPhase(t *testing.T) {
	clock := newManualClock()
	first := func(phase float64) time.Duration {
		l := newTestRateLimiter(t, retry.WithClock(clock))
		require.NoError(t, l.Assign(retry.Assignment{Rate: 2, Phase: phase, Until: clock.Now().Add(time.Hour)}))
		assert.InDelta(t, phase, l.Stats().Tokens, 1e-9)
		d, err := l.Acquire()
		require.NoError(t, err)
		return d
	}
	assert.Equal(t, 500*time.Millisecond, first(0))
	assert.InDelta(t, 250*time.Millisecond, first(0.5), float64(time.Microsecond))
	assert.InDelta(t, 50*time.Millisecond, first(0.9), float64(time.Microsecond))

	l := newTestRateLimiter(t, retry.WithClock(clock))
	require.NoError(t, l.Assign(retry.Assignment{Rate: 2, Until: clock.Now().Add(time.Hour)}))
	clock.Advance(300 * time.Millisecond)
	require.NoError(t, l.Assign(retry.Assignment{Rate: 2, Phase: 0.9, Until: clock.Now().Add(time.Hour)}))
	assert.InDelta(t, 0.6, l.Stats().Tokens, 1e-9, "a limiter that paces keeps its tokens")
	require.ErrorIs(t, l.Assign(retry.Assignment{Rate: 2, Phase: 1}), retry.ErrInvalidConfig)
	require.ErrorIs(t, l.Assign(retry.Assignment{Rate: 2, Phase: -0.1}), retry.ErrInvalidConfig)
	require.ErrorIs(t, l.Assign(retry.Assignment{Rate: 2, Phase: math.NaN()}), retry.ErrInvalidConfig)
}

// TestRateLimiterAssignNextSend: an assignment with NextSend sets the
// bucket, whatever it held or owed, so that its first token is due then,
// and then one a token period; a NextSend that has passed leaves what the
// bucket would have earned since, up to the burst.
func TestRateLimiterAssignNextSend(t *testing.T) {
	clock := newManualClock()
	hour := clock.Now().Add(time.Hour)
	l := newTestRateLimiter(t, retry.WithClock(clock))
	require.NoError(t, l.Assign(retry.Assignment{Rate: 2, Burst: 2, Until: hour}))
	for range 3 { // three waiting attempts: the bucket owes three tokens
		_, err := l.Acquire()
		require.NoError(t, err)
	}
	next := clock.Now().Add(1200 * time.Millisecond)
	require.NoError(t, l.Assign(retry.Assignment{Rate: 2, Burst: 2, Until: hour, NextSend: next, Phase: 0.9}))
	assert.InDelta(t, 1-2*1.2, l.Stats().Tokens, 1e-9, "what it owed is replaced; the phase is ignored")
	for i, want := range []time.Duration{1200, 1700, 2200} {
		d, err := l.Acquire()
		require.NoError(t, err)
		assert.InDelta(t, float64(want*time.Millisecond), float64(d), float64(time.Microsecond), "attempt %d", i)
	}

	// Passed: 0.3 s ago, and long ago.
	for _, tc := range []struct {
		ago  time.Duration
		want float64
	}{{300 * time.Millisecond, 1.6}, {time.Hour, 2}, {0, 1}} {
		l := newTestRateLimiter(t, retry.WithClock(clock))
		require.NoError(t, l.Assign(retry.Assignment{Rate: 2, Burst: 2, Until: hour, NextSend: clock.Now().Add(-tc.ago)}))
		assert.InDelta(t, tc.want, l.Stats().Tokens, 1e-9, "NextSend %v ago", tc.ago)
	}

	// A NextSend further ahead than the bucket can owe is refused, and
	// changes nothing; with no limit, NextSend means nothing.
	far := clock.Now().Add(100 * 365 * 24 * time.Hour)
	err := l.Assign(retry.Assignment{Rate: 1000, NextSend: far})
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "Assignment.NextSend")
	assert.Equal(t, 2.0, l.Stats().FillRate, "a refused assignment changes nothing")
	require.NoError(t, l.Assign(retry.Assignment{Rate: math.Inf(1), NextSend: far}))
}

// TestRateLimiterAssignCeilingKeepsBurst: after an assignment with a
// ceiling ends, the bucket keeps at least the assignment's burst, so that
// a slot a small share could not use at once is still kept; without a
// ceiling, the rate's own capacity applies again.
func TestRateLimiterAssignCeilingKeepsBurst(t *testing.T) {
	for _, ceiling := range []float64{0, 0.25} {
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock))
		require.NoError(t, l.Assign(retry.Assignment{Rate: 0.25, Burst: 3, Ceiling: ceiling, Until: clock.Now().Add(time.Second)}))
		require.Equal(t, 3.0, l.Stats().Capacity)
		clock.Advance(2 * time.Second)
		l.Update(false) // the assignment has ended: the algorithm resumes
		s := l.Stats()
		require.Zero(t, s.Assigned.Rate)
		if ceiling > 0 {
			assert.Equal(t, 3.0, s.Capacity, "the ceiling's burst")
			assert.LessOrEqual(t, s.FillRate, ceiling)
		} else {
			assert.Equal(t, 1.0, s.Capacity, "the rate's capacity, at least the minimum")
		}
	}
}

// TestRateLimiterAssignUnlimitedTwice: a limiter that paced before two
// assignments of no limit in a row paces again when they end.
func TestRateLimiterAssignUnlimitedTwice(t *testing.T) {
	l, clock := throttledLimiter(t)
	for range 2 {
		require.NoError(t, l.Assign(retry.Assignment{Rate: math.Inf(1), Until: clock.Now().Add(time.Second)}))
	}
	assert.False(t, l.Stats().Enabled)
	clock.Advance(2 * time.Second)
	l.Update(false)
	assert.True(t, l.Stats().Enabled, "pacing again, as before the assignments")
}
