package awsretry

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sdkretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
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
	v := viewOf(err)
	if !v.decided {
		switch sdkRetryables.IsErrorRetryable(err) {
		case aws.TrueTernary:
			c.Safety = retry.SafetyYes
		case aws.FalseTernary:
			c.Safety = retry.SafetyNo
		}
		c.Throttle = c.Throttle || v.throttle()
		c.Timeout = c.Timeout || v.timeout != nil && v.timeout.Timeout()
	}
	if c.Fault == retry.FaultUnknown && v.status != nil {
		c.Fault = retry.ClassifyStatus(v.status.HTTPStatusCode()).Fault
	}
	if c.Fault == retry.FaultUnknown && v.api != nil {
		switch v.api.ErrorFault() {
		case smithy.FaultClient:
			c.Fault = retry.FaultClient
		case smithy.FaultServer:
			c.Fault = retry.FaultServer
		}
	}
	return c
}

var sdkRetryables = sdkretry.IsErrorRetryables(sdkretry.DefaultRetryables)

// view is what Classify reads of an error chain besides the SDK's
// retryables: whether a retry.RetryInfo in it decides, and for each of four
// interfaces, the first error of the chain
// that is one, or whose As method makes one, as errors.As finds it, all
// in one walk. The SDK's default throttle and timeout checks
// (aws/retry.DefaultThrottles, DefaultTimeouts) are each one errors.As:
// of the ErrorCode of the first error that has one, against
// aws/retry.DefaultThrottleErrorCodes; of the first Timeout. Four calls of
// errors.As would walk the chain four times, each step through
// reflection.
type view struct {
	code    interface{ ErrorCode() string }
	timeout interface{ Timeout() bool }
	status  interface{ HTTPStatusCode() int }
	api     smithy.APIError

	// decided: an error of the chain carries a retry.RetryInfo that says
	// whether it is safe to retry.
	decided bool
}

// viewOf returns the view of err, whose chain is finite.
func viewOf(err error) view {
	var v view
	v.walk(err)
	return v
}

// walk fills v from err's chain, in the order errors.As visits it.
func (v *view) walk(err error) {
	for err != nil {
		v.see(err)
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				v.walk(e)
			}
			return
		default:
			return
		}
	}
}

// see notes whether e is a retry.RetryInfo that decides, and sets each
// interface of v not set yet to e, if e is one, or if its
// As method makes one, as errors.As tells for one error of a chain. (Each
// assertion is written out: the compiler caches what each one finds for
// the types it meets, which it does not for an assertion to a type
// parameter.)
func (v *view) see(e error) {
	if ri, ok := e.(retry.RetryInfo); ok && ri.RetrySafety() != retry.SafetyMaybe {
		v.decided = true
	}
	if t, ok := e.(interface{ ErrorCode() string }); ok && v.code == nil {
		v.code = t
	}
	if t, ok := e.(interface{ Timeout() bool }); ok && v.timeout == nil {
		v.timeout = t
	}
	if t, ok := e.(interface{ HTTPStatusCode() int }); ok && v.status == nil {
		v.status = t
	}
	if t, ok := e.(smithy.APIError); ok && v.api == nil {
		v.api = t
	}
	if re, ok := e.(*awshttp.ResponseError); ok && re.ResponseError != nil {
		// Its As method is errors.As on the *smithyhttp.ResponseError it
		// embeds, whose chain is its own: seeing that one error, as the
		// walk goes on down the chain, finds what As would, without a
		// walk of the chain through reflection for each interface.
		v.see(re.ResponseError)
		return
	}
	x, ok := e.(interface{ As(any) bool })
	if !ok {
		return
	}
	if v.code == nil {
		_ = x.As(&v.code)
	}
	if v.timeout == nil {
		_ = x.As(&v.timeout)
	}
	if v.status == nil {
		_ = x.As(&v.status)
	}
	if v.api == nil {
		_ = x.As(&v.api)
	}
}

// throttle reports whether the SDK's default throttle check says that the
// error is a throttle.
func (v *view) throttle() bool {
	if v.code == nil {
		return false
	}
	_, ok := sdkretry.DefaultThrottleErrorCodes[v.code.ErrorCode()]
	return ok
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
