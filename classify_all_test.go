package retry_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

func TestClassifyAll(t *testing.T) {
	plain := errors.New("boom")
	yes := retry.Classification{Safety: retry.SafetyYes}
	no := retry.Classification{Safety: retry.SafetyNo}
	tests := []struct {
		name string
		err  error
		want retry.Classification
	}{
		{"nil", nil, retry.Classification{}},
		{"errors.New", plain, yes},
		{"wrapped", fmt.Errorf("get item: %w", plain), yes},
		{"joined", errors.Join(plain, errors.New("cleanup failed")), yes},
		{"permanent", retry.Permanent(plain), no},
		{"permanent under a wrapper", fmt.Errorf("get item: %w", retry.Permanent(plain)), no},
		{"permanent under a retry-after hint", retry.WithRetryAfter(retry.Permanent(plain), time.Second),
			retry.Classification{Safety: retry.SafetyNo, RetryAfter: time.Second}},
		{"canceled", context.Canceled, no},
		{"deadline", fmt.Errorf("get item: %w", context.DeadlineExceeded), no},
		{"own timeout marked", retry.TimedOut(context.DeadlineExceeded), retry.Classification{Safety: retry.SafetyYes, Timeout: true}},
		{"marked transient", retry.Transient(context.Canceled), yes},
		{"throttled", retry.Throttled(plain), retry.Classification{Safety: retry.SafetyYes, Throttle: true}},
		{"retry-after hint kept", retry.WithRetryAfter(plain, 2*time.Second),
			retry.Classification{Safety: retry.SafetyYes, RetryAfter: 2 * time.Second}},
		{"HTTP 503", &statusError{status: 503}, retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultServer}},
		{"HTTP 429", &statusError{status: 429}, retry.Classification{Safety: retry.SafetyYes, Throttle: true, Fault: retry.FaultServer}},
		{"HTTP 404", &statusError{status: 404}, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},
		{"HTTP 200 is no status to judge by", &statusError{status: 200}, yes},
		{"throttling code", &statusError{status: 400, code: "ThrottlingException"}, retry.Classification{Safety: retry.SafetyYes, Throttle: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, retry.ClassifyAll(tt.err))
		})
	}
}

// ClassifyAll changes nothing that Classify decided, and only SafetyMaybe
// into SafetyYes.
func TestClassifyAllAgreesWithClassify(t *testing.T) {
	errs := []error{
		nil, errors.New("x"), retry.Permanent(errors.New("x")), retry.Throttled(errors.New("x")),
		context.Canceled, &statusError{status: 500}, &statusError{status: 403},
		retry.WithRetryAfter(errors.New("x"), time.Minute),
	}
	for _, err := range errs {
		c, all := retry.Classify(err), retry.ClassifyAll(err)
		if c.Safety == retry.SafetyMaybe && err != nil {
			c.Safety = retry.SafetyYes
		}
		assert.Equal(t, c, all, "%v", err)
	}
}

func TestClassifyAllInDo(t *testing.T) {
	s, err := retry.NewStandard(retry.WithClassifier(retry.ClassifyAll), retry.WithBackoff(retry.NoBackoff))
	require.NoError(t, err)
	boom := errors.New("boom")

	calls := 0
	_, err = retry.Do(t.Context(), func(context.Context) (int, error) { calls++; return 0, boom }, retry.WithStrategy(s))
	require.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, retry.DefaultMaxAttempts, calls)

	calls = 0
	_, err = retry.Do(t.Context(), func(context.Context) (int, error) { calls++; return 0, retry.Permanent(boom) }, retry.WithStrategy(s))
	require.ErrorIs(t, err, retry.ErrNotRetryable)
	assert.Equal(t, 1, calls)

	// The caller's cancellation stops the retries, whatever the classifier.
	ctx, cancel := context.WithCancel(t.Context())
	calls = 0
	_, err = retry.Do(ctx, func(ctx context.Context) (int, error) {
		calls++
		cancel()
		return 0, ctx.Err()
	}, retry.WithStrategy(s))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, calls)
}

// Retry every error, as other retry libraries do, except the ones marked
// Permanent and the caller's cancellation.
func ExampleClassifyAll() {
	strategy, err := retry.NewStandard(
		retry.WithClassifier(retry.ClassifyAll),
		retry.WithBackoff(retry.NoBackoff), // no waiting in this example
	)
	if err != nil {
		panic(err)
	}
	calls := 0
	v, err := retry.Do(context.Background(), func(ctx context.Context) (string, error) {
		calls++
		if calls < 3 {
			return "", errors.New("flaky") // no retry information at all
		}
		return "done", nil
	}, retry.WithStrategy(strategy))
	fmt.Println(v, err, calls)

	_, err = retry.Do(context.Background(), func(ctx context.Context) (string, error) {
		return "", retry.Permanent(errors.New("invalid input"))
	}, retry.WithStrategy(strategy))
	fmt.Println(err)
	// Output:
	// done <nil> 3
	// retry: error is not retryable (after 1 attempt): invalid input
}

// notRetryable is marked as the AWS SDK for Go marks errors.
type notRetryable struct{}

func (notRetryable) Error() string        { return "clock skew" }
func (notRetryable) RetryableError() bool { return false }

func TestClassifyAllKeepsSDKMarks(t *testing.T) {
	assert.Equal(t, retry.SafetyNo, retry.ClassifyAll(fmt.Errorf("sign: %w", notRetryable{})).Safety)
}
