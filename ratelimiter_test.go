package retry_test

import (
	"errors"
	"fmt"
	"log"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestRateLimiter(t testing.TB, opts ...retry.RateLimiterOption) *retry.RateLimiter {
	t.Helper()
	l, err := retry.NewRateLimiter(opts...)
	if err != nil {
		t.Fatalf("NewRateLimiter: %v", err)
	}
	return l
}

func TestNewRateLimiterInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		opt    retry.RateLimiterOption
		option string // the option the error must name
	}{
		{retry.WithClock(nil), "WithClock"},
		{retry.WithBeta(0), "WithBeta"},
		{retry.WithBeta(1), "WithBeta"},
		{retry.WithBeta(-0.5), "WithBeta"},
		{retry.WithBeta(math.NaN()), "WithBeta"},
		{retry.WithScaleConstant(0), "WithScaleConstant"},
		{retry.WithScaleConstant(-1), "WithScaleConstant"},
		{retry.WithScaleConstant(math.Inf(1)), "WithScaleConstant"},
		{retry.WithScaleConstant(math.NaN()), "WithScaleConstant"},
		{retry.WithSmoothing(0), "WithSmoothing"},
		{retry.WithSmoothing(1.01), "WithSmoothing"},
		{retry.WithSmoothing(math.NaN()), "WithSmoothing"},
		{retry.WithMinFillRate(0), "WithMinFillRate"},
		{retry.WithMinFillRate(-1), "WithMinFillRate"},
		{retry.WithMinFillRate(math.Inf(1)), "WithMinFillRate"},
		{retry.WithMinFillRate(math.NaN()), "WithMinFillRate"},
		{retry.WithMinCapacity(0), "WithMinCapacity"},
		{retry.WithMinCapacity(-1), "WithMinCapacity"},
		{retry.WithMinCapacity(math.MaxInt32 + 1), "WithMinCapacity = 2147483648, want a number from 1 to 2147483647"},
		{retry.WithClock(retry.ClockFunc(nil)), "WithClock = a nil retry.ClockFunc"},
		{retry.WithMeasurementWindow(0), "WithMeasurementWindow"},
		{retry.WithMeasurementWindow(-time.Second), "WithMeasurementWindow"},
		{retry.WithReductionCooldown(-time.Nanosecond), "WithReductionCooldown"},
		{retry.WithReductionCooldown(time.Second), "WithReductionCooldown"}, // only with WithPublishedCUBIC
		{retry.WithThrottleTolerance(-0.01), "WithThrottleTolerance"},
		{retry.WithThrottleTolerance(1), "WithThrottleTolerance"},
		{retry.WithThrottleTolerance(math.NaN()), "WithThrottleTolerance"},
		{retry.WithThrottleTolerance(math.Inf(1)), "WithThrottleTolerance"},
		{retry.WithDemandClock(-1), "WithDemandClock = -1, want finite and >= 0"},
		{retry.WithDemandClock(math.NaN()), "WithDemandClock"},
		{retry.WithDemandClock(math.Inf(1)), "WithDemandClock"},
	} {
		l, err := retry.NewRateLimiter(tc.opt)
		if l != nil || !errors.Is(err, retry.ErrInvalidConfig) {
			t.Errorf("%s: NewRateLimiter() = %v, %v; want nil, ErrInvalidConfig", tc.option, l, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.option) || !strings.Contains(err.Error(), "want") {
			t.Errorf("%s: error %q does not name the option and its valid range", tc.option, err)
		}
	}
	// A tolerance is an error with the published algorithm, whatever the
	// order of the options.
	for _, opts := range [][]retry.RateLimiterOption{
		{retry.WithPublishedCUBIC(), retry.WithThrottleTolerance(0.05)},
		{retry.WithThrottleTolerance(0.05), retry.WithPublishedCUBIC()},
	} {
		l, err := retry.NewRateLimiter(opts...)
		if l != nil || !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), "WithThrottleTolerance") {
			t.Errorf("tolerance with the published algorithm: NewRateLimiter() = %v, %v; want nil, an error naming WithThrottleTolerance", l, err)
		}
	}
}

func TestNewRateLimiterValidOptions(t *testing.T) {
	for _, opts := range [][]retry.RateLimiterOption{
		nil,
		{retry.WithBeta(0.001), retry.WithBeta(0.999)},
		{retry.WithScaleConstant(1e-9), retry.WithSmoothing(1), retry.WithMinFillRate(1e-9)},
		{retry.WithMinCapacity(1), retry.WithMinCapacity(100)},
		{retry.WithMeasurementWindow(time.Nanosecond), retry.WithPublishedCUBIC(), retry.WithReductionCooldown(0)},
		{retry.WithReductionCooldown(time.Hour), retry.WithPublishedCUBIC()},
		{retry.WithThrottleTolerance(0), retry.WithThrottleTolerance(0.999)},
		{retry.WithFailFast(true), retry.WithClock(newManualClock())},
	} {
		if _, err := retry.NewRateLimiter(opts...); err != nil {
			t.Errorf("NewRateLimiter: %v", err)
		}
	}
}

func TestRateLimiterInitialStats(t *testing.T) {
	l := newTestRateLimiter(t, retry.WithClock(newManualClock()))
	if got := l.Stats(); got != (retry.RateLimiterStats{}) {
		t.Errorf("Stats() = %+v, want the zero value", got)
	}
}

// Before it paces, a limiter delays nothing. The published algorithm paces
// from its first throttle; the default one from its first cut, which a
// single throttle does not cause.
func TestRateLimiterDisabledUntilThrottle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    []retry.RateLimiterOption
		enabled bool // after one throttle
	}{
		{"default", nil, false},
		{"default fail-fast", []retry.RateLimiterOption{retry.WithFailFast(true)}, false},
		{"published", []retry.RateLimiterOption{retry.WithPublishedCUBIC()}, true},
		{"published fail-fast", []retry.RateLimiterOption{retry.WithPublishedCUBIC(), retry.WithFailFast(true)}, true},
	} {
		clock := newManualClock()
		l := newTestRateLimiter(t, append(tc.opts, retry.WithClock(clock))...)
		for i := range 100 {
			if d, err := l.Acquire(); d != 0 || err != nil {
				t.Fatalf("%s: Acquire %d = %v, %v before any throttle; want 0, nil", tc.name, i, d, err)
			}
			if i%10 == 0 {
				l.Update(false)
			}
		}
		if l.Stats().Enabled {
			t.Errorf("%s: Enabled before any throttle", tc.name)
		}
		clock.Advance(10 * time.Millisecond)
		l.Update(true)
		s := l.Stats()
		if s.Enabled != tc.enabled || (tc.enabled && !s.LastThrottle.Equal(clock.Now())) {
			t.Errorf("%s: after a throttle Enabled, LastThrottle = %v, %v; want %v (at %v)", tc.name, s.Enabled, s.LastThrottle, tc.enabled, clock.Now())
		}
		if d, err := l.Acquire(); !tc.enabled && (d != 0 || err != nil) {
			t.Errorf("%s: Acquire after one throttle = %v, %v; want 0, nil", tc.name, d, err)
		}
	}
}

// throttledLimiter returns a limiter running the published algorithm that
// has just been throttled with nothing measured: its fill rate is the
// minimum, 0.5/s, its capacity 1, and its bucket empty.
func throttledLimiter(t *testing.T, opts ...retry.RateLimiterOption) (*retry.RateLimiter, *manualClock) {
	t.Helper()
	clock := newManualClock()
	l := newTestRateLimiter(t, append([]retry.RateLimiterOption{retry.WithClock(clock), retry.WithPublishedCUBIC()}, opts...)...)
	clock.Advance(100 * time.Millisecond)
	l.Update(true)
	if s := l.Stats(); s.FillRate != 0.5 || s.Capacity != 1 || s.Tokens != 0 {
		t.Fatalf("after the first throttle Stats() = %+v, want FillRate 0.5, Capacity 1, Tokens 0", s)
	}
	return l, clock
}

