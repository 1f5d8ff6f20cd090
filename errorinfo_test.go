package retry_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/retrytest"
)

// infoError is a service error that carries its own RetryInfo.
type infoError struct {
	safety     retry.Safety
	throttle   bool
	timeout    bool
	retryAfter time.Duration
	err        error // optional cause
}

func (e *infoError) Error() string             { return fmt.Sprintf("info error (safety %v)", e.safety) }
func (e *infoError) Unwrap() error             { return e.err }
func (e *infoError) RetrySafety() retry.Safety { return e.safety }
func (e *infoError) IsThrottle() bool          { return e.throttle }
func (e *infoError) IsTimeout() bool           { return e.timeout }
func (e *infoError) RetryAfter() time.Duration { return e.retryAfter }

// faultError is a service error that knows whose fault it is.
type faultError struct{ fault retry.Fault }

func (e *faultError) Error() string      { return "fault error: " + e.fault.String() }
func (e *faultError) Fault() retry.Fault { return e.fault }

// timeoutError is a net.Error, as the net and net/http packages return.
type timeoutError struct{ timeout bool }

func (e timeoutError) Error() string   { return "i/o timeout" }
func (e timeoutError) Timeout() bool   { return e.timeout }
func (e timeoutError) Temporary() bool { return e.timeout }

var _ net.Error = timeoutError{}

// opError is a failed system call on a connection, as a dialer or a read
// returns it.
func opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
}

// urlError wraps err as net/http's Client does.
func urlError(err error) error {
	return &url.Error{Op: "Get", URL: "https://example.com/", Err: err}
}

var errBase = errors.New("base failure")

