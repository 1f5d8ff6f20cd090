package retry_test

import (
	"errors"
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
	return s.AcquireInitialToken("")
}

func planRetry(s *retry.Standard, tok retry.RetryToken, err error) (retry.RetryToken, error) {
	return s.RefreshRetryToken(tok, err)
}
