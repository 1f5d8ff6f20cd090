package awsretry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdkretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
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
				retry.WithRetryBudget(0),                // so would what the budget allows, once a call gives up
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

// TestAdaptivePacing checks that an Adaptive strategy paces the SDK's
// sends through the attempt-token step: once throttles have slowed its
// rate limiter, a first attempt waits there for a send slot, and, with a
// fail-fast limiter, a call is refused there before anything is sent.
func TestAdaptivePacing(t *testing.T) {
	t.Run("wait", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, err := retry.NewAdaptive(retry.WithBackoff(retry.NoBackoff), retry.WithMaxSendWait(time.Hour), retry.WithPublishedCUBIC())
			require.NoError(t, err)
			fake := newFake(func(key string) []reply {
				if strings.HasPrefix(key, "hot") {
					return []reply{provisioned, provisioned, provisioned}
				}
				return nil
			})
			client := newClient(t, fake, "", awsretry.WithStrategy(s))
			// burst sends calls at once and returns how long they took.
			burst := func(name string) time.Duration {
				const calls = 50
				start := time.Now()
				var wg sync.WaitGroup
				for i := range calls {
					wg.Go(func() { assert.NoError(t, get(t.Context(), client, fmt.Sprintf("%s%d", name, i))) })
				}
				wg.Wait()
				for i := range calls {
					assert.Len(t, fake.seen(fmt.Sprintf("%s%d", name, i)), 1, "no call was retried")
				}
				return time.Since(start)
			}

			assert.Zero(t, burst("before"), "no throttle yet: nothing waits")
			for i := range 5 {
				require.Error(t, get(t.Context(), client, fmt.Sprintf("hot%d", i)))
				time.Sleep(100 * time.Millisecond)
			}
			st, found := s.Stats(scope)
			require.True(t, found)
			require.NotNil(t, st.RateLimiter)
			require.True(t, st.RateLimiter.Enabled, "throttles enable the limiter")
			assert.Positive(t, burst("after"), "the first attempts waited for send slots")
		})
	})
	t.Run("fail fast", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s, err := retry.NewAdaptive(retry.WithBackoff(retry.NoBackoff), retry.WithFailFast(true), retry.WithPublishedCUBIC())
			require.NoError(t, err)
			fake := newFake(func(string) []reply { return []reply{provisioned, provisioned, provisioned} })
			client := newClient(t, fake, "", awsretry.WithStrategy(s))
			for i := range 100 {
				key := fmt.Sprintf("k%d", i)
				err := get(t.Context(), client, key)
				require.Error(t, err)
				if errors.Is(err, retry.ErrRateLimited) && len(fake.seen(key)) == 0 {
					assert.ErrorContains(t, err, "failed to get retry Send token", "refused at the attempt-token step")
					return
				}
			}
			t.Fatal("no call was refused a send slot before its first attempt")
		})
	})
}

// TestWaitsEndWithTheContext checks that a wait of the strategy that the
// caller's context would cut short ends the call, and gives back what the
// retry took from the quota.
func TestWaitsEndWithTheContext(t *testing.T) {
	newStrategy := func(t *testing.T) *retry.Standard {
		s, err := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(time.Hour)))
		require.NoError(t, err)
		return s
	}
	script := func(string) []reply { return []reply{provisioned} }
	t.Run("deadline too soon", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newStrategy(t)
			client := newClient(t, newFake(script), "", awsretry.WithStrategy(s))
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			start := time.Now()
			err := get(ctx, client, "k")
			assert.ErrorIs(t, err, retry.ErrDeadlineTooSoon)
			var pte *types.ProvisionedThroughputExceededException
			assert.ErrorAs(t, err, &pte, "the attempt's error is kept")
			assert.Zero(t, time.Since(start), "refused at once")
			assert.Equal(t, float64(retry.DefaultMaxCapacity), available(t, s))
		})
	})
	t.Run("canceled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := newStrategy(t)
			client := newClient(t, newFake(script), "", awsretry.WithStrategy(s))
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(time.Minute, cancel)
			err := get(ctx, client, "k")
			assert.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, float64(retry.DefaultMaxCapacity), available(t, s))
		})
	})
}

