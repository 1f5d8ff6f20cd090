package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// Safety says whether an error may be retried.
type Safety int

const (
	// SafetyMaybe means there is not enough information to tell. It is the
	// zero value. Strategies in this package do not retry it.
	SafetyMaybe Safety = iota
	// SafetyYes means a retry is allowed (not promised: the strategy still
	// applies its attempt limit and retry quota).
	SafetyYes
	// SafetyNo means the error must not be retried.
	SafetyNo
)

// String returns "maybe", "yes" or "no".
func (s Safety) String() string {
	switch s {
	case SafetyMaybe:
		return "maybe"
	case SafetyYes:
		return "yes"
	case SafetyNo:
		return "no"
	}
	return fmt.Sprintf("Safety(%d)", int(s))
}

// Fault says who caused an error.
type Fault int

const (
	// FaultUnknown means the fault could not be told. It is the zero value.
	FaultUnknown Fault = iota
	// FaultClient means the request was wrong (an HTTP 4xx, for example).
	FaultClient
	// FaultServer means the service failed (an HTTP 5xx, for example).
	FaultServer
	// FaultOther means something between the two failed, such as the
	// network.
	FaultOther
)

// String returns "unknown", "client", "server" or "other".
func (f Fault) String() string {
	switch f {
	case FaultUnknown:
		return "unknown"
	case FaultClient:
		return "client"
	case FaultServer:
		return "server"
	case FaultOther:
		return "other"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// RetryInfo is implemented by errors that carry retry information. Classify
// finds it anywhere in an error's chain.
type RetryInfo interface {
	// RetrySafety says whether the failed call may be retried.
	RetrySafety() Safety
	// IsThrottle reports whether the service asked the client to slow down.
	IsThrottle() bool
	// IsTimeout reports whether the attempt timed out.
	IsTimeout() bool
	// RetryAfter is the minimum wait the service asked for; 0 means no
	// hint.
	RetryAfter() time.Duration
}

// ErrorInfo is implemented by errors that know whose fault they are.
// Classify finds it anywhere in an error's chain.
type ErrorInfo interface {
	Fault() Fault
}

// Classification is what a strategy knows about one failed attempt.
type Classification struct {
	Safety     Safety        // may the attempt be retried?
	Throttle   bool          // did the service ask the client to slow down?
	Timeout    bool          // did the attempt time out?
	RetryAfter time.Duration // minimum wait the service asked for; 0 = none
	Fault      Fault         // who caused the failure
}

// Retryable reports whether c.Safety is SafetyYes.
func (c Classification) Retryable() bool { return c.Safety == SafetyYes }

// A Classifier tells a strategy what it needs to know about an error. It
// must be safe for concurrent use. Classify is the default.
type Classifier func(err error) Classification

// Classify is the default Classifier. A strategy does not retry SafetyMaybe,
// so Classify resolves as much as it can, looking at the whole error chain
// (through Unwrap() error and Unwrap() []error) in this order:
//
//  1. RetryInfo: the first non-maybe safety found decides; throttle and
//     timeout flags from any RetryInfo count; the first non-zero RetryAfter
//     is the hint. The marking helpers (Transient, Permanent, Throttled,
//     TimedOut, WithRetryAfter) provide it.
//  2. ErrorInfo: the first fault found; a server fault is retried and a
//     client fault is not, unless RetryInfo already decided.
//  3. Cancellation: context.Canceled and context.DeadlineExceeded are never
//     retried. They belong to the caller; a per-attempt timeout set with
//     WithAttemptTimeout is marked with TimedOut and so is retried.
//  4. Service error codes, through an ErrorCode() string method (as the
//     errors of aws-sdk-go-v2 and smithy-go have): the throttling codes of
//     the AWS SDKs (Throttling, ThrottlingException, SlowDown, ...) are
//     retried as throttles, and RequestTimeout and RequestTimeoutException
//     as transient errors.
//  5. HTTP status codes, through an HTTPStatusCode() int method: 429 and 509
//     are throttles; 500, 502, 503 and 504 are transient; 408 is a timeout;
//     any other 4xx is a client fault and any other 5xx a server fault, and
//     neither is retried.
//  6. The network: TLS certificate errors are not retried; a DNS "no such
//     host" is not retried but a temporary or timed-out DNS failure is;
//     connection refused, reset and aborted, broken pipes and unexpected
//     EOFs are retried; any error with a Timeout() bool method that reports
//     true is retried as a timeout.
//
// What none of these recognise stays SafetyMaybe, and is not retried.
func Classify(err error) Classification {
	var c Classification
	if err == nil {
		return c
	}

	walk(err, func(e error) {
		if ri, ok := e.(RetryInfo); ok {
			if c.Safety == SafetyMaybe {
				c.Safety = ri.RetrySafety()
			}
			c.Throttle = c.Throttle || ri.IsThrottle()
			c.Timeout = c.Timeout || ri.IsTimeout()
			if c.RetryAfter == 0 {
				c.RetryAfter = max(ri.RetryAfter(), 0)
			}
		}
		if ei, ok := e.(ErrorInfo); ok && c.Fault == FaultUnknown {
			c.Fault = ei.Fault()
		}
	})
	if c.Safety == SafetyMaybe {
		switch c.Fault {
		case FaultServer:
			c.Safety = SafetyYes
		case FaultClient:
			c.Safety = SafetyNo
		}
	}
	if c.Safety != SafetyMaybe {
		return c
	}

	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		c.Safety = SafetyNo
		return c
	}
	if !classifyCode(err, &c) && !classifyStatus(err, &c) {
		classifyNetwork(err, &c)
	}
	return c
}

// walk calls visit for err and every error in its chain, depth first, in
// the order errors.As searches.
func walk(err error, visit func(error)) {
	for err != nil {
		visit(err)
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e, visit)
			}
			return
		default:
			return
		}
	}
}

