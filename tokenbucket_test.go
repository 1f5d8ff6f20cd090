package retry_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

func newBucket(t testing.TB, opts ...retry.TokenBucketOption) *retry.TokenBucket {
	t.Helper()
	b, err := retry.NewTokenBucket(opts...)
	require.NoError(t, err)
	require.NotNil(t, b)
	return b
}

// acquire takes n tokens and requires that no wait was asked for.
func acquire(t *testing.T, b *retry.TokenBucket, n int) {
	t.Helper()
	wait, err := b.Acquire(n)
	require.NoError(t, err)
	require.Zero(t, wait)
}

func TestTokenBucketDefaults(t *testing.T) {
	b := newBucket(t)
	assert.Equal(t, retry.TokenBucketStats{
		Available:      500,
		Owed:           0,
		Capacity:       500,
		RefillRate:     0,
		CircuitBreaker: true,
	}, b.Stats())
	assert.Equal(t, 500, retry.DefaultMaxCapacity)
}

func TestTokenBucketRetryCost(t *testing.T) {
	tests := []struct {
		name string
		opts []retry.TokenBucketOption
		c    retry.Classification
		want int
	}{
		{"transient", nil, retry.Classification{Safety: retry.SafetyYes}, 5},
		{"timeout", nil, retry.Classification{Safety: retry.SafetyYes, Timeout: true}, 10},
		{"throttle", nil, retry.Classification{Safety: retry.SafetyYes, Throttle: true}, 5},
		{"throttle and timeout", nil, retry.Classification{Safety: retry.SafetyYes, Throttle: true, Timeout: true}, 5},
		{"unclassified", nil, retry.Classification{}, 5},
		{"408", nil, retry.ClassifyStatus(408), 10},
		{"429", nil, retry.ClassifyStatus(429), 5},
		{"503", nil, retry.ClassifyStatus(503), 5},

		{"custom transient", customCosts, retry.Classification{Safety: retry.SafetyYes}, 3},
		{"custom timeout", customCosts, retry.Classification{Safety: retry.SafetyYes, Timeout: true}, 7},
		{"custom throttle", customCosts, retry.Classification{Safety: retry.SafetyYes, Throttle: true}, 2},
		{"custom throttle and timeout", customCosts, retry.Classification{Throttle: true, Timeout: true}, 2},
		{"zero costs", []retry.TokenBucketOption{retry.WithRetryCost(0), retry.WithTimeoutRetryCost(0), retry.WithThrottlingRetryCost(0)},
			retry.Classification{Safety: retry.SafetyYes, Timeout: true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, newBucket(t, tt.opts...).RetryCost(tt.c))
		})
	}
}

var customCosts = []retry.TokenBucketOption{
	retry.WithRetryCost(3), retry.WithTimeoutRetryCost(7), retry.WithThrottlingRetryCost(2),
}

func TestTokenBucketAcquireRelease(t *testing.T) {
	b := newBucket(t)
	acquire(t, b, 5)
	assert.Equal(t, 495.0, b.Stats().Available)
	acquire(t, b, 10)
	assert.Equal(t, 485.0, b.Stats().Available)
	acquire(t, b, 0)
	assert.Equal(t, 485.0, b.Stats().Available)

	require.NoError(t, b.Release(5))
	assert.Equal(t, 490.0, b.Stats().Available)
	require.NoError(t, b.Release(0))
	assert.Equal(t, 490.0, b.Stats().Available)

	// Never above capacity.
	require.NoError(t, b.Release(100))
	assert.Equal(t, 500.0, b.Stats().Available)
	require.NoError(t, b.Release(math.MaxInt))
	assert.Equal(t, 500.0, b.Stats().Available)

	// Drained to exactly zero, then refilled from zero.
	acquire(t, b, 500)
	assert.Zero(t, b.Stats().Available)
	require.NoError(t, b.Release(1))
	assert.Equal(t, 1.0, b.Stats().Available)
	acquire(t, b, 1)
	require.NoError(t, b.Release(500))
	assert.Equal(t, 500.0, b.Stats().Available)
}