// TestRetryQuota checks the refusals that come from the retry quota.
func TestRetryQuota(t *testing.T) {
	t.Run("exhausted", func(t *testing.T) {
		s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithMaxCapacity(retry.DefaultRetryCost))
		require.NoError(t, err)
		fake := newFake(func(string) []reply { return []reply{internal, internal} })
		err = get(t.Context(), newClient(t, fake, "", awsretry.WithStrategy(s)), "k")
		assert.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
		var api smithy.APIError
		require.ErrorAs(t, err, &api)
		assert.Equal(t, "InternalServerError", api.ErrorCode())
		assert.Len(t, fake.seen("k"), 2)
	})
	t.Run("initial token refused", func(t *testing.T) {
		// A quota that cannot pay for a first attempt allows it, without
		// retries.
		s, err := retry.NewStandard(retry.WithMaxCapacity(1), retry.WithInitialTryCost(2))
		require.NoError(t, err)
		fake := newFake(func(key string) []reply {
			if key == "fails" {
				return []reply{internal}
			}
			return nil
		})
		client := newClient(t, fake, "", awsretry.WithStrategy(s))
		require.NoError(t, get(t.Context(), client, "works"))
		err = get(t.Context(), client, "fails")
		assert.ErrorIs(t, err, retry.ErrRetryQuotaExceeded)
		assert.ErrorContains(t, err, "no retries")
		assert.Len(t, fake.seen("fails"), 1)
	})
}

// panicky is a strategy whose methods dereference their receiver.
type panicky struct{ n int }

func (p *panicky) AcquireInitialToken(context.Context, string) (retry.RetryToken, error) {
	return nil, errors.New(fmt.Sprint(p.n))
}
func (p *panicky) RefreshRetryToken(context.Context, retry.RetryToken, error) (retry.RetryToken, error) {
	return nil, errors.New(fmt.Sprint(p.n))
}
func (p *panicky) RecordSuccess(retry.RetryToken) error { return errors.New(fmt.Sprint(p.n)) }
func (p *panicky) MaxAttempts() int                     { return p.n }

