package retry_test

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// almostOne is the largest float64 below 1: the largest U a source may
// return.
var almostOne = math.Nextafter(1, 0)

// fixed returns a random source that always returns u.
func fixed(u float64) func() float64 { return func() float64 { return u } }

func newBackoff(t *testing.T, opts ...retry.BackoffOption) *retry.ExponentialBackoff {
	t.Helper()
	b, err := retry.NewExponentialBackoff(opts...)
	require.NoError(t, err)
	require.NotNil(t, b)
	return b
}

func TestExponentialBackoffDefaults(t *testing.T) {
	b := newBackoff(t, retry.WithJitter(0))
	want := []time.Duration{
		10 * time.Millisecond,
		15 * time.Millisecond,
		22500 * time.Microsecond,
		33750 * time.Microsecond,
		50625 * time.Microsecond,
		75937500 * time.Nanosecond,
	}
	for i, d := range want {
		n := i + 1
		assert.Equal(t, d, b.Delay(n), "Delay(%d)", n)
		assert.Equal(t, d, b.Cap(n), "Cap(%d)", n)
	}

	// 10ms * 1.5^18 ≈ 14.8s is the last delay below the 20s cap.
	assert.Less(t, b.Delay(19), retry.DefaultMaxBackoff)
	assert.Greater(t, b.Delay(19), 14*time.Second)
	for _, n := range []int{20, 21, 50, 1000, 1 << 40, math.MaxInt - 1, math.MaxInt} {
		assert.Equal(t, retry.DefaultMaxBackoff, b.Delay(n), "Delay(%d)", n)
		assert.Equal(t, retry.DefaultMaxBackoff, b.Cap(n), "Cap(%d)", n)
	}
}

func TestExponentialBackoffCapMonotonic(t *testing.T) {
	for _, opts := range [][]retry.BackoffOption{
		nil,
		{retry.WithScaleFactor(1)},
		{retry.WithScaleFactor(2), retry.WithInitialDelay(time.Nanosecond), retry.WithMaxBackoff(time.Duration(math.MaxInt64))},
		{retry.WithScaleFactor(1e300), retry.WithInitialDelay(time.Second), retry.WithMaxBackoff(time.Hour)},
	} {
		b := newBackoff(t, opts...)
		prev := time.Duration(0)
		for n := 1; n <= 2000; n++ {
			c := b.Cap(n)
			require.GreaterOrEqual(t, c, prev, "Cap(%d)", n)
			prev = c
		}
		require.Equal(t, b.Cap(2000), b.Cap(math.MaxInt))
	}
}

func TestExponentialBackoffCustom(t *testing.T) {
	b := newBackoff(t,
		retry.WithInitialDelay(time.Second),
		retry.WithScaleFactor(2),
		retry.WithMaxBackoff(5*time.Second),
		retry.WithJitter(0),
	)
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i, d := range want {
		assert.Equal(t, d, b.Delay(i+1), "Delay(%d)", i+1)
	}

	// Scale 1 is constant backoff.
	b = newBackoff(t, retry.WithInitialDelay(time.Second), retry.WithScaleFactor(1), retry.WithJitter(0))
	for _, n := range []int{1, 2, 100, math.MaxInt} {
		assert.Equal(t, time.Second, b.Delay(n))
	}

	// Max equal to initial is allowed.
	b = newBackoff(t, retry.WithInitialDelay(time.Second), retry.WithMaxBackoff(time.Second), retry.WithJitter(0))
	assert.Equal(t, time.Second, b.Delay(1))
	assert.Equal(t, time.Second, b.Delay(10))
}

func TestExponentialBackoffNBelowOne(t *testing.T) {
	b := newBackoff(t, retry.WithJitter(0))
	for _, n := range []int{0, -1, -100, math.MinInt} {
		assert.Equal(t, b.Delay(1), b.Delay(n), "Delay(%d)", n)
		assert.Equal(t, b.Cap(1), b.Cap(n), "Cap(%d)", n)
	}
}

func TestExponentialBackoffZeroValue(t *testing.T) {
	var zero retry.ExponentialBackoff
	var nilB *retry.ExponentialBackoff
	for _, n := range []int{math.MinInt, -1, 0, 1, 2, 100, math.MaxInt} {
		assert.Zero(t, zero.Delay(n), "Delay(%d)", n)
		assert.Zero(t, zero.Cap(n), "Cap(%d)", n)
		assert.Zero(t, nilB.Delay(n), "nil Delay(%d)", n)
		assert.Zero(t, nilB.Cap(n), "nil Cap(%d)", n)
	}
}

