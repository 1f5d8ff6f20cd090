package retry_test

import (
	"context"
	"io"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		wantOK bool
	}{
		{"no header", nil, 0, false},
		{"empty header", http.Header{}, 0, false},
		{"unrelated fields", http.Header{"Content-Type": {"text/plain"}}, 0, false},
		// Fields are found as Header.Get finds them: by canonical key, as
		// Header.Set and net/http store them; a key stored otherwise is not.
		{"set in lower case", func() http.Header { h := http.Header{}; h.Set("retry-after", "3"); return h }(), 3 * time.Second, true},
		{"stored non-canonical", http.Header{"retry-after": {"3"}}, 0, false},

		{"amz milliseconds", http.Header{"X-Amz-Retry-After": {"1500"}}, 1500 * time.Millisecond, true},
		{"amz zero", http.Header{"X-Amz-Retry-After": {"0"}}, 0, true},
		{"amz leading zeros", http.Header{"X-Amz-Retry-After": {"0042"}}, 42 * time.Millisecond, true},
		{"amz surrounding space", http.Header{"X-Amz-Retry-After": {" \t250 "}}, 250 * time.Millisecond, true},
		{"amz at the limit", http.Header{"X-Amz-Retry-After": {"86400000"}}, 24 * time.Hour, true},
		{"amz over the limit", http.Header{"X-Amz-Retry-After": {"86400001"}}, 0, false},
		{"amz overflowing int64", http.Header{"X-Amz-Retry-After": {"99999999999999999999999999"}}, 0, false},
		{"amz negative", http.Header{"X-Amz-Retry-After": {"-100"}}, 0, false},
		{"amz plus sign", http.Header{"X-Amz-Retry-After": {"+100"}}, 0, false},
		{"amz fraction", http.Header{"X-Amz-Retry-After": {"1.5"}}, 0, false},
		{"amz exponent", http.Header{"X-Amz-Retry-After": {"1e3"}}, 0, false},
		{"amz garbage", http.Header{"X-Amz-Retry-After": {"invalid"}}, 0, false},
		{"amz inner space", http.Header{"X-Amz-Retry-After": {"1 0"}}, 0, false},
		{"amz blank", http.Header{"X-Amz-Retry-After": {"  "}}, 0, false},
		{"amz non-ASCII digit", http.Header{"X-Amz-Retry-After": {"١٢"}}, 0, false},
		{"amz first value counts", http.Header{"X-Amz-Retry-After": {"100", "200"}}, 100 * time.Millisecond, true},
		{"amz set through Header.Set", func() http.Header {
			h := http.Header{}
			h.Set("x-amz-retry-after", "7")
			return h
		}(), 7 * time.Millisecond, true},

		{"seconds", http.Header{"Retry-After": {"120"}}, 2 * time.Minute, true},
		{"seconds zero", http.Header{"Retry-After": {"0"}}, 0, true},
		{"seconds at the limit", http.Header{"Retry-After": {"86400"}}, 24 * time.Hour, true},
		{"seconds over the limit", http.Header{"Retry-After": {"86401"}}, 0, false},
		{"seconds overflowing Duration", http.Header{"Retry-After": {"9223372036854775807"}}, 0, false},
		{"seconds negative", http.Header{"Retry-After": {"-1"}}, 0, false},
		{"seconds fraction", http.Header{"Retry-After": {"1.5"}}, 0, false},
		{"seconds garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
		{"seconds empty", http.Header{"Retry-After": {""}}, 0, false},

		{"date ahead", http.Header{"Retry-After": {date(90 * time.Second)}}, 90 * time.Second, true},
		{"date with space", http.Header{"Retry-After": {" " + date(time.Minute) + " "}}, time.Minute, true},
		{"date now", http.Header{"Retry-After": {date(0)}}, 0, true},
		{"date past", http.Header{"Retry-After": {date(-time.Hour)}}, 0, true},
		{"date far past", http.Header{"Retry-After": {"Thu, 01 Jan 1970 00:00:00 GMT"}}, 0, true},
		{"date at the limit", http.Header{"Retry-After": {date(24 * time.Hour)}}, 24 * time.Hour, true},
		{"date over the limit", http.Header{"Retry-After": {date(24*time.Hour + time.Second)}}, 0, false},
		{"date far future", http.Header{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}}, 0, false},
		{"date RFC 850", http.Header{"Retry-After": {"Sunday, 01-Mar-26 12:00:30 GMT"}}, 30 * time.Second, true},
		{"date asctime", http.Header{"Retry-After": {"Sun Mar  1 12:00:45 2026"}}, 45 * time.Second, true},
		{"date malformed", http.Header{"Retry-After": {"Sun, 01 Mar 2026 25:00:00 GMT"}}, 0, false},
		{"date wrong zone", http.Header{"Retry-After": {"Sun, 01 Mar 2026 12:00:30 PST"}}, 0, false},

		{"amz wins over Retry-After", http.Header{
			"X-Amz-Retry-After": {"300"},
			"Retry-After":       {"5"},
		}, 300 * time.Millisecond, true},
		{"invalid amz falls back to Retry-After", http.Header{
			"X-Amz-Retry-After": {"-1"},
			"Retry-After":       {"5"},
		}, 5 * time.Second, true},
		{"both invalid", http.Header{
			"X-Amz-Retry-After": {"x"},
			"Retry-After":       {"y"},
		}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := retry.ParseRetryAfter(tt.header, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %t; want %v, %t", tt.header, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)
	for _, seed := range []struct{ amz, ra string }{
		{"1500", ""},
		{"", "120"},
		{"-100", "Sun, 01 Mar 2026 12:01:00 GMT"},
		{"", "Sunday, 01-Mar-26 12:00:30 GMT"},
		{"", "Sun Mar  1 12:00:45 2026"},
		{"99999999999999999999", "9223372036854775808"},
		{"invalid", "Fri, 31 Dec 9999 23:59:59 GMT"},
	} {
		f.Add(seed.amz, seed.ra, int64(0))
	}
	f.Fuzz(func(t *testing.T, amz, ra string, offset int64) {
		h := http.Header{}
		if amz != "" {
			h["X-Amz-Retry-After"] = []string{amz}
		}
		if ra != "" {
			h["Retry-After"] = []string{ra}
		}
		at := now.Add(time.Duration(offset))
		d, ok := retry.ParseRetryAfter(h, at)
		if d < 0 || d > 24*time.Hour {
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, outside [0, 24h]", h, at, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q, %v) = %v, false; want 0 with false", h, at, d)
		}
		if d2, ok2 := retry.ParseRetryAfter(h, at); d2 != d || ok2 != ok {
			t.Fatalf("ParseRetryAfter(%q, %v) not deterministic: %v, %t then %v, %t", h, at, d, ok, d2, ok2)
		}
	})
}

// Issue 12: the retry-after limit was applied as min(delay, backoff+limit),
// whose sum wrapped: a large limit, or a large backoff, made every retry
// immediate and turned a 5-s hint into no wait at all. The delay is
// max(backoff, min(hint, backoff+limit)), the sum saturating.
func TestRetryAfterLimitSaturates(t *testing.T) {
	const huge = time.Duration(math.MaxInt64)
	tests := []struct {
		name                 string
		backoff, limit, hint time.Duration
		want                 time.Duration
	}{
		{"huge limit, no hint", time.Second, huge, 0, time.Second},
		{"huge limit, 5s hint", time.Second, huge, 5 * time.Second, 5 * time.Second},
		{"huge limit, huge hint", time.Second, huge, huge, huge},
		{"huge limit, huge backoff", huge, huge, 5 * time.Second, huge},
		{"huge backoff, 1h limit", huge, time.Hour, 0, huge},
		{"huge backoff, 1h limit, 5s hint", huge, time.Hour, 5 * time.Second, huge},
		{"huge backoff, 1h limit, huge hint", huge, time.Hour, huge, huge},
		{"limit one below the edge", time.Second, huge - time.Second, huge, huge},
		{"limit at the edge", time.Second + 1, huge - time.Second, huge, huge},
		{"1h limit shortens a 2h hint", time.Second, time.Hour, 2 * time.Hour, time.Hour + time.Second},
		{"no limit", time.Second, 0, huge, huge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(tt.backoff)),
				retry.WithRetryAfterLimit(tt.limit), retry.WithoutRetryQuota(), retry.WithMaxRetryAfter(huge))
			require.NoError(t, err)
			tok, err := planFirst(s)
			require.NoError(t, err)
			tok, err = planRetry(s, tok, retry.WithRetryAfter(errTransient, tt.hint))
			require.NoError(t, err)
			assert.Equal(t, tt.want, tok.Delay())
		})
	}
}