func TestRateLimiterAcquireSuccessiveSlots(t *testing.T) {
	l, clock := throttledLimiter(t)
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 6 * time.Second} {
		if d, err := l.Acquire(); d != want || err != nil {
			t.Errorf("Acquire %d = %v, %v; want %v, nil", i, d, err, want)
		}
	}
	// Three slots are taken, 2 s apart; 6 s on, the next is 2 s away.
	clock.Advance(6 * time.Second)
	if d, err := l.Acquire(); d != 2*time.Second || err != nil {
		t.Errorf("Acquire after 6s = %v, %v; want 2s, nil", d, err)
	}
}

func TestRateLimiterAcquireConcurrentSlots(t *testing.T) {
	l, _ := throttledLimiter(t)
	const n = 50
	delays := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			d, err := l.Acquire()
			if err != nil {
				t.Error(err)
			}
			delays[i] = d
		})
	}
	wg.Wait()
	slices.Sort(delays)
	for i, d := range delays {
		if want := time.Duration(i+1) * 2 * time.Second; d != want {
			t.Fatalf("slot %d: delay %v, want %v (all: %v)", i, d, want, delays)
		}
	}
}

func TestRateLimiterFailFast(t *testing.T) {
	l, clock := throttledLimiter(t, retry.WithFailFast(true))
	for _, step := range []struct {
		advance time.Duration
		ok      bool
		due     time.Duration // when refused, the time until a token is due
		tokens  float64       // after the Acquire
	}{
		{0, false, 2 * time.Second, 0},
		{time.Second, false, time.Second, 0.5},
		{time.Second, true, 0, 0},
		{time.Second, false, time.Second, 0.5},
		{10 * time.Second, true, 0, 0}, // the bucket holds at most 1 token
		{0, false, 2 * time.Second, 0},
	} {
		clock.Advance(step.advance)
		d, err := l.Acquire()
		if d != step.due {
			t.Errorf("+%v: fail-fast Acquire returned %v, want %v", step.advance, d, step.due)
		}
		if got := err == nil; got != step.ok || (err != nil && !errors.Is(err, retry.ErrRateLimited)) {
			t.Errorf("+%v: Acquire() error = %v, want ok = %v or ErrRateLimited", step.advance, err, step.ok)
		}
		if got := l.Stats().Tokens; got != step.tokens {
			t.Errorf("+%v: Tokens = %v after Acquire, want %v", step.advance, got, step.tokens)
		}
	}
}

// warmUp sends 20 attempts a second for 4 s, all successful.
func warmUp(l *retry.RateLimiter, clock *manualClock) {
	for range 80 {
		clock.Advance(50 * time.Millisecond)
		l.Update(false)
	}
}

// The published algorithm cuts on every throttle; with a cooldown, once
// per cooldown.
func TestRateLimiterReductionCooldown(t *testing.T) {
	t.Run("published with a cooldown", func(t *testing.T) {
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithPublishedCUBIC(), retry.WithReductionCooldown(500*time.Millisecond))
		warmUp(l, clock)
		l.Update(true)
		first := l.Stats()
		if !first.Enabled || first.FillRate >= first.LastMaxRate {
			t.Fatalf("after a throttle Stats() = %+v, want the rate reduced", first)
		}
		// More throttles in the same episode change nothing.
		for range 4 {
			clock.Advance(100 * time.Millisecond)
			l.Update(true)
			if got := l.Stats(); got.FillRate != first.FillRate || !got.LastThrottle.Equal(first.LastThrottle) || got.LastMaxRate != first.LastMaxRate {
				t.Fatalf("throttle within the cooldown: Stats() = %+v, want rates as %+v", got, first)
			}
		}
		// A throttle a full cooldown after the reduction reduces again.
		clock.Advance(100 * time.Millisecond)
		l.Update(true)
		got := l.Stats()
		if !got.LastThrottle.Equal(clock.Now()) || math.Abs(got.FillRate-retry.PublishedBeta*got.LastMaxRate) > 1e-12 {
			t.Errorf("throttle after the cooldown: Stats() = %+v, want a reduction at %v", got, clock.Now())
		}
	})

	t.Run("published", func(t *testing.T) {
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithPublishedCUBIC())
		warmUp(l, clock)
		l.Update(true)
		prev := l.Stats()
		for range 4 {
			clock.Advance(100 * time.Millisecond)
			l.Update(true)
			got := l.Stats()
			if !got.LastThrottle.Equal(clock.Now()) || math.Abs(got.FillRate-retry.PublishedBeta*prev.FillRate) > 1e-12 {
				t.Fatalf("throttle: Stats() = %+v, want FillRate %v × %v", got, retry.PublishedBeta, prev.FillRate)
			}
			prev = got
		}
	})
}

// TestRateLimiterStartsAtCreation checks that a limiter's behaviour depends
// only on the time since its creation.
func TestRateLimiterStartsAtCreation(t *testing.T) {
	run := func(start time.Time) []retry.RateLimiterStats {
		clock := &manualClock{now: start}
		l := newTestRateLimiter(t, retry.WithClock(clock))
		var stats []retry.RateLimiterStats
		for i := range 200 {
			clock.Advance(37 * time.Millisecond)
			l.Acquire()
			l.Update(i%23 == 22)
			s := l.Stats()
			s.LastThrottle = time.Time{}
			stats = append(stats, s)
		}
		return stats
	}
	a := run(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := run(time.Date(2031, 7, 9, 17, 23, 41, 734_000_001, time.Local))
	if !slices.Equal(a, b) {
		t.Errorf("limiters created at different times behave differently:\n%v\n%v", a, b)
	}
}

// TestRateLimiterConcurrent hammers one limiter from many goroutines, with
// a clock that moves on by a millisecond each time it is read, and checks
// its invariants. Run it with -race.
func TestRateLimiterConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []retry.RateLimiterOption
	}{
		{"default", nil},
		{"published", []retry.RateLimiterOption{retry.WithPublishedCUBIC()}},
		{"fail-fast", []retry.RateLimiterOption{retry.WithFailFast(true)}},
		{"demand clock, fail-fast", []retry.RateLimiterOption{retry.WithDemandClock(5), retry.WithFailFast(true)}},
		{"custom", []retry.RateLimiterOption{retry.WithMinFillRate(2), retry.WithMinCapacity(3), retry.WithBeta(0.5), retry.WithMeasurementWindow(100 * time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const (
				goroutines = 32
				ops        = 1000
			)
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var ticks atomic.Int64
			clock := retry.ClockFunc(func() time.Time {
				return start.Add(time.Duration(ticks.Add(1)) * time.Millisecond)
			})
			l := newTestRateLimiter(t, append([]retry.RateLimiterOption{retry.WithClock(clock)}, tc.opts...)...)
			// Check the invariants against the strictest configuration.
			minFill, minCap := 0.5, 1.0
			if tc.name == "custom" {
				minFill, minCap = 2, 3
			}
			// Every slot is at most goroutines*ops tokens away.
			maxDelay := time.Duration(goroutines * ops / minFill * float64(time.Second))

			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range ops {
						d, err := l.Acquire()
						if err != nil && !errors.Is(err, retry.ErrRateLimited) {
							t.Errorf("Acquire: %v", err)
							return
						}
						if d < 0 || d > maxDelay {
							t.Errorf("Acquire delay %v out of range", d)
							return
						}
						l.Update((g+i)%7 == 0)
						if i%50 == 0 {
							if err := checkLimiterInvariants(l.Stats(), minFill, minCap); err != nil {
								t.Error(err)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			s := l.Stats()
			if err := checkLimiterInvariants(s, minFill, minCap); err != nil {
				t.Error(err)
			}
			// One attempt in 7 throttled, whatever the rate: the limiter
			// cut, or learned the share as independent of the load.
			if !s.Enabled && s.LearnedShare == 0 {
				t.Errorf("neither cut nor learned a share after throttles: %+v", s)
			}
		})
	}
}

func checkLimiterInvariants(s retry.RateLimiterStats, minFill, minCap float64) error {
	for _, v := range []float64{s.FillRate, s.MeasuredRate, s.Capacity, s.Tokens, s.LastMaxRate} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("Stats() = %+v: not finite", s)
		}
	}
	if s.FillRate < minFill || s.Capacity < minCap || s.MeasuredRate < 0 || s.LastMaxRate < 0 || s.Tokens > s.Capacity {
		return fmt.Errorf("Stats() = %+v: out of range", s)
	}
	return nil
}

func TestRateLimiterAllocs(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []retry.RateLimiterOption
	}{
		{"default", nil},
		{"default fail-fast", []retry.RateLimiterOption{retry.WithFailFast(true)}},
		{"published", []retry.RateLimiterOption{retry.WithPublishedCUBIC()}},
	} {
		// A clock that moves 7 ms each round, so windows close and the
		// limiter cuts and grows the rate.
		clock := newManualClock()
		l := newTestRateLimiter(t, append(tc.opts, retry.WithClock(clock))...)
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			clock.Advance(7 * time.Millisecond)
			l.Acquire()
			i++
			l.Update(i%4 == 0)
			_ = l.Stats()
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Acquire+Update+Stats, want 0", tc.name, allocs)
		}
		if !l.Stats().Enabled {
			t.Errorf("%s: a quarter of attempts throttled did not enable the limiter", tc.name)
		}
	}
}