func TestExponentialBackoffJitter(t *testing.T) {
	const d = 10 * time.Millisecond // Cap(1) with the defaults
	tests := []struct {
		name     string
		jitter   float64
		u        float64
		min, max time.Duration // inclusive
	}{
		{"full U=0", 1, 0, d, d},
		{"full U=0.25", 1, 0.25, d * 3 / 4, d * 3 / 4},
		{"full U=0.5", 1, 0.5, d / 2, d / 2},
		{"full U→1", 1, almostOne, 0, time.Nanosecond},
		{"half U=0", 0.5, 0, d, d},
		{"half U=0.5", 0.5, 0.5, d * 3 / 4, d * 3 / 4},
		{"half U=0.999", 0.5, 0.999, d/2 + 1, d/2 + d/1000},
		{"half U→1", 0.5, almostOne, d / 2, d / 2},
		{"none U=0.5", 0, 0.5, d, d},
		{"none U→1", 0, almostOne, d, d},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackoff(t, retry.WithJitter(tt.jitter), retry.WithRandom(fixed(tt.u)))
			got := b.Delay(1)
			assert.GreaterOrEqual(t, got, tt.min)
			assert.LessOrEqual(t, got, tt.max)
			assert.Equal(t, d, b.Cap(1), "Cap ignores jitter")
		})
	}
}

// With jitter j every delay lies in [d*(1-j), d], whatever U in [0, 1).
func TestExponentialBackoffJitterRange(t *testing.T) {
	us := []float64{0, 1e-9, 0.1, 0.3333, 0.5, 0.75, 0.9, 0.999999, almostOne}
	for _, j := range []float64{0, 0.1, 0.5, 0.9, 1} {
		for _, u := range us {
			b := newBackoff(t, retry.WithJitter(j), retry.WithRandom(fixed(u)))
			for _, n := range []int{1, 2, 5, 19, 20, 21, 1000, math.MaxInt} {
				d := b.Cap(n)
				got := b.Delay(n)
				require.LessOrEqual(t, got, d, "j=%v u=%v n=%d", j, u, n)
				require.GreaterOrEqual(t, got, time.Duration(float64(d)*(1-j)), "j=%v u=%v n=%d", j, u, n)
			}
		}
	}
}

// aws-sdk-go-v2's legacy ExponentialJitterBackoff returns a flat maximum,
// without jitter, once the attempt passes log2(maxBackoff/1s), and for
// every attempt when maxBackoff is below 1s (testdata/vectors/go_backoff.json
// legacy_quirks; aws/aws-sdk-go-v2#3091 and #2227). Here the cap applies
// before the jitter, so delays at the cap are still spread.
func TestExponentialBackoffNoFlatMaximumAtCap(t *testing.T) {
	var vectors struct {
		LegacyQuirks []string `json:"legacy_quirks"`
	}
	loadVectors(t, "go_backoff.json", &vectors)
	require.Len(t, vectors.LegacyQuirks, 2, "the quirks this test guards against")

	tests := []struct {
		name string
		opts []retry.BackoffOption
	}{
		{"defaults (#3091)", nil},
		{"20s cap from 1s, scale 2 (#3091)", []retry.BackoffOption{
			retry.WithInitialDelay(time.Second), retry.WithScaleFactor(2)}},
		{"cap below 1s (#2227)", []retry.BackoffOption{
			retry.WithInitialDelay(100 * time.Millisecond), retry.WithMaxBackoff(500 * time.Millisecond)}},
		{"cap equal to initial", []retry.BackoffOption{
			retry.WithInitialDelay(300 * time.Millisecond), retry.WithMaxBackoff(300 * time.Millisecond)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackoff(t, append(tt.opts, retry.WithRandom(fixed(0.5)))...)
			atCap := 0
			for _, n := range []int{1, 2, 3, 4, 5, 6, 10, 20, 30, 100, 1000, 1 << 53, math.MaxInt} {
				c := b.Cap(n)
				require.Equal(t, c/2, b.Delay(n), "n=%d: full jitter at U=0.5 halves the cap", n)
				if c == b.Cap(math.MaxInt) {
					atCap++
					require.Less(t, b.Delay(n), c, "n=%d: flat maximum at the cap", n)
				}
			}
			require.Greater(t, atCap, 3, "the test must reach the cap")
		})
	}
}