func TestClassify(t *testing.T) {
	const hint = 2 * time.Second
	var (
		yes       = retry.Classification{Safety: retry.SafetyYes}
		no        = retry.Classification{Safety: retry.SafetyNo}
		throttle  = retry.Classification{Safety: retry.SafetyYes, Throttle: true}
		timeout   = retry.Classification{Safety: retry.SafetyYes, Timeout: true}
		server    = retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultServer}
		network   = retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultOther}
		netTime   = retry.Classification{Safety: retry.SafetyYes, Timeout: true, Fault: retry.FaultOther}
		netNo     = retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultOther}
		maybeHint = retry.Classification{RetryAfter: hint}
	)
	tests := []struct {
		name string
		err  error
		want retry.Classification
	}{
		{"nil", nil, retry.Classification{}},
		{"plain error", errBase, retry.Classification{}},
		{"wrapped plain error", fmt.Errorf("op: %w", errBase), retry.Classification{}},
		{"io.EOF", io.EOF, retry.Classification{}},

		// Markers.
		{"Transient", retry.Transient(errBase), yes},
		{"Permanent", retry.Permanent(errBase), no},
		{"Throttled", retry.Throttled(errBase), throttle},
		{"TimedOut", retry.TimedOut(errBase), timeout},
		{"WithRetryAfter", retry.WithRetryAfter(errBase, hint), maybeHint},
		{"WithRetryAfter zero", retry.WithRetryAfter(errBase, 0), retry.Classification{}},
		{"WithRetryAfter negative", retry.WithRetryAfter(errBase, -hint), retry.Classification{}},
		{"WithRetryAfter(Throttled)", retry.WithRetryAfter(retry.Throttled(errBase), hint),
			retry.Classification{Safety: retry.SafetyYes, Throttle: true, RetryAfter: hint}},
		{"Throttled(WithRetryAfter)", retry.Throttled(retry.WithRetryAfter(errBase, hint)),
			retry.Classification{Safety: retry.SafetyYes, Throttle: true, RetryAfter: hint}},
		{"TimedOut(Throttled) combines flags", retry.TimedOut(retry.Throttled(errBase)),
			retry.Classification{Safety: retry.SafetyYes, Throttle: true, Timeout: true}},
		{"outermost retry-after wins", retry.WithRetryAfter(retry.WithRetryAfter(errBase, time.Second), hint),
			retry.Classification{RetryAfter: hint}},
		{"zero retry-after does not hide an inner one", retry.WithRetryAfter(retry.WithRetryAfter(errBase, hint), 0), maybeHint},
		{"Permanent(Transient): outer safety wins", retry.Permanent(retry.Transient(errBase)), no},
		{"Transient(Permanent): outer safety wins", retry.Transient(retry.Permanent(errBase)), yes},
		{"Permanent(Throttled) keeps the throttle flag", retry.Permanent(retry.Throttled(errBase)),
			retry.Classification{Safety: retry.SafetyNo, Throttle: true}},
		{"WithRetryAfter(Permanent)", retry.WithRetryAfter(retry.Permanent(errBase), hint),
			retry.Classification{Safety: retry.SafetyNo, RetryAfter: hint}},
		{"marker wrapped by fmt.Errorf", fmt.Errorf("op: %w", retry.Throttled(errBase)), throttle},
		{"marker beats the status", retry.Permanent(&statusError{status: 503}), no},
		{"marker beats the status (client)", retry.Transient(&statusError{status: 400}), yes},
		{"marker beats cancellation", retry.TimedOut(context.DeadlineExceeded), timeout},
		{"retry-after kept by status", retry.WithRetryAfter(&statusError{status: 503}, hint),
			retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultServer, RetryAfter: hint}},
		{"retry-after kept by throttling status", retry.WithRetryAfter(&statusError{status: 429}, hint),
			retry.Classification{Safety: retry.SafetyYes, Throttle: true, Fault: retry.FaultServer, RetryAfter: hint}},
		{"retry-after kept by code", retry.WithRetryAfter(&statusError{status: 400, code: "SlowDown"}, hint),
			retry.Classification{Safety: retry.SafetyYes, Throttle: true, RetryAfter: hint}},
		{"retry-after kept by network", retry.WithRetryAfter(opError("dial", syscall.ECONNREFUSED), hint),
			retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultOther, RetryAfter: hint}},
		{"retry-after kept by cancellation", retry.WithRetryAfter(context.Canceled, hint),
			retry.Classification{Safety: retry.SafetyNo, RetryAfter: hint}},

		// Custom RetryInfo anywhere in the chain.
		{"RetryInfo", &infoError{safety: retry.SafetyYes, throttle: true, retryAfter: hint},
			retry.Classification{Safety: retry.SafetyYes, Throttle: true, RetryAfter: hint}},
		{"RetryInfo no", &infoError{safety: retry.SafetyNo}, no},
		{"RetryInfo timeout", &infoError{safety: retry.SafetyYes, timeout: true}, timeout},
		{"RetryInfo negative retry-after", &infoError{safety: retry.SafetyYes, retryAfter: -hint}, yes},
		{"RetryInfo under fmt.Errorf", fmt.Errorf("a: %w", fmt.Errorf("b: %w", &infoError{safety: retry.SafetyYes})), yes},
		{"RetryInfo in errors.Join", errors.Join(errBase, &infoError{safety: retry.SafetyNo}), no},
		{"RetryInfo in multi-%w", fmt.Errorf("%w; %w", errBase, &infoError{safety: retry.SafetyYes, timeout: true}), timeout},
		{"errors.Join: first non-maybe safety wins", errors.Join(retry.Transient(errBase), retry.Permanent(errBase)), yes},
		{"errors.Join: first non-maybe safety wins (reversed)", errors.Join(retry.Permanent(errBase), retry.Transient(errBase)), no},
		{"errors.Join: maybe does not decide", errors.Join(&infoError{}, retry.Permanent(errBase)), no},
		{"errors.Join: flags and hint from any branch",
			errors.Join(retry.WithRetryAfter(errBase, hint), retry.TimedOut(errBase), retry.Throttled(errBase)),
			retry.Classification{Safety: retry.SafetyYes, Throttle: true, Timeout: true, RetryAfter: hint}},
		{"errors.Join nested in fmt.Errorf", fmt.Errorf("op: %w", errors.Join(errBase, retry.Throttled(errBase))), throttle},
		{"RetryInfo under a marker", retry.WithRetryAfter(&infoError{safety: retry.SafetyYes}, hint),
			retry.Classification{Safety: retry.SafetyYes, RetryAfter: hint}},
		{"RetryInfo deeper than a marker", retry.Permanent(&infoError{safety: retry.SafetyYes, throttle: true}),
			retry.Classification{Safety: retry.SafetyNo, Throttle: true}},

		// ErrorInfo.
		{"server fault", &faultError{retry.FaultServer}, server},
		{"client fault", &faultError{retry.FaultClient}, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},
		{"other fault", &faultError{retry.FaultOther}, retry.Classification{Fault: retry.FaultOther}},
		{"unknown fault", &faultError{retry.FaultUnknown}, retry.Classification{}},
		{"server fault wrapped", fmt.Errorf("op: %w", &faultError{retry.FaultServer}), server},
		{"first fault wins", errors.Join(&faultError{retry.FaultClient}, &faultError{retry.FaultServer}),
			retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},
		{"RetryInfo beats a client fault", retry.Transient(&faultError{retry.FaultClient}),
			retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultClient}},
		{"RetryInfo beats a server fault", retry.Permanent(&faultError{retry.FaultServer}),
			retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultServer}},
		{"fault beats the status", errors.Join(&faultError{retry.FaultClient}, &statusError{status: 503}),
			retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},

		// Cancellation belongs to the caller.
		{"context.Canceled", context.Canceled, no},
		{"context.DeadlineExceeded", context.DeadlineExceeded, no},
		{"wrapped Canceled", fmt.Errorf("op: %w", context.Canceled), no},
		{"Canceled in *url.Error", urlError(context.Canceled), no},
		{"DeadlineExceeded in *url.Error", urlError(context.DeadlineExceeded), no},
		{"DeadlineExceeded joined with a 503", errors.Join(context.DeadlineExceeded, &statusError{status: 503}), no},

		// Service error codes.
		{"RequestTimeout code", &statusError{status: 400, code: "RequestTimeout"}, yes},
		{"RequestTimeoutException code", &statusError{status: 400, code: "RequestTimeoutException"}, yes},
		{"throttling code on 400", &statusError{status: 400, code: "ThrottlingException"}, throttle},
		{"throttling code on 503", &statusError{status: 503, code: "SlowDown"}, throttle},
		{"unknown code falls back to status", &statusError{status: 503, code: "InternalError"}, server},
		{"unknown code on 400", &statusError{status: 400, code: "ValidationException"},
			retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},
		{"codes are case-sensitive", &statusError{status: 400, code: "throttling"},
			retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},

		// HTTP statuses through the chain.
		{"503 wrapped", fmt.Errorf("op: %w", &statusError{status: 503}), server},
		{"503 in *url.Error", urlError(&statusError{status: 503}), server},
		{"200", &statusError{status: 200}, retry.Classification{}},

		// The network.
		{"connection refused", opError("dial", syscall.ECONNREFUSED), network},
		{"connection reset", opError("read", syscall.ECONNRESET), network},
		{"connection aborted", opError("read", syscall.ECONNABORTED), network},
		{"broken pipe", opError("write", syscall.EPIPE), network},
		{"connection refused in *url.Error", urlError(opError("dial", syscall.ECONNREFUSED)), network},
		{"bare errno", syscall.ECONNRESET, network},
		{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF, network},
		{"io.ErrUnexpectedEOF in *url.Error", urlError(io.ErrUnexpectedEOF), network},
		{"net.Error timeout", timeoutError{timeout: true}, netTime},
		{"net.Error timeout in *url.Error", urlError(timeoutError{timeout: true}), netTime},
		{"net.Error timeout in *net.OpError", &net.OpError{Op: "read", Net: "tcp", Err: timeoutError{timeout: true}}, netTime},
		{"os.ErrDeadlineExceeded", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), netTime},
		{"net.Error without timeout", timeoutError{}, retry.Classification{}},
		{"DNS not found", &net.DNSError{Err: "no such host", Name: "nx.example", IsNotFound: true}, netNo},
		{"DNS temporary", &net.DNSError{Err: "server misbehaving", Name: "example.com", IsTemporary: true}, network},
		{"DNS timeout", &net.DNSError{Err: "i/o timeout", Name: "example.com", IsTimeout: true}, netTime},
		{"DNS not found in *net.OpError", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Name: "nx.example", IsNotFound: true}}, netNo},
		{"DNS temporary in *url.Error", urlError(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Name: "example.com", IsTemporary: true}}), network},
		{"*x509.UnknownAuthorityError", &x509.UnknownAuthorityError{}, netNo},
		{"tls.CertificateVerificationError", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, netNo},
		{"tls.CertificateVerificationError in *url.Error", urlError(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), netNo},
		{"x509.HostnameError", x509.HostnameError{Certificate: &x509.Certificate{}, Host: "example.com"}, netNo},
		{"x509.CertificateInvalidError", x509.CertificateInvalidError{Reason: x509.NotAuthorizedToSign}, netNo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, retry.Classify(tt.err))
		})
	}
}