func BenchmarkRateLimiterAcquireUpdateParallel(b *testing.B) {
	l := newTestRateLimiter(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := l.Acquire(); err != nil {
				b.Error(err)
				return
			}
			i++
			l.Update(i%10 == 0)
		}
	})
}

// feed records n attempts, one every gap from the clock's time, the i-th
// throttled when pattern[i%len(pattern)] is 't'.
func feed(l *retry.RateLimiter, clock *manualClock, n int, gap time.Duration, pattern string) {
	for i := range n {
		clock.Advance(gap)
		l.Update(pattern[i%len(pattern)] == 't')
	}
}

// A step of a limiter's history: attempts one every gap until the time
// since creation is until, with throttles as pattern says; then the
// expected state.
type limiterStep struct {
	until   time.Duration
	gap     time.Duration
	pattern string

	enabled      bool
	fillRate     float64 // 0: not checked
	lastMaxRate  float64 // 0: not checked
	learnedShare float64
}

func runLimiterSteps(t *testing.T, l *retry.RateLimiter, clock *manualClock, steps []limiterStep) {
	t.Helper()
	start := clock.Now()
	for _, st := range steps {
		n := int((st.until - clock.Now().Sub(start)) / st.gap)
		feed(l, clock, n, st.gap, st.pattern)
		if got := clock.Now().Sub(start); got != st.until {
			t.Fatalf("step to %v ended at %v", st.until, got)
		}
		s := l.Stats()
		at := fmt.Sprintf("t=%v (%q every %v)", st.until, st.pattern, st.gap)
		if s.Enabled != st.enabled {
			t.Errorf("%s: Enabled = %v, want %v", at, s.Enabled, st.enabled)
		}
		if st.fillRate != 0 && math.Abs(s.FillRate-st.fillRate) > 1e-9 {
			t.Errorf("%s: FillRate = %v, want %v", at, s.FillRate, st.fillRate)
		}
		if st.lastMaxRate != 0 && math.Abs(s.LastMaxRate-st.lastMaxRate) > 1e-9 {
			t.Errorf("%s: LastMaxRate = %v, want %v", at, s.LastMaxRate, st.lastMaxRate)
		}
		if math.Abs(s.LearnedShare-st.learnedShare) > 1e-9 {
			t.Errorf("%s: LearnedShare = %v, want %v", at, s.LearnedShare, st.learnedShare)
		}
	}
}

// The default algorithm cuts by the throttled share in excess of what it
// tolerates, from the newest measurement window that holds a throttle, and
// grows back along W*(1 + c*t^3). Times are since the limiter's creation;
// measurement windows are 0.5 s wide and close at the first attempt after
// them; 20 attempts a second unless said otherwise.
func TestRateLimiterDefaultCuts(t *testing.T) {
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock))
	c := retry.DefaultScaleConstant
	runLimiterSteps(t, l, clock, []limiterStep{
		// One second of successes: 20/s measured, nothing limited.
		{until: time.Second, gap: 50 * time.Millisecond, pattern: "s"},
		// Every other attempt throttled in [1 s, 1.5 s). The window
		// closes at 1.5 s: the last two windows hold 20 attempts, 5
		// throttled, 25%. The client is not limited yet, so 10% is
		// tolerated: the rate in use, 20/s, is cut by 15%, to 17/s.
		{until: 1500 * time.Millisecond, gap: 50 * time.Millisecond, pattern: "ts", enabled: true, fillRate: 17, lastMaxRate: 17},
		// Successes: the rate grows from 17 along the curve.
		{until: 3500 * time.Millisecond, gap: 50 * time.Millisecond, pattern: "s", enabled: true, fillRate: 17 * (1 + c*8), lastMaxRate: 17},
		// While limited, nothing learned, nothing is tolerated: one
		// throttle at 4 s, in the window [4 s, 4.5 s), makes the last two
		// windows' share 1 of 20. At 4.5 s the allowed rate, set at 4.45 s
		// to 17*(1+c*2.95^3), is cut by 5%.
		{until: 4500 * time.Millisecond, gap: 50 * time.Millisecond, pattern: "ssssssssstssssssssss", enabled: true,
			fillRate: 0.95 * 17 * (1 + c*2.95*2.95*2.95), lastMaxRate: 0.95 * 17 * (1 + c*2.95*2.95*2.95)},
	})
}

// A client that sends less than one attempt a window decides on each
// window that holds a throttle, however many windows without attempts
// close with it: here one attempt every 1.2 s, so the next attempt closes
// the throttle's window and one or two empty ones at once. (The limiter
// decided on the newest of them alone, an empty one, and never cut.)
func TestRateLimiterSparseClientCuts(t *testing.T) {
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock))
	const gap = 1200 * time.Millisecond
	feed(l, clock, 5, gap, "s")
	if s := l.Stats(); s.Enabled {
		t.Fatalf("after successes: %+v, want no limit", s)
	}
	// The throttle at 7.2 s is in the window [7 s, 7.5 s), which the
	// attempt at 8.4 s closes with [7.5 s, 8 s): the evidence, a second
	// holding one attempt, throttled, is significant.
	feed(l, clock, 1, gap, "t")
	if s := l.Stats(); s.Enabled {
		t.Fatalf("after a throttle, before its window closed: %+v, want no limit yet", s)
	}
	before := l.Stats().MeasuredRate
	feed(l, clock, 1, gap, "s")
	s := l.Stats()
	if !s.Enabled || !(s.LastMaxRate < before) {
		t.Fatalf("the throttle's window closed with an empty one after it: %+v, want a cut below %v", s, before)
	}
	// Every attempt throttled, one every 1.2 s: a cut at each, down to the
	// minimum fill rate.
	feed(l, clock, 10, gap, "t")
	if s := l.Stats(); s.FillRate != retry.DefaultMinFillRate {
		t.Errorf("ten throttles in a row: %+v, want the rate at the minimum, %v", s, retry.DefaultMinFillRate)
	}
}

