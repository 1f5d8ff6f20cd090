package retry

import (
	"fmt"
	"time"
)

// A Profile is a set of defaults for a strategy: the backoff, the retry
// costs and the retry-after rule. Options given with the profile change
// its settings, whatever their order.
type Profile int

const (
	// ProfileStandard is the AWS SDKs' standard mode as the Smithy
	// reference design describes it: an exponential backoff of 10 ms ×
	// 1.5ⁿ⁻¹ capped at 20 s with full jitter; retries cost 5 tokens, 10
	// after a timeout and 5 after a throttle; a retry-after hint is a
	// minimum delay with no upper limit. It is the default.
	ProfileStandard Profile = iota

	// ProfileLegacy is the AWS SDKs' legacy mode: waits of 2ⁿ⁻¹ × 100 ms
	// before retry n, capped at 20 s, without jitter and without a retry
	// quota (unless WithRetryQuota or a token bucket option adds one).
	ProfileLegacy

	// ProfileAWS2026 is the AWS SDKs' 2026 standard mode (selected there
	// with AWS_NEW_RETRIES_2026=true): an exponential backoff of 50 ms ×
	// 2ⁿ⁻¹ (1 s × 2ⁿ⁻¹ after a throttle) capped at 20 s with full jitter;
	// retries cost 14 tokens, 5 after a throttle; a retry-after hint can
	// lengthen the backoff by at most 5 s.
	ProfileAWS2026
)

// String returns "standard", "legacy" or "aws2026".
func (p Profile) String() string {
	switch p {
	case ProfileStandard:
		return "standard"
	case ProfileLegacy:
		return "legacy"
	case ProfileAWS2026:
		return "aws2026"
	}
	return fmt.Sprintf("Profile(%d)", int(p))
}

// WithProfile selects the strategy's defaults (default ProfileStandard).
// The other options change the profile's settings, whatever their order.
// Valid: ProfileStandard, ProfileLegacy, ProfileAWS2026.
func WithProfile(p Profile) StandardOption {
	return standardOption(func(c *standardConfig) { c.profile = p })
}

// WithRetryAfterLimit bounds how much a service's retry-after hint can
// lengthen a retry's delay: the delay is max(backoff, min(hint, backoff +
// d)). Default: 0, no bound (5 s in ProfileAWS2026). Valid: >= 0.
func WithRetryAfterLimit(d time.Duration) StandardOption {
	return standardOption(func(c *standardConfig) { c.retryAfterLimit = d })
}

// DefaultMaxRetryAfter is the default ceiling on the wait a service's
// retry-after hint can ask for: long enough for the hints services send
// when throttling (a minute at most, as a rule), short enough that a
// misconfigured or hostile "Retry-After: 86400" does not hold a request
// without a deadline for a day.
const DefaultMaxRetryAfter = time.Minute

// WithMaxRetryAfter sets the longest wait a retry-after hint (an HTTP
// Retry-After or x-amz-retry-after header, a gRPC pushback, a
// WithRetryAfter error) may ask for (default DefaultMaxRetryAfter). When a
// hint would make the strategy wait longer than d, it does not wait: it
// refuses the retry at once with an error wrapping ErrRetryAfterTooLong
// that says how long the service asked for, and the caller gets the
// failure (Transport returns the response, hint and all). The ceiling
// applies to the delay after WithRetryAfterLimit, so ProfileAWS2026, whose
// limit keeps hints within backoff + 5 s, never meets it. A caller's
// deadline still applies first (ErrDeadlineTooSoon). Valid: > 0;
// math.MaxInt64 honours any hint.
func WithMaxRetryAfter(d time.Duration) StandardOption {
	return standardOption(func(c *standardConfig) { c.maxRetryAfter = d })
}

// WithLongPolling marks the strategy as serving long-polling operations
// (such as SQS ReceiveMessage), whose callers loop at once on failure:
// when the retry quota refuses a retry, RefreshRetryToken waits the
// backoff before it refuses (PlanRetryToken returns that wait), so an
// empty bucket does not turn the polling loop into a busy loop.
func WithLongPolling(on bool) StandardOption {
	return standardOption(func(c *standardConfig) { c.longPolling = on })
}

// profileConfig returns the defaults of p.
func profileConfig(p Profile) standardConfig {
	c := defaultStandardConfig()
	c.profile = p
	switch p {
	case ProfileLegacy:
		c.backoff = &ExponentialBackoff{initial: 100 * time.Millisecond, scale: 2, max: DefaultMaxBackoff}
		c.quotaOff = true
	case ProfileAWS2026:
		c.backoff = mustBackoff(WithInitialDelay(50*time.Millisecond), WithScaleFactor(2))
		c.throttleBackoff = mustBackoff(WithInitialDelay(time.Second), WithScaleFactor(2))
		c.bucket.retryCost = 14
		c.bucket.timeoutRetryCost = 14
		c.bucket.throttlingRetryCost = 5
		c.retryAfterLimit = 5 * time.Second
	}
	return c
}

// mustBackoff returns an ExponentialBackoff for options known to be valid.
func mustBackoff(opts ...BackoffOption) *ExponentialBackoff {
	b, err := NewExponentialBackoff(opts...)
	if err != nil {
		panic("retry: " + err.Error()) // unreachable: the profiles are valid
	}
	return b
}
