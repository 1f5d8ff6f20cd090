package retry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// sep21Case is a scenario of standard_mode_sep_v2_1_2026.json.
type sep21Case struct {
	Name  string
	Given struct {
		MaxAttempts                  *int     `json:"max_attempts"`
		InitialRetryTokens           *int     `json:"initial_retry_tokens"`
		ExponentialBase              float64  `json:"exponential_base"`
		MaxBackoffTime               *float64 `json:"max_backoff_time"`
		Service                      string
		LongPolling                  bool `json:"long_polling"`
		DefaultMaxAttemptsForService *int `json:"default_max_attempts_for_service"`
	}
	Responses []sep21Response
}

type sep21Response struct {
	Response struct {
		StatusCode int               `json:"status_code"`
		ErrorCode  string            `json:"error_code"`
		Headers    map[string]string `json:"headers"`
	}
	Expected struct {
		Outcome    string
		RetryQuota *int `json:"retry_quota"`
		Delay      *float64
	}
}

// newSEP21Strategy builds the aws2026 profile as a case's "given" says:
// exponential_base 1 fixes the jitter factor at 1 (no randomness), and
// DynamoDB starts its backoff at 25 ms.
func newSEP21Strategy(t *testing.T, c sep21Case) (*retry.Standard, *retry.TokenBucket) {
	t.Helper()
	g := c.Given
	require.Equal(t, 1.0, g.ExponentialBase)
	maxBackoff := 20 * time.Second
	if g.MaxBackoffTime != nil {
		maxBackoff = seconds(*g.MaxBackoffTime)
	}
	base := 50 * time.Millisecond
	if g.Service == "dynamodb" {
		base = 25 * time.Millisecond
	}
	backoff := func(initial time.Duration) retry.Backoff {
		b, err := retry.NewExponentialBackoff(retry.WithInitialDelay(initial), retry.WithScaleFactor(2),
			retry.WithMaxBackoff(max(maxBackoff, initial)), retry.WithJitter(0))
		require.NoError(t, err)
		return b
	}
	capacity := 500
	if g.InitialRetryTokens != nil {
		capacity = *g.InitialRetryTokens
	}
	opts := []retry.StandardOption{
		retry.WithProfile(retry.ProfileAWS2026),
		retry.WithBackoff(backoff(base)),
		retry.WithThrottleBackoff(backoff(time.Second)),
		retry.WithMaxCapacity(capacity),
		retry.WithLongPolling(g.LongPolling),
	}
	switch {
	case g.MaxAttempts != nil:
		opts = append(opts, retry.WithMaxAttempts(*g.MaxAttempts))
	case g.DefaultMaxAttemptsForService != nil:
		opts = append(opts, retry.WithMaxAttempts(*g.DefaultMaxAttemptsForService))
	}
	s, err := retry.NewStandard(opts...)
	require.NoError(t, err)
	return s, s.RetryQuota()
}

// sep21Error is the error an SDK reports for a scenario's response, with
// the x-amz-retry-after hint parsed as a transport would.
func sep21Error(r sep21Response) error {
	err := error(&statusError{status: r.Response.StatusCode, code: r.Response.ErrorCode})
	h := http.Header{}
	for k, v := range r.Response.Headers {
		h.Set(k, v)
	}
	if d, ok := retry.ParseRetryAfter(h, time.Now()); ok {
		err = retry.WithRetryAfter(err, d)
	}
	return err
}

// runSEP21 plays responses through s, starting a new operation after each
// success, and checks every expectation.
func runSEP21(t *testing.T, s *retry.Standard, q *retry.TokenBucket, responses []sep21Response) {
	t.Helper()
	var token retry.RetryToken
	for i, r := range responses {
		step := fmt.Sprintf("response %d (%d %s)", i, r.Response.StatusCode, r.Response.ErrorCode)
		if token == nil {
			var err error
			token, err = s.PlanInitialToken("")
			require.NoError(t, err, step)
		}
		var outcome string
		var delay *time.Duration
		if r.Response.StatusCode == 200 {
			require.NoError(t, s.RecordSuccess(token), step)
			outcome, token = "success", nil
		} else {
			next, wait, err := s.PlanRetryToken(token, sep21Error(r))
			outcome = outcomeOf(err)
			switch {
			case err == nil:
				token = next
				d := token.Delay()
				delay = &d
			case wait > 0:
				delay = &wait
			}
		}
		assert.Equal(t, r.Expected.Outcome, outcome, step)
		if r.Expected.RetryQuota != nil {
			assert.Equal(t, float64(*r.Expected.RetryQuota), q.Stats().Available, step)
		}
		if r.Expected.Delay != nil {
			if assert.NotNil(t, delay, "%s: expected a delay", step) {
				assert.Equal(t, seconds(*r.Expected.Delay), *delay, step)
			}
		} else {
			assert.Nil(t, delay, "%s: expected no delay", step)
		}
	}
}

