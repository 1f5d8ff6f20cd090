package retry

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	// Fault says who caused the error (see Classify for what each
	// fault means for a retry).
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
// so Classify resolves as much as it can. It looks at the error and its
// chain (through Unwrap() error and Unwrap() []error, depth first, in the
// order errors.Is and errors.As search), and the first of these steps that
// decides, decides:
//
//  1. Retry markers, in chain order: the first RetryInfo, or error with a
//     RetryableError() bool method, that gives a safety decides it.
//     RetryableError is the marker of the AWS SDK for Go (its clock-skew
//     error carries it): true is SafetyYes, false is SafetyNo. The throttle
//     and timeout flags of every RetryInfo count, and the first non-zero
//     RetryAfter is the hint. The marking helpers (Transient, Permanent,
//     Throttled, TimedOut, WithRetryAfter) provide RetryInfo.
//  2. ErrorInfo: the first fault found; a server fault is retried and a
//     client fault is not.
//  3. Cancellation: context.Canceled and context.DeadlineExceeded are never
//     retried. They belong to the caller: the context's own
//     DeadlineExceeded, the error a caller's context returns, anywhere in
//     the chain. An error that only matches it through an Is method is the
//     timeout of one attempt and is retried by step 8: net/http's
//     "timeout awaiting response headers" (http.Transport's
//     ResponseHeaderTimeout) and net's dial and I/O deadlines. Whether the
//     caller's context itself has ended is not Classify's to know: Do,
//     Run, Transport and the strategies' RefreshRetryToken check the
//     context they are given before any retry. A per-attempt timeout set
//     with WithAttemptTimeout is marked with TimedOut and so is retried.
//  4. Service error codes, through an ErrorCode() string method (as the
//     errors of aws-sdk-go-v2 and smithy-go have): the throttling codes of
//     the AWS SDKs (Throttling, ThrottlingException, SlowDown, ...) are
//     retried as throttles, and RequestTimeout and RequestTimeoutException
//     as transient errors.
//  5. HTTP status codes, through an HTTPStatusCode() int method: 429 and 509
//     are throttles; 500, 502, 503 and 504 are transient; 408 is a timeout;
//     any other 4xx is a client fault and any other 5xx a server fault, and
//     neither is retried.
//  6. Errors that no retry can mend: TLS certificate errors, and a DNS
//     failure that is neither temporary nor a timeout ("no such host"), are
//     not retried, even inside the connection failures of step 7.
//  7. Failures to reach the service, or to get its response, which the AWS
//     SDKs retry and which are retried with FaultOther: connection refused,
//     reset and aborted (ECONNREFUSED, ECONNRESET, ECONNABORTED), broken
//     pipes (EPIPE), io.ErrUnexpectedEOF, net.ErrClosed (a connection closed
//     under the request, as when a server resets it during an upload), a
//     temporary or timed-out DNS failure, any dial failure (a *net.OpError
//     whose Op is "dial": nothing was sent), and any error with a
//     ConnectionError() bool method that reports true (as smithy-go's
//     RequestSendError, an error sending the request, does).
//  8. Timeouts: an error anywhere in the chain with a Timeout() bool method
//     that reports true. The attempt is retried, and marked as a timeout
//     (Timeout also marks a failure of step 7 that timed out). Every error
//     of the chain is asked, as *net.OpError and *url.Error look only one
//     level down: a timeout under fmt.Errorf inside them counts.
//
// Temporary() bool is not consulted: net.Error deprecated it because
// "temporary" is not well defined, and the standard library's temporary
// errors that are safe to retry are the timeouts, resets, aborts and
// temporary DNS failures above, or happen while dialling. An error that
// knows it may be retried should say so with RetryInfo, RetryableError or
// ConnectionError. Classify knows nothing of the request: whether a
// request that may have reached the service can be sent again is the
// caller's to decide (Transport retries only idempotent requests).
//
// Classify looks at no more than the first 100 errors of a chain, so that
// an error whose Unwrap leads back to itself, directly or through others,
// cannot keep it from returning. What none of these steps recognise stays
// SafetyMaybe, and is not retried.
func Classify(err error) Classification {
	var c Classification
	if err == nil {
		return c
	}
	var buf [16]error
	errs := appendChain(buf[:0], err)

	for _, e := range errs {
		if m, ok := e.(*marked); ok {
			// The marking helpers' errors, the common case: their
			// RetryInfo read without interface assertions. A *marked is
			// neither a RetryableError nor an ErrorInfo.
			if c.Safety == SafetyMaybe {
				c.Safety = m.safety
			}
			c.Throttle = c.Throttle || m.throttle
			c.Timeout = c.Timeout || m.timeout
			if c.RetryAfter == 0 {
				c.RetryAfter = max(m.retryAfter, 0)
			}
			continue
		}
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
		if r, ok := e.(interface{ RetryableError() bool }); ok && c.Safety == SafetyMaybe {
			c.Safety = SafetyNo
			if r.RetryableError() {
				c.Safety = SafetyYes
			}
		}
		if ei, ok := e.(ErrorInfo); ok && c.Fault == FaultUnknown {
			c.Fault = ei.Fault()
		}
	}
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

	if chainIs(errs, context.Canceled) || chainHolds(errs, context.DeadlineExceeded) {
		c.Safety = SafetyNo
		return c
	}
	if !classifyCode(errs, &c) && !classifyStatus(errs, &c) {
		classifyNetwork(errs, &c)
	}
	return c
}

