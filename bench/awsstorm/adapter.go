// Package awsstorm runs the retryers of the AWS SDK for Go v2
// (github.com/aws/aws-sdk-go-v2/aws/retry) through retrykit's retry-storm
// simulation (internal/storm), so that its table compares retrykit with the
// SDK on the same work, on the same virtual clock.
//
// Strategy presents an aws.RetryerV2 as a retry.RetryStrategy, calling the
// retryer in the order the SDK's retry middleware does. The SDK's standard
// retryer reads no clock, so it runs on virtual time through its public
// API; its backoff's random source, which the API does not let one seed,
// is replaced by JitterBackoff, the same formula on a seeded source. The
// adaptive retryer reads the wall clock and sleeps for real; RunAdaptive
// runs it on virtual time by redirecting the SDK's clock and sleep hooks
// (see virtual.go), and RunRealtime runs it, and retrykit's adaptive mode,
// against an in-process server on the real clock.
package awsstorm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/internal/storm"
)

var _ storm.Stepper = (*Strategy)(nil)

// Strategy presents an aws-sdk-go-v2 retryer as a storm.Stepper, the
// non-blocking strategy the simulation drives. It calls the retryer as the
// SDK's retry middleware does in
// its default (legacy) mode (aws/retry/middleware.go, Attempt.HandleFinalize
// and handleAttempt, v1.47.7):
//
//   - before each attempt, GetAttemptToken (in Admit, which the caller asks
//     right before it sends, as the middleware asks right before the
//     attempt);
//   - after a successful attempt, the release func of the last
//     GetRetryToken, then that of the attempt token, each with nil
//     (RecordSuccess);
//   - after a failed attempt, the same two release funcs with the error,
//     then IsErrorRetryable, the MaxAttempts check, GetRetryToken and
//     RetryDelay(attempt, err), in that order (PlanRetryToken).
//
// ReleaseToken gives nothing back: when the middleware abandons a request
// during a retry's sleep (its context ended), it drops the retry token
// without releasing it, so the retry's cost is not given back, and neither
// is it here.
//
// Errors reach the retryer through the func given to NewStrategy, which
// turns the caller's errors into what the SDK would see; SDKError does it
// for errors that carry an HTTP status. A Strategy is for one caller at a
// time per token, as the simulation uses it; the retryer may be shared.
type Strategy struct {
	r           aws.RetryerV2
	maxAttempts int // read once per request by the middleware; constant for the SDK's retryers
	toSDK       func(error) error
}

// NewStrategy returns a Strategy that drives r, showing it the errors of
// failed attempts as toSDK returns them (nil: as they are).
func NewStrategy(r aws.RetryerV2, toSDK func(error) error) *Strategy {
	if toSDK == nil {
		toSDK = func(err error) error { return err }
	}
	return &Strategy{r: r, maxAttempts: r.MaxAttempts(), toSDK: toSDK}
}

// Token is the retry.RetryToken of a Strategy: the attempt it admits and
// the release funcs the SDK's middleware would hold for it.
type Token struct {
	owner          *Strategy
	attempt        int               // the attempt this token admits, from 1
	delay          time.Duration     // RetryDelay's answer; 0 for the first attempt
	releaseRetry   func(error) error // the release func of the GetRetryToken that issued it; a no-op for the first attempt
	releaseAttempt func(error) error // the attempt token's release func, once Admit got one
	used           bool
}

// Delay returns the RetryDelay the SDK gave for the attempt.
func (t *Token) Delay() time.Duration { return t.delay }

// RetryCount returns the attempt's number minus one.
func (t *Token) RetryCount() int { return t.attempt - 1 }

// ErrInvalidToken is returned for a token that a Strategy did not issue or
// that was already used.
var ErrInvalidToken = errors.New("awsstorm: invalid token")

