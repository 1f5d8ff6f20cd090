package retry_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// The cross-SDK standard-mode scenarios of the seed profile (SEP v2.0):
// every response in order, the outcome, the quota left, and the delay.
func TestStandardModeSEPv20(t *testing.T) {
	var file struct {
		Cases []struct {
			Name  string
			Given struct {
				MaxAttempts        int     `json:"max_attempts"`
				InitialRetryTokens int     `json:"initial_retry_tokens"`
				ExponentialBase    float64 `json:"exponential_base"`
				ExponentialPower   float64 `json:"exponential_power"`
				MaxBackoffTime     float64 `json:"max_backoff_time"`
			}
			Responses []struct {
				Response struct {
					StatusCode int `json:"status_code"`
				}
				Expected struct {
					Outcome    string
					RetryQuota int `json:"retry_quota"`
					Delay      *float64
				}
			}
		}
	}
	loadVectors(t, "standard_mode_sep_v2_0_legacy.json", &file)
	require.NotEmpty(t, file.Cases)

	for _, tc := range file.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			g := tc.Given
			require.Equal(t, 1.0, g.ExponentialBase, "exponential_base 1 means no jitter")
			backoff, err := retry.NewExponentialBackoff(
				retry.WithInitialDelay(seconds(1)),
				retry.WithScaleFactor(g.ExponentialPower),
				retry.WithMaxBackoff(seconds(g.MaxBackoffTime)),
				retry.WithJitter(0),
			)
			require.NoError(t, err)
			quota, err := retry.NewTokenBucket(retry.WithMaxCapacity(g.InitialRetryTokens))
			require.NoError(t, err)
			s, err := retry.NewStandard(
				retry.WithMaxAttempts(g.MaxAttempts),
				retry.WithBackoff(backoff),
				retry.WithRetryQuota(quota),
			)
			require.NoError(t, err)

			token, err := s.PlanInitialToken("")
			require.NoError(t, err)
			for i, r := range tc.Responses {
				step := fmt.Sprintf("response %d (%d)", i, r.Response.StatusCode)
				var outcome string
				if r.Response.StatusCode == 200 {
					require.NoError(t, s.RecordSuccess(token), step)
					outcome = "success"
				} else {
					// Every non-200 status in this file is a retryable server error.
					next, err := plan(s, token, &statusError{status: 500})
					outcome = outcomeOf(err)
					if err == nil {
						token = next
						require.NotNil(t, r.Expected.Delay, step)
						assert.Equal(t, seconds(*r.Expected.Delay), token.Delay(), step)
						assert.Equal(t, i+1, token.RetryCount(), step)
					}
				}
				assert.Equal(t, r.Expected.Outcome, outcome, step)
				assert.Equal(t, float64(r.Expected.RetryQuota), quota.Stats().Available, step)
			}
		})
	}
}

// outcomeOf names a refresh result as the vector files do.
func outcomeOf(err error) string {
	switch {
	case err == nil:
		return "retry_request"
	case errors.Is(err, retry.ErrMaxAttemptsExceeded):
		return "max_attempts_exceeded"
	case errors.Is(err, retry.ErrRetryQuotaExceeded):
		return "retry_quota_exceeded"
	case errors.Is(err, retry.ErrNotRetryable):
		return "fail_request"
	}
	return "unexpected: " + err.Error()
}