// WithDemandClock counts the growth curve's time in the attempts asked
// for: a client asking for fewer than that a second grows back more
// slowly, by the curve at the attempts over the clock; one asking for more
// grows as without it; an attempt refused a slot for good counts as asked
// for; and the option is an error with the published algorithm.
func TestRateLimiterDemandClock(t *testing.T) {
	for _, opts := range [][]retry.RateLimiterOption{
		{retry.WithPublishedCUBIC(), retry.WithDemandClock(5)},
		{retry.WithDemandClock(5), retry.WithPublishedCUBIC()},
	} {
		if l, err := retry.NewRateLimiter(opts...); l != nil || !errors.Is(err, retry.ErrInvalidConfig) || !strings.Contains(err.Error(), "WithDemandClock") {
			t.Errorf("WithDemandClock with the published algorithm: %v, %v; want ErrInvalidConfig naming it", l, err)
		}
	}
	c := retry.DefaultScaleConstant
	// run cuts a limiter's rate to 17 a second at 1.5 s (20 attempts a
	// second, every other one throttled in [1 s, 1.5 s)), lets refused
	// attempts ask for a slot and be refused at once (the cut emptied the
	// bucket): from a fail-fast limiter's Acquire, or from an Adaptive
	// strategy that waits for no slot; then sends 10 attempts a second for
	// 2 s, each admitted. Twice the measured rate, about 20, bounds
	// nothing here.
	run := func(refused int, viaStrategy bool, opts ...retry.RateLimiterOption) float64 {
		clock := newManualClock()
		opts = append([]retry.RateLimiterOption{retry.WithClock(clock), retry.WithFailFast(!viaStrategy)}, opts...)
		l := newTestRateLimiter(t, opts...)
		feed(l, clock, 20, 50*time.Millisecond, "s")
		feed(l, clock, 10, 50*time.Millisecond, "ts")
		if s := l.Stats(); s.LastMaxRate != 17 {
			t.Fatalf("the cut: %+v, want the rate at 17", s)
		}
		a, err := retry.NewAdaptive(retry.WithClock(clock), retry.WithRateLimiter(l), retry.WithMaxSendWait(0))
		if err != nil {
			t.Fatal(err)
		}
		for range refused {
			if !viaStrategy {
				if _, err := l.Acquire(); !errors.Is(err, retry.ErrRateLimited) {
					t.Fatalf("Acquire after the cut: %v, want ErrRateLimited", err)
				}
				continue
			}
			tok, err := a.PlanInitialToken("")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Admit(tok); !errors.Is(err, retry.ErrRateLimited) {
				t.Fatalf("Admit after the cut: %v, want ErrRateLimited", err)
			}
			_ = a.ReleaseToken(tok)
		}
		feed(l, clock, 20, 100*time.Millisecond, "s")
		return l.Stats().FillRate
	}
	for _, tc := range []struct {
		name        string
		refused     int
		viaStrategy bool
		clock       float64 // 0: none
		t           float64 // the curve's time at 3.5 s
	}{
		{"seconds alone", 0, false, 0, 2},
		{"20 attempts asked for, clock 20", 0, false, 20, 1},
		{"20 attempts asked for, clock 40", 0, false, 40, 0.5},
		{"20 attempts asked for, clock 10", 0, false, 10, 2}, // the seconds are the lesser
		{"20 refused by Acquire and 20 sent, clock 20", 20, false, 20, 2},
		{"20 refused by Acquire and 20 sent, clock 80", 20, false, 80, 0.5},
		{"20 refused by the strategy and 20 sent, clock 80", 20, true, 80, 0.5},
		{"20 refused, seconds alone", 20, true, 0, 2},
	} {
		var opts []retry.RateLimiterOption
		if tc.clock > 0 {
			opts = append(opts, retry.WithDemandClock(tc.clock))
		}
		if got, want := run(tc.refused, tc.viaStrategy, opts...), 17*(1+c*tc.t*tc.t*tc.t); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: fill rate %v at 3.5 s, want the curve at %v s, %v", tc.name, got, tc.t, want)
		}
	}
}

// A share of throttles up to the tolerance, while the limiter does not
// limit the client, never cuts: the limiter learns it, and tolerates it
// once it limits the client. Larger shares cut.
func TestRateLimiterLoadIndependentShare(t *testing.T) {
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock))
	const gap = 50 * time.Millisecond
	// One throttle a second, at 1 s, 2 s, ...: each in the window that
	// begins then.
	const fivePercent = "ssssssssssssssssssst"
	c := retry.DefaultScaleConstant
	runLimiterSteps(t, l, clock, []limiterStep{
		// 5% throttled for 5 s: nothing cut. The last 8 windows (4 s,
		// 80 attempts) hold 4 throttles: 5% learned.
		{until: 5 * time.Second, gap: gap, pattern: fivePercent, learnedShare: 0.05},
		// Every attempt throttled in [5 s, 5.5 s) (the one at 5.5 s, in the
		// next window, is not): the last 8 windows hold 13 throttles of
		// 80, more than the 10% tolerated, so 5% stays learned; the last
		// two hold 10 of 20, 50%. Not limited yet, so max(5%, 10%) is
		// tolerated: the 20/s in use is cut by 40%, to 12/s.
		{until: 5500 * time.Millisecond, gap: gap, pattern: "ttttttttts", enabled: true, fillRate: 12, lastMaxRate: 12, learnedShare: 0.05},
		// Limited now (20/s sent, 12/s allowed), 5% learned and so
		// tolerated: one throttle in 20 cuts nothing, and the rate grows
		// from 12 along the curve.
		{until: 7500 * time.Millisecond, gap: gap, pattern: fivePercent, enabled: true, fillRate: 12 * (1 + c*8), lastMaxRate: 12, learnedShare: 0.05},
		// A share well above the learned one cuts by the excess: at 8 s
		// the last two windows hold 6 throttles of 20 (30%: the one at
		// 7.5 s and 5 after it), and the rate set at 7.95 s would be cut
		// by 25%, to 9.4/s; but the cut at 5.5 s started a test of the
		// throttles' cause, which keeps the rate at half the 20/s sent
		// before it or more (see TestRateLimiterCauseTest).
		{until: 8 * time.Second, gap: gap, pattern: "tttttsssss", enabled: true, fillRate: 10, learnedShare: 0.05},
	})
}

// A service that admits nothing is a block: the default algorithm cuts to
// the minimum rate at once (1 s of evidence, 10 attempts or more, every one
// throttled), and the next admitted attempt takes it back to where it was
// before the block, here no limit: the block said nothing about the rate
// the service admits. The published algorithm cuts on every throttle, and
// stays at its minimum.
func TestRateLimiterStartupBurst(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []retry.RateLimiterOption
		free bool // no limit after the first success
	}{
		{"default", nil, true},
		{"published", []retry.RateLimiterOption{retry.WithPublishedCUBIC()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newManualClock()
			l := newTestRateLimiter(t, append(tc.opts, retry.WithClock(clock))...)
			feed(l, clock, 20, 50*time.Millisecond, "t") // [0, 1 s]: all throttled
			if s := l.Stats(); !s.Enabled || s.FillRate != retry.DefaultMinFillRate {
				t.Errorf("after the burst: Stats() = %+v, want Enabled, FillRate %v", s, retry.DefaultMinFillRate)
			}
			feed(l, clock, 1, 50*time.Millisecond, "s")
			if s := l.Stats(); s.Enabled == tc.free || tc.free && s.FillRate < 2*19 {
				t.Errorf("after the burst and a success: Stats() = %+v, want no limit (%v), twice the measured rate", s, tc.free)
			}
		})
	}
}

// A block while the limiter paces: the first admitted attempt goes back to
// the rate in use before it, not to the minimum, nor to no limit.
func TestRateLimiterBlockResumes(t *testing.T) {
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock))
	feed(l, clock, 40, 50*time.Millisecond, "s")          // 20/s, all admitted
	feed(l, clock, 20, 50*time.Millisecond, "ttttssssss") // 40% throttled: a cut
	before := l.Stats()
	if !before.Enabled {
		t.Fatalf("no cut after 40%% throttled: %+v", before)
	}
	feed(l, clock, 30, 50*time.Millisecond, "t")
	if s := l.Stats(); s.FillRate != retry.DefaultMinFillRate {
		t.Fatalf("during the block: FillRate %v, want %v", s.FillRate, retry.DefaultMinFillRate)
	}
	feed(l, clock, 1, 50*time.Millisecond, "s")
	after := l.Stats()
	if !after.Enabled || math.Abs(after.LastMaxRate-before.FillRate) > 0.1*before.FillRate {
		t.Errorf("after the block: %+v, want the curve to start again near the %.2f/s in use before it", after, before.FillRate)
	}
}