// maxChain is how many errors of a chain Classify looks at, at most: far
// more than real chains hold, and few enough that a chain that never ends
// costs little.
const maxChain = 100

// FiniteChain reports whether err's chain, through Unwrap() error and
// Unwrap() []error, ends within the first 100 errors, the most Classify
// looks at. errors.Is and errors.As never return on a chain that leads
// back to itself; a Classifier that calls them, or calls code that does
// (status.FromError of gRPC, the AWS SDK's retryables), checks FiniteChain
// first and leaves any other error to Classify, which is bounded. A nil
// err has a finite chain.
func FiniteChain(err error) bool { return chainSize(err, 0) < maxChain }

// chainSize returns n plus the number of errors in err's chain, or
// maxChain if that is more.
func chainSize(err error, n int) int {
	for err != nil && n < maxChain {
		n++
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if n = chainSize(e, n); n >= maxChain {
					break
				}
			}
			return n
		default:
			return n
		}
	}
	return min(n, maxChain)
}

// appendChain appends err and the errors of its chain to dst, in the order
// errors.Is and errors.As visit them, until dst holds maxChain errors.
func appendChain(dst []error, err error) []error {
	for err != nil && len(dst) < maxChain {
		dst = append(dst, err)
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if len(dst) >= maxChain {
					break
				}
				dst = appendChain(dst, e)
			}
			return dst
		default:
			return dst
		}
	}
	return dst
}

// chainIs reports whether an error of errs is target, as errors.Is tells
// for each error of a chain. target must be of a comparable type.
func chainIs(errs []error, target error) bool {
	for _, e := range errs {
		if e == target {
			return true
		}
		if x, ok := e.(interface{ Is(error) bool }); ok && x.Is(target) {
			return true
		}
	}
	return false
}

// chainHolds reports whether target itself is an error of errs, with no
// Is method consulted.
func chainHolds(errs []error, target error) bool {
	for _, e := range errs {
		if e == target {
			return true
		}
	}
	return false
}

// chainAs returns the first error of errs that is a T, as errors.As finds
// it.
func chainAs[T any](errs []error) (T, bool) {
	for _, e := range errs {
		if t, ok := as[T](e); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// chainHas reports whether an error of errs is a T, as chainAs finds it.
func chainHas[T any](errs []error) bool {
	_, ok := chainAs[T](errs)
	return ok
}

// as returns e as a T if it is one, or if it says it can be one with an As
// method, as errors.As tells for each error of a chain.
func as[T any](e error) (T, bool) {
	if t, ok := e.(T); ok {
		return t, true
	}
	if x, ok := e.(interface{ As(any) bool }); ok {
		if p := new(T); x.As(p) {
			return *p, true
		}
	}
	var zero T
	return zero, false
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

func classifyCode(errs []error, c *Classification) bool {
	coded, ok := chainAs[interface{ ErrorCode() string }](errs)
	if !ok {
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

func classifyStatus(errs []error, c *Classification) bool {
	st, ok := chainAs[interface{ HTTPStatusCode() int }](errs)
	if !ok {
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

func classifyNetwork(errs []error, c *Classification) {
	if certificateError(errs) {
		c.Safety, c.Fault = SafetyNo, FaultOther
		return
	}
	if dns, ok := chainAs[*net.DNSError](errs); ok {
		c.Fault = FaultOther
		switch {
		case dns.IsTimeout:
			c.Safety, c.Timeout = SafetyYes, true
		case dns.IsTemporary:
			c.Safety = SafetyYes
		default:
			c.Safety = SafetyNo
		}
		return
	}
	timeout := false
	for _, e := range errs {
		if t, ok := e.(interface{ Timeout() bool }); ok && t.Timeout() {
			timeout = true
			break
		}
	}
	if timeout || connectionFailure(errs) {
		c.Safety, c.Fault = SafetyYes, FaultOther
		c.Timeout = c.Timeout || timeout
	}
}

// certificateError reports whether errs holds a TLS certificate error.
func certificateError(errs []error) bool {
	return chainHas[x509.UnknownAuthorityError](errs) || // crypto/x509 returns it as a value
		chainHas[*x509.UnknownAuthorityError](errs) ||
		chainHas[x509.CertificateInvalidError](errs) ||
		chainHas[x509.HostnameError](errs) ||
		chainHas[*tls.CertificateVerificationError](errs)
}

// connectionErrors are the errors of a failed connection that Classify
// retries wherever they are in a chain.
var connectionErrors = []error{
	syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
	io.ErrUnexpectedEOF, net.ErrClosed,
}

// connectionFailure reports whether errs holds a failure to reach the
// service or to get its response, of the kinds Classify retries.
func connectionFailure(errs []error) bool {
	for _, target := range connectionErrors {
		if chainIs(errs, target) {
			return true
		}
	}
	for _, e := range errs {
		if op, ok := as[*net.OpError](e); ok && op.Op == "dial" {
			return true
		}
		if ce, ok := e.(interface{ ConnectionError() bool }); ok && ce.ConnectionError() {
			return true
		}
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