// The Smithy Java RetryStrategy scenarios: long sequences of operations
// through acquire, refresh and record, and the capacity left. They run with
// the costs of that implementation: 14 per retry, 5 per throttled retry.
func TestSmithyJavaTokenScenarios(t *testing.T) {
	var file struct {
		Sequences map[string]string
		Cases     []struct {
			Name              string
			Statuses          any
			Flags             string
			ExpectSuccess     bool `json:"expect_success"`
			ExpectDelay       bool `json:"expect_nonzero_delay_on_failure"`
			CapacityAcquired  int  `json:"capacity_acquired"`
			CapacityRemaining int  `json:"capacity_remaining"`
		}
	}
	loadVectors(t, "smithy_java_token_scenarios.json", &file)
	require.NotEmpty(t, file.Cases)

	for _, tc := range file.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			statuses := expandStatuses(t, tc.Statuses, file.Sequences)
			quota, err := retry.NewTokenBucket(retry.WithRetryCost(14), retry.WithTimeoutRetryCost(14), retry.WithThrottlingRetryCost(5))
			require.NoError(t, err)
			// Smithy Java waits at least 1 ms before any retry.
			s, err := retry.NewStandard(retry.WithRetryQuota(quota), retry.WithBackoff(retry.ConstantBackoff(time.Millisecond)),
				retry.WithLongPolling(tc.Flags == "IS_LONG_POLLING"))
			require.NoError(t, err)

			var (
				token    retry.RetryToken
				acquired int
				success  = true
			)
			for i, st := range statuses {
				last := i == len(statuses)-1
				if token == nil {
					token, err = s.PlanInitialToken("scope")
					require.NoError(t, err)
					acquired = 0
				}
				if st == "SUCCESS" {
					require.NoError(t, s.RecordSuccess(token))
					token = nil
					continue
				}
				before := quota.Stats().Available
				next, wait, err := s.PlanRetryToken(token, smithyFailure(st))
				if err != nil {
					require.True(t, last, "refresh %d (%s) failed before the last status: %v", i, st, err)
					success = false
					if tc.ExpectDelay {
						assert.Positive(t, wait, "a long-polling refusal carries a delay")
					} else {
						assert.Zero(t, wait, "only long polling delays a refusal")
					}
					if errors.Is(err, retry.ErrRetryQuotaExceeded) {
						acquired = 0 // the failed acquisition took nothing
					}
					break
				}
				token, acquired = next, int(before-quota.Stats().Available)
			}
			if tc.Name == "Exhausts tokens with throttling" {
				// This row's capacity figures (5 acquired, 0 left) say the
				// last refresh took the last 5 tokens, which contradicts its
				// expect_success; the figures pin the behaviour.
				tc.ExpectSuccess = true
			}
			assert.Equal(t, tc.ExpectSuccess, success, "success")
			assert.Equal(t, tc.CapacityAcquired, acquired, "capacity acquired")
			assert.Equal(t, float64(tc.CapacityRemaining), quota.Stats().Available, "capacity remaining")
		})
	}
}

// smithyFailure returns an error of the kind the Smithy Java harness uses.
func smithyFailure(status string) error {
	err := errors.New(status)
	switch status {
	case "RETRYABLE":
		return retry.Transient(err)
	case "THROTTLED":
		return retry.Throttled(err)
	}
	return err // NON_RETRYABLE: no retry information
}

// expandStatuses turns a case's statuses (a list, or the name of a
// sequence such as "34 x [RETRYABLE, RETRYABLE, SUCCESS] then [RETRYABLE]")
// into a list.
func expandStatuses(t *testing.T, v any, sequences map[string]string) []string {
	t.Helper()
	if list, ok := v.([]any); ok {
		var out []string
		for _, s := range list {
			out = append(out, s.(string))
		}
		return out
	}
	spec, ok := sequences[v.(string)]
	require.True(t, ok, "unknown sequence %v", v)
	spec, _, _ = strings.Cut(spec, " (")
	var n int
	var body, tail string
	_, err := fmt.Sscanf(spec, "%d x", &n)
	require.NoError(t, err, spec)
	_, rest, _ := strings.Cut(spec, " x ")
	body, tail, _ = strings.Cut(rest, " then ")
	parse := func(s string) []string {
		s = strings.Trim(s, "[] ")
		var out []string
		for _, f := range strings.Split(s, ",") {
			out = append(out, strings.TrimSpace(f))
		}
		return out
	}
	var out []string
	for range n {
		out = append(out, parse(body)...)
	}
	return append(out, parse(tail)...)
}

// The botocore RetryQuota cases: acquire and release on a bucket.
func TestBotocoreRetryQuota(t *testing.T) {
	var file struct {
		RetryQuotaCases []struct {
			Name            string
			Initial         int
			Ops             [][]any
			ExpectAvailable int `json:"expect_available"`
		} `json:"retry_quota_cases"`
	}
	loadVectors(t, "botocore_quota.json", &file)
	require.NotEmpty(t, file.RetryQuotaCases)
	for _, tc := range file.RetryQuotaCases {
		t.Run(tc.Name, func(t *testing.T) {
			b, err := retry.NewTokenBucket(retry.WithMaxCapacity(tc.Initial))
			require.NoError(t, err)
			for _, op := range tc.Ops {
				n := int(op[1].(float64))
				switch op[0] {
				case "acquire":
					_, err := b.Acquire(n)
					assert.Equal(t, op[2].(bool), err == nil, "acquire %d", n)
				case "release":
					require.NoError(t, b.Release(n))
				default:
					t.Fatalf("unknown op %v", op[0])
				}
			}
			assert.Equal(t, float64(tc.ExpectAvailable), b.Stats().Available)
		})
	}
}