func TestTokenBucketNegativeArguments(t *testing.T) {
	b := newBucket(t)
	acquire(t, b, 20)
	before := b.Stats()

	wait, err := b.Acquire(-1)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.ErrorContains(t, err, "TokenBucket.Acquire count = -1, want >= 0")
	assert.NotErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	assert.Zero(t, wait)

	err = b.Release(-1)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.ErrorContains(t, err, "TokenBucket.Release count = -1, want >= 0")

	_, err = b.Acquire(math.MinInt)
	require.Error(t, err)
	require.Error(t, b.Release(math.MinInt))

	assert.Equal(t, before, b.Stats(), "errors change nothing")

	// A full bucket still rejects a negative release.
	require.Error(t, newBucket(t).Release(-5))
}

func TestTokenBucketCircuitBreaker(t *testing.T) {
	b := newBucket(t, retry.WithMaxCapacity(12))
	acquire(t, b, 5)
	acquire(t, b, 5)
	before := b.Stats()
	require.Equal(t, 2.0, before.Available)

	wait, err := b.Acquire(5)
	require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	assert.Zero(t, wait)
	assert.Equal(t, before, b.Stats(), "a refused acquire takes nothing")

	acquire(t, b, 2) // exactly what is left
	_, err = b.Acquire(1)
	require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	assert.Zero(t, b.Stats().Available)
	assert.Zero(t, b.Stats().Owed)

	// A zero-capacity bucket allows no retries, but free acquires pass.
	z := newBucket(t, retry.WithMaxCapacity(0))
	_, err = z.Acquire(1)
	require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	acquire(t, z, 0)
	require.NoError(t, z.Release(5))
	assert.Zero(t, z.Stats().Available)
}

func TestTokenBucketRefill(t *testing.T) {
	clk := newManualClock()
	b := newBucket(t, retry.WithClock(clk), retry.WithRefillRate(2))
	assert.Equal(t, 2.0, b.Stats().RefillRate)

	acquire(t, b, 500)
	assert.Zero(t, b.Stats().Available)

	clk.Advance(1500 * time.Millisecond)
	assert.Equal(t, 3.0, b.Stats().Available)
	clk.Advance(250 * time.Millisecond)
	assert.Equal(t, 3.5, b.Stats().Available)

	// Refill lets a refused retry through once it has earned enough.
	_, err := b.Acquire(5)
	require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	clk.Advance(750 * time.Millisecond)
	acquire(t, b, 5)
	assert.Zero(t, b.Stats().Available)

	// Never above capacity, and a full bucket banks no credit.
	clk.Advance(time.Hour)
	assert.Equal(t, 500.0, b.Stats().Available)
	clk.Advance(time.Hour)
	acquire(t, b, 10)
	assert.Equal(t, 490.0, b.Stats().Available)
	clk.Advance(time.Second)
	assert.Equal(t, 492.0, b.Stats().Available)
}

func TestTokenBucketRefillClockStepsBack(t *testing.T) {
	clk := newManualClock()
	b := newBucket(t, retry.WithClock(clk), retry.WithRefillRate(2))
	acquire(t, b, 500)

	clk.Advance(-10 * time.Second)
	assert.Zero(t, b.Stats().Available, "stepping back earns nothing")
	clk.Advance(10 * time.Second)
	assert.Zero(t, b.Stats().Available, "nor does returning to where it was")
	clk.Advance(time.Second)
	assert.Equal(t, 2.0, b.Stats().Available, "time after the last refill earns")

	clk.Advance(-time.Hour)
	acquire(t, b, 2)
	require.NoError(t, b.Release(1))
	assert.Equal(t, 1.0, b.Stats().Available)
}

func TestTokenBucketRefillSystemClock(t *testing.T) {
	// Without WithClock the bucket reads the system clock; only the bound
	// is checked.
	b := newBucket(t, retry.WithRefillRate(1e6))
	acquire(t, b, 500)
	s := b.Stats()
	assert.GreaterOrEqual(t, s.Available, 0.0)
	assert.LessOrEqual(t, s.Available, 500.0)
}