// Issue 12, end to end: WithRetryAfterLimit(math.MaxInt64) with a 1-s
// constant backoff made 5 attempts in 68 µs. Four retries wait 4 s.
func TestRetryAfterLimitHugeDoWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(time.Second)),
			retry.WithRetryAfterLimit(math.MaxInt64), retry.WithMaxAttempts(5), retry.WithoutRetryQuota())
		require.NoError(t, err)
		start := time.Now()
		attempts := 0
		err = retry.Run(t.Context(), func(context.Context) error {
			attempts++
			return errTransient
		}, retry.WithStrategy(s))
		require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
		assert.Equal(t, 5, attempts)
		assert.Equal(t, 4*time.Second, time.Since(start))
	})
}

// A hint above the ceiling is refused at once, with an error that says
// what the service asked for, instead of a wait of a day; the ceiling is
// an option, checked.
func TestMaxRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := retry.NewStandard()
		require.NoError(t, err)
		calls := 0
		start := time.Now()
		_, err = retry.Do(t.Context(), func(context.Context) (int, error) {
			calls++
			return 0, retry.WithRetryAfter(errThrottled, 24*time.Hour)
		}, retry.WithStrategy(s))
		require.ErrorIs(t, err, retry.ErrRetryAfterTooLong)
		assert.ErrorContains(t, err, "24h0m0s")
		assert.ErrorContains(t, err, "WithMaxRetryAfter")
		assert.Equal(t, 1, calls)
		assert.Zero(t, time.Since(start), "no wait") // synctest's clock

		// At the ceiling the hint is honoured.
		calls, start = 0, time.Now()
		_, err = retry.Do(t.Context(), func(context.Context) (int, error) {
			calls++
			if calls == 1 {
				return 0, retry.WithRetryAfter(errThrottled, retry.DefaultMaxRetryAfter)
			}
			return 1, nil
		}, retry.WithStrategy(s))
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), retry.DefaultMaxRetryAfter)

		// A raised ceiling honours a longer hint.
		s, err = retry.NewStandard(retry.WithMaxRetryAfter(2 * time.Hour))
		require.NoError(t, err)
		calls, start = 0, time.Now()
		_, err = retry.Do(t.Context(), func(context.Context) (int, error) {
			calls++
			if calls == 1 {
				return 0, retry.WithRetryAfter(errThrottled, time.Hour)
			}
			return 1, nil
		}, retry.WithStrategy(s))
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), time.Hour)
	})
}

