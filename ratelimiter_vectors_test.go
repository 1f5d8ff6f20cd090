package retry

// Conformance of RateLimiter with the published adaptive-mode vectors in
// testdata/vectors (see its README.md). The whole-limiter vectors run
// through the exported API only. The CUBIC and token-bucket vectors test
// parts of the algorithm in isolation; to reach those parts, a few tests set
// the limiter's state directly (see pinLimiter and setLimiterRate), which is
// why this file is in package retry.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// limiterVectorEpoch is where the vectors' time 0 falls. Any time will do,
// since a limiter measures time from its creation.
var limiterVectorEpoch = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// limiterVectorAt returns the time s seconds after limiterVectorEpoch.
func limiterVectorAt(s float64) time.Time {
	return limiterVectorEpoch.Add(time.Duration(math.Round(s * float64(time.Second))))
}

// readLimiterVectors decodes the vector file name into v.
func readLimiterVectors(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "vectors", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// newVectorLimiter returns a limiter that reads the time from *now, created
// at *now, running the published algorithm (WithPublishedCUBIC and nothing
// else) changed by opts.
func newVectorLimiter(t *testing.T, now *time.Time, opts ...RateLimiterOption) *RateLimiter {
	t.Helper()
	base := []RateLimiterOption{
		WithClock(ClockFunc(func() time.Time { return *now })),
		WithPublishedCUBIC(),
	}
	l, err := NewRateLimiter(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// pinLimiter puts l in the state the CUBIC test harnesses assume: enabled,
// last reduced from maxRate at lastThrottle, and with a measured send rate of
// +Inf that never changes (l's measurement window must be longer than the
// test), so the cap at twice the measured rate never applies and a throttle
// reduces the rate from the fill rate in use.
func pinLimiter(l *RateLimiter, maxRate float64, lastThrottle time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enabled.Store(true)
	l.measured = math.Inf(1)
	l.lastMaxRate = maxRate
	l.lastThrottle = lastThrottle
}

// setLimiterRate sets l's send rate as botocore's TokenBucket max_rate
// setter does, and enables l.
func setLimiterRate(l *RateLimiter, now time.Time, r float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.enabled.Store(true)
	l.setRate(now, r)
}

// limiterPinnedWindow is a measurement window longer than any test, which keeps
// a pinned limiter's measured rate where pinLimiter put it.
var limiterPinnedWindow = WithMeasurementWindow(24 * time.Hour)

func limiterCheckClose(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Errorf("%s = %.17g, want %.17g (±%g)", what, got, want, tol)
	}
}

// TestRateLimiterVectorsSendRate replays adaptive_e2e_send_rate.json, the
// SEP's whole-limiter vectors, through the exported API.
func TestRateLimiterVectorsSendRate(t *testing.T) {
	var f struct {
		Steps []struct {
			Timestamp          float64
			Response           string
			MeasuredTxRate     float64  `json:"measured_tx_rate"`
			NewTokenBucketRate float64  `json:"new_token_bucket_rate"`
			FillRateGo         *float64 `json:"fill_rate_full_precision_go"`
		}
		Tolerance map[string]float64 `json:"tolerance_in_sources"`
	}
	readLimiterVectors(t, "adaptive_e2e_send_rate.json", &f)
	if len(f.Steps) == 0 {
		t.Fatal("no steps")
	}
	// The SEP's values are written to 6 decimals and checked in
	// smithy-kotlin to 5e-7; aws-sdk-go-v2 writes some with every digit and
	// checks them to 1e-15.
	tol, goTol := f.Tolerance["smithy-kotlin"], f.Tolerance["aws-sdk-go-v2"]
	if tol == 0 || goTol == 0 {
		t.Fatal("tolerances missing from the file")
	}

	for _, tc := range []struct {
		name string
		opts []RateLimiterOption
	}{
		{"published", nil},
		// The vectors' throttles are more than a cooldown apart, so one
		// cut per 500 ms gives the same rates.
		{"published with a cooldown", []RateLimiterOption{WithReductionCooldown(500 * time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := limiterVectorAt(0)
			l := newVectorLimiter(t, &now, tc.opts...)
			if got := l.Stats(); got != (RateLimiterStats{}) {
				t.Fatalf("initial Stats() = %+v, want zero", got)
			}
			throttled := false
			for _, s := range f.Steps {
				now = limiterVectorAt(s.Timestamp)
				// Like the Java SDK's harness, acquire before each update;
				// this must not change the rates.
				if _, err := l.Acquire(); err != nil {
					t.Fatalf("t=%v: Acquire: %v", s.Timestamp, err)
				}
				throttled = throttled || s.Response == "throttle"
				l.Update(s.Response == "throttle")
				got := l.Stats()
				at := fmt.Sprintf("t=%v %s:", s.Timestamp, s.Response)
				limiterCheckClose(t, at+" MeasuredRate", got.MeasuredRate, s.MeasuredTxRate, tol)
				limiterCheckClose(t, at+" FillRate", got.FillRate, s.NewTokenBucketRate, tol)
				if s.FillRateGo != nil {
					limiterCheckClose(t, at+" FillRate (Go digits)", got.FillRate, *s.FillRateGo, goTol)
				}
				if got.Enabled != throttled {
					t.Errorf("%s Enabled = %v, want %v", at, got.Enabled, throttled)
				}
				if want := max(got.FillRate, DefaultMinCapacity); got.Capacity != want {
					t.Errorf("%s Capacity = %v, want %v", at, got.Capacity, want)
				}
			}
		})
	}
}

// TestRateLimiterVectorsCubic replays the SEP's CUBIC test cases
// (adaptive_cubic_sep.json) through Update, with the measured rate pinned so
// that the limiter's rate is CUBIC's alone. The file's aws-sdk-go-v2 variant
// uses a different test harness (its production code follows the SEP), so
// the SEP values are the ones checked.
func TestRateLimiterVectorsCubic(t *testing.T) {
	var f struct {
		Constants struct {
			Beta          float64
			ScaleConstant float64 `json:"scale_constant"`
		}
		Cases []struct {
			Name  string
			Given struct {
				LastMaxRate      float64 `json:"last_max_rate"`
				LastThrottleTime float64 `json:"last_throttle_time"`
			}
			Steps []struct {
				Response       string
				Timestamp      float64
				CalculatedRate float64 `json:"calculated_rate"`
			}
		}
		Tolerance map[string]float64 `json:"tolerance_in_sources"`
	}
	readLimiterVectors(t, "adaptive_cubic_sep.json", &f)
	if f.Constants.Beta != PublishedBeta || f.Constants.ScaleConstant != PublishedScaleConstant {
		t.Fatalf("file constants %+v differ from the published ones", f.Constants)
	}
	// The SEP's own source, smithy-kotlin, checks to 5e-7.
	tol := f.Tolerance["smithy-kotlin"]
	if len(f.Cases) == 0 || tol == 0 {
		t.Fatal("no cases or no tolerance")
	}
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			now := limiterVectorAt(0)
			l := newVectorLimiter(t, &now, limiterPinnedWindow)
			pinLimiter(l, c.Given.LastMaxRate, limiterVectorAt(c.Given.LastThrottleTime))
			prev := math.NaN()
			for _, s := range c.Steps {
				now = limiterVectorAt(s.Timestamp)
				throttle := s.Response == "throttle"
				l.Update(throttle)
				got := l.Stats()
				at := fmt.Sprintf("t=%v %s:", s.Timestamp, s.Response)
				limiterCheckClose(t, at+" FillRate", got.FillRate, s.CalculatedRate, tol)
				if throttle {
					// The SEP: the rate before the reduction becomes the
					// last maximum rate.
					limiterCheckClose(t, at+" LastMaxRate", got.LastMaxRate, prev, tol)
					if !got.LastThrottle.Equal(now) {
						t.Errorf("%s LastThrottle = %v, want %v", at, got.LastThrottle, now)
					}
				}
				prev = s.CalculatedRate
			}
		})
	}
}