func TestTokenBucketWaitMode(t *testing.T) {
	clk := newManualClock()
	b := newBucket(t, retry.WithClock(clk), retry.WithCircuitBreaker(false), retry.WithRefillRate(10))
	assert.False(t, b.Stats().CircuitBreaker)

	acquire(t, b, 500)
	wait, err := b.Acquire(5)
	require.NoError(t, err)
	assert.Equal(t, 500*time.Millisecond, wait)
	assert.Equal(t, retry.TokenBucketStats{Available: 0, Owed: 5, Capacity: 500, RefillRate: 10}, b.Stats())

	wait, err = b.Acquire(5)
	require.NoError(t, err)
	assert.Equal(t, time.Second, wait, "the second waits behind the first")
	assert.Equal(t, 10.0, b.Stats().Owed)
	assert.Zero(t, b.Stats().Available, "never below zero")

	// Refill repays the debt first.
	clk.Advance(500 * time.Millisecond)
	assert.Equal(t, 5.0, b.Stats().Owed)
	assert.Zero(t, b.Stats().Available)
	clk.Advance(500 * time.Millisecond)
	assert.Zero(t, b.Stats().Owed)
	assert.Zero(t, b.Stats().Available)
	clk.Advance(300 * time.Millisecond)
	assert.Equal(t, 3.0, b.Stats().Available)

	// Partly covered: the wait is for the missing part only.
	wait, err = b.Acquire(5)
	require.NoError(t, err)
	assert.Equal(t, 200*time.Millisecond, wait)
	assert.Equal(t, 2.0, b.Stats().Owed)

	// A release pays what is owed first.
	require.NoError(t, b.Release(5))
	assert.Equal(t, 3.0, b.Stats().Available)
	assert.Zero(t, b.Stats().Owed)

	// Enough tokens: no wait.
	acquire(t, b, 3)
	clk.Advance(time.Hour)
	assert.Equal(t, 500.0, b.Stats().Available)
}

// A wait longer than time.Duration can hold (about 292 years) must
// saturate, not wrap to a negative wait that lets the retry go at once.
func TestTokenBucketWaitModeWaitOverflow(t *testing.T) {
	clk := newManualClock()
	b := newBucket(t, retry.WithClock(clk), retry.WithCircuitBreaker(false),
		retry.WithRefillRate(1e-9), retry.WithMaxCapacity(0))
	prev := time.Duration(0)
	for range 3 {
		wait, err := b.Acquire(5)
		require.NoError(t, err)
		require.GreaterOrEqual(t, wait, prev, "waits grow with the debt")
		prev = wait
	}
	assert.Equal(t, time.Duration(math.MaxInt64), prev)

	b = newBucket(t, retry.WithClock(clk), retry.WithCircuitBreaker(false), retry.WithRefillRate(10))
	wait, err := b.Acquire(math.MaxInt)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(math.MaxInt64), wait)
}