// The legacy aws-sdk-go-v2 "attempt delay" vector (rand 0.5, attempt 2,
// maxBackoff 20s: 2s) is reproduced by initial 2s, scale 2, full jitter.
// Its draw is rand*d where ours is d*(1-U); at U = 0.5 they agree.
func TestExponentialBackoffGoLegacyVector(t *testing.T) {
	b := newBackoff(t,
		retry.WithInitialDelay(2*time.Second),
		retry.WithScaleFactor(2),
		retry.WithMaxBackoff(20*time.Second),
		retry.WithRandom(fixed(0.5)),
	)
	assert.Equal(t, 2*time.Second, b.Delay(2))
}

func TestNewExponentialBackoffErrors(t *testing.T) {
	tests := []struct {
		name   string
		opts   []retry.BackoffOption
		option string
	}{
		{"negative initial", []retry.BackoffOption{retry.WithInitialDelay(-1)}, "WithInitialDelay"},
		{"scale below 1", []retry.BackoffOption{retry.WithScaleFactor(0.999)}, "WithScaleFactor"},
		{"scale 0", []retry.BackoffOption{retry.WithScaleFactor(0)}, "WithScaleFactor"},
		{"scale negative", []retry.BackoffOption{retry.WithScaleFactor(-2)}, "WithScaleFactor"},
		{"scale NaN", []retry.BackoffOption{retry.WithScaleFactor(math.NaN())}, "WithScaleFactor"},
		{"scale +Inf", []retry.BackoffOption{retry.WithScaleFactor(math.Inf(1))}, "WithScaleFactor"},
		{"scale -Inf", []retry.BackoffOption{retry.WithScaleFactor(math.Inf(-1))}, "WithScaleFactor"},
		{"max below initial", []retry.BackoffOption{retry.WithMaxBackoff(5 * time.Millisecond)}, "WithMaxBackoff"},
		{"max below custom initial", []retry.BackoffOption{retry.WithInitialDelay(time.Second), retry.WithMaxBackoff(time.Second - 1)}, "WithMaxBackoff"},
		{"max negative", []retry.BackoffOption{retry.WithInitialDelay(0), retry.WithMaxBackoff(-1)}, "WithMaxBackoff"},
		{"jitter -0.1", []retry.BackoffOption{retry.WithJitter(-0.1)}, "WithJitter"},
		{"jitter 1.1", []retry.BackoffOption{retry.WithJitter(1.1)}, "WithJitter"},
		{"jitter NaN", []retry.BackoffOption{retry.WithJitter(math.NaN())}, "WithJitter"},
		{"jitter +Inf", []retry.BackoffOption{retry.WithJitter(math.Inf(1))}, "WithJitter"},
		{"nil random, default jitter", []retry.BackoffOption{retry.WithRandom(nil)}, "WithRandom"},
		{"nil random, jitter 0.5", []retry.BackoffOption{retry.WithRandom(nil), retry.WithJitter(0.5)}, "WithRandom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := retry.NewExponentialBackoff(tt.opts...)
			require.Error(t, err)
			assert.Nil(t, b)
			assert.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.option)
		})
	}
}

func TestNewExponentialBackoffValidEdges(t *testing.T) {
	tests := []struct {
		name string
		opts []retry.BackoffOption
	}{
		{"zero initial", []retry.BackoffOption{retry.WithInitialDelay(0)}},
		{"all zero", []retry.BackoffOption{retry.WithInitialDelay(0), retry.WithMaxBackoff(0)}},
		{"scale 1", []retry.BackoffOption{retry.WithScaleFactor(1)}},
		{"max equals initial", []retry.BackoffOption{retry.WithMaxBackoff(retry.DefaultInitialDelay)}},
		{"jitter 0", []retry.BackoffOption{retry.WithJitter(0)}},
		{"jitter 1", []retry.BackoffOption{retry.WithJitter(1)}},
		{"nil random without jitter", []retry.BackoffOption{retry.WithRandom(nil), retry.WithJitter(0)}},
		{"later option wins", []retry.BackoffOption{retry.WithJitter(2), retry.WithJitter(0.5)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackoff(t, tt.opts...)
			for _, n := range []int{1, 2, 100} {
				assert.GreaterOrEqual(t, b.Delay(n), time.Duration(0))
			}
		})
	}

	b := newBackoff(t, retry.WithInitialDelay(0), retry.WithMaxBackoff(0))
	assert.Zero(t, b.Delay(1))
	assert.Zero(t, b.Delay(1000))
}