// Fewer than 10 attempts, all throttled, are no block: a client sending
// little cuts by the share, and a success leaves the cut in place.
func TestRateLimiterFewThrottlesNoBlock(t *testing.T) {
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock))
	feed(l, clock, 9, 125*time.Millisecond, "t") // 8/s over 1.125 s
	s := l.Stats()
	if !s.Enabled || s.FillRate == retry.DefaultMinFillRate && s.LastMaxRate == retry.DefaultMinFillRate {
		t.Fatalf("after 9 throttles: %+v, want a cut by the share, not to the minimum", s)
	}
	feed(l, clock, 1, 125*time.Millisecond, "s")
	if s := l.Stats(); !s.Enabled {
		t.Errorf("a success after a cut that was no block: %+v, want the limit kept", s)
	}
}

// One cut never takes the rate below beta times the rate in use, and a cut
// empties the bucket.
func TestRateLimiterCutBoundAndBucket(t *testing.T) {
	for _, tc := range []struct {
		beta          float64
		first, second float64 // the fill rate at 1.5 s and at 2 s
	}{
		// At 1.5 s the last two windows hold 9 throttles of 20: a cut by
		// 45% - 10% of the 20/s in use, bounded by beta. At 2 s they hold
		// 19 of 20: a cut by 95% of the rate allowed at 1.95 s, bounded
		// by beta, and by the test of the throttles' cause that the first
		// cut started, which keeps the rate at half the 20/s sent before
		// it or more.
		{retry.DefaultBeta, 13, 10},
		{0.8, 16, 0.8 * 16 * (1 + retry.DefaultScaleConstant*0.45*0.45*0.45)},
	} {
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithBeta(tc.beta), retry.WithFailFast(true))
		feed(l, clock, 20, 50*time.Millisecond, "s") // [0, 1 s]: 20/s
		feed(l, clock, 10, 50*time.Millisecond, "t") // then all throttled
		if s := l.Stats(); !s.Enabled || math.Abs(s.FillRate-tc.first) > 1e-9 {
			t.Errorf("beta %v: at 1.5 s FillRate = %v, want %v", tc.beta, s.FillRate, tc.first)
		}
		if d, err := l.Acquire(); !errors.Is(err, retry.ErrRateLimited) || d <= 0 {
			t.Errorf("beta %v: Acquire right after a cut = %v, %v; want a wait and ErrRateLimited (the bucket is empty)", tc.beta, d, err)
		}
		feed(l, clock, 10, 50*time.Millisecond, "t")
		if s := l.Stats(); math.Abs(s.FillRate-tc.second) > 1e-9 {
			t.Errorf("beta %v: at 2 s FillRate = %v, want %v", tc.beta, s.FillRate, tc.second)
		}
	}
}

// The same throttled share cuts a client sending 10/s and one sending
// 100/s by the same factor, so a fleet of small clients reacts as one big
// client does.
func TestRateLimiterShareScalesWithTheClient(t *testing.T) {
	for _, perSecond := range []int{10, 100} {
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithThrottleTolerance(0))
		gap := time.Second / time.Duration(perSecond)
		feed(l, clock, perSecond, gap, "s") // 1 s of successes
		// [1 s, 1.5 s): a fifth throttled; the window closes at 1.5 s.
		// The last two windows: 10% throttled, the rate cut by 10%.
		feed(l, clock, perSecond/2, gap, "tssss")
		s := l.Stats()
		if want := 0.9 * float64(perSecond); !s.Enabled || math.Abs(s.LastMaxRate-want) > 1e-9 {
			t.Errorf("%d/s: after a window a fifth throttled Stats() = %+v, want LastMaxRate %v", perSecond, s, want)
		}
	}
}

// WithPublishedCUBIC selects the published constants, and other options
// override them whatever their order.
func TestRateLimiterPublishedOptionOrder(t *testing.T) {
	for _, opts := range [][]retry.RateLimiterOption{
		{retry.WithPublishedCUBIC(), retry.WithBeta(0.6)},
		{retry.WithBeta(0.6), retry.WithPublishedCUBIC()},
	} {
		clock := newManualClock()
		l := newTestRateLimiter(t, append(opts, retry.WithClock(clock))...)
		warmUp(l, clock)
		l.Update(true)
		s := l.Stats()
		if math.Abs(s.FillRate-0.6*s.LastMaxRate) > 1e-12 {
			t.Errorf("one throttle cut the rate to %v of %v, want 0.6 of it", s.FillRate, s.LastMaxRate)
		}
	}
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithPublishedCUBIC())
	warmUp(l, clock)
	l.Update(true)
	if s := l.Stats(); math.Abs(s.FillRate-retry.PublishedBeta*s.LastMaxRate) > 1e-12 || s.LearnedShare != 0 {
		t.Errorf("published: Stats() = %+v, want FillRate PublishedBeta × LastMaxRate", s)
	}
}

// One of many small clients of a service counts the growth curve's time
// in the attempts it asks for: 2 s after a cut, having asked for 20
// attempts, its rate is where the curve is 1 s after the cut.
func ExampleWithDemandClock() {
	// A clock that moves only when told to, so the output is the same
	// every time. Real code leaves out WithClock, and passes the option
	// to NewAdaptive: retry.NewAdaptive(retry.WithDemandClock(10)).
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := retry.ClockFunc(func() time.Time { return now })
	for _, clockOpt := range []retry.RateLimiterOption{retry.WithDemandClock(0), retry.WithDemandClock(20)} {
		l, err := retry.NewRateLimiter(retry.WithClock(clock), clockOpt)
		if err != nil {
			log.Fatal(err)
		}
		send := func(n int, gap time.Duration, throttled func(i int) bool) {
			for i := range n {
				now = now.Add(gap)
				l.Update(throttled(i))
			}
		}
		// 20 attempts a second, then every other one throttled for half
		// a second: a cut, to 17 a second.
		send(20, 50*time.Millisecond, func(int) bool { return false })
		send(10, 50*time.Millisecond, func(i int) bool { return i%2 == 0 })
		cut := l.Stats().FillRate
		// Then 10 attempts a second for 2 s.
		send(20, 100*time.Millisecond, func(int) bool { return false })
		fmt.Printf("cut to %.0f/s, 2 s later %.3f/s\n", cut, l.Stats().FillRate)
	}
	// Output:
	// cut to 17/s, 2 s later 17.408/s
	// cut to 17/s, 2 s later 17.051/s
}