// TestRateLimiterVectorsBotocoreCubic checks botocore's CubicCalculator
// cases (botocore_cubic.json).
func TestRateLimiterVectorsBotocoreCubic(t *testing.T) {
	type params struct {
		StartingMaxRate float64 `json:"starting_max_rate"`
		StartTime       float64 `json:"start_time"`
		Beta            float64
		ScaleConstant   float64 `json:"scale_constant"`
	}
	var f struct {
		Cases []struct {
			Name   string
			Init   params
			Expect struct {
				K       *float64
				NewRate *float64 `json:"new_rate"`
				Params  *struct {
					WMax     float64 `json:"w_max"`
					K        float64
					LastFail float64 `json:"last_fail"`
				}
				SuccessAt1 *float64 `json:"success_received_at_1"`
			}
			ExpectRelations []struct {
				T     string
				Rel   string
				Value float64
			} `json:"expect_relations"`
			Action struct {
				ErrorReceived *struct {
					CurrentRate float64 `json:"current_rate"`
					Timestamp   float64
				} `json:"error_received"`
			}
			Derived json.RawMessage `json:"derived_not_in_source"`
		}
	}
	readLimiterVectors(t, "botocore_cubic.json", &f)
	// botocore compares with assertAlmostEqual: 7 decimal places.
	const places7 = 5e-8

	seen := 0
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			opts := []RateLimiterOption{limiterPinnedWindow}
			beta, scale := PublishedBeta, PublishedScaleConstant
			if c.Init.Beta != 0 {
				beta = c.Init.Beta
				opts = append(opts, WithBeta(beta))
			}
			if c.Init.ScaleConstant != 0 {
				scale = c.Init.ScaleConstant
				opts = append(opts, WithScaleConstant(scale))
			}
			now := limiterVectorAt(0)
			l := newVectorLimiter(t, &now, opts...)
			pinLimiter(l, c.Init.StartingMaxRate, limiterVectorAt(c.Init.StartTime))
			k := cubicK(c.Init.StartingMaxRate, beta, scale)

			if c.Expect.K != nil {
				seen++
				limiterCheckClose(t, "k", k, *c.Expect.K, places7)
			}

			if len(c.ExpectRelations) > 0 {
				seen++
				var derived map[string]float64
				if err := json.Unmarshal(c.Derived, &derived); err != nil {
					t.Fatal(err)
				}
				for _, r := range c.ExpectRelations {
					dt := evalCubicK(t, r.T, k)
					now = limiterVectorAt(c.Init.StartTime + dt)
					l.Update(false)
					got := l.Stats().FillRate
					ok := false
					switch r.Rel {
					case "<=":
						ok = got <= r.Value
					case ">=":
						ok = got >= r.Value
					case "~=":
						ok = math.Abs(got-r.Value) < places7
					default:
						t.Fatalf("unknown relation %q", r.Rel)
					}
					if !ok {
						t.Errorf("rate at t=%s = %v, want %s %v", r.T, got, r.Rel, r.Value)
					}
					// Extra check; the time is rounded to the nanosecond.
					want, found := derived[strings.TrimSuffix(r.T, ".0")]
					if !found {
						t.Fatalf("no derived value for t=%s", r.T)
					}
					limiterCheckClose(t, "rate at t="+r.T, got, want, 1e-7)
				}
			}

			if e := c.Action.ErrorReceived; e != nil {
				seen++
				// botocore's error_received(current_rate) reduces from
				// current_rate; the limiter reduces from min(measured,
				// fill rate), and the measured rate is pinned at +Inf.
				now = limiterVectorAt(e.Timestamp)
				setLimiterRate(l, now, e.CurrentRate)
				l.Update(true)
				got := l.Stats()
				if c.Expect.NewRate == nil {
					t.Fatal("no expected new_rate")
				}
				limiterCheckClose(t, "rate after error", got.FillRate, *c.Expect.NewRate, places7)
				if p := c.Expect.Params; p != nil {
					if got.LastMaxRate != p.WMax {
						t.Errorf("LastMaxRate = %v, want %v", got.LastMaxRate, p.WMax)
					}
					if want := limiterVectorAt(p.LastFail); !got.LastThrottle.Equal(want) {
						t.Errorf("LastThrottle = %v, want %v", got.LastThrottle, want)
					}
					// botocore computes k with x**(1/3) and compares it
					// exactly; math.Cbrt may differ in the last place.
					limiterCheckClose(t, "k", cubicK(got.LastMaxRate, beta, scale), p.K, 1e-15)
				}
				if s := c.Expect.SuccessAt1; s != nil {
					if got.FillRate != *s {
						t.Errorf("rate after error = %v, want exactly %v", got.FillRate, *s)
					}
					now = limiterVectorAt(1)
					l.Update(false)
					limiterCheckClose(t, "rate after success at t=1", l.Stats().FillRate, *s, places7)
				}
			}
		})
	}
	if seen != len(f.Cases) {
		t.Errorf("checked %d of %d cases", seen, len(f.Cases))
	}
}

