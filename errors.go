package retry

import (
	"errors"
	"fmt"
)

// Sentinel errors. Errors returned by this package wrap them, so callers
// test for them with [errors.Is].
var (
	// ErrMaxAttemptsExceeded means the strategy refused a retry because the
	// operation already made its maximum number of attempts.
	ErrMaxAttemptsExceeded = errors.New("retry: max attempts exceeded")

	// ErrRetryQuotaExceeded means the strategy refused a retry because its
	// retry quota (the shared token bucket) lacked the capacity for it.
	ErrRetryQuotaExceeded = errors.New("retry: retry quota exceeded")

	// ErrNotRetryable means the strategy refused a retry because the error
	// is not safe to retry, or because not enough is known to call it safe.
	ErrNotRetryable = errors.New("retry: error is not retryable")

	// ErrInvalidToken means a strategy was handed a token it did not issue,
	// or one that was already refreshed or recorded.
	ErrInvalidToken = errors.New("retry: invalid retry token")

	// ErrRateLimited means a fail-fast client-side rate limiter had no send
	// token available.
	ErrRateLimited = errors.New("retry: client-side rate limit exceeded")

	// ErrInvalidConfig is wrapped by every configuration error. The message
	// names the option at fault and its valid range.
	ErrInvalidConfig = errors.New("retry: invalid configuration")

	// ErrDeadlineTooSoon means the caller's context deadline would pass
	// before the next attempt could start, so the loop stopped early instead
	// of sleeping into a deadline it could not meet.
	ErrDeadlineTooSoon = errors.New("retry: context deadline too soon for next attempt")

	// ErrRetryAfterTooLong means the strategy refused a retry because the
	// service asked it to wait longer than its ceiling (see
	// WithMaxRetryAfter), rather than wait that long.
	ErrRetryAfterTooLong = errors.New("retry: retry-after hint too long")
)

// configError reports a bad value for the named option. valid describes
// the accepted range, for example "1 or more" or "[0, 1]".
func configError(option string, got any, valid string) error {
	return fmt.Errorf("%w: %s = %v, want %s", ErrInvalidConfig, option, got, valid)
}