func ExampleNewRateLimiter() {
	// A clock that moves only when told to, so the output is the same
	// every time. Real code leaves out WithClock.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := retry.ClockFunc(func() time.Time { return now })
	l, err := retry.NewRateLimiter(retry.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	send := func(n int, throttled func(i int) bool) {
		for i := range n {
			now = now.Add(50 * time.Millisecond)
			l.Update(throttled(i))
		}
	}

	// 20 attempts a second for 2 s, one of them throttled: no limit.
	send(40, func(i int) bool { return i == 10 })
	d, _ := l.Acquire()
	fmt.Println("enabled:", l.Stats().Enabled, "wait:", d)

	// Then half a second with every other attempt throttled: when that
	// measurement window closes, the rate is cut by the share throttled
	// beyond the tolerated 10%.
	send(10, func(i int) bool { return i%2 == 0 })
	s := l.Stats()
	fmt.Printf("enabled: %v, fill rate: %.1f/s\n", s.Enabled, s.FillRate)

	// A cut empties the bucket: three callers get the next three slots.
	for range 3 {
		d, _ := l.Acquire()
		fmt.Println("wait:", d.Round(time.Millisecond))
	}
	// Output:
	// enabled: false wait: 0s
	// enabled: true, fill rate: 17.0/s
	// wait: 59ms
	// wait: 118ms
	// wait: 176ms
}

// A fail-fast limiter's wait for the next token saturates instead of
// wrapping to a negative duration when the rate is tiny.
func TestRateLimiterFailFastWaitSaturates(t *testing.T) {
	clock := newManualClock()
	l, err := retry.NewRateLimiter(retry.WithClock(clock), retry.WithPublishedCUBIC(),
		retry.WithMinFillRate(1e-300), retry.WithFailFast(true))
	if err != nil {
		t.Fatal(err)
	}
	for range 2000 {
		l.Update(true)
		clock.Advance(time.Second)
	}
	if r := l.Stats().FillRate; r > 1e-100 {
		t.Fatalf("fill rate %g, want a tiny one", r)
	}
	for range 3 {
		d, err := l.Acquire()
		if err == nil {
			continue // the bucket still held a token
		}
		if !errors.Is(err, retry.ErrRateLimited) || d != time.Duration(math.MaxInt64) {
			t.Fatalf("Acquire = %v, %v; want the saturated wait and ErrRateLimited", d, err)
		}
		return
	}
	t.Fatal("the limiter never ran out of tokens")
}

// Before its first cut, the default limiter counts successes within the
// open window without its lock; none is lost when many goroutines do so at
// once, and the next locked Update adds them to the window. Run with -race.
func TestRateLimiterCountsSuccessesWithoutTheLock(t *testing.T) {
	clock := newManualClock()
	l, err := retry.NewRateLimiter(retry.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	l.Update(false) // the first accepted attempt, at 0
	clock.Advance(100 * time.Millisecond)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				l.Update(false)
			}
		})
	}
	wg.Wait()
	clock.Advance(500 * time.Millisecond) // into the next window
	// A throttle always takes the lock (a success may not even read the
	// clock, see TestRateLimiterSharesClockReadings).
	l.Update(true)
	// 1 + 8000 + 1 attempts closed the first 0.5 s window.
	if got, want := l.Stats().MeasuredRate, 8002/0.5; got != want {
		t.Errorf("measured rate %v, want %v: attempts were lost", got, want)
	}
}

// readCountingClock is a manual clock that counts its readings.
type readCountingClock struct {
	*manualClock
	reads atomic.Int64
}

func (c *readCountingClock) Now() time.Time {
	c.reads.Add(1)
	return c.manualClock.Now()
}

// When successes come fast, the default limiter counts most of them
// without reading the clock: one reading serves a stride of up to 64,
// sized so that a stride takes about 1% of a window. The measured rate
// stays right within that; a window's end is seen within a stride; and
// when successes slow down, each reads the clock again.
func TestRateLimiterSharesClockReadings(t *testing.T) {
	clock := &readCountingClock{manualClock: newManualClock()}
	l, err := retry.NewRateLimiter(retry.WithClock(clock))
	require.NoError(t, err)

	// 100,000 successes a second for 1 s: two windows.
	before := clock.reads.Load()
	for range 100_000 {
		l.Update(false)
		clock.Advance(10 * time.Microsecond)
	}
	reads := clock.reads.Load() - before
	assert.Less(t, reads, int64(100_000/32), "successes 10µs apart share clock readings")
	assert.InEpsilon(t, 100_000, l.Stats().MeasuredRate, 0.02, "the measured rate, from counts that are right within a stride")

	// Into a later window: seen within one stride.
	clock.Advance(time.Second)
	rate := l.Stats().MeasuredRate
	calls := 0
	for l.Stats().MeasuredRate == rate {
		l.Update(false)
		calls++
		require.LessOrEqual(t, calls, 64, "the window's end is seen within a stride")
	}

	// 100 successes a second: every one reads the clock again, after at
	// most a few.
	for range 10 {
		l.Update(false)
		clock.Advance(10 * time.Millisecond)
	}
	before = clock.reads.Load()
	for range 100 {
		l.Update(false)
		clock.Advance(10 * time.Millisecond)
	}
	assert.GreaterOrEqual(t, clock.reads.Load()-before, int64(100), "each slow success reads the clock")
}

// A cut empties the bucket by setting its burst to 0; the rate set right
// after restores the burst even when the capacity is the same as before
// the cut, so the bucket refills.
func TestRateLimiterRefillsAfterACutAtTheSameCapacity(t *testing.T) {
	clock := newManualClock()
	l, err := retry.NewRateLimiter(retry.WithClock(clock), retry.WithMinCapacity(1000), retry.WithFailFast(true))
	require.NoError(t, err)
	for range 80 { // 20 attempts a second for 4 s
		l.Update(false)
		clock.Advance(50 * time.Millisecond)
	}
	for i := 0; !l.Stats().Enabled; i++ {
		require.Less(t, i, 100, "every attempt throttled, and the limiter never cut")
		l.Update(true)
		clock.Advance(50 * time.Millisecond)
	}
	require.Equal(t, 1000.0, l.Stats().Capacity, "the capacity is the minimum before and after the cut")
	clock.Advance(time.Minute)
	_, err = l.Acquire()
	assert.NoError(t, err, "the emptied bucket refills")
	assert.Greater(t, l.Stats().Tokens, 0.0)
}

// sendAgainst drives a fail-fast limiter for d: the client wants to send
// perSecond attempts a second, sends each the limiter admits, and the
// server's throttled decides its outcome. It returns the attempts sent in
// the last 5 s of d.
func sendAgainst(l *retry.RateLimiter, clock *manualClock, perSecond float64, d time.Duration, throttled func(now time.Duration) bool) int {
	gap := time.Duration(float64(time.Second) / perSecond)
	sentLate := 0
	for at := time.Duration(0); at < d; at += gap {
		clock.Advance(gap)
		if _, err := l.Acquire(); err != nil {
			continue // no slot: the client does not send
		}
		if at >= d-5*time.Second {
			sentLate++
		}
		l.Update(throttled(at))
	}
	return sentLate
}

// tokenBucket returns a server that admits perSecond attempts a second by a
// token bucket of burst tokens, full at first: it reports whether the
// attempt sent at now is throttled. Times must not go back.
func tokenBucket(perSecond, burst float64) func(now time.Duration) bool {
	tokens, last := burst, time.Duration(0)
	return func(now time.Duration) bool {
		tokens = min(tokens+perSecond*(now-last).Seconds(), burst)
		last = now
		if tokens < 1 {
			return true
		}
		tokens--
		return false
	}
}