// The 2026 cross-SDK scenarios (SEP v2.1): costs 14/5, a 50 ms base and a
// 1 s throttling base, the x-amz-retry-after clamp, DynamoDB, long
// polling, and a quota shared by several operations and goroutines.
func TestStandardModeSEPv21(t *testing.T) {
	var file struct {
		Cases            []sep21Case
		DynamoDBCase     sep21Case   `json:"dynamodb_case"`
		LongPollingCases []sep21Case `json:"long_polling_cases"`
		MultiInvocation  []sep21Case `json:"multi_invocation_cases"`
		MultiThreaded    []struct {
			sep21Case
			Threads            [][]sep21Response
			ExpectedFinalQuota int `json:"expected_final_quota"`
		} `json:"multi_threaded_cases"`
	}
	loadVectors(t, "standard_mode_sep_v2_1_2026.json", &file)
	require.NotEmpty(t, file.Cases)
	require.NotEmpty(t, file.LongPollingCases)

	cases := append(append(append([]sep21Case{}, file.Cases...), file.DynamoDBCase), file.MultiInvocation...)
	cases = append(cases, file.LongPollingCases...)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			s, q := newSEP21Strategy(t, c)
			runSEP21(t, s, q, c.Responses)
		})
	}
	require.NotEmpty(t, file.MultiThreaded)
	for _, c := range file.MultiThreaded {
		t.Run(c.Name, func(t *testing.T) {
			s, q := newSEP21Strategy(t, c.sep21Case)
			var wg sync.WaitGroup
			for _, thread := range c.Threads {
				wg.Go(func() {
					token, err := s.PlanInitialToken("")
					require.NoError(t, err)
					for _, r := range thread {
						if r.Response.StatusCode == 200 {
							require.NoError(t, s.RecordSuccess(token))
							return
						}
						token, err = plan(s, token, sep21Error(r))
						require.NoError(t, err)
					}
				})
			}
			wg.Wait()
			assert.Equal(t, float64(c.ExpectedFinalQuota), q.Stats().Available)
		})
	}
}

// botocore's 2026 backoff and quota vectors.
func TestBotocore2026(t *testing.T) {
	var backoff struct {
		Legacy struct {
			Attempts []int
			Delays   []float64
		} `json:"legacy_random_1_max_20"`
		New struct {
			Attempts []int
			Delays   []float64
		} `json:"new_random_1_max_20"`
		RetryAfter struct {
			Cases []struct {
				Header    string  `json:"x-amz-retry-after"`
				AfterFail int     `json:"capacity_after_failure"`
				Delay     float64 `json:"delay"`
				AfterOK   int     `json:"capacity_after_success"`
			}
		} `json:"new_retry_after_cases"`
	}
	loadVectors(t, "botocore_backoff.json", &backoff)
	// random() = 1 in botocore is U = 0 here: the full capped delay.
	atCap := func() float64 { return 0 }

	t.Run("legacy backoff", func(t *testing.T) {
		b, err := retry.NewExponentialBackoff(retry.WithInitialDelay(time.Second), retry.WithScaleFactor(2), retry.WithRandom(atCap))
		require.NoError(t, err)
		require.NotEmpty(t, backoff.Legacy.Attempts)
		for i, n := range backoff.Legacy.Attempts {
			assert.Equal(t, seconds(backoff.Legacy.Delays[i]), b.Delay(n), "attempt %d", n)
		}
	})
	t.Run("2026 backoff", func(t *testing.T) {
		s, err := retry.NewStandard(retry.WithProfile(retry.ProfileAWS2026), retry.WithMaxAttempts(20))
		require.NoError(t, err)
		_ = s
		b, err := retry.NewExponentialBackoff(retry.WithInitialDelay(50*time.Millisecond), retry.WithScaleFactor(2), retry.WithRandom(atCap))
		require.NoError(t, err)
		require.NotEmpty(t, backoff.New.Attempts)
		for i, n := range backoff.New.Attempts {
			assert.Equal(t, seconds(backoff.New.Delays[i]), b.Delay(n), "attempt %d", n)
		}
	})
	t.Run("x-amz-retry-after", func(t *testing.T) {
		require.NotEmpty(t, backoff.RetryAfter.Cases)
		for _, c := range backoff.RetryAfter.Cases {
			b, err := retry.NewExponentialBackoff(retry.WithInitialDelay(50*time.Millisecond), retry.WithScaleFactor(2), retry.WithJitter(0))
			require.NoError(t, err)
			s, err := retry.NewStandard(retry.WithProfile(retry.ProfileAWS2026), retry.WithBackoff(b))
			require.NoError(t, err)
			var r sep21Response
			r.Response.StatusCode = 500
			r.Response.Headers = map[string]string{"x-amz-retry-after": c.Header}
			tok, _ := s.PlanInitialToken("")
			tok, err = plan(s, tok, sep21Error(r))
			require.NoError(t, err)
			assert.Equal(t, seconds(c.Delay), tok.Delay(), "header %q", c.Header)
			assert.Equal(t, float64(c.AfterFail), s.RetryQuota().Stats().Available)
			require.NoError(t, s.RecordSuccess(tok))
			assert.Equal(t, float64(c.AfterOK), s.RetryQuota().Stats().Available)
		}
	})

	var quota struct {
		Cases []struct {
			Name   string
			Bucket int
			Error  string
			Expect struct {
				Capacity int `json:"retry_quota_capacity"`
			}
		} `json:"new_2026_cases"`
	}
	loadVectors(t, "botocore_quota.json", &quota)
	t.Run("2026 retry costs", func(t *testing.T) {
		errs := map[string]error{
			"400 + Error.Code 'Throttling'": &statusError{status: 400, code: "Throttling"},
			"generic":                       &statusError{status: 500},
			"ReadTimeoutError":              retry.TimedOut(errors.New("read timeout")),
		}
		checked := 0
		for _, c := range quota.Cases {
			if c.Expect.Capacity == 0 {
				continue // the step cases are the same rules as the legacy ones
			}
			s, err := retry.NewStandard(retry.WithProfile(retry.ProfileAWS2026), retry.WithMaxCapacity(c.Bucket))
			require.NoError(t, err)
			e, ok := errs[c.Error]
			require.True(t, ok, "no error for %q", c.Error)
			tok, _ := s.PlanInitialToken("")
			_, err = plan(s, tok, e)
			require.NoError(t, err)
			assert.Equal(t, float64(c.Bucket-c.Expect.Capacity), s.RetryQuota().Stats().Available, c.Name)
			checked++
		}
		assert.Equal(t, 3, checked)
	})
}