// TestClassifyUnknownAuthorityValue: crypto/x509 returns its
// UnknownAuthorityError by value (x509.Certificate.Verify, and so any
// tls.Config.VerifyPeerCertificate or VerifyConnection callback that
// returns Verify's error unwrapped).
func TestClassifyUnknownAuthorityValue(t *testing.T) {
	want := retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultOther}
	for _, err := range []error{
		x509.UnknownAuthorityError{},
		fmt.Errorf("verify: %w", x509.UnknownAuthorityError{}),
		urlError(x509.UnknownAuthorityError{}),
	} {
		assert.Equal(t, want, retry.Classify(err), "%T", err)
	}
}

// TestClassifyStatusKeepsRetryInfoFlags: "throttle and timeout flags from
// any RetryInfo count" and "the first fault found" (ErrorInfo) must survive
// the HTTP status step, as they survive the code, cancellation and network
// steps.
func TestClassifyStatusKeepsRetryInfoFlags(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want retry.Classification
	}{
		{"undecided timeout over 503",
			&infoError{timeout: true, err: &statusError{status: 503}},
			retry.Classification{Safety: retry.SafetyYes, Timeout: true, Fault: retry.FaultServer}},
		{"undecided throttle over 400",
			&infoError{throttle: true, err: &statusError{status: 400}},
			retry.Classification{Safety: retry.SafetyNo, Throttle: true, Fault: retry.FaultClient}},
		{"other fault over 503",
			errors.Join(&faultError{retry.FaultOther}, &statusError{status: 503}),
			retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultOther}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, retry.Classify(tt.err))
		})
	}
}

