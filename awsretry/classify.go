package awsretry

import (
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdkretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
	"github.com/retrykit/retry"
)

// Classify is a retry.Classifier that classifies the errors of the AWS SDK
// for Go v2 as the SDK's default retryer does, and everything else as
// retry.Classify does. Use it as the classifier of a strategy that wraps
// SDK calls in retry.Do:
//
//	s, err := retry.NewStandard(retry.WithClassifier(awsretry.Classify))
//
// In order:
//
//  1. An error marked with retry.RetryInfo that says whether it is safe to
//     retry (retry.Permanent, retry.Transient, ...) is classified as
//     retry.Classify classifies it: an explicit mark wins. Only its fault
//     may come from step 4.
//  2. Whether to retry: the SDK's default checks decide when they give an
//     answer (aws/retry.DefaultRetryables: a canceled request is not
//     retried; an error with a RetryableError() bool method, such as the
//     SDK's clock-skew error, is retried as that method says; connection
//     errors, HTTP 500, 502, 503 and 504, the SDK's throttling error codes
//     and RequestTimeout(Exception) are retried). When they give none,
//     retry.Classify decides: it also retries HTTP 429 and 509, which the
//     SDK does not, and never retries what it cannot tell.
//  3. Throttle and timeout: set when the SDK's default checks say so
//     (aws/retry.DefaultThrottles, DefaultTimeouts) or retry.Classify does.
//  4. Fault: retry.Classify's, else the HTTP status's (as
//     retry.ClassifyStatus gives it), else the ErrorFault of a
//     smithy.APIError.
//
// An error whose chain does not end within 100 errors (one whose Unwrap
// leads back to itself; see retry.FiniteChain) is classified by
// retry.Classify alone: the SDK's checks would never return on it.
//
// Classify is safe for concurrent use.
func Classify(err error) retry.Classification {
	c := retry.Classify(err)
	if err == nil || !retry.FiniteChain(err) {
		return c // the SDK's checks and errors.As would never return on a chain without end
	}
	if !decided(err) {
		switch sdkRetryables.IsErrorRetryable(err) {
		case aws.TrueTernary:
			c.Safety = retry.SafetyYes
		case aws.FalseTernary:
			c.Safety = retry.SafetyNo
		}
		c.Throttle = c.Throttle || sdkThrottles.IsErrorThrottle(err) == aws.TrueTernary
		c.Timeout = c.Timeout || sdkTimeouts.IsErrorTimeout(err) == aws.TrueTernary
	}
	if c.Fault == retry.FaultUnknown {
		var st interface{ HTTPStatusCode() int }
		if errors.As(err, &st) {
			c.Fault = retry.ClassifyStatus(st.HTTPStatusCode()).Fault
		}
	}
	if c.Fault == retry.FaultUnknown {
		var api smithy.APIError
		if errors.As(err, &api) {
			switch api.ErrorFault() {
			case smithy.FaultClient:
				c.Fault = retry.FaultClient
			case smithy.FaultServer:
				c.Fault = retry.FaultServer
			}
		}
	}
	return c
}

var (
	sdkRetryables = sdkretry.IsErrorRetryables(sdkretry.DefaultRetryables)
	sdkThrottles  = sdkretry.IsErrorThrottles(sdkretry.DefaultThrottles)
	sdkTimeouts   = sdkretry.IsErrorTimeouts(sdkretry.DefaultTimeouts)
)

// decided reports whether some error in err's chain carries a
// retry.RetryInfo that says whether it is safe to retry.
func decided(err error) bool {
	for err != nil {
		if ri, ok := err.(retry.RetryInfo); ok && ri.RetrySafety() != retry.SafetyMaybe {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if decided(e) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// marked is the error a strategy is told about: the SDK's error, with the
// Retryer's classification of it as retry.RetryInfo and retry.ErrorInfo,
// which retry.Classify reads before anything else.
type marked struct {
	err error
	c   retry.Classification
}

func mark(err error, c retry.Classification) error { return &marked{err: err, c: c} }

func (m *marked) Error() string             { return m.err.Error() }
func (m *marked) Unwrap() error             { return m.err }
func (m *marked) RetrySafety() retry.Safety { return m.c.Safety }
func (m *marked) IsThrottle() bool          { return m.c.Throttle }
func (m *marked) IsTimeout() bool           { return m.c.Timeout }
func (m *marked) RetryAfter() time.Duration { return m.c.RetryAfter }
func (m *marked) Fault() retry.Fault        { return m.c.Fault }