// TestBadInput checks that every bad argument is an error wrapping
// retry.ErrInvalidConfig that names what is wrong, and never a panic.
func TestBadInput(t *testing.T) {
	s, err := retry.NewStandard()
	require.NoError(t, err)
	tests := []struct {
		name     string
		strategy retry.RetryStrategy
		opts     []awsretry.Option
		want     string
	}{
		{"nil strategy", nil, nil, "awsretry.New = a nil strategy"},
		{"nil *Standard", (*retry.Standard)(nil), nil, "a nil *retry.Standard"},
		{"nil pointer", (*panicky)(nil), nil, "a nil *awsretry_test.panicky"},
		{"zero Standard", &retry.Standard{}, nil, "a zero *retry.Standard"},
		{"zero Adaptive", &retry.Adaptive{}, nil, "a zero *retry.Adaptive"},
		{"nil option", s, []awsretry.Option{nil}, "awsretry.Option = nil"},
		{"nil classifier", s, []awsretry.Option{awsretry.WithClassifier(nil)}, "awsretry.WithClassifier = nil"},
		{"nil scope func", s, []awsretry.Option{awsretry.WithScopeFunc(nil)}, "awsretry.WithScopeFunc = nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := awsretry.New(tt.strategy, tt.opts...)
			assert.Nil(t, r)
			assert.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)

			_, err = config.LoadDefaultConfig(t.Context(), awsretry.WithStrategy(tt.strategy, tt.opts...))
			assert.ErrorIs(t, err, retry.ErrInvalidConfig)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestWithoutMiddleware checks that a Retryer installed without
// AddMiddleware fails each call with a clear error instead of mixing the
// state of concurrent calls, and that a nil or zero Retryer does the same.
func TestWithoutMiddleware(t *testing.T) {
	s, err := retry.NewStandard()
	require.NoError(t, err)
	r, err := awsretry.New(s)
	require.NoError(t, err)
	fake := newFake(func(string) []reply { return nil })
	client := newClient(t, fake, "", config.WithRetryer(func() aws.Retryer { return r }))
	err = get(t.Context(), client, "k")
	assert.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.ErrorContains(t, err, "awsretry.AddMiddleware")
	assert.Empty(t, fake.seen("k"), "nothing sent")

	for _, r := range []*awsretry.Retryer{nil, {}} {
		_, err := r.GetAttemptToken(t.Context())
		assert.ErrorIs(t, err, retry.ErrInvalidConfig)
		_, err = r.GetRetryToken(t.Context(), errors.New("x"))
		assert.ErrorIs(t, err, retry.ErrInvalidConfig)
		assert.False(t, r.IsErrorRetryable(errors.New("x")))
		assert.Zero(t, r.MaxAttempts())
	}
}

// TestByHand installs a Retryer on one client by hand, with AddMiddleware
// given twice, and checks that the calls retry.
func TestByHand(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	r, err := awsretry.New(s)
	require.NoError(t, err)
	fake := newFake(func(string) []reply { return []reply{internal} })
	client := newClient(t, fake, "")
	err = get(t.Context(), client, "k", func(o *dynamodb.Options) {
		o.Retryer = r
		o.APIOptions = append(o.APIOptions, awsretry.AddMiddleware, awsretry.AddMiddleware)
	})
	require.NoError(t, err)
	assert.Equal(t, headers(2, retry.DefaultMaxAttempts), fake.seen("k"))
}

// TestAttemptLimit checks that the strategy's attempt limit is the one
// that applies, and the one the amz-sdk-request header reports, whatever
// AWS_MAX_ATTEMPTS says; and that a lower limit set on a client stops its
// calls sooner, with the strategy told once of each call's end.
func TestAttemptLimit(t *testing.T) {
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	var ev events
	// The quota alone: the retry budget would refuse the second call's
	// retry once the first has given up.
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithMaxAttempts(5), retry.WithRetryBudget(0), ev.hook())
	require.NoError(t, err)
	fake := newFake(func(string) []reply { return []reply{internal, internal, internal, internal, internal} })
	client := newClient(t, fake, "", awsretry.WithStrategy(s))
	err = get(t.Context(), client, "k")
	var max *sdkretry.MaxAttemptsError
	require.ErrorAs(t, err, &max)
	assert.Equal(t, headers(5, 5), fake.seen("k"))
	assert.Equal(t, 1, ev.count(retry.EventGiveUp))
	full := float64(retry.DefaultMaxCapacity)
	assert.Equal(t, full-4*retry.DefaultRetryCost, available(t, s))

	// The client's limit: the strategy, which would allow more, is told
	// that the error is not retryable, and refunds the last retry.
	err = get(t.Context(), client, "j", func(o *dynamodb.Options) { o.RetryMaxAttempts = 2 })
	require.ErrorAs(t, err, &max)
	assert.Equal(t, headers(2, 2), fake.seen("j"))
	assert.Equal(t, 2, ev.count(retry.EventGiveUp))
	assert.Equal(t, full-4*retry.DefaultRetryCost, available(t, s))
}

// opaque hides every method of a strategy but those of the contract.
type opaque struct{ retry.RetryStrategy }

// TestContractOnly checks a strategy that offers the contract's three
// methods and nothing else: no attempt limit for the SDK (so the header
// has no max) and no ReleaseToken.
func TestContractOnly(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	fake := newFake(func(string) []reply { return []reply{throttling, throttling, throttling} })
	err = get(t.Context(), newClient(t, fake, "", awsretry.WithStrategy(opaque{s})), "k")
	assert.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded, "the strategy's refusal, joined")
	var api smithy.APIError
	require.ErrorAs(t, err, &api)
	assert.Equal(t, "ThrottlingException", api.ErrorCode())
	assert.Equal(t, []string{"attempt=1", "attempt=2", "attempt=3"}, fake.seen("k"))
}

// TestOptions checks WithClassifier and WithScopeFunc.
func TestOptions(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	// Retry a ValidationException, which is not retryable by default.
	classify := func(err error) retry.Classification {
		var api smithy.APIError
		if errors.As(err, &api) && api.ErrorCode() == "ValidationException" {
			return retry.Classification{Safety: retry.SafetyYes}
		}
		return awsretry.Classify(err)
	}
	var scopes []string
	scopeOf := func(ctx context.Context) string {
		scopes = append(scopes, awsretry.ServiceScope(ctx))
		return "mine"
	}
	fake := newFake(func(string) []reply { return []reply{validation} })
	client := newClient(t, fake, "", awsretry.WithStrategy(s, awsretry.WithClassifier(classify), awsretry.WithScopeFunc(scopeOf)))
	require.NoError(t, get(t.Context(), client, "k"))
	assert.Len(t, fake.seen("k"), 2)
	assert.Equal(t, []string{scope}, scopes, "called once per call")
	_, found := s.Stats("mine")
	assert.True(t, found)
	_, found = s.Stats(scope)
	assert.False(t, found)
}

