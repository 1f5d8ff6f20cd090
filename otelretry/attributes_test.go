package otelretry_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/otelretry"
)

// codedError is an API error with a service error code, as the AWS SDKs'
// errors are.
type codedError struct{ code string }

func (e codedError) Error() string     { return "api error " + e.code }
func (e codedError) ErrorCode() string { return e.code }

// typedError names its own error.type.
type typedError struct{}

func (typedError) Error() string     { return "typed" }
func (typedError) ErrorType() string { return "quota_exhausted" }

func TestErrorType(t *testing.T) {
	plain := errors.New("boom")
	tests := []struct {
		err  error
		want string
	}{
		{plain, "*errors.errorString"},
		{fmt.Errorf("get: %w", plain), "*errors.errorString"},
		{retry.Transient(fmt.Errorf("get: %w", plain)), "*errors.errorString"},
		{fmt.Errorf("get: %w", retry.Throttled(plain)), "*errors.errorString"},
		{&net.OpError{Op: "dial", Err: plain}, "*net.OpError"},
		{fmt.Errorf("get: %w", statusError(503)), "503"},
		{statusError(200), "github.com/retrykit/retry/otelretry_test.statusError"}, // not an error status
		{codedError{"ThrottlingException"}, "ThrottlingException"},
		{codedError{""}, "github.com/retrykit/retry/otelretry_test.codedError"},
		{fmt.Errorf("%w", typedError{}), "quota_exhausted"},
		{errors.Join(plain, statusError(500)), "500"},
		{errors.Join(plain, errors.New("other")), "*errors.joinError"},
		{context.DeadlineExceeded, "context.deadlineExceededError"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, otelretry.ErrorType(tt.err), "%v", tt.err)
	}
}

func TestGiveUpReason(t *testing.T) {
	tests := []struct {
		reason error
		want   string
	}{
		{retry.ErrNotRetryable, "not_retryable"},
		{fmt.Errorf("%w: not known to be safe to retry", retry.ErrNotRetryable), "not_retryable"},
		{fmt.Errorf("%w: 3 allowed", retry.ErrMaxAttemptsExceeded), "max_attempts"},
		{retry.ErrRetryQuotaExceeded, "quota"},
		{retry.ErrRateLimited, "rate_limited"},
		{fmt.Errorf("%w (waiting 1s): %w", retry.ErrDeadlineTooSoon, context.DeadlineExceeded), "deadline"},
		{context.DeadlineExceeded, "deadline"},
		{fmt.Errorf("%w: %w", context.Canceled, errors.New("shutting down")), "canceled"},
		{retry.ErrInvalidConfig, "invalid_config"},
		{fmt.Errorf("%w: the service asked for 24h", retry.ErrRetryAfterTooLong), "retry_after_too_long"},
		{fmt.Errorf("%w (attempt 1 of 3)", retry.ErrCallerWillRetry), "caller_will_retry"},
		{errors.New("token released"), "_OTHER"},
		{nil, "_OTHER"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, otelretry.GiveUpReason(tt.reason), "%v", tt.reason)
	}
}