// The flags of an undecided RetryInfo do survive the steps that merge.
func TestClassifyUndecidedRetryInfoFlags(t *testing.T) {
	got := retry.Classify(&infoError{timeout: true, err: opError("dial", syscall.ECONNREFUSED)})
	assert.Equal(t, retry.Classification{Safety: retry.SafetyYes, Timeout: true, Fault: retry.FaultOther}, got)
	got = retry.Classify(&infoError{throttle: true})
	assert.Equal(t, retry.Classification{Throttle: true}, got, "undecided stays maybe but reports the throttle")
	got = retry.Classify(&infoError{timeout: true, err: &statusError{status: 400, code: "RequestTimeout"}})
	assert.Equal(t, retry.Classification{Safety: retry.SafetyYes, Timeout: true}, got)
}

func TestMarkers(t *testing.T) {
	markers := []struct {
		name string
		mark func(error) error
	}{
		{"Permanent", retry.Permanent},
		{"Transient", retry.Transient},
		{"Throttled", retry.Throttled},
		{"TimedOut", retry.TimedOut},
		{"WithRetryAfter", func(err error) error { return retry.WithRetryAfter(err, time.Second) }},
	}
	for _, m := range markers {
		t.Run(m.name, func(t *testing.T) {
			assert.NoError(t, m.mark(nil), "nil stays nil")

			base := &statusError{status: 503, code: "X"}
			err := m.mark(base)
			require.Error(t, err)
			assert.Equal(t, base.Error(), err.Error(), "message unchanged")
			assert.Same(t, base, errors.Unwrap(err))
			assert.ErrorIs(t, err, base)

			var se *statusError
			require.ErrorAs(t, err, &se)
			assert.Same(t, base, se)

			var ri retry.RetryInfo
			require.ErrorAs(t, err, &ri, "markers carry RetryInfo")

			// Through another marker and fmt.Errorf.
			deep := fmt.Errorf("op: %w", retry.WithRetryAfter(m.mark(context.Canceled), time.Second))
			assert.ErrorIs(t, deep, context.Canceled)
		})
	}
}