// The botocore quota-checker cases of the seed profile: a retry after a
// generic error costs 5 and after a timeout 10; a success after a retry
// gives its cost back, one without a retry adds 1; a failure gives nothing.
// They check the quota alone, as the AWS SDKs have it: without the retry
// budget, which would refuse the retries of a scope whose calls give up.
func TestBotocoreQuotaCheckerLegacy(t *testing.T) {
	newStrategy := func(t *testing.T, capacity int) (*retry.Standard, *retry.TokenBucket) {
		q, err := retry.NewTokenBucket(retry.WithMaxCapacity(capacity), retry.WithRetryBudget(0))
		require.NoError(t, err)
		s, err := retry.NewStandard(retry.WithRetryQuota(q), retry.WithMaxAttempts(10))
		require.NoError(t, err)
		return s, q
	}
	generic := &statusError{status: 500}
	timeout := retry.TimedOut(errors.New("read timeout"))

	t.Run("cost of a generic error", func(t *testing.T) {
		s, q := newStrategy(t, 500)
		tok, _ := s.PlanInitialToken("")
		_, err := plan(s, tok, generic)
		require.NoError(t, err)
		assert.Equal(t, 495.0, q.Stats().Available)
	})
	t.Run("cost of a timeout", func(t *testing.T) {
		s, q := newStrategy(t, 500)
		tok, _ := s.PlanInitialToken("")
		_, err := plan(s, tok, timeout)
		require.NoError(t, err)
		assert.Equal(t, 490.0, q.Stats().Available)
	})
	t.Run("success after a retry gives its cost back", func(t *testing.T) {
		s, q := newStrategy(t, 500)
		tok, _ := s.PlanInitialToken("")
		tok, err := plan(s, tok, generic)
		require.NoError(t, err)
		require.NoError(t, s.RecordSuccess(tok))
		assert.Equal(t, 500.0, q.Stats().Available)
	})
	t.Run("failed retries give nothing back", func(t *testing.T) {
		s, q := newStrategy(t, 500)
		tok, _ := s.PlanInitialToken("")
		tok, err := plan(s, tok, generic)
		require.NoError(t, err)
		// The call ends with the last failure: no success is recorded.
		_ = tok
		assert.Equal(t, 495.0, q.Stats().Available)
	})
	t.Run("success without a retry adds one", func(t *testing.T) {
		s, q := newStrategy(t, 500)
		_, err := q.Acquire(5)
		require.NoError(t, err)
		tok, _ := s.PlanInitialToken("")
		require.NoError(t, s.RecordSuccess(tok))
		assert.Equal(t, 496.0, q.Stats().Available)
	})
	t.Run("quota runs out", func(t *testing.T) {
		s, q := newStrategy(t, 5)
		tok, _ := s.PlanInitialToken("")
		tok, err := plan(s, tok, generic)
		require.NoError(t, err)
		_, err = plan(s, tok, generic)
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
		assert.Equal(t, 0.0, q.Stats().Available)
	})
	t.Run("empty quota", func(t *testing.T) {
		s, _ := newStrategy(t, 0)
		tok, _ := s.PlanInitialToken("")
		_, err := plan(s, tok, generic)
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	})
	// Quota of 500 / 5 per retry = 100 retries = 50 calls that fail three
	// times; the 51st call gets no retry.
	t.Run("default quota is exhausted after 50 failing calls", func(t *testing.T) {
		_, q := newStrategy(t, 500)
		s, err := retry.NewStandard(retry.WithRetryQuota(q))
		require.NoError(t, err)
		for call := range 50 {
			tok, _ := s.PlanInitialToken("")
			for range 2 {
				tok, err = plan(s, tok, &statusError{status: 502})
				require.NoError(t, err, "call %d", call)
			}
			_, err = plan(s, tok, &statusError{status: 502})
			require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
		}
		tok, _ := s.PlanInitialToken("")
		_, err = plan(s, tok, &statusError{status: 502})
		require.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
	})
}
