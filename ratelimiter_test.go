package retry_test

import (
	"errors"
	"fmt"
	"log"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrykit/retry"
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
		{retry.WithMeasurementWindow(0), "WithMeasurementWindow"},
		{retry.WithMeasurementWindow(-time.Second), "WithMeasurementWindow"},
		{retry.WithReductionCooldown(-time.Nanosecond), "WithReductionCooldown"},
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
}

func TestNewRateLimiterValidOptions(t *testing.T) {
	for _, opts := range [][]retry.RateLimiterOption{
		nil,
		{retry.WithBeta(0.001), retry.WithBeta(0.999)},
		{retry.WithScaleConstant(1e-9), retry.WithSmoothing(1), retry.WithMinFillRate(1e-9)},
		{retry.WithMinCapacity(1), retry.WithMinCapacity(100)},
		{retry.WithMeasurementWindow(time.Nanosecond), retry.WithReductionCooldown(0)},
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

func TestRateLimiterDisabledUntilThrottle(t *testing.T) {
	for _, failFast := range []bool{false, true} {
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithFailFast(failFast))
		for i := range 100 {
			if d, err := l.Acquire(); d != 0 || err != nil {
				t.Fatalf("failFast=%v: Acquire %d = %v, %v before any throttle; want 0, nil", failFast, i, d, err)
			}
			if i%10 == 0 {
				l.Update(false)
			}
		}
		if l.Stats().Enabled {
			t.Errorf("failFast=%v: Enabled before any throttle", failFast)
		}
		clock.Advance(10 * time.Millisecond)
		l.Update(true)
		s := l.Stats()
		if !s.Enabled || !s.LastThrottle.Equal(clock.Now()) {
			t.Errorf("failFast=%v: after a throttle Enabled, LastThrottle = %v, %v; want true, %v", failFast, s.Enabled, s.LastThrottle, clock.Now())
		}
	}
}

// throttledLimiter returns a limiter that has just been throttled with
// nothing measured, as the published algorithm starts (no cooldown, so no
// start-up estimate): its fill rate is the minimum, 0.5/s, its capacity 1,
// and its bucket empty.
func throttledLimiter(t *testing.T, opts ...retry.RateLimiterOption) (*retry.RateLimiter, *manualClock) {
	t.Helper()
	clock := newManualClock()
	l := newTestRateLimiter(t, append([]retry.RateLimiterOption{retry.WithClock(clock), retry.WithReductionCooldown(0)}, opts...)...)
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

func TestRateLimiterReductionCooldown(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock))
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
		if !got.LastThrottle.Equal(clock.Now()) || math.Abs(got.FillRate-retry.DefaultBeta*got.LastMaxRate) > 1e-12 {
			t.Errorf("throttle after the cooldown: Stats() = %+v, want a reduction at %v", got, clock.Now())
		}
	})

	t.Run("published", func(t *testing.T) {
		clock := newManualClock()
		l := newTestRateLimiter(t, retry.WithClock(clock), retry.WithReductionCooldown(0))
		warmUp(l, clock)
		l.Update(true)
		prev := l.Stats()
		for range 4 {
			clock.Advance(100 * time.Millisecond)
			l.Update(true)
			got := l.Stats()
			if !got.LastThrottle.Equal(clock.Now()) || math.Abs(got.FillRate-retry.DefaultBeta*prev.FillRate) > 1e-12 {
				t.Fatalf("throttle: Stats() = %+v, want FillRate %v × %v", got, retry.DefaultBeta, prev.FillRate)
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
		{"published", []retry.RateLimiterOption{retry.WithReductionCooldown(0)}},
		{"fail-fast", []retry.RateLimiterOption{retry.WithFailFast(true)}},
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
			if !s.Enabled {
				t.Error("not enabled after throttles")
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
	for _, failFast := range []bool{false, true} {
		l := newTestRateLimiter(t, retry.WithFailFast(failFast))
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			l.Acquire()
			i++
			l.Update(i%10 == 0)
			_ = l.Stats()
		})
		if allocs != 0 {
			t.Errorf("failFast=%v: %v allocations per Acquire+Update+Stats, want 0", failFast, allocs)
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

func ExampleNewRateLimiter() {
	// A clock that moves only when told to, so the output is the same
	// every time. Real code leaves out WithClock.
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := retry.ClockFunc(func() time.Time { return now })

	l, err := retry.NewRateLimiter(retry.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}

	// Before the service throttles anything, nothing waits.
	d, _ := l.Acquire()
	fmt.Println("first attempt waits:", d)

	// The service throttles the attempt: from now on, sends are paced.
	now = now.Add(100 * time.Millisecond)
	l.Update(true)
	s := l.Stats()
	fmt.Printf("enabled: %v, fill rate: %.1f/s\n", s.Enabled, s.FillRate)

	// Three callers ask at once; each gets the next slot.
	for range 3 {
		d, _ := l.Acquire()
		fmt.Println("wait:", d)
	}
	// Output:
	// first attempt waits: 0s
	// enabled: true, fill rate: 1.6/s
	// wait: 625ms
	// wait: 1.25s
	// wait: 1.875s
}

// A throttle before the first measurement window closes cuts the rate from
// what was sent so far, not from zero; the published algorithm (cooldown 0)
// cuts it to the minimum.
func TestRateLimiterStartupEstimate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []retry.RateLimiterOption
		want float64
	}{
		{"default", nil, retry.DefaultBeta * 20},
		{"published", []retry.RateLimiterOption{retry.WithReductionCooldown(0), retry.WithBeta(retry.PublishedBeta)}, retry.DefaultMinFillRate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newManualClock()
			l := newTestRateLimiter(t, append([]retry.RateLimiterOption{retry.WithClock(clock)}, tc.opts...)...)
			for range 9 { // 9 successes and a throttle in 0.45 s: 10 per 0.5-s window, 20/s
				clock.Advance(45 * time.Millisecond)
				l.Update(false)
			}
			l.Update(true)
			if got := l.Stats().FillRate; math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("FillRate after the first throttle = %v, want %v", got, tc.want)
			}
		})
	}
}