// With a zero initial delay every cap is zero: 0 * scale^(n-1) = 0.
func TestExponentialBackoffZeroInitialLargeN(t *testing.T) {
	for _, opts := range [][]retry.BackoffOption{
		{retry.WithInitialDelay(0), retry.WithJitter(0)},
		{retry.WithInitialDelay(0), retry.WithMaxBackoff(0)},
		{retry.WithInitialDelay(0), retry.WithScaleFactor(2)},
	} {
		b := newBackoff(t, opts...)
		for _, n := range []int{1, 1000, 1800, 2000, math.MaxInt} {
			assert.Zero(t, b.Cap(n), "Cap(%d)", n)
			assert.Zero(t, b.Delay(n), "Delay(%d)", n)
		}
	}
}

func TestConstantBackoff(t *testing.T) {
	var _ retry.Backoff = retry.ConstantBackoff(0)
	var _ retry.Backoff = retry.NoBackoff
	var _ retry.Backoff = retry.BackoffFunc(nil)
	var _ retry.Backoff = (*retry.ExponentialBackoff)(nil)

	for _, n := range []int{math.MinInt, -1, 0, 1, 2, 1000, math.MaxInt} {
		assert.Equal(t, 250*time.Millisecond, retry.ConstantBackoff(250*time.Millisecond).Delay(n))
		assert.Zero(t, retry.NoBackoff.Delay(n))
	}
	assert.Equal(t, -time.Second, retry.ConstantBackoff(-time.Second).Delay(1),
		"a negative constant is returned as is; the constructors reject it")
}

func TestBackoffFunc(t *testing.T) {
	var got []int
	f := retry.BackoffFunc(func(n int) time.Duration {
		got = append(got, n)
		return time.Duration(n) * time.Second
	})
	for _, n := range []int{1, 2, 7, 0, -3} {
		assert.Equal(t, time.Duration(n)*time.Second, f.Delay(n))
	}
	assert.Equal(t, []int{1, 2, 7, 0, -3}, got, "n is passed through unchanged")
}

func TestStandardRejectsBadBackoff(t *testing.T) {
	tests := []struct {
		name   string
		opt    retry.StandardOption
		option string
	}{
		{"negative constant", retry.WithBackoff(retry.ConstantBackoff(-1)), "WithBackoff"},
		{"negative constant throttle", retry.WithThrottleBackoff(retry.ConstantBackoff(-time.Second)), "WithThrottleBackoff"},
		{"nil backoff", retry.WithBackoff(nil), "WithBackoff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := retry.NewStandard(tt.opt)
			require.Error(t, err)
			assert.Nil(t, s)
			assert.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.option)
		})
	}
	err := func() error { _, err := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(-1))); return err }()
	assert.ErrorContains(t, err, "ConstantBackoff", "the message names the bad value's type too")

	for _, b := range []retry.Backoff{retry.NoBackoff, retry.ConstantBackoff(time.Second), retry.BackoffFunc(func(int) time.Duration { return -1 })} {
		_, err := retry.NewStandard(retry.WithBackoff(b), retry.WithThrottleBackoff(b))
		assert.NoError(t, err, "%T", b)
	}
}