func TestIsThrottlingCode(t *testing.T) {
	// The AWS SDKs' throttling codes, as SEEDS.md lists them.
	codes := []string{
		"Throttling", "ThrottlingException", "ThrottledException",
		"RequestThrottledException", "TooManyRequestsException",
		"ProvisionedThroughputExceededException", "TransactionInProgressException",
		"RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException",
		"RequestThrottled", "SlowDown", "PriorRequestNotComplete", "EC2ThrottledException",
	}
	want := retry.Classification{Safety: retry.SafetyYes, Throttle: true}
	for _, code := range codes {
		assert.True(t, retry.IsThrottlingCode(code), code)
		assert.False(t, retry.IsTransientCode(code), code)
		for _, status := range []int{0, 200, 400, 403, 500, 503} {
			assert.Equal(t, want, retry.Classify(&statusError{status: status, code: code}), "%s on %d", code, status)
		}
	}
	for _, code := range []string{"", "throttling", "THROTTLING", "Throttling ", "RequestTimeout", "InternalServerError", "NotAThrottlingError"} {
		assert.False(t, retry.IsThrottlingCode(code), "%q", code)
	}
}

func TestIsTransientCode(t *testing.T) {
	for _, code := range []string{"RequestTimeout", "RequestTimeoutException"} {
		assert.True(t, retry.IsTransientCode(code), code)
		assert.False(t, retry.IsThrottlingCode(code), code)
		assert.Equal(t, retry.Classification{Safety: retry.SafetyYes}, retry.Classify(&statusError{status: 400, code: code}), code)
	}
	for _, code := range []string{"", "requesttimeout", "Timeout", "InternalError", "Throttling"} {
		assert.False(t, retry.IsTransientCode(code), "%q", code)
	}
}

func TestClassifyStatus(t *testing.T) {
	tests := []struct {
		status int
		want   retry.Classification
	}{
		{500, retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultServer}},
		{502, retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultServer}},
		{503, retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultServer}},
		{504, retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultServer}},
		{408, retry.Classification{Safety: retry.SafetyYes, Timeout: true, Fault: retry.FaultClient}},
		{429, retry.Classification{Safety: retry.SafetyYes, Throttle: true, Fault: retry.FaultServer}},
		{509, retry.Classification{Safety: retry.SafetyYes, Throttle: true, Fault: retry.FaultServer}},
		{400, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},
		{401, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},
		{403, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},
		{404, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},
		{409, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},
		{499, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}},
		{501, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultServer}},
		{505, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultServer}},
		{599, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultServer}},
		{100, retry.Classification{}},
		{200, retry.Classification{}},
		{204, retry.Classification{}},
		{301, retry.Classification{}},
		{304, retry.Classification{}},
		{0, retry.Classification{}},
		{-1, retry.Classification{}},
		{600, retry.Classification{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			assert.Equal(t, tt.want, retry.ClassifyStatus(tt.status))
			assert.Equal(t, tt.want, retry.Classify(&statusError{status: tt.status}))
		})
	}
}

// Classify of an error with only a status agrees with ClassifyStatus for
// every code, and the predicates agree with both.
func TestClassifyStatusAgrees(t *testing.T) {
	for status := -1; status <= 700; status++ {
		c := retry.ClassifyStatus(status)
		require.Equal(t, c, retry.Classify(&statusError{status: status}), status)
		require.Equal(t, retry.IsThrottlingStatus(status), c.Throttle, status)
		require.Equal(t, retry.IsTransientStatus(status), c.Retryable() && !c.Throttle && !c.Timeout, status)
		require.Equal(t, status >= 400 && status < 600, c.Safety != retry.SafetyMaybe, status)
	}
}

func TestIsTransientAndThrottlingStatus(t *testing.T) {
	for _, s := range []int{500, 502, 503, 504} {
		assert.True(t, retry.IsTransientStatus(s), s)
		assert.False(t, retry.IsThrottlingStatus(s), s)
	}
	for _, s := range []int{429, 509} {
		assert.True(t, retry.IsThrottlingStatus(s), s)
		assert.False(t, retry.IsTransientStatus(s), s)
	}
	for _, s := range []int{0, 200, 400, 403, 408, 501, 505} {
		assert.False(t, retry.IsTransientStatus(s), s)
		assert.False(t, retry.IsThrottlingStatus(s), s)
	}
}

