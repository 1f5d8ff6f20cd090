package awsretry_test

import (
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"

	sdkretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/awsretry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain fails the test binary if any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// headers returns the amz-sdk-request headers of attempts 1 to n with an
// attempt limit of max.
func headers(n, max int) []string {
	h := make([]string, n)
	for i := range h {
		h[i] = fmt.Sprintf("attempt=%d; max=%d", i+1, max)
	}
	return h
}

// TestCall drives one GetItem call through each scripted sequence of
// DynamoDB answers, with the default Standard strategy on virtual time,
// and checks the attempts the service saw, the error, the retry quota
// after the call, and that the strategy heard of the call's end.
func TestCall(t *testing.T) {
	const full = float64(retry.DefaultMaxCapacity)
	tests := []struct {
		name     string
		script   []reply
		attempts int
		quota    float64 // left in the retry quota after the call
		check    func(t *testing.T, err error)
	}{
		{name: "success", attempts: 1, quota: full},
		{
			name: "throttled once", script: []reply{provisioned}, attempts: 2,
			quota: full, // the successful retry refunds its cost
		},
		{name: "ThrottlingException", script: []reply{throttling}, attempts: 2, quota: full},
		{
			name: "500 then 503", script: []reply{internal, unavailable}, attempts: 3,
			quota: full - retry.DefaultRetryCost, // only the last retry is refunded
		},
		{
			name: "throttled on every attempt", script: []reply{provisioned, provisioned, provisioned}, attempts: 3,
			quota: full - 2*retry.DefaultRetryCost,
			check: func(t *testing.T, err error) {
				var pte *types.ProvisionedThroughputExceededException
				assert.ErrorAs(t, err, &pte)
				var max *sdkretry.MaxAttemptsError
				assert.ErrorAs(t, err, &max, "the SDK's own error for the attempt limit")
			},
		},
		{
			// The strategy refunds a retry that ends in an error that is
			// not retryable: the service answered. The SDK never asks for a
			// retry token here; the call's middleware tells the strategy.
			name: "throttled then not retryable", script: []reply{provisioned, validation}, attempts: 2,
			quota: full,
			check: func(t *testing.T, err error) {
				var api smithy.APIError
				require.ErrorAs(t, err, &api)
				assert.Equal(t, "ValidationException", api.ErrorCode())
			},
		},
		{name: "not retryable", script: []reply{validation}, attempts: 1, quota: full},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var ev events
				s, err := retry.NewStandard(ev.hook())
				require.NoError(t, err)
				fake := newFake(func(string) []reply { return tt.script })
				client := newClient(t, fake, "", awsretry.WithStrategy(s))

				err = get(t.Context(), client, "k")
				if len(tt.script) < tt.attempts {
					require.NoError(t, err)
				} else {
					require.Error(t, err)
				}
				if tt.check != nil {
					tt.check(t, err)
				}
				assert.Equal(t, headers(tt.attempts, retry.DefaultMaxAttempts), fake.seen("k"))
				assert.Equal(t, tt.quota, available(t, s))
				assert.Equal(t, 1, ev.count(retry.EventAttempt))
				assert.Equal(t, tt.attempts-1, ev.count(retry.EventRetry))
				assert.Equal(t, 1, ev.count(retry.EventSuccess)+ev.count(retry.EventGiveUp), "the call's end, told once")
			})
		})
	}
}

// TestConcurrentCalls sends many calls at once through one client, over a
// loopback server, and checks that each call's attempts were numbered per
// call and that the retry quota holds exactly what the calls' outcomes
// leave in it, under the SDK's legacy and 2026 retry rules.
func TestConcurrentCalls(t *testing.T) {
	for _, mode := range []string{"", "true"} {
		t.Run("AWS_NEW_RETRIES_2026="+mode, func(t *testing.T) {
			t.Setenv("AWS_NEW_RETRIES_2026", mode)
			const calls = 200
			// Each call's script, and what the call leaves taken from the
			// quota: a retry's cost is refunded when the attempt it paid
			// for succeeds or fails for good on an error that is not
			// retryable, and kept otherwise.
			patterns := []struct {
				script []reply
				cost   int
			}{
				{nil, 0},
				{[]reply{provisioned}, 0},
				{[]reply{internal, throttling}, retry.DefaultRetryCost},
				{[]reply{unavailable, provisioned, internal}, 2 * retry.DefaultRetryCost},
				{[]reply{throttling, validation}, 0},
				{[]reply{validation}, 0},
			}
			pattern := func(key string) int {
				var i int
				fmt.Sscanf(key, "k%d", &i)
				return i % len(patterns)
			}
			var ev events
			s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithMaxCapacity(10*calls),
				retry.WithInitialTrySuccessIncrement(0), // what successes add would depend on their order
				ev.hook())
			require.NoError(t, err)
			fake := newFake(func(key string) []reply { return patterns[pattern(key)].script })
			srv := httptest.NewServer(fake)
			defer srv.Close()
			client := newClient(t, fake, srv.URL, awsretry.WithStrategy(s))

			errs := make([]error, calls)
			var wg sync.WaitGroup
			for i := range calls {
				wg.Go(func() { errs[i] = get(t.Context(), client, fmt.Sprintf("k%d", i)) })
			}
			wg.Wait()

			want := float64(10 * calls)
			for i, err := range errs {
				key := fmt.Sprintf("k%d", i)
				p := patterns[pattern(key)]
				attempts := min(len(p.script)+1, retry.DefaultMaxAttempts)
				if p.script != nil && p.script[len(p.script)-1] == validation {
					attempts = len(p.script)
				}
				assert.Equal(t, attempts == len(p.script), err != nil, "%s: %v", key, err)
				assert.Equal(t, headers(attempts, retry.DefaultMaxAttempts), fake.seen(key), key)
				want -= float64(p.cost)
			}
			assert.Equal(t, want, available(t, s))
			assert.Equal(t, calls, ev.count(retry.EventAttempt))
			assert.Equal(t, calls, ev.count(retry.EventSuccess)+ev.count(retry.EventGiveUp))
		})
	}
}