// evalCubicK evaluates the botocore test's time expressions: "k", "k/3.0",
// "k*1.1".
func evalCubicK(t *testing.T, expr string, k float64) float64 {
	t.Helper()
	if expr == "k" {
		return k
	}
	var op byte
	var x float64
	if _, err := fmt.Sscanf(expr, "k%c%g", &op, &x); err != nil {
		t.Fatalf("time %q: %v", expr, err)
	}
	switch op {
	case '/':
		return k / x
	case '*':
		return k * x
	}
	t.Fatalf("time %q: unknown operator", expr)
	return 0
}

// TestRateLimiterVectorsRateClocker checks the measured send rate against
// botocore's RateClocker cases (botocore_rate_clocker.json), through the
// exported API: Update(false) once per timestamp.
func TestRateLimiterVectorsRateClocker(t *testing.T) {
	var f struct {
		Cases []struct {
			Name          string
			Timestamps    json.RawMessage
			ExpectReturns []float64 `json:"expect_returns"`
			ExpectFinal   *float64  `json:"expect_final"`
			ExpectFinalGE *float64  `json:"expect_final_ge"`
			Expect        []struct {
				After int        `json:"after_record_index"`
				Range [2]float64 `json:"range"`
			}
			ExpectAfter *float64 `json:"expect_after"`
			Then        *struct {
				Timestamp float64
				Value     float64
			}
			Compare string
			Derived []float64 `json:"derived_not_in_source"`
		} `json:"rate_clocker_cases"`
	}
	readLimiterVectors(t, "botocore_rate_clocker.json", &f)
	if len(f.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			tol := 0.0 // assertEqual
			if strings.HasPrefix(c.Compare, "assertAlmostEqual") {
				if c.Compare != "assertAlmostEqual (7 places)" {
					t.Fatalf("unknown comparison %q", c.Compare)
				}
				tol = 5e-8
			}
			stamps := rateClockerTimestamps(t, c.Timestamps)
			now := limiterVectorAt(0)
			l := newVectorLimiter(t, &now)
			var rates []float64
			for _, ts := range stamps {
				now = limiterVectorAt(ts)
				l.Update(false)
				rates = append(rates, l.Stats().MeasuredRate)
			}
			final := l.Stats().MeasuredRate
			for i, want := range c.ExpectReturns {
				limiterCheckClose(t, fmt.Sprintf("rate after record %d", i+1), rates[i], want, tol)
			}
			if c.ExpectFinal != nil {
				limiterCheckClose(t, "final rate", final, *c.ExpectFinal, tol)
			}
			if c.ExpectFinalGE != nil && !(final >= *c.ExpectFinalGE) {
				t.Errorf("final rate = %v, want >= %v", final, *c.ExpectFinalGE)
			}
			for _, e := range c.Expect {
				if got := rates[e.After-1]; !(got >= e.Range[0] && got <= e.Range[1]) {
					t.Errorf("rate after record %d = %v, want in %v", e.After, got, e.Range)
				}
			}
			if c.ExpectAfter != nil {
				limiterCheckClose(t, "rate after the records", final, *c.ExpectAfter, tol)
			}
			if c.Then != nil {
				now = limiterVectorAt(c.Then.Timestamp)
				l.Update(false)
				limiterCheckClose(t, fmt.Sprintf("rate after t=%v", c.Then.Timestamp), l.Stats().MeasuredRate, c.Then.Value, tol)
			}
			if c.Derived != nil {
				if len(c.Derived) != len(rates) {
					t.Fatalf("%d derived values for %d records", len(c.Derived), len(rates))
				}
				for i, want := range c.Derived {
					limiterCheckClose(t, fmt.Sprintf("rate after record %d (derived)", i+1), rates[i], want, 1e-12)
				}
			}
		})
	}
}