// ProfileAWS2026 keeps a hint within backoff + 5 s, so its ceiling never
// refuses one.
func TestMaxRetryAfterAWS2026(t *testing.T) {
	s, err := retry.NewStandard(retry.WithProfile(retry.ProfileAWS2026))
	require.NoError(t, err)
	tok, err := planFirst(s)
	require.NoError(t, err)
	tok, err = planRetry(s, tok, retry.WithRetryAfter(errThrottled, 24*time.Hour))
	require.NoError(t, err)
	assert.LessOrEqual(t, tok.Delay(), 30*time.Second)
}

func TestMaxRetryAfterInvalid(t *testing.T) {
	for _, d := range []time.Duration{0, -1, math.MinInt64} {
		_, err := retry.NewStandard(retry.WithMaxRetryAfter(d))
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
		assert.ErrorContains(t, err, "WithMaxRetryAfter")
		assert.ErrorContains(t, err, "> 0")
		_, err = retry.NewAdaptive(retry.WithMaxRetryAfter(d))
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
	}
}

// Transport returns the response that asked for too long a wait, body and
// hint intact, instead of sleeping.
func TestTransportRetryAfterAboveCeiling(t *testing.T) {
	srv, count := countingServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.Header().Set("Retry-After", "86400")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "down for maintenance")
	})
	client := &http.Client{Transport: &retry.Transport{Strategy: quickStrategy(t, 3)}}
	resp, err := client.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "86400", resp.Header.Get("Retry-After"))
	assert.Equal(t, "down for maintenance", string(body))
	assert.Equal(t, int64(1), count.Load())
}