// The Smithy Java long-polling scenarios: when the quota is spent, the
// refusal still carries a backoff delay.
func TestSmithyJavaLongPolling(t *testing.T) {
	q, err := retry.NewTokenBucket(retry.WithRetryCost(14), retry.WithTimeoutRetryCost(14), retry.WithThrottlingRetryCost(5), retry.WithMaxCapacity(10))
	require.NoError(t, err)
	s, err := retry.NewStandard(retry.WithRetryQuota(q), retry.WithLongPolling(true))
	require.NoError(t, err)
	tok, _ := s.PlanInitialToken("")
	_, wait, err := s.PlanRetryToken(tok, errTransient)
	require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	assert.GreaterOrEqual(t, wait, time.Duration(0), "a delay, possibly jittered to zero")
}

func TestDoWaitsOutLongPollingRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := retry.NewStandard(retry.WithLongPolling(true), retry.WithMaxCapacity(0),
			retry.WithBackoff(retry.ConstantBackoff(3*time.Second)))
		require.NoError(t, err)
		start := time.Now()
		_, err = retry.Do(t.Context(), func(context.Context) (int, error) { return 0, errTransient }, retry.WithStrategy(s))
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
		assert.Equal(t, 3*time.Second, time.Since(start), "the long-polling caller waited the backoff before giving up")
	})
}

func TestProfiles(t *testing.T) {
	t.Run("legacy", func(t *testing.T) {
		s, err := retry.NewStandard(retry.WithProfile(retry.ProfileLegacy), retry.WithMaxAttempts(10))
		require.NoError(t, err)
		assert.Nil(t, s.RetryQuota(), "legacy mode has no quota")
		tok, _ := s.PlanInitialToken("")
		for n, want := range []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 12800, 20000} {
			tok, err = plan(s, tok, errTransient)
			require.NoError(t, err)
			assert.Equal(t, want*time.Millisecond, tok.Delay(), "retry %d", n+1)
		}
	})
	t.Run("legacy with a quota", func(t *testing.T) {
		s, err := retry.NewStandard(retry.WithMaxCapacity(50), retry.WithProfile(retry.ProfileLegacy))
		require.NoError(t, err)
		require.NotNil(t, s.RetryQuota())
		assert.Equal(t, 50, s.RetryQuota().Stats().Capacity)
	})
	t.Run("options win over the profile in any order", func(t *testing.T) {
		s, err := retry.NewStandard(retry.WithRetryCost(3), retry.WithProfile(retry.ProfileAWS2026))
		require.NoError(t, err)
		tok, _ := s.PlanInitialToken("")
		_, err = plan(s, tok, errTransient)
		require.NoError(t, err)
		assert.Equal(t, 497.0, s.RetryQuota().Stats().Available)
	})
	t.Run("aws2026 throttle base", func(t *testing.T) {
		s, err := retry.NewStandard(retry.WithProfile(retry.ProfileAWS2026))
		require.NoError(t, err)
		tok, _ := s.PlanInitialToken("")
		tok, err = plan(s, tok, retry.Throttled(errors.New("slow down")))
		require.NoError(t, err)
		assert.LessOrEqual(t, tok.Delay(), time.Second)
		assert.Equal(t, 495.0, s.RetryQuota().Stats().Available)
	})
	t.Run("bad input", func(t *testing.T) {
		for _, opt := range []retry.StandardOption{retry.WithProfile(retry.Profile(9)), retry.WithProfile(-1)} {
			_, err := retry.NewStandard(opt)
			require.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.Contains(t, err.Error(), "WithProfile")
		}
		_, err := retry.NewStandard(retry.WithRetryAfterLimit(-time.Second))
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
		assert.Contains(t, err.Error(), "WithRetryAfterLimit")
	})
	assert.Equal(t, "aws2026", retry.ProfileAWS2026.String())
	assert.Equal(t, "Profile(7)", retry.Profile(7).String())
}