// rateClockerTimestamps decodes a list of timestamps or the Python
// expression "range(a,b)".
func rateClockerTimestamps(t *testing.T, raw json.RawMessage) []float64 {
	t.Helper()
	var list []float64
	if err := json.Unmarshal(raw, &list); err == nil {
		return list
	}
	var expr string
	if err := json.Unmarshal(raw, &expr); err != nil {
		t.Fatalf("timestamps %s: %v", raw, err)
	}
	var from, to int
	if _, err := fmt.Sscanf(expr, "range(%d,%d)", &from, &to); err != nil {
		t.Fatalf("timestamps %q: %v", expr, err)
	}
	for i := from; i < to; i++ {
		list = append(list, float64(i))
	}
	return list
}

// TestRateLimiterVectorsClientRateLimiter checks botocore's
// ClientRateLimiter cases (botocore_rate_clocker.json), whose mocked
// measured and CUBIC rates are reproduced by pinning the limiter's state.
func TestRateLimiterVectorsClientRateLimiter(t *testing.T) {
	var f struct {
		Limiter struct {
			Cases []struct {
				Name  string
				Mocks struct {
					Throttling      bool    `json:"is_throttling_error"`
					Record          float64 `json:"record"`
					SuccessReceived float64 `json:"success_received"`
				}
				Expect json.RawMessage
			}
		} `json:"client_rate_limiter_cases"`
	}
	readLimiterVectors(t, "botocore_rate_clocker.json", &f)
	seen := 0
	for _, c := range f.Limiter.Cases {
		t.Run(c.Name, func(t *testing.T) {
			now := limiterVectorAt(0)
			switch c.Name {
			case "test_bucket_bucket_acquisition_only_if_enabled":
				seen++
				for _, failFast := range []bool{false, true} {
					l := newVectorLimiter(t, &now, WithFailFast(failFast))
					for i := range 3 {
						now = limiterVectorAt(float64(i) / 10)
						if d, err := l.Acquire(); d != 0 || err != nil {
							t.Errorf("failFast=%v: Acquire() = %v, %v before any throttle; want 0, nil", failFast, d, err)
						}
						l.Update(false)
					}
				}
			case "test_token_bucket_enabled_on_throttling_error":
				seen++
				l := newVectorLimiter(t, &now, WithFailFast(true))
				now = limiterVectorAt(1)
				l.Update(true)
				now = limiterVectorAt(10) // the bucket is full
				before := l.Stats().Tokens
				if _, err := l.Acquire(); err != nil {
					t.Fatalf("Acquire: %v", err)
				}
				if got := l.Stats().Tokens; got != before-1 {
					t.Errorf("after a throttle, Acquire left %v tokens of %v, want one fewer", got, before)
				}
			case "test_max_rate_updated_on_success_response", "test_max_rate_cant_exceed_20_percent_max":
				seen++
				var want struct {
					MaxRate float64 `json:"token_bucket.max_rate"`
				}
				if err := json.Unmarshal(c.Expect, &want); err != nil {
					t.Fatal(err)
				}
				// success_received returns the last maximum rate at the
				// top of the curve, K seconds after the reduction.
				l := newVectorLimiter(t, &now, limiterPinnedWindow)
				w := c.Mocks.SuccessReceived
				k := cubicK(w, PublishedBeta, PublishedScaleConstant)
				pinLimiter(l, w, now.Add(-time.Duration(k*float64(time.Second))))
				l.mu.Lock()
				l.measured = c.Mocks.Record
				l.mu.Unlock()
				l.Update(false)
				limiterCheckClose(t, "FillRate", l.Stats().FillRate, want.MaxRate, 1e-12)
			default:
				t.Fatalf("no check for case %q", c.Name)
			}
		})
	}
	if seen != len(f.Limiter.Cases) {
		t.Errorf("checked %d of %d cases", seen, len(f.Limiter.Cases))
	}
}