func TestNewTokenBucketErrors(t *testing.T) {
	tests := []struct {
		name   string
		opts   []retry.TokenBucketOption
		option string
	}{
		{"negative capacity", []retry.TokenBucketOption{retry.WithMaxCapacity(-1)}, "WithMaxCapacity"},
		{"negative initial try cost", []retry.TokenBucketOption{retry.WithInitialTryCost(-1)}, "WithInitialTryCost"},
		{"negative success increment", []retry.TokenBucketOption{retry.WithInitialTrySuccessIncrement(-1)}, "WithInitialTrySuccessIncrement"},
		{"negative retry cost", []retry.TokenBucketOption{retry.WithRetryCost(-1)}, "WithRetryCost"},
		{"negative timeout cost", []retry.TokenBucketOption{retry.WithTimeoutRetryCost(-5)}, "WithTimeoutRetryCost"},
		{"negative throttling cost", []retry.TokenBucketOption{retry.WithThrottlingRetryCost(math.MinInt)}, "WithThrottlingRetryCost"},
		{"capacity above 2^53", []retry.TokenBucketOption{retry.WithMaxCapacity(1<<53 + 1)}, "WithMaxCapacity"},
		{"capacity math.MaxInt", []retry.TokenBucketOption{retry.WithMaxCapacity(math.MaxInt)}, "WithMaxCapacity"},
		{"retry cost above 2^53", []retry.TokenBucketOption{retry.WithRetryCost(math.MaxInt)}, "WithRetryCost"},
		{"success increment above 2^53", []retry.TokenBucketOption{retry.WithInitialTrySuccessIncrement(1<<53 + 1)}, "WithInitialTrySuccessIncrement"},
		{"nil clock", []retry.TokenBucketOption{retry.WithClock(nil)}, "WithClock"},
		{"negative refill", []retry.TokenBucketOption{retry.WithRefillRate(-0.5)}, "WithRefillRate"},
		{"NaN refill", []retry.TokenBucketOption{retry.WithRefillRate(math.NaN())}, "WithRefillRate"},
		{"+Inf refill", []retry.TokenBucketOption{retry.WithRefillRate(math.Inf(1))}, "WithRefillRate"},
		{"wait mode without refill", []retry.TokenBucketOption{retry.WithCircuitBreaker(false)}, "WithRefillRate"},
		{"wait mode with zero refill", []retry.TokenBucketOption{retry.WithRefillRate(0), retry.WithCircuitBreaker(false)}, "WithRefillRate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := retry.NewTokenBucket(tt.opts...)
			require.Error(t, err)
			assert.Nil(t, b)
			assert.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.option)
			if strings.HasPrefix(tt.name, "capacity") || strings.Contains(tt.name, "2^53") {
				assert.ErrorContains(t, err, "0 to 2^53", "the error names the valid range")
			}

			// The same option given to a strategy fails the same way.
			opts := make([]retry.StandardOption, len(tt.opts))
			for i, o := range tt.opts {
				opts[i] = o
			}
			s, err := retry.NewStandard(opts...)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.option)
		})
	}
}

func TestNewTokenBucketValidEdges(t *testing.T) {
	for _, opts := range [][]retry.TokenBucketOption{
		{retry.WithMaxCapacity(0)},
		{retry.WithRetryCost(0), retry.WithTimeoutRetryCost(0), retry.WithThrottlingRetryCost(0)},
		{retry.WithInitialTryCost(0), retry.WithInitialTrySuccessIncrement(0)},
		{retry.WithRefillRate(0)},
		{retry.WithRefillRate(1e-9), retry.WithCircuitBreaker(false)},
		{retry.WithCircuitBreaker(false), retry.WithRefillRate(1)}, // order does not matter
		{retry.WithClock(newManualClock())},
		{retry.WithClock(retry.ClockFunc(time.Now))},
	} {
		newBucket(t, opts...)
	}
}

func TestStandardQuotaOptionConflicts(t *testing.T) {
	q := newBucket(t)
	for _, opts := range [][]retry.StandardOption{
		{retry.WithRetryQuota(q), retry.WithMaxCapacity(10)},
		{retry.WithoutRetryQuota(), retry.WithRetryCost(1)},
	} {
		_, err := retry.NewStandard(opts...)
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
		assert.ErrorContains(t, err, "TokenBucketOption")
	}
	_, err := retry.NewStandard(retry.WithRetryQuota(nil))
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.ErrorContains(t, err, "WithRetryQuota")
}