// The default algorithm tells congestion from throttles that do not depend
// on the load by a test: a cut from the rate the client wanted holds the
// rate at half of it for a few seconds. A share that stays where it was
// there does not depend on the load: the limiter learns it, goes back to
// the rate the client wanted, and tolerates that share from then on. A
// share that falls is congestion, and the algorithm goes on.
func TestRateLimiterCauseTest(t *testing.T) {
	const demand = 40.0 // attempts a second
	t.Run("load-independent", func(t *testing.T) {
		for _, share := range []int{4, 2} { // every 4th, every other: 25%, 50%
			clock := newManualClock()
			l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
			n := 0
			sent := sendAgainst(l, clock, demand, 30*time.Second, func(time.Duration) bool { n++; return n%share == 0 })
			s := l.Stats()
			want := 1 / float64(share)
			if math.Abs(s.LearnedShare-want) > 0.1 || float64(sent) < 0.9*demand*5 {
				t.Errorf("%.0f%% throttled whatever the rate: learned %.3f, sent %d in the last 5 s (want about %.2f, >= %.0f): %+v",
					100*want, s.LearnedShare, sent, want, 0.9*demand*5, s)
			}
		}
	})
	t.Run("congestion", func(t *testing.T) {
		// A server that admits 20 a second by a token bucket of 2.
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
		sent := sendAgainst(l, clock, demand, 30*time.Second, tokenBucket(20, 2))
		s := l.Stats()
		if s.LearnedShare > 0.05 || !s.Enabled || float64(sent) > 1.3*20*5 {
			t.Errorf("congestion at 2x: learned %.3f, sent %d in the last 5 s (want about 0, <= %.0f): %+v", s.LearnedShare, sent, 1.3*20*5, s)
		}
	})
	t.Run("a window saved before the first attempt", func(t *testing.T) {
		// A service that admits 20 attempts in each window of a second,
		// offered 60 a second. Its windows do not begin with the client:
		// the one open at the first attempt served no one before it, so
		// the client's first second may see two windows' worth admitted,
		// 40, and at half the rate, 30, the 20 of one: a third throttled
		// at both rates, as if that share did not depend on the load.
		// The windows back at the rate before the cut, at which the
		// service admits 20 of 60, show the share rising with the rate:
		// nothing may be learned, whatever the windows' phase.
		for _, phase := range []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond, 700 * time.Millisecond, 900 * time.Millisecond} {
			clock := newManualClock()
			l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
			window, admitted := time.Duration(-1), 0
			sent := sendAgainst(l, clock, 60, 30*time.Second, func(now time.Duration) bool {
				if w := (now + phase) / time.Second; w != window {
					window, admitted = w, 0
				}
				admitted++
				return admitted > 20
			})
			if s := l.Stats(); s.LearnedShare > 0.05 || float64(sent) > 1.3*20*5 {
				t.Errorf("windows of 20 a second, a window beginning %v before the first attempt: learned %.3f, sent %d in the last 5 s (want about 0, <= %.0f): %+v",
					phase, s.LearnedShare, sent, 1.3*20*5, s)
			}
		}
	})
	t.Run("a bucket full at the first attempt", func(t *testing.T) {
		// The same with a token bucket of 20 a second that holds half a
		// second to two seconds of its rate when the client starts: the
		// first second sees the bucket's tokens admitted beside the rate.
		for _, burst := range []float64{10, 20, 40} {
			clock := newManualClock()
			l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
			sent := sendAgainst(l, clock, 60, 30*time.Second, tokenBucket(20, burst))
			if s := l.Stats(); s.LearnedShare > 0.05 || float64(sent) > 1.3*20*5 {
				t.Errorf("a bucket of %.0f tokens, 20 a second: learned %.3f, sent %d in the last 5 s (want about 0, <= %.0f): %+v",
					burst, s.LearnedShare, sent, 1.3*20*5, s)
			}
		}
	})
	t.Run("from the first window", func(t *testing.T) {
		// A cut at the first window, on 0.5 s of evidence (30 attempts):
		// the test holds half of what the client sent in that half
		// second, 30 a second, however many throttles follow (every
		// other attempt).
		const sent = 60.0
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
		n := 0
		sendAgainst(l, clock, sent, 2*time.Second, func(time.Duration) bool { n++; return n%2 == 0 })
		if s := l.Stats(); s.FillRate < sent/2 {
			t.Errorf("the test of a cut at the first window let the rate fall to %.1f, below half the %.0f sent: %+v", s.FillRate, sent, s)
		}
	})
	t.Run("no answer", func(t *testing.T) {
		// Half a second of 60% throttled cuts and starts a test; from
		// then on 15% are throttled whatever the rate, a fall at half the
		// rate too small to be congestion's, too large to be no fall at
		// all: the test has no answer after 8 s. The 15% at half the rate
		// is well above what congestion would leave, so the test moves on
		// to a quarter, finds the 15% there too, learns it and goes back
		// to the rate before its cut, by 15 s. (Taking the throttles for
		// congestion and testing again at the next cut learned it only
		// at 16.5 s; had nothing learned it, the cuts would follow the
		// 15% down to the minimum rate.)
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
		n := 0
		sendAgainst(l, clock, demand, 15*time.Second, func(now time.Duration) bool {
			n++
			switch {
			case now < 2*time.Second:
				return false
			case now < 2500*time.Millisecond:
				return n%20 < 12
			}
			return n%20 < 3
		})
		if s := l.Stats(); math.Abs(s.LearnedShare-0.15) > 0.05 || s.Enabled {
			t.Errorf("15%% throttled whatever the rate after a test without an answer: at 15 s learned %.3f, pacing %v (want about 0.15, not pacing): %+v",
				s.LearnedShare, s.Enabled, s)
		}
	})
	t.Run("no answer, then congestion", func(t *testing.T) {
		// The same, but the 15% fall to 2% below 15 attempts a second:
		// the share at a quarter of the rate falls, so the test takes
		// the throttles for congestion and goes back to half the rate.
		// Nothing is learned.
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
		n := 0
		var sends []time.Duration // the last second's
		sendAgainst(l, clock, demand, 40*time.Second, func(now time.Duration) bool {
			n++
			sends = append(sends, now)
			for len(sends) > 0 && sends[0] <= now-time.Second {
				sends = sends[1:]
			}
			switch {
			case now < 2*time.Second:
				return false
			case now < 2500*time.Millisecond:
				return n%20 < 12
			case len(sends) >= 15:
				return n%20 < 3
			}
			return n%50 == 0
		})
		if s := l.Stats(); s.LearnedShare > 0.05 || !s.Enabled {
			t.Errorf("15%% throttled at 15/s or more, 2%% below: learned %.3f, pacing %v (want nothing learned, pacing): %+v",
				s.LearnedShare, s.Enabled, s)
		}
	})
	t.Run("a share within the tolerance left", func(t *testing.T) {
		// A quarter throttled in the first second cuts, before any share
		// is learned, and starts a test; from then on a share within the
		// tolerance is throttled whatever the rate. At half the rate the
		// share falls, in the end significantly, but to more than
		// congestion from the client alone would leave (none). The
		// pacing that follows learns and tolerates the share, and the
		// rate grows back to the demand. (Learning nothing, the pacing
		// would tolerate no throttles, and the share would cut the rate
		// at every window that holds one, down to the minimum.)
		for _, c := range []struct {
			name      string
			want      float64 // attempts a second
			throttled func(n int) bool
			share     float64
			slack     float64 // how far the share learned may be from share
		}{
			// 8% at 40 a second: left significantly, the test takes the
			// throttles for congestion, as the share is within the
			// tolerance (only a share above it moves on to a quarter
			// then), and learns the share.
			{"8% at 40 a second", demand, func(n int) bool { return n%25 < 2 }, 0.08, 0.04},
			// 5% at 200 a second: 2 or 3 throttles of the 50 attempts
			// the test decides on, not significant; the test moves on
			// to a quarter, where its wait gathers attempts enough to
			// find the share well above congestion's, learns it and
			// goes back to half the rate. (Taking the throttles for
			// congestion at half the rate, as before the test moved on
			// there, left 9 attempts a second at 40 s.)
			{"5% at 200 a second", 200, func(n int) bool { return n%20 == 0 }, 0.05, 0.02},
		} {
			clock := newManualClock()
			l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
			n := 0
			sent := sendAgainst(l, clock, c.want, 40*time.Second, func(now time.Duration) bool {
				n++
				if now < time.Second {
					return n%4 == 0
				}
				return c.throttled(n)
			})
			if s := l.Stats(); math.Abs(s.LearnedShare-c.share) > c.slack || float64(sent) < 0.9*c.want*5 {
				t.Errorf("%s throttled whatever the rate, after a fall at half the rate: learned %.3f, sent %d in the last 5 s (want about %.2f, >= %.0f): %+v",
					c.name, s.LearnedShare, sent, c.share, 0.9*c.want*5, s)
			}
		}
	})
	t.Run("both", func(t *testing.T) {
		// A server that throttles every k-th attempt whatever the load,
		// and admits at most so many a second of the rest by a token
		// bucket; the client wants several times what it admits. At half
		// the rate the share falls, but to more than congestion from the
		// client alone would leave, so the test goes on at a quarter,
		// where the share that does not depend on the load stays, and the
		// limiter learns it instead of cutting for it, one throttle at a
		// time, far below what the bucket admits (at 5%, to about 5 a
		// second). It then sends at about the rate that gets the bucket's
		// rate admitted. A share within the tolerance, at a quarter, is
		// taken for congestion, but learned all the same: it is well
		// above what congestion would leave there (none).
		for _, c := range []struct {
			k                   int     // every k-th attempt throttled
			rate, burst, demand float64 // the bucket's, and the client's demand as a multiple of what it admits
			slack               float64 // how far the share learned may be from 1/k
		}{
			{k: 4, rate: 20, burst: 2, demand: 4, slack: 0.1},
			{k: 20, rate: 100, burst: 20, demand: 3, slack: 0.03},
		} {
			clock := newManualClock()
			l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
			bucket, n := tokenBucket(c.rate, c.burst), 0
			share := 1 / float64(c.k)
			ideal := c.rate / (1 - share)
			sent := sendAgainst(l, clock, c.demand*ideal, 60*time.Second, func(now time.Duration) bool {
				if n++; n%c.k == 0 {
					return true
				}
				return bucket(now)
			})
			s := l.Stats()
			if math.Abs(s.LearnedShare-share) > c.slack || float64(sent) < 0.8*ideal*5 || float64(sent) > 1.5*ideal*5 {
				t.Errorf("%.0f%% throttled whatever the rate, and overloaded %gx: learned %.3f, sent %d in the last 5 s (want about %.2f, %.0f to %.0f): %+v",
					100*share, c.demand, s.LearnedShare, sent, share, 0.8*ideal*5, 1.5*ideal*5, s)
			}
		}
	})
}