// One backoff, with the default random source, serves concurrent callers.
// Run with -race.
func TestExponentialBackoffConcurrent(t *testing.T) {
	b := newBackoff(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for g := range 64 {
		wg.Go(func() {
			for i := range 500 {
				n := 1 + (g+i)%40
				d := b.Delay(n)
				if d < 0 || d > b.Cap(n) {
					mu.Lock()
					errs = append(errs, errors.New("delay out of [0, Cap(n)]"))
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	assert.Empty(t, errs)
}

// Issue 12: with a cap of math.MaxInt64 the delay before jitter is 2^63
// as a float64, which does not fit a Duration; the conversion wrapped and
// Delay returned -2562047h with a draw of 0.
func TestExponentialBackoffHugeCapSaturates(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	for _, u := range []float64{0, 1e-18, 0.5, almostOne} {
		for _, j := range []float64{0, retry.EqualJitter, retry.FullJitter} {
			b := newBackoff(t, retry.WithMaxBackoff(huge), retry.WithJitter(j), retry.WithRandom(fixed(u)))
			for _, n := range []int{1, 60, 70, 100, 1000, math.MaxInt} {
				d := b.Delay(n)
				require.GreaterOrEqual(t, d, time.Duration(0), "u=%v j=%v n=%d", u, j, n)
				require.LessOrEqual(t, d, b.Cap(n), "u=%v j=%v n=%d", u, j, n)
			}
			assert.Equal(t, huge, b.Cap(math.MaxInt))
		}
	}
	b := newBackoff(t, retry.WithMaxBackoff(huge), retry.WithRandom(fixed(0)))
	assert.Equal(t, huge, b.Delay(1000), "a draw of 0 waits the whole cap")
	b = newBackoff(t, retry.WithMaxBackoff(huge), retry.WithRandom(fixed(0.5)))
	assert.Equal(t, time.Duration(1<<62), b.Delay(1000), "U = 0.5 halves the cap (2^63 as a float64)")
	b = newBackoff(t, retry.WithMaxBackoff(huge-27), retry.WithRandom(fixed(0)))
	assert.Equal(t, huge-27, b.Delay(1000), "a cap that rounds up to 2^63 as a float64 is still the most")
}

// Issue 12: a random source that returns a value outside [0, 1), or NaN,
// gave a zero, negative or wrapped delay. A bad draw now waits the longest
// delay the draw could have given: the cap, without jitter.
func TestExponentialBackoffBadDraw(t *testing.T) {
	bad := []float64{1, math.Nextafter(1, 2), 1.5, 100, math.MaxFloat64, -1e-300, -0.5,
		math.NaN(), math.Inf(1), math.Inf(-1)}
	for _, u := range bad {
		for _, j := range []float64{0.1, retry.EqualJitter, retry.FullJitter} {
			for _, max := range []time.Duration{retry.DefaultMaxBackoff, time.Duration(math.MaxInt64)} {
				b := newBackoff(t, retry.WithJitter(j), retry.WithMaxBackoff(max), retry.WithRandom(fixed(u)))
				for _, n := range []int{1, 2, 10, 1000, math.MaxInt} {
					assert.Equal(t, b.Cap(n), b.Delay(n), "u=%v j=%v max=%v n=%d", u, j, max, n)
				}
			}
		}
	}
}

// planFirst and planRetry ask a strategy for tokens without waiting, as an
// event loop does; the tests read each token's delay instead of waiting
// it. They are these tests' only calls into the token API.
func planFirst(s *retry.Standard) (retry.RetryToken, error) {
	return s.PlanInitialToken("")
}

func planRetry(s *retry.Standard, tok retry.RetryToken, err error) (retry.RetryToken, error) {
	return plan(s, tok, err)
}

// script returns a random source that returns us in turn, then repeats the
// last one. It is not safe for concurrent use.
func script(us ...float64) func() float64 {
	return func() float64 {
		u := us[0]
		if len(us) > 1 {
			us = us[1:]
		}
		return u
	}
}

func newDecorrelated(t *testing.T, opts ...retry.BackoffOption) *retry.DecorrelatedJitter {
	t.Helper()
	b, err := retry.NewDecorrelatedJitter(opts...)
	require.NoError(t, err)
	require.NotNil(t, b)
	return b
}

// The blog's formula: sleep = min(cap, random_between(base, sleep*3)),
// sleep starting at base. Here base 1s, cap 10s.
func TestDecorrelatedJitterSteps(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name     string
		n        int
		previous time.Duration
		u        float64
		want     time.Duration
	}{
		{"first, U=0", 1, 0, 0, s},
		{"first, U=0.5", 1, 0, 0.5, 2 * s},
		{"first, U=0.25", 1, 0, 0.25, 1500 * time.Millisecond},
		{"first ignores previous", 1, 9 * s, 0.5, 2 * s},
		{"n=0 is the first", 0, 9 * s, 0.5, 2 * s},
		{"n=MinInt is the first", math.MinInt, 9 * s, 0.5, 2 * s},
		{"grows from previous", 2, 2 * s, 0.5, 3500 * time.Millisecond},
		{"grows from previous, U=0", 2, 2 * s, 0, s},
		{"can shrink to base", 7, 8 * s, 0, s},
		{"previous below base counts as base", 3, 10 * time.Millisecond, 0.5, 2 * s},
		{"zero previous counts as base", 3, 0, 0.5, 2 * s},
		{"negative previous counts as base", 3, -time.Hour, 0.5, 2 * s},
		{"capped", 4, 9 * s, 0.5, 10 * s},
		{"just below the cap", 4, 4 * s, 0.8, 9800 * time.Millisecond},
		{"previous above the cap", 4, time.Hour, 0, s},
		{"huge previous", 4, math.MaxInt64, 0.5, 10 * s},
		{"huge previous, U=0", 4, math.MaxInt64, 0, s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newDecorrelated(t, retry.WithInitialDelay(s), retry.WithMaxBackoff(10*s), retry.WithRandom(fixed(tt.u)))
			assert.Equal(t, tt.want, b.DelayAfter(tt.n, tt.previous))
		})
	}
}

// Without the previous delay, Delay(n) draws from [base, base*3^n),
// capped: the range the chain reaches when every delay was the longest.
func TestDecorrelatedJitterStatelessDelay(t *testing.T) {
	const s = time.Second
	hi := newDecorrelated(t, retry.WithInitialDelay(s), retry.WithMaxBackoff(time.Minute), retry.WithRandom(fixed(almostOne)))
	lo := newDecorrelated(t, retry.WithInitialDelay(s), retry.WithMaxBackoff(time.Minute), retry.WithRandom(fixed(0)))
	mid := newDecorrelated(t, retry.WithInitialDelay(s), retry.WithMaxBackoff(time.Minute), retry.WithRandom(fixed(0.5)))
	tops := []time.Duration{3 * s, 9 * s, 27 * s, time.Minute, time.Minute} // min(1m, 3^n s)
	mids := []time.Duration{2 * s, 5 * s, 14 * s, 41 * s, time.Minute}      // min(1m, 1s + (3^n s - 1s)/2)
	for i, top := range tops {
		n := i + 1
		assert.InDelta(t, float64(top), float64(hi.Delay(n)), float64(time.Microsecond), "Delay(%d), U→1", n)
		assert.Equal(t, s, lo.Delay(n), "Delay(%d), U=0", n)
		assert.Equal(t, mids[i], mid.Delay(n), "Delay(%d), U=0.5", n)
	}
	for _, n := range []int{0, -1, math.MinInt} {
		assert.Equal(t, mid.Delay(1), mid.Delay(n), "Delay(%d)", n)
	}
	for _, n := range []int{100, 1 << 40, math.MaxInt} {
		assert.Equal(t, time.Minute, hi.Delay(n), "Delay(%d)", n)
	}
	// Delay(n) is DelayAfter(n, p) with p the longest delay retry n-1
	// could have drawn.
	assert.Equal(t, mid.DelayAfter(3, 9*s), mid.Delay(3))
}

// With any draw in [0, 1), any n and any previous delay, the delay is in
// [base, cap], and below max(previous, base) * scale.
func TestDecorrelatedJitterRange(t *testing.T) {
	us := []float64{0, 1e-9, 0.1, 0.5, 0.9, 0.999999, almostOne}
	prevs := []time.Duration{math.MinInt64, -1, 0, 1, time.Millisecond, 10 * time.Millisecond, time.Second, time.Minute, math.MaxInt64}
	for _, cfg := range []struct {
		base, max time.Duration
		scale     float64
	}{
		{retry.DefaultInitialDelay, retry.DefaultMaxBackoff, retry.DefaultDecorrelatedScale},
		{time.Second, time.Second, 3},
		{time.Nanosecond, math.MaxInt64, 3},
		{time.Second, math.MaxInt64, 1e300},
		{time.Millisecond, time.Hour, 1},
		{0, time.Hour, 3},
	} {
		for _, u := range us {
			b := newDecorrelated(t, retry.WithInitialDelay(cfg.base), retry.WithMaxBackoff(cfg.max),
				retry.WithScaleFactor(cfg.scale), retry.WithRandom(fixed(u)))
			for _, n := range []int{1, 2, 3, 10, 100, math.MaxInt} {
				for _, p := range prevs {
					d := b.DelayAfter(n, p)
					msg := fmt.Sprintf("%+v u=%v n=%d previous=%v", cfg, u, n, p)
					require.GreaterOrEqual(t, d, cfg.base, msg)
					require.LessOrEqual(t, d, cfg.max, msg)
					if n > 1 && cfg.scale*float64(max(p, cfg.base)) < 1e18 {
						require.LessOrEqual(t, float64(d), cfg.scale*float64(max(p, cfg.base)), msg)
					}
				}
				d := b.Delay(n)
				require.GreaterOrEqual(t, d, cfg.base)
				require.LessOrEqual(t, d, cfg.max)
			}
		}
	}
}

// A bad draw is not used: the delay is the top of its range, capped.
func TestDecorrelatedJitterBadDraw(t *testing.T) {
	const s = time.Second
	for _, u := range []float64{1, 1.5, -0.5, math.NaN(), math.Inf(1), math.Inf(-1)} {
		b := newDecorrelated(t, retry.WithInitialDelay(s), retry.WithMaxBackoff(10*s), retry.WithRandom(fixed(u)))
		assert.Equal(t, 3*s, b.DelayAfter(1, 0), "u=%v", u)
		assert.Equal(t, 6*s, b.DelayAfter(2, 2*s), "u=%v", u)
		assert.Equal(t, 10*s, b.DelayAfter(2, 5*s), "u=%v", u)
		assert.Equal(t, 10*s, b.DelayAfter(2, math.MaxInt64), "u=%v", u)
		assert.Equal(t, 9*s, b.Delay(2), "u=%v", u)
		assert.Equal(t, 10*s, b.Delay(math.MaxInt), "u=%v", u)
	}
}

func TestDecorrelatedJitterZeroValue(t *testing.T) {
	var zero retry.DecorrelatedJitter
	var nilB *retry.DecorrelatedJitter
	for _, n := range []int{math.MinInt, 0, 1, 2, math.MaxInt} {
		assert.Zero(t, zero.Delay(n))
		assert.Zero(t, zero.DelayAfter(n, time.Second))
		assert.Zero(t, nilB.Delay(n))
		assert.Zero(t, nilB.DelayAfter(n, time.Second))
	}
	b := newDecorrelated(t, retry.WithInitialDelay(0), retry.WithMaxBackoff(0))
	assert.Zero(t, b.DelayAfter(2, time.Second))
	b = newDecorrelated(t, retry.WithInitialDelay(0), retry.WithRandom(fixed(0.5)))
	prev := time.Duration(0)
	for n := 1; n <= 10; n++ {
		prev = b.DelayAfter(n, prev)
		assert.Zero(t, prev, "a chain from a zero base stays at zero")
		assert.Zero(t, b.Delay(n))
	}
	assert.Equal(t, 1500*time.Millisecond, b.DelayAfter(2, time.Second), "[0, 3×previous)")
}

func TestNewDecorrelatedJitterErrors(t *testing.T) {
	tests := []struct {
		name   string
		opts   []retry.BackoffOption
		option string
	}{
		{"jitter", []retry.BackoffOption{retry.WithJitter(retry.EqualJitter)}, "WithJitter"},
		{"full jitter", []retry.BackoffOption{retry.WithJitter(retry.FullJitter)}, "WithJitter"},
		{"bad jitter", []retry.BackoffOption{retry.WithJitter(math.NaN())}, "WithJitter"},
		{"negative base", []retry.BackoffOption{retry.WithInitialDelay(-1)}, "WithInitialDelay"},
		{"scale below 1", []retry.BackoffOption{retry.WithScaleFactor(0.5)}, "WithScaleFactor"},
		{"scale NaN", []retry.BackoffOption{retry.WithScaleFactor(math.NaN())}, "WithScaleFactor"},
		{"scale +Inf", []retry.BackoffOption{retry.WithScaleFactor(math.Inf(1))}, "WithScaleFactor"},
		{"max below base", []retry.BackoffOption{retry.WithInitialDelay(time.Second), retry.WithMaxBackoff(time.Second - 1)}, "WithMaxBackoff"},
		{"nil random", []retry.BackoffOption{retry.WithRandom(nil)}, "WithRandom"},
		{"nil option", []retry.BackoffOption{nil}, "option 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := retry.NewDecorrelatedJitter(tt.opts...)
			require.Error(t, err)
			assert.Nil(t, b)
			assert.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.option)
		})
	}
	b := newDecorrelated(t)
	for range 1000 {
		d := b.DelayAfter(1, 0)
		require.GreaterOrEqual(t, d, retry.DefaultInitialDelay)
		require.Less(t, d, 3*retry.DefaultInitialDelay, "the defaults: base 10ms, scale 3")
	}
}

func TestEqualJitter(t *testing.T) {
	const d = retry.DefaultInitialDelay
	for _, tt := range []struct {
		u    float64
		want time.Duration
	}{{0, d}, {0.5, d * 3 / 4}, {almostOne, d / 2}} {
		b := newBackoff(t, retry.WithJitter(retry.EqualJitter), retry.WithRandom(fixed(tt.u)))
		assert.Equal(t, tt.want, b.Delay(1), "U=%v", tt.u)
	}
}

// Standard passes a ChainedBackoff the backoff of the previous retry, not
// the longer delay a retry-after hint imposed, nor what Delay(n) alone
// would assume.
func TestStandardChainedBackoff(t *testing.T) {
	const s = time.Second
	b := newDecorrelated(t, retry.WithInitialDelay(s), retry.WithMaxBackoff(time.Hour), retry.WithRandom(script(0.5)))
	st, err := retry.NewStandard(retry.WithBackoff(b), retry.WithMaxAttempts(10), retry.WithoutRetryQuota())
	require.NoError(t, err)
	tok, err := planFirst(st)
	require.NoError(t, err)
	want := []struct {
		hint, delay time.Duration
	}{
		{0, 2 * s},                                 // 1 + 0.5*(3-1)
		{0, 3500 * time.Millisecond},               // 1 + 0.5*(6-1)
		{time.Minute, time.Minute},                 // the hint; the backoff was 5.75s
		{0, 9125 * time.Millisecond},               // 1 + 0.5*(17.25-1), from 5.75s, not 60s
		{0, 14187500 * time.Microsecond},           // 1 + 0.5*(27.375-1)
		{0, 21781250 * time.Microsecond},           // 1 + 0.5*(42.5625-1)
		{time.Second, 33171875 * time.Microsecond}, // a shorter hint changes nothing
	}
	for i, w := range want {
		tok, err = planRetry(st, tok, retry.WithRetryAfter(errTransient, w.hint))
		require.NoError(t, err)
		assert.Equal(t, w.delay, tok.Delay(), "retry %d", i+1)
	}
	assert.NotEqual(t, b.Delay(2), 3500*time.Millisecond, "the test tells the chain from Delay(n)")

	// Each call has its own chain: a new call starts from base again.
	tok, err = planFirst(st)
	require.NoError(t, err)
	tok, err = planRetry(st, tok, errTransient)
	require.NoError(t, err)
	assert.Equal(t, 2*s, tok.Delay())
}

// One DecorrelatedJitter, with the default random source, serves
// concurrent callers. Run with -race.
func TestDecorrelatedJitterConcurrent(t *testing.T) {
	b := newDecorrelated(t)
	var wg sync.WaitGroup
	bad := make(chan time.Duration, 64)
	for range 64 {
		wg.Go(func() {
			prev := time.Duration(0)
			for n := 1; n <= 500; n++ {
				d := b.DelayAfter(n, prev)
				if d < retry.DefaultInitialDelay || d > retry.DefaultMaxBackoff {
					bad <- d
					return
				}
				prev = d
			}
		})
	}
	wg.Wait()
	close(bad)
	for d := range bad {
		t.Errorf("delay %v outside [base, cap]", d)
	}
}

func ExampleNewDecorrelatedJitter() {
	b, err := retry.NewDecorrelatedJitter(
		retry.WithInitialDelay(100*time.Millisecond),
		retry.WithMaxBackoff(time.Second),
		retry.WithRandom(func() float64 { return 0.5 }), // for a repeatable example
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	// A strategy keeps the previous delay in its tokens:
	// retry.NewStandard(retry.WithBackoff(b)). By hand:
	previous := time.Duration(0)
	for n := 1; n <= 5; n++ {
		previous = b.DelayAfter(n, previous)
		fmt.Println(n, previous)
	}
	// Output:
	// 1 200ms
	// 2 350ms
	// 3 575ms
	// 4 912.5ms
	// 5 1s
}