func (s *Strategy) claim(rt retry.RetryToken) (*Token, error) {
	t, ok := rt.(*Token)
	switch {
	case !ok || t == nil || t.owner != s:
		return nil, fmt.Errorf("%w: %T was not issued by this strategy", ErrInvalidToken, rt)
	case t.used:
		return nil, fmt.Errorf("%w: token was already used", ErrInvalidToken)
	}
	t.used = true
	return t, nil
}

func nopRelease(error) error { return nil }

// PlanInitialToken returns the token of the first attempt. The SDK
// takes nothing before the first attempt but its attempt token, which
// Admit takes; scope is ignored (an SDK retryer has one quota).
func (s *Strategy) PlanInitialToken(string) (retry.RetryToken, error) {
	return &Token{owner: s, attempt: 1, releaseRetry: nopRelease}, nil
}

// ReleaseToken uses the token up and gives nothing back, as the
// middleware drops a retry token whose attempt it abandons.
func (s *Strategy) ReleaseToken(rt retry.RetryToken) error {
	_, err := s.claim(rt)
	return err
}

// Admit takes the SDK's attempt token, right before the attempt, as the
// middleware does. A retryer whose GetAttemptToken would sleep (the
// adaptive one, while RunAdaptive redirects its sleeps) has Admit return
// the sleep's duration instead: the caller waits it and asks again, and
// the retryer tries again, as it does after its sleep.
func (s *Strategy) Admit(rt retry.RetryToken) (time.Duration, error) {
	t, ok := rt.(*Token)
	if !ok || t == nil || t.owner != s || t.used {
		return 0, fmt.Errorf("%w: %T", ErrInvalidToken, rt)
	}
	if t.releaseAttempt != nil {
		return 0, nil
	}
	release, err := s.r.GetAttemptToken(context.Background())
	if err != nil {
		if w, ok := errors.AsType[*sleepRequest](err); ok {
			return max(w.d, 1), nil // a zero wait would never let virtual time move
		}
		return 0, fmt.Errorf("failed to get retry Send token, %w", err)
	}
	t.releaseAttempt = release
	return 0, nil
}

// RecordSuccess releases the retry token and the attempt token with nil:
// the retry's cost comes back, and the standard retryer adds its
// NoRetryIncrement; the adaptive retryer's attempt token records a
// non-throttled response.
func (s *Strategy) RecordSuccess(rt retry.RetryToken) error {
	t, err := s.claim(rt)
	if err != nil {
		return err
	}
	_ = t.releaseRetry(nil)
	if t.releaseAttempt != nil {
		_ = t.releaseAttempt(nil)
	}
	return nil
}

// PlanRetryToken does what the middleware does after a failed attempt:
// release both tokens with the error, then IsErrorRetryable, MaxAttempts,
// GetRetryToken and RetryDelay. Its errors are the middleware's; it never
// asks to wait before giving up.
func (s *Strategy) PlanRetryToken(rt retry.RetryToken, attemptErr error) (retry.RetryToken, time.Duration, error) {
	t, err := s.claim(rt)
	if err != nil {
		return nil, 0, err
	}
	opErr := s.toSDK(attemptErr)
	_ = t.releaseRetry(opErr)
	if t.releaseAttempt != nil {
		_ = t.releaseAttempt(opErr)
	}
	if !s.r.IsErrorRetryable(opErr) {
		return nil, 0, opErr
	}
	if s.maxAttempts > 0 && t.attempt >= s.maxAttempts {
		return nil, 0, &awsretry.MaxAttemptsError{Attempt: t.attempt, Err: opErr}
	}
	release, err := s.r.GetRetryToken(context.Background(), opErr)
	if err != nil {
		return nil, 0, errors.Join(opErr, err)
	}
	d, err := s.r.RetryDelay(t.attempt, opErr)
	if err != nil {
		return nil, 0, err // the middleware drops release too
	}
	return &Token{owner: s, attempt: t.attempt + 1, delay: d, releaseRetry: release}, d, nil
}