// TestRateLimiterVectorsTokenBucket checks botocore's adaptive TokenBucket
// cases (botocore_token_bucket.json) against the limiter's bucket. botocore
// sets the bucket's max_rate directly; here setLimiterRate does, as Update
// would. A non-blocking acquire is Acquire in fail-fast mode, or Acquire in
// wait mode returning no delay.
func TestRateLimiterVectorsTokenBucket(t *testing.T) {
	type op struct {
		Op         string
		Timestamps []float64
		Value      float64
		Amount     int
		Block      bool
		Expect     any
	}
	var f struct {
		Cases []struct {
			Name   string
			Create struct {
				MaxRate float64 `json:"max_rate"`
				MinRate float64 `json:"min_rate"`
			}
			After  json.RawMessage `json:"timestamps_after_creation"`
			Ops    []op
			Expect struct {
				MaxRate     float64 `json:"max_rate"`
				MaxCapacity float64 `json:"max_capacity"`
			}
			Derived json.RawMessage `json:"derived_not_in_source"`
		}
	}
	readLimiterVectors(t, "botocore_token_bucket.json", &f)

	// newBucket returns a limiter whose bucket was created at time 0 with
	// the case's rates, empty, as botocore's is.
	newBucket := func(t *testing.T, now *time.Time, maxRate, minRate float64, failFast bool) *RateLimiter {
		t.Helper()
		*now = limiterVectorAt(0)
		l := newVectorLimiter(t, now, WithMinFillRate(minRate), WithFailFast(failFast))
		setLimiterRate(l, *now, maxRate)
		return l
	}
	acquire := func(t *testing.T, l *RateLimiter, now *time.Time, ts float64) {
		t.Helper()
		*now = limiterVectorAt(ts)
		if d, err := l.Acquire(); d != 0 || err != nil {
			t.Fatalf("t=%v: Acquire() = %v, %v; want 0, nil", ts, d, err)
		}
	}
	checkRates := func(t *testing.T, l *RateLimiter, fill, capacity float64) {
		t.Helper()
		got := l.Stats()
		if got.FillRate != fill || got.Capacity != capacity {
			t.Errorf("FillRate, Capacity = %v, %v; want %v, %v", got.FillRate, got.Capacity, fill, capacity)
		}
	}

	seen := 0
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			var now time.Time
			l := newBucket(t, &now, c.Create.MaxRate, c.Create.MinRate, true)
			switch c.Name {
			case "test_can_acquire_amount":
				seen++
				var stamps []float64
				var derived struct {
					After []float64 `json:"capacity_after_each"`
				}
				limiterUnmarshal(t, c.After, &stamps)
				limiterUnmarshal(t, c.Derived, &derived)
				for i, ts := range stamps {
					acquire(t, l, &now, ts)
					limiterCheckClose(t, fmt.Sprintf("t=%v: Tokens", ts), l.Stats().Tokens, derived.After[i], 1e-12)
				}

			case "test_can_change_max_capacity_lower":
				seen++
				var derived struct {
					AfterSet struct {
						FillRate    float64 `json:"fill_rate"`
						MaxCapacity float64 `json:"max_capacity"`
						Capacity    float64
					} `json:"after_set"`
					Later []float64 `json:"capacity_after_each_later_acquire"`
				}
				limiterUnmarshal(t, c.Derived, &derived)
				var later []float64
				for _, o := range c.Ops {
					switch o.Op {
					case "acquire x5":
						later = later[:0]
						for _, ts := range o.Timestamps {
							acquire(t, l, &now, ts)
							later = append(later, l.Stats().Tokens)
						}
					case "set max_rate":
						now = limiterVectorAt(o.Timestamps[0])
						setLimiterRate(l, now, o.Value)
						checkRates(t, l, derived.AfterSet.FillRate, derived.AfterSet.MaxCapacity)
						limiterCheckClose(t, "Tokens after set", l.Stats().Tokens, derived.AfterSet.Capacity, 1e-12)
					default:
						t.Fatalf("unknown op %q", o.Op)
					}
				}
				for i, want := range derived.Later {
					limiterCheckClose(t, fmt.Sprintf("Tokens after later acquire %d", i+1), later[i], want, 1e-12)
				}

			case "test_max_capacity_is_at_least_one", "test_rate_cant_go_below_min":
				seen++
				o := c.Ops[0]
				if o.Op != "set max_rate" {
					t.Fatalf("unexpected op %q", o.Op)
				}
				now = limiterVectorAt(o.Timestamps[0])
				setLimiterRate(l, now, o.Value)
				checkRates(t, l, c.Expect.MaxRate, c.Expect.MaxCapacity)

			case "test_acquire_fails_on_non_block_mode_returns_false":
				seen++
				// botocore asks for more tokens than the bucket holds at
				// t=1. Acquire takes one at a time: the bucket's whole
				// capacity is available, and the next one is not.
				if o := c.Ops[0]; o.Block || o.Amount <= int(c.Create.MaxRate) {
					t.Fatalf("unexpected op %+v", o)
				}
				now = limiterVectorAt(1)
				for range int(c.Create.MaxRate) {
					acquire(t, l, &now, 1)
				}
				if _, err := l.Acquire(); !errors.Is(err, ErrRateLimited) {
					t.Errorf("Acquire() error = %v, want ErrRateLimited", err)
				}
				if got := l.Stats().Tokens; got != 0 {
					t.Errorf("a refused Acquire left %v tokens, want 0", got)
				}

			case "test_can_retrieve_at_max_send_rate":
				seen++
				var expr string
				limiterUnmarshal(t, c.After, &expr)
				if expr != "[1 + 0.1*i for i in range(20)]" {
					t.Fatalf("unexpected timestamps %q", expr)
				}
				for i := range 20 {
					acquire(t, l, &now, 1+0.1*float64(i))
				}

			case "test_acquiring_blocks_when_capacity_reached":
				seen++
				var stamps []float64
				limiterUnmarshal(t, c.After, &stamps)
				l = newBucket(t, &now, c.Create.MaxRate, c.Create.MinRate, false)
				// t=0.1: a token is there. t=0.15: half a token is, so
				// the caller waits (1-0.5)/10 s. At t=0.2 it has it and
				// the bucket is empty. t=0.300001: a token is there.
				acquire(t, l, &now, stamps[0])
				limiterCheckClose(t, "Tokens", l.Stats().Tokens, 0, 1e-12)
				now = limiterVectorAt(stamps[1])
				d, err := l.Acquire()
				want := limiterVectorAt(stamps[2]).Sub(now)
				if err != nil || d != want {
					t.Errorf("blocking Acquire() = %v, %v; want %v, nil", d, err, want)
				}
				now = limiterVectorAt(stamps[2])
				limiterCheckClose(t, "Tokens", l.Stats().Tokens, 0, 1e-12)
				acquire(t, l, &now, stamps[3])

			default:
				t.Fatalf("no check for case %q", c.Name)
			}
		})
	}
	if seen != len(f.Cases) {
		t.Errorf("checked %d of %d cases", seen, len(f.Cases))
	}
}

func limiterUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
}

// Until it paces, Acquire takes no lock: with the limiter's lock held, it
// still returns at once. (If it took the lock, this test would deadlock.)
func TestRateLimiterAcquireTakesNoLockBeforeItPaces(t *testing.T) {
	now := limiterVectorAt(0)
	for _, failFast := range []bool{false, true} {
		l, err := NewRateLimiter(WithClock(ClockFunc(func() time.Time { return now })), WithFailFast(failFast))
		if err != nil {
			t.Fatal(err)
		}
		l.Update(true) // one throttle: the default algorithm does not pace yet
		l.mu.Lock()
		d, err := l.Acquire()
		l.mu.Unlock()
		if d != 0 || err != nil {
			t.Errorf("failFast=%v: Acquire() = %v, %v; want 0, nil", failFast, d, err)
		}
	}
}