// watchBucket samples b.Stats until stop is closed and reports the first
// snapshot that breaks 0 <= Available <= Capacity, Owed >= 0, and not both
// Available and Owed above zero.
func watchBucket(b *retry.TokenBucket, stop <-chan struct{}) (samples *atomic.Int64, bad *atomic.Pointer[retry.TokenBucketStats], done <-chan struct{}) {
	samples = new(atomic.Int64)
	bad = new(atomic.Pointer[retry.TokenBucketStats])
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			s := b.Stats()
			samples.Add(1)
			if s.Available < 0 || s.Available > float64(s.Capacity) || s.Owed < 0 || (s.Available > 0 && s.Owed > 0) {
				bad.CompareAndSwap(nil, &s)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	return samples, bad, finished
}

// hammerResult is what hammerBucket saw.
type hammerResult struct {
	outstanding int   // tokens still held when the goroutines stopped
	acquired    int64 // acquires that took their tokens
	waited      int64 // of those, acquires that were told to wait (wait mode)
	refused     int64 // acquires refused with ErrRetryQuotaExceeded
	samples     int64 // snapshots the watcher checked
}

// hammerBucket runs 256 goroutines that each acquire random amounts and
// release only what they acquired, so the bucket can never cap a release,
// while a watcher checks every snapshot's bounds. It fails t on any
// unexpected error or bad snapshot.
func hammerBucket(t *testing.T, b *retry.TokenBucket, seed uint64) hammerResult {
	t.Helper()
	const goroutines, ops = 256, 400
	stop := make(chan struct{})
	samples, bad, watched := watchBucket(b, stop)
	var (
		wg                        sync.WaitGroup
		outstanding               [goroutines]int
		acquired, waited, refused atomic.Int64
		failures                  atomic.Int64
	)
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), seed))
			var held []int
			for range ops {
				if len(held) == 0 || (len(held) < 4 && r.IntN(2) == 0) {
					n := r.IntN(11)
					wait, err := b.Acquire(n)
					switch {
					case errors.Is(err, retry.ErrRetryQuotaExceeded):
						refused.Add(1)
					case err != nil || wait < 0:
						failures.Add(1)
					default:
						if wait > 0 {
							waited.Add(1)
						}
						held = append(held, n)
						acquired.Add(1)
					}
					continue
				}
				i := r.IntN(len(held))
				if err := b.Release(held[i]); err != nil {
					failures.Add(1)
				}
				held = append(held[:i], held[i+1:]...)
			}
			for _, n := range held {
				outstanding[g] += n
			}
		})
	}
	wg.Wait()
	close(stop)
	<-watched

	require.Zero(t, failures.Load())
	require.Nil(t, bad.Load(), "watcher saw a bad snapshot")
	res := hammerResult{acquired: acquired.Load(), waited: waited.Load(), refused: refused.Load(), samples: samples.Load()}
	for _, n := range outstanding {
		res.outstanding += n
	}
	t.Logf("%+v", res)
	return res
}

// TestTokenBucketStress hammers a bucket in circuit-breaker mode: at the
// end it holds exactly capacity minus what is still out.
func TestTokenBucketStress(t *testing.T) {
	const capacity = 2000
	b := newBucket(t, retry.WithMaxCapacity(capacity))
	res := hammerBucket(t, b, 0x5eed)
	s := b.Stats()
	assert.Equal(t, float64(capacity-res.outstanding), s.Available)
	assert.Zero(t, s.Owed)
	assert.Zero(t, res.waited, "circuit-breaker mode never waits")
}

// TestTokenBucketWaitModeStress is the same in wait mode, where acquires
// beyond the level run into debt instead of being refused. The clock does
// not move, so refill never caps a release either.
func TestTokenBucketWaitModeStress(t *testing.T) {
	const capacity = 100
	b := newBucket(t, retry.WithMaxCapacity(capacity), retry.WithClock(newManualClock()),
		retry.WithCircuitBreaker(false), retry.WithRefillRate(10))
	res := hammerBucket(t, b, 0xdeb7)
	s := b.Stats()
	assert.Equal(t, float64(capacity-res.outstanding), s.Available-s.Owed)
	assert.Zero(t, res.refused, "wait mode never refuses")
	assert.Positive(t, res.waited, "the test must run into debt")

	require.NoError(t, b.Release(res.outstanding))
	assert.Equal(t, retry.TokenBucketStats{Available: capacity, Capacity: capacity, RefillRate: 10}, b.Stats())
}