// throttlingCodes are the service error codes the AWS SDKs treat as
// throttling, whatever the HTTP status.
var throttlingCodes = map[string]bool{
	"Throttling":                             true,
	"ThrottlingException":                    true,
	"ThrottledException":                     true,
	"RequestThrottledException":              true,
	"TooManyRequestsException":               true,
	"ProvisionedThroughputExceededException": true,
	"TransactionInProgressException":         true,
	"RequestLimitExceeded":                   true,
	"BandwidthLimitExceeded":                 true,
	"LimitExceededException":                 true,
	"RequestThrottled":                       true,
	"SlowDown":                               true,
	"PriorRequestNotComplete":                true,
	"EC2ThrottledException":                  true,
}

// transientCodes are the service error codes the AWS SDKs treat as
// transient.
var transientCodes = map[string]bool{
	"RequestTimeout":          true,
	"RequestTimeoutException": true,
}

// IsThrottlingCode reports whether code is one of the service error codes
// the AWS SDKs treat as throttling.
func IsThrottlingCode(code string) bool { return throttlingCodes[code] }

// IsTransientCode reports whether code is one of the service error codes
// the AWS SDKs treat as transient.
func IsTransientCode(code string) bool { return transientCodes[code] }

func classifyCode(err error, c *Classification) bool {
	var coded interface{ ErrorCode() string }
	if !errors.As(err, &coded) {
		return false
	}
	switch code := coded.ErrorCode(); {
	case throttlingCodes[code]:
		c.Safety, c.Throttle = SafetyYes, true
	case transientCodes[code]:
		c.Safety = SafetyYes
	default:
		return false
	}
	return true
}

// IsTransientStatus reports whether an HTTP status code is one the AWS SDKs
// retry as a transient server error: 500, 502, 503 or 504.
func IsTransientStatus(code int) bool {
	switch code {
	case 500, 502, 503, 504:
		return true
	}
	return false
}

// IsThrottlingStatus reports whether an HTTP status code means throttling:
// 429 or 509.
func IsThrottlingStatus(code int) bool { return code == 429 || code == 509 }