// botocoreError builds the error a Go client would see for one row of the
// botocore classification tables.
func botocoreError(t *testing.T, status *int, raw json.RawMessage) error {
	t.Helper()
	var exc struct{ Exception string }
	if json.Unmarshal(raw, &exc) == nil && exc.Exception != "" {
		require.Nil(t, status, "exception rows have no status")
		switch exc.Exception {
		case "ConnectionError":
			return urlError(opError("dial", syscall.ECONNREFUSED))
		case "HTTPClientError":
			return urlError(io.ErrUnexpectedEOF)
		}
		t.Fatalf("unknown exception %q", exc.Exception)
	}
	var code *string
	require.NoError(t, json.Unmarshal(raw, &code))
	require.NotNil(t, status)
	e := &statusError{status: *status}
	if code != nil {
		e.code = *code
	}
	return e
}

type botocoreRow struct {
	StatusCode *int            `json:"status_code"`
	Error      json.RawMessage `json:"error"`
	Retryable  bool            `json:"retryable"`
}

func TestClassifyBotocoreVectors(t *testing.T) {
	var file struct {
		Throttled struct{ Cases []botocoreRow } `json:"throttled_checker_ThrottledRetryableChecker"`
		Transient struct{ Cases []botocoreRow } `json:"transient_checker_TransientRetryableChecker"`
	}
	loadVectors(t, "botocore_classification.json", &file)
	require.NotEmpty(t, file.Throttled.Cases)
	require.NotEmpty(t, file.Transient.Cases)

	t.Run("throttled", func(t *testing.T) {
		for i, row := range file.Throttled.Cases {
			err := botocoreError(t, row.StatusCode, row.Error)
			c := retry.Classify(err)
			assert.Equal(t, row.Retryable, c.Throttle, "row %d: %v", i, err)
			if row.Retryable {
				assert.True(t, c.Retryable(), "row %d: %v", i, err)
			}
		}
	})
	t.Run("transient", func(t *testing.T) {
		for i, row := range file.Transient.Cases {
			err := botocoreError(t, row.StatusCode, row.Error)
			c := retry.Classify(err)
			if row.Retryable {
				assert.True(t, c.Retryable(), "row %d: %v", i, err)
			} else {
				// botocore's transient checker leaves throttles to its
				// throttling checker; Classify reports both.
				assert.True(t, !c.Retryable() || c.Throttle, "row %d: %v: %+v", i, err, c)
			}
		}
	})
}

func TestSafetyString(t *testing.T) {
	tests := []struct {
		s    retry.Safety
		want string
	}{
		{retry.SafetyMaybe, "maybe"},
		{retry.SafetyYes, "yes"},
		{retry.SafetyNo, "no"},
		{retry.Safety(3), "Safety(3)"},
		{retry.Safety(-1), "Safety(-1)"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.s.String())
		assert.Equal(t, tt.want, fmt.Sprint(tt.s))
	}
}

func TestFaultString(t *testing.T) {
	tests := []struct {
		f    retry.Fault
		want string
	}{
		{retry.FaultUnknown, "unknown"},
		{retry.FaultClient, "client"},
		{retry.FaultServer, "server"},
		{retry.FaultOther, "other"},
		{retry.Fault(4), "Fault(4)"},
		{retry.Fault(-1), "Fault(-1)"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.f.String())
		assert.Equal(t, tt.want, fmt.Sprint(tt.f))
	}
}

func TestClassificationRetryable(t *testing.T) {
	assert.False(t, retry.Classification{}.Retryable())
	assert.True(t, retry.Classification{Safety: retry.SafetyYes}.Retryable())
	assert.False(t, retry.Classification{Safety: retry.SafetyNo}.Retryable())
	assert.False(t, retry.Classification{Safety: retry.Safety(7)}.Retryable())
	assert.False(t, retry.Classification{Throttle: true, Timeout: true, Fault: retry.FaultServer}.Retryable(),
		"only Safety decides")
	assert.True(t, retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultClient}.Retryable())
}

// connectionError reports whether it is a failure to send the request, as
// smithy-go's RequestSendError does.
type connectionError struct {
	conn bool
	err  error
}

func (e *connectionError) Error() string         { return fmt.Sprintf("send request: %v", e.err) }
func (e *connectionError) Unwrap() error         { return e.err }
func (e *connectionError) ConnectionError() bool { return e.conn }