// The error responses the SDK would make of the simulated server's
// answers: an API error with a code, inside the HTTP response error that
// carries the status, as the SDK's deserializers return them.
var (
	// ErrThrottling is a 429 with the code "Throttling": the SDK retries it
	// for its code (DefaultThrottleErrorCodes is among DefaultRetryables)
	// and counts it as a throttle. The SDK does not retry a 429 without a
	// throttling code: 429 is not among DefaultRetryableHTTPStatusCodes.
	ErrThrottling = responseError(http.StatusTooManyRequests, "Throttling", smithy.FaultClient)
	// ErrServiceUnavailable is a 503 with the code "ServiceUnavailable":
	// the SDK retries it for its status, as a transient error.
	ErrServiceUnavailable = responseError(http.StatusServiceUnavailable, "ServiceUnavailable", smithy.FaultServer)
)

func responseError(status int, code string, fault smithy.ErrorFault) error {
	return &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}},
			Err:      &smithy.GenericAPIError{Code: code, Message: http.StatusText(status), Fault: fault},
		},
		RequestID: "storm",
	}
}

// SDKError returns what the SDK would see for err: ErrThrottling for an
// error whose HTTPStatusCode() is 429, ErrServiceUnavailable for 503, an
// HTTP response error with no API error code for other statuses, and err
// itself when it has no status.
func SDKError(err error) error {
	var st interface{ HTTPStatusCode() int }
	if !errors.As(err, &st) {
		return err
	}
	switch c := st.HTTPStatusCode(); c {
	case http.StatusTooManyRequests:
		return ErrThrottling
	case http.StatusServiceUnavailable:
		return ErrServiceUnavailable
	default:
		return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: c, Header: http.Header{}}},
			Err:      err,
		}}
	}
}

// JitterBackoff returns the SDK's default backoff in its default (legacy)
// mode, NewExponentialJitterBackoff(maxBackoff) (aws/retry/jitter_backoff.go,
// backoffDelayLegacy), drawing from random instead of crypto/rand, which
// the SDK's API gives no way to replace: before attempt n+1 it waits
// random() * 2^n seconds, and maxBackoff once n exceeds
// int(log2(maxBackoff / 1s)). random must return values in [0, 1).
func JitterBackoff(maxBackoff time.Duration, random func() float64) awsretry.BackoffDelayer {
	maxBackoffAttempts := math.Log2(float64(maxBackoff) / float64(time.Second))
	return awsretry.BackoffDelayerFunc(func(attempt int, _ error) (time.Duration, error) {
		if attempt > int(maxBackoffAttempts) {
			return maxBackoff, nil
		}
		b := random()
		ri := int64(1 << uint64(attempt))
		delaySeconds := b * float64(ri)
		return time.Duration(delaySeconds * float64(time.Second)), nil // timeconv.FloatSecondsDur
	})
}

// ErrRetries2026 is returned when AWS_NEW_RETRIES_2026=true, which switches
// the SDK to retry rules (costs, backoff, middleware order) that Strategy
// and JitterBackoff do not mirror.
var ErrRetries2026 = errors.New("awsstorm: AWS_NEW_RETRIES_2026=true selects the SDK's 2026 retry rules, which this package does not mirror; unset it")

func checkMode() error {
	if os.Getenv("AWS_NEW_RETRIES_2026") == "true" {
		return ErrRetries2026
	}
	return nil
}

// NewStandard returns the SDK's standard retryer with its defaults (3
// attempts, a 500-token retry quota, 5 per retry, 10 per timeout retry, 1
// back per successful attempt), but JitterBackoff on random for its
// backoff.
func NewStandard(random func() float64) (*awsretry.Standard, error) {
	if err := checkMode(); err != nil {
		return nil, err
	}
	return awsretry.NewStandard(seeded(random)), nil
}

func seeded(random func() float64) func(*awsretry.StandardOptions) {
	return func(o *awsretry.StandardOptions) { o.Backoff = JitterBackoff(o.MaxBackoff, random) }
}