// A load-independent share that appears while the limiter paces the client
// cuts at every window, since pacing tolerates no throttles, and no test of
// the throttles' cause can start. The cuts form a descent: once the client
// sends at a quarter of the rate the first cut was made from, a share that
// stayed where it was does not depend on the load, and the limiter learns
// it and goes back to the rate before that cut. A share that stays near the
// tolerance, which is what a fleet's clients see of each other's load,
// begins no descent.
func TestRateLimiterDescent(t *testing.T) {
	const demand = 40.0 // attempts a second
	// Congestion for 10 s (a token bucket of 20 a second), which leaves
	// the limiter pacing the client; then capacity to spare, and every
	// n-th attempt throttled whatever the load.
	run := func(n int) (retry.RateLimiterStats, int) {
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
		bucket, i := tokenBucket(20, 2), 0
		sent := sendAgainst(l, clock, demand, time.Minute, func(now time.Duration) bool {
			if now >= 10*time.Second {
				i++
				return i%n == 0
			}
			return bucket(now)
		})
		return l.Stats(), sent
	}
	if s, sent := run(4); math.Abs(s.LearnedShare-0.25) > 0.03 || float64(sent) < 0.95*demand*5 {
		t.Errorf("25%% throttled whatever the load, after congestion: learned %.3f, sent %d in the last 5 s (want about 0.25, >= %.0f): %+v",
			s.LearnedShare, sent, 0.95*demand*5, s)
	}
	if s, sent := run(9); s.LearnedShare != 0 || !s.Enabled || s.FillRate > 4*retry.DefaultMinFillRate {
		t.Errorf("11%% throttled whatever the load, after congestion: learned %.3f, allowed %.1f/s, sent %d in the last 5 s (want nothing learned, near the minimum rate): %+v",
			s.LearnedShare, s.FillRate, sent, s)
	}
}

// A share learned from a test, on few attempts, follows the windows after
// it that are not significantly above it: 30% throttled, then 35%.
func TestRateLimiterLearnedShareFollows(t *testing.T) {
	clock := newManualClock()
	l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(true))
	n := 0
	sendAgainst(l, clock, 40, time.Minute, func(now time.Duration) bool {
		n++
		if now < 10*time.Second {
			return n%10 < 3
		}
		return n%20 < 7
	})
	if s := l.Stats(); math.Abs(s.LearnedShare-0.35) > 0.01 {
		t.Errorf("35%% throttled for 50 s after 30%% for 10 s: learned %.3f, want 0.35: %+v", s.LearnedShare, s)
	}
}

// TestRateLimiterRandomInvariants drives limiters of every algorithm, with
// options at the ends of their ranges, through random attempts, throttles,
// acquisitions and assignments (rates from 1e-300 to the largest float64
// and infinity), on a clock that jumps, backwards too: whatever they are
// given that they accept, their rates, capacity and tokens are never NaN
// or negative, and no wait is negative. (It found the published
// algorithm's rate NaN after an assignment of the largest float64, or any
// assignment with a tiny WithBeta, had ended: the curve's maximum, the
// rate over beta, was infinite.)
func TestRateLimiterRandomInvariants(t *testing.T) {
	rates := []float64{1e-300, 1e-9, 0.001, 0.5, 3, 100, 1e4, 1e9, 1e15, 1e300, math.MaxFloat64, math.Inf(1)}
	configs := [][]retry.RateLimiterOption{
		nil,
		{retry.WithPublishedCUBIC()},
		{retry.WithFailFast(true)},
		{retry.WithDemandClock(10)},
		{retry.WithMinFillRate(1e-6)},
		{retry.WithMinFillRate(math.MaxFloat64)},
		{retry.WithMinFillRate(math.MaxFloat64), retry.WithPublishedCUBIC()},
		{retry.WithPublishedCUBIC(), retry.WithBeta(1e-300)},
		{retry.WithPublishedCUBIC(), retry.WithScaleConstant(1e-300)},
		{retry.WithPublishedCUBIC(), retry.WithScaleConstant(math.MaxFloat64)},
		{retry.WithBeta(1e-300)},
		{retry.WithScaleConstant(1e-300)},
		{retry.WithScaleConstant(math.MaxFloat64), retry.WithSmoothing(1e-300)},
	}
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 0))
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clock := retry.ClockFunc(func() time.Time { return now })
		for c, opts := range configs {
			l, err := retry.NewRateLimiter(append([]retry.RateLimiterOption{retry.WithClock(clock)}, opts...)...)
			require.NoError(t, err)
			for step := range 5000 {
				switch r := rng.IntN(100); {
				case r < 3:
					now = now.Add(time.Duration(rng.Int64N(int64(time.Hour))) - 10*time.Minute)
				case r < 40:
					unit := []time.Duration{time.Microsecond, time.Millisecond, 100 * time.Millisecond, time.Second}[rng.IntN(4)]
					now = now.Add(time.Duration(rng.ExpFloat64() * float64(unit)))
				}
				switch r := rng.IntN(100); {
				case r < 50:
					l.Update(rng.IntN(3) == 0)
				case r < 90:
					d, _ := l.Acquire()
					require.GreaterOrEqual(t, d, time.Duration(0), "seed %d, config %d, step %d", seed, c, step)
				default:
					a := retry.Assignment{Rate: rates[rng.IntN(len(rates))], Burst: []int{0, 1, 2, 1 << 20, math.MaxInt32}[rng.IntN(5)],
						Phase: rng.Float64(), Until: now.Add(time.Duration(rng.Int64N(int64(10 * time.Second))))}
					if rng.IntN(3) == 0 {
						a.NextSend = now.Add(time.Duration(rng.Int64N(int64(5*time.Second))) - time.Second)
					}
					if rng.IntN(3) == 0 {
						a.Ceiling = rates[rng.IntN(len(rates)-1)]
					}
					_ = l.Assign(a) // refused if out of range
				}
				s := l.Stats()
				for _, v := range []float64{s.FillRate, s.MeasuredRate, s.Capacity, s.LastMaxRate} {
					require.False(t, math.IsNaN(v) || v < 0, "seed %d, config %d, step %d: %+v", seed, c, step, s)
				}
				require.False(t, math.IsNaN(s.Tokens), "seed %d, config %d, step %d: %+v", seed, c, step, s)
			}
		}
	}
}