// TestSDKWrapper checks that the SDK's wrapper that retries more error
// codes works around a Retryer: the strategy retries what the SDK decided
// to retry.
func TestSDKWrapper(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	fake := newFake(func(string) []reply { return []reply{validation} })
	client := newClient(t, fake, "", awsretry.WithStrategy(s))
	require.NoError(t, get(t.Context(), client, "k", func(o *dynamodb.Options) {
		o.Retryer = sdkretry.AddWithErrorCodes(o.Retryer, "ValidationException")
	}))
	assert.Equal(t, headers(2, retry.DefaultMaxAttempts), fake.seen("k"))
}

// TestOutOfOrder calls a Retryer, inside an operation stack with the
// per-call middleware, in orders the SDK's retry middleware never uses,
// and checks that each is refused with an error wrapping
// retry.ErrInvalidToken.
func TestOutOfOrder(t *testing.T) {
	s, err := retry.NewStandard()
	require.NoError(t, err)
	r, err := awsretry.New(s)
	require.NoError(t, err)
	other, err := awsretry.New(s)
	require.NoError(t, err)
	tests := map[string]func(ctx context.Context) error{
		"retry token first": func(ctx context.Context) error {
			_, err := r.GetRetryToken(ctx, errors.New("x"))
			return err
		},
		"two attempts at once": func(ctx context.Context) error {
			if _, err := r.GetAttemptToken(ctx); err != nil {
				return fmt.Errorf("first attempt refused: %w", err)
			}
			_, err := r.GetAttemptToken(ctx)
			return err
		},
		"retry token after a success": func(ctx context.Context) error {
			release, err := r.GetAttemptToken(ctx)
			if err != nil {
				return fmt.Errorf("first attempt refused: %w", err)
			}
			_ = release(nil)
			_, err = r.GetRetryToken(ctx, errors.New("x"))
			return err
		},
		"two retryers in one call": func(ctx context.Context) error {
			if _, err := r.GetAttemptToken(ctx); err != nil {
				return fmt.Errorf("first attempt refused: %w", err)
			}
			_, err := other.GetAttemptToken(ctx)
			return err
		},
	}
	for name, probe := range tests {
		t.Run(name, func(t *testing.T) {
			stack := middleware.NewStack("op", smithyhttp.NewStackRequest)
			require.NoError(t, awsretry.AddMiddleware(stack))
			h := middleware.DecorateHandler(middleware.HandlerFunc(func(ctx context.Context, _ any) (any, middleware.Metadata, error) {
				return nil, middleware.Metadata{}, probe(ctx)
			}), stack)
			_, _, err := h.Handle(t.Context(), nil)
			assert.ErrorIs(t, err, retry.ErrInvalidToken)
			assert.ErrorContains(t, err, "out of order")
		})
	}
}

type outerKey struct{}

// TestNestedCall makes a call from inside another call's attempt, with
// the outer call's context, as the SDK does for endpoint discovery, and
// checks that each call keeps its own state; and that an inner call whose
// client lacks the middleware fails instead of taking the outer call's.
func TestNestedCall(t *testing.T) {
	for _, withMiddleware := range []bool{true, false} {
		t.Run(fmt.Sprintf("inner call with middleware: %v", withMiddleware), func(t *testing.T) {
			s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
			require.NoError(t, err)
			r, err := awsretry.New(s)
			require.NoError(t, err)
			fake := newFake(func(key string) []reply { return []reply{internal} })
			var once sync.Once
			var inner *dynamodb.Client
			var innerErr error
			probe := middleware.FinalizeMiddlewareFunc("probe", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if ctx.Value(outerKey{}) != nil {
					once.Do(func() { innerErr = get(context.WithValue(ctx, outerKey{}, nil), inner, "inner") })
				}
				return next.HandleFinalize(ctx, in)
			})
			inner = newClient(t, fake, "", config.WithRetryer(func() aws.Retryer { return r }))
			if withMiddleware {
				inner = newClient(t, fake, "", config.WithRetryer(func() aws.Retryer { return r }),
					config.WithAPIOptions([]func(*middleware.Stack) error{awsretry.AddMiddleware}))
			}
			outer := newClient(t, fake, "", config.WithRetryer(func() aws.Retryer { return r }),
				config.WithAPIOptions([]func(*middleware.Stack) error{
					awsretry.AddMiddleware,
					func(stack *middleware.Stack) error { return stack.Finalize.Insert(probe, "Retry", middleware.After) },
				}))

			require.NoError(t, get(context.WithValue(t.Context(), outerKey{}, true), outer, "outer"))
			assert.Equal(t, headers(2, retry.DefaultMaxAttempts), fake.seen("outer"))
			if withMiddleware {
				require.NoError(t, innerErr)
				assert.Equal(t, headers(2, retry.DefaultMaxAttempts), fake.seen("inner"))
			} else {
				assert.ErrorIs(t, innerErr, retry.ErrInvalidConfig)
				assert.Empty(t, fake.seen("inner"))
			}
		})
	}
}