// TestStandardQuotaStress runs many calls through strategies sharing one
// bucket, each failing once and then ending in a way that gives its one
// retry's cost back; the bucket ends full.
func TestStandardQuotaStress(t *testing.T) {
	const (
		goroutines = 256
		calls      = 200
	)
	quota := newBucket(t)
	var strategies [2]*retry.Standard
	for i := range strategies {
		s, err := retry.NewStandard(retry.WithRetryQuota(quota), retry.WithBackoff(retry.NoBackoff))
		require.NoError(t, err)
		require.Same(t, quota, s.RetryQuota())
		strategies[i] = s
	}
	stop := make(chan struct{})
	samples, bad, watched := watchBucket(quota, stop)

	failures := []error{
		&statusError{status: 503},                   // transient: cost 5
		&statusError{status: 408},                   // timeout: cost 10
		&statusError{status: 400, code: "SlowDown"}, // throttle: cost 5
		retry.Transient(errBase),
	}
	var (
		wg                         sync.WaitGroup
		retried, refused, errCount atomic.Int64
		firstErr                   atomic.Pointer[error]
	)
	fail := func(err error) {
		errCount.Add(1)
		firstErr.CompareAndSwap(nil, &err)
	}
	for g := range goroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 0x57a7))
			s := strategies[g%len(strategies)]
			scope := []string{"", "a", "b"}[g%3]
			for range calls {
				tok, err := s.PlanInitialToken(scope)
				if err != nil {
					fail(err)
					return
				}
				if r.IntN(4) == 0 { // success at once
					if err := s.RecordSuccess(tok); err != nil {
						fail(err)
					}
					continue
				}
				next, err := plan(s, tok, failures[r.IntN(len(failures))])
				if errors.Is(err, retry.ErrRetryQuotaExceeded) {
					refused.Add(1)
					continue
				}
				if err != nil {
					fail(err)
					return
				}
				if next.RetryCount() != 1 {
					fail(fmt.Errorf("RetryCount %d, want 1", next.RetryCount()))
				}
				retried.Add(1)
				switch r.IntN(4) {
				case 0: // the retry fails for good: its cost is given back
					_, err = plan(s, next, &statusError{status: 404})
					if !errors.Is(err, retry.ErrNotRetryable) {
						fail(fmt.Errorf("got %v, want ErrNotRetryable", err))
					}
				case 1: // the retry is abandoned
					err = s.ReleaseToken(next)
				default:
					err = s.RecordSuccess(next)
				}
				if err != nil && !errors.Is(err, retry.ErrNotRetryable) {
					fail(err)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	<-watched

	if p := firstErr.Load(); p != nil {
		t.Fatalf("%d unexpected errors; first: %v", errCount.Load(), *p)
	}
	require.Nil(t, bad.Load(), "watcher saw a bad snapshot")
	assert.Equal(t, 500.0, quota.Stats().Available, "every retry's cost returned")
	t.Logf("retried %d, refused %d, %d snapshots", retried.Load(), refused.Load(), samples.Load())
	assert.Positive(t, retried.Load())
}

// BenchmarkTokenBucketReleaseFullParallel releases into a full bucket from
// every P: the lock-free path, to compare with
// BenchmarkTokenBucketAcquireReleaseParallel, which takes the lock twice.
func BenchmarkTokenBucketReleaseFullParallel(b *testing.B) {
	q := newBucket(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := q.Release(1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTokenBucketAcquireReleaseParallel takes a token and gives it
// back from every P. Each P holds at most one token, so none is refused.
func BenchmarkTokenBucketAcquireReleaseParallel(b *testing.B) {
	q := newBucket(b, retry.WithMaxCapacity(math.MaxInt32))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := q.Acquire(1); err != nil {
				b.Error(err)
				return
			}
			if err := q.Release(1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// The largest capacity a bucket accepts, 2^53, counts exactly: every token
// taken shows.
func TestTokenBucketLargestCapacityCountsExactly(t *testing.T) {
	b := newBucket(t, retry.WithMaxCapacity(1<<53))
	assert.Equal(t, 1<<53, b.Stats().Capacity)
	assert.Equal(t, float64(1<<53), b.Stats().Available)
	for range 1000 {
		_, err := b.Acquire(1)
		require.NoError(t, err)
	}
	assert.Equal(t, float64(1<<53-1000), b.Stats().Available)
}