// ClassifyStatus classifies an HTTP status code by the rules Classify
// applies to errors with an HTTPStatusCode() int method. A 1xx, 2xx or 3xx
// code is not a failure and gets the zero Classification.
func ClassifyStatus(code int) Classification {
	var c Classification
	switch {
	case IsThrottlingStatus(code):
		c.Safety, c.Throttle, c.Fault = SafetyYes, true, FaultServer
	case IsTransientStatus(code):
		c.Safety, c.Fault = SafetyYes, FaultServer
	case code == 408:
		c.Safety, c.Timeout, c.Fault = SafetyYes, true, FaultClient
	case code >= 400 && code < 500:
		c.Safety, c.Fault = SafetyNo, FaultClient
	case code >= 500 && code < 600:
		c.Safety, c.Fault = SafetyNo, FaultServer
	}
	return c
}

func classifyStatus(err error, c *Classification) bool {
	var st interface{ HTTPStatusCode() int }
	if !errors.As(err, &st) {
		return false
	}
	s := ClassifyStatus(st.HTTPStatusCode())
	if s.Safety == SafetyMaybe {
		return false
	}
	c.Safety = s.Safety
	c.Throttle = c.Throttle || s.Throttle
	c.Timeout = c.Timeout || s.Timeout
	if c.Fault == FaultUnknown {
		c.Fault = s.Fault
	}
	return true
}

func classifyNetwork(err error, c *Classification) bool {
	var (
		unknownCA x509.UnknownAuthorityError // crypto/x509 returns it as a value
		caPointer *x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		verify    *tls.CertificateVerificationError
		dns       *net.DNSError
	)
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &caPointer), errors.As(err, &invalid),
		errors.As(err, &hostname), errors.As(err, &verify):
		c.Safety, c.Fault = SafetyNo, FaultOther
		return true
	case errors.As(err, &dns):
		c.Fault = FaultOther
		switch {
		case dns.IsTimeout:
			c.Safety, c.Timeout = SafetyYes, true
		case dns.IsTemporary:
			c.Safety = SafetyYes
		default:
			c.Safety = SafetyNo
		}
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF):
		c.Safety, c.Fault = SafetyYes, FaultOther
		return true
	}
	var to interface{ Timeout() bool }
	if errors.As(err, &to) && to.Timeout() {
		c.Safety, c.Timeout, c.Fault = SafetyYes, true, FaultOther
		return true
	}
	return false
}

// marked is an error wrapped by one of the marking helpers. It carries
// RetryInfo and unwraps to the original error.
type marked struct {
	err        error
	safety     Safety
	throttle   bool
	timeout    bool
	retryAfter time.Duration
}

func (m *marked) Error() string             { return m.err.Error() }
func (m *marked) Unwrap() error             { return m.err }
func (m *marked) RetrySafety() Safety       { return m.safety }
func (m *marked) IsThrottle() bool          { return m.throttle }
func (m *marked) IsTimeout() bool           { return m.timeout }
func (m *marked) RetryAfter() time.Duration { return m.retryAfter }

// Permanent marks err as not retryable. The result unwraps to err; a nil
// err stays nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, safety: SafetyNo}
}

// Transient marks err as safe to retry. The result unwraps to err; a nil
// err stays nil.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, safety: SafetyYes}
}

// Throttled marks err as a throttling error, safe to retry. Retries after a
// throttle may cost a different amount of retry quota, and an adaptive
// strategy slows its sending. The result unwraps to err; a nil err stays
// nil.
func Throttled(err error) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, safety: SafetyYes, throttle: true}
}

// TimedOut marks err as a timeout, safe to retry. Retries after a timeout
// may cost more retry quota. The result unwraps to err; a nil err stays nil.
func TimedOut(err error) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, safety: SafetyYes, timeout: true}
}

// WithRetryAfter attaches the minimum wait d the service asked for before a
// retry. It does not change whether err is retryable. A nil err stays nil;
// d <= 0 means no hint.
func WithRetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &marked{err: err, retryAfter: max(d, 0)}
}