// cancelOnRetry is a Standard that cancels the call's context as soon as
// it grants a retry, so that the SDK never makes the attempt.
type cancelOnRetry struct {
	*retry.Standard
	cancel context.CancelFunc
}

func (c cancelOnRetry) RefreshRetryToken(ctx context.Context, tok retry.RetryToken, err error) (retry.RetryToken, error) {
	next, err := c.Standard.RefreshRetryToken(ctx, tok, err)
	c.cancel()
	return next, err
}

// TestUnusedRetryToken checks that a retry token whose attempt the SDK
// never makes is given back.
func TestUnusedRetryToken(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	fake := newFake(func(string) []reply { return []reply{internal} })
	client := newClient(t, fake, "", awsretry.WithStrategy(cancelOnRetry{s, cancel}))
	err = get(ctx, client, "k")
	assert.ErrorIs(t, err, context.Canceled)
	assert.Len(t, fake.seen("k"), 1)
	assert.Equal(t, float64(retry.DefaultMaxCapacity), available(t, s), "the retry's cost given back")
}

// TestDoWithSDKRetries checks what the README says of retry.Do around SDK
// calls: with the SDK's retries left on, each attempt of retry.Do makes
// three requests, nine in all; switched off, one each.
func TestDoWithSDKRetries(t *testing.T) {
	for _, tt := range []struct {
		name     string
		opts     []func(*config.LoadOptions) error
		requests int
	}{
		{"left on", nil, 9},
		{"switched off", []func(*config.LoadOptions) error{config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} })}, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := retry.NewStandard(retry.WithClassifier(awsretry.Classify))
				require.NoError(t, err)
				fake := newFake(func(string) []reply {
					return []reply{unavailable, unavailable, unavailable, unavailable, unavailable, unavailable, unavailable, unavailable, unavailable}
				})
				client := newClient(t, fake, "", tt.opts...)
				err = retry.Run(t.Context(), func(ctx context.Context) error { return get(ctx, client, "k") }, retry.WithStrategy(s))
				assert.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
				assert.Len(t, fake.seen("k"), tt.requests)
			})
		})
	}
}

// The classifier runs once per failed attempt, although the SDK asks about
// each failure twice (IsErrorRetryable, then GetRetryToken), and once for
// the failure that ends a call.
func TestClassifierRunsOncePerFailure(t *testing.T) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	var calls atomic.Int64
	classify := func(err error) retry.Classification {
		calls.Add(1)
		return awsretry.Classify(err)
	}
	fake := newFake(func(key string) []reply {
		if key == "bad" {
			return []reply{unavailable, validation}
		}
		return []reply{unavailable, unavailable}
	})
	client := newClient(t, fake, "", awsretry.WithStrategy(s, awsretry.WithClassifier(classify)))
	require.NoError(t, get(t.Context(), client, "k")) // fail, fail, ok
	assert.Len(t, fake.seen("k"), 3)
	assert.Equal(t, int64(2), calls.Load(), "two failed attempts, one classification each")

	calls.Store(0)
	require.Error(t, get(t.Context(), client, "bad")) // fail (retried), fail (not retryable)
	assert.Len(t, fake.seen("bad"), 2)
	assert.Equal(t, int64(2), calls.Load())
}