// retryableError carries the AWS SDK for Go's own retry marker.
type retryableError struct {
	retryable bool
	err       error
}

func (e *retryableError) Error() string        { return fmt.Sprintf("retryable %t: %v", e.retryable, e.err) }
func (e *retryableError) Unwrap() error        { return e.err }
func (e *retryableError) RetryableError() bool { return e.retryable }

// temporaryError reports Temporary() true and nothing else.
type temporaryError struct{}

func (temporaryError) Error() string   { return "temporary" }
func (temporaryError) Timeout() bool   { return false }
func (temporaryError) Temporary() bool { return true }

// TestClassifyConnectionFailures: the failures that happen before or while
// a request is sent, which the AWS SDK for Go retries, are safe to retry.
func TestClassifyConnectionFailures(t *testing.T) {
	var (
		network = retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultOther}
		netTime = retry.Classification{Safety: retry.SafetyYes, Timeout: true, Fault: retry.FaultOther}
		netNo   = retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultOther}
		no      = retry.Classification{Safety: retry.SafetyNo}
		yes     = retry.Classification{Safety: retry.SafetyYes}
		maybe   = retry.Classification{}
		dialErr = func(err error) error { return &net.OpError{Op: "dial", Net: "tcp", Err: err} }
		readErr = func(err error) error { return &net.OpError{Op: "read", Net: "tcp", Err: err} }
		timeout = timeoutError{timeout: true}
		certErr = &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}
		notHost = &net.DNSError{Err: "no such host", Name: "nx.example", IsNotFound: true}
	)
	tests := []struct {
		name string
		err  error
		want retry.Classification
	}{
		// net.ErrClosed: the connection was closed under the request, as
		// when the server resets it during an upload.
		{"net.ErrClosed", net.ErrClosed, network},
		{"net.ErrClosed in a write", &net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed}, network},
		{"net.ErrClosed in *url.Error", urlError(fmt.Errorf("upload: %w", readErr(net.ErrClosed))), network},

		// Any dial failure: nothing was sent.
		{"dial: host unreachable", dialErr(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), network},
		{"dial: network unreachable in *url.Error", urlError(dialErr(os.NewSyscallError("connect", syscall.ENETUNREACH))), network},
		{"dial: any error", dialErr(errBase), network},
		{"dial: timeout", dialErr(timeout), netTime},
		{"dial: DNS no such host is still not retried", dialErr(notHost), netNo},
		{"dial: canceled is still not retried", dialErr(context.Canceled), no},
		{"read: host unreachable is not a dial", readErr(os.NewSyscallError("read", syscall.EHOSTUNREACH)), maybe},

		// ConnectionError() bool, as smithy-go's RequestSendError has.
		{"ConnectionError true", &connectionError{conn: true, err: errBase}, network},
		{"ConnectionError true, wrapped", fmt.Errorf("op: %w", &connectionError{conn: true, err: errBase}), network},
		{"ConnectionError false", &connectionError{err: errBase}, maybe},
		{"ConnectionError false over true", &connectionError{err: &connectionError{conn: true, err: errBase}}, network},
		{"ConnectionError over a certificate error", &connectionError{conn: true, err: certErr}, netNo},
		{"ConnectionError over cancellation", &connectionError{conn: true, err: context.Canceled}, no},
		{"ConnectionError over a timeout", &connectionError{conn: true, err: timeout}, netTime},

		// RetryableError() bool, the AWS SDK for Go's own marker: true
		// retries, false forbids, whatever else the chain holds.
		{"RetryableError true", &retryableError{retryable: true, err: errBase}, yes},
		{"RetryableError false", &retryableError{err: errBase}, no},
		{"RetryableError true, wrapped", fmt.Errorf("op: %w", &retryableError{retryable: true}), yes},
		{"RetryableError true over a 400", &retryableError{retryable: true, err: &statusError{status: 400}}, yes},
		{"RetryableError false over a 503", &retryableError{err: &statusError{status: 503}}, no},
		{"RetryableError false over a reset", &retryableError{err: opError("read", syscall.ECONNRESET)}, no},
		{"RetryableError true over cancellation", &retryableError{retryable: true, err: context.Canceled}, yes},
		{"outer RetryInfo beats inner RetryableError", retry.Permanent(&retryableError{retryable: true}), no},
		{"outer RetryableError beats inner RetryInfo", &retryableError{err: retry.Transient(errBase)}, no},
		{"RetryableError keeps RetryInfo flags", retry.WithRetryAfter(retry.Throttled(&retryableError{}), time.Second),
			retry.Classification{Safety: retry.SafetyYes, Throttle: true, RetryAfter: time.Second}},

		// A timeout anywhere in the chain, not only at the first Timeout
		// method: *net.OpError and *url.Error look only one level down.
		{"timeout under fmt.Errorf in *net.OpError", readErr(fmt.Errorf("%w", timeout)), netTime},
		{"timeout under fmt.Errorf in *url.Error", urlError(fmt.Errorf("read body: %w", timeout)), netTime},
		{"timeout in errors.Join", errors.Join(timeoutError{}, timeout), netTime},

		// Temporary() is not consulted.
		{"Temporary only", temporaryError{}, maybe},
		{"Temporary in *net.OpError", readErr(temporaryError{}), maybe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, retry.Classify(tt.err))
		})
	}
}

// unwrapCounter counts the Unwrap calls of the looping errors below. Past
// give, they stop looping, so that a Classify that follows the loop fails
// the test instead of hanging it.
type unwrapCounter struct {
	calls, give int
}

func (c *unwrapCounter) next(e error) error {
	c.calls++
	if c.calls > c.give {
		return nil
	}
	return e
}

// selfError unwraps to itself.
type selfError struct{ c *unwrapCounter }

func (e *selfError) Error() string { return "self" }
func (e *selfError) Unwrap() error { return e.c.next(e) }

// cycleError unwraps to next, which may lead back to it.
type cycleError struct {
	c    *unwrapCounter
	next error
}

func (e *cycleError) Error() string { return "cycle" }
func (e *cycleError) Unwrap() error { return e.c.next(e.next) }

// forkError unwraps to itself twice: a tree that doubles at each level.
type forkError struct{ c *unwrapCounter }

func (e *forkError) Error() string { return "fork" }
func (e *forkError) Unwrap() []error {
	if e.c.next(e) == nil {
		return nil
	}
	return []error{e, e}
}

// TestClassifyEndlessChains: Classify looks at a bounded part of a chain
// that never ends, and returns.
func TestClassifyEndlessChains(t *testing.T) {
	const give = 1_000_000 // far more than any bound Classify may use
	tests := []struct {
		name string
		err  func(c *unwrapCounter) error
		want retry.Classification
	}{
		{"self", func(c *unwrapCounter) error { return &selfError{c} }, retry.Classification{}},
		{"self under a marker", func(c *unwrapCounter) error { return retry.Throttled(&selfError{c}) },
			retry.Classification{Safety: retry.SafetyYes, Throttle: true}},
		{"a→b→a", func(c *unwrapCounter) error {
			a := &cycleError{c: c}
			a.next = &cycleError{c: c, next: a}
			return a
		}, retry.Classification{}},
		{"cycle below a reset", func(c *unwrapCounter) error {
			a := &cycleError{c: c}
			a.next = &cycleError{c: c, next: a}
			return fmt.Errorf("%w; %w", opError("read", syscall.ECONNRESET), a)
		}, retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultOther}},
		{"self-forking tree", func(c *unwrapCounter) error { return &forkError{c} }, retry.Classification{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &unwrapCounter{give: give}
			got := retry.Classify(tt.err(c))
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, c.calls, 10_000, "Unwrap calls")
		})
	}
}

func TestFiniteChain(t *testing.T) {
	deep := error(errors.New("root"))
	for range 98 {
		deep = fmt.Errorf("wrap: %w", deep)
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, true},
		{"one", errors.New("x"), true},
		{"join", errors.Join(errors.New("a"), fmt.Errorf("b: %w", errors.New("c"))), true},
		{"99 errors", deep, true},
		{"100 errors", fmt.Errorf("wrap: %w", deep), false},
		{"Unwrap returns itself", retrytest.CyclicError(), false},
		{"a join that contains itself", retrytest.CyclicJoin(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, retry.FiniteChain(tc.err))
		})
	}
}
