package retry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Transport is an http.RoundTripper that retries failed requests: it sends
// each attempt through Base and lets Strategy decide whether, and when, to
// send again. The zero value retries idempotent requests through
// http.DefaultTransport with the DefaultStrategy.
//
// An attempt fails if Base returns an error (connection refused, reset,
// a timeout...) or if CheckResponse turns the response into an error; by
// default any status of 400 or more is a failure, and Classify retries
// 500, 502, 503 and 504, the throttling statuses 429 and 509, 408, and the
// AWS throttling error codes of the x-amzn-ErrorType header. A server's
// retry hint, in the x-amz-retry-after or Retry-After header (see
// ParseRetryAfter), is attached to the failure with WithRetryAfter, so the
// strategy waits at least that long. A failed response with the header
// X-Should-Retry: false (see NoRetryHeader, NewHandler) is not retried, and
// its error wraps ErrNoRetryAnswer; one with X-Should-Retry: true is
// retried if the request may be sent twice.
//
// Only requests that may be sent twice are retried: those Idempotent
// allows (by default GET, HEAD, OPTIONS, TRACE, PUT and DELETE, and any
// request with an Idempotency-Key or X-Idempotency-Key header) whose body
// can be sent again, because Body is nil or http.NoBody or GetBody is set.
// Any other request is sent once. Retries never change the caller's
// request: each one is a shallow copy, with a fresh body from GetBody. A
// request that may be sent twice is also retried when its connection
// closes before any byte of the response arrives (io.EOF from Base, which
// Classify alone does not retry): nothing was answered, and the AWS SDKs
// retry it too.
//
// When the strategy gives up after a failed response (a 503 on the last
// attempt, or a 404 it does not retry), RoundTrip returns that response,
// body intact, and a nil error, as a plain http.Client would. Before each
// retry the failed response is closed, so its connection can serve the
// next attempt. When the last attempt
// failed with an error, or the request's context ended, RoundTrip returns
// a nil response and an *Error that wraps the last attempt's error and the
// reason for giving up. The strategy does the waiting between attempts
// (see RetryStrategy); no attempt starts after the request's context has
// ended. While the strategy waits, a failed response's body (up to 4 KiB)
// is held in memory, not on its connection.
//
// A Transport is safe for concurrent use by multiple goroutines, as long
// as its fields are not changed once it is in use.
type Transport struct {
	// Base sends each attempt. nil: http.DefaultTransport.
	Base http.RoundTripper

	// Strategy decides on retries. nil: StrategyFromContext of the
	// request's context, which is DefaultStrategy(), shared by the whole
	// process, unless ContextWithStrategy set another.
	Strategy RetryStrategy

	// Scope names the strategy scope a request's attempts are counted in,
	// so that, with the strategies of this package, each scope has its own
	// retry quota and rate limiter. nil: the request's URL.Host, as
	// written (one scope per host and port).
	Scope func(req *http.Request) string

	// Idempotent reports whether a request may be sent more than once.
	// Whatever it says, a request whose body cannot be sent again (Body
	// set, other than http.NoBody, and GetBody nil) is sent once. nil:
	// IsIdempotent.
	Idempotent func(req *http.Request) bool

	// CheckResponse returns the error that resp stands for, or nil if resp
	// is a success. The error is what the strategy classifies. It must not
	// read or close the body. nil: CheckStatus.
	CheckResponse func(resp *http.Response) error

	// Clock is the time that a Retry-After HTTP date is measured from.
	// nil: the system clock.
	Clock Clock

	// ExactAttempts makes every attempt the server sees one the strategy
	// counts. By default net/http's Transport (Base) resends an idempotent
	// request by itself, once, when a kept-alive connection it reused
	// turns out closed (the server timed it out as the request went), and
	// the strategy never learns of it: under connection churn a server can
	// see more attempts than WithMaxAttempts allows, unpaced and unpaid
	// for. With ExactAttempts, each attempt is handed to Base in a form
	// that net/http does not resend (its GetBody is nil, and a request
	// without a body gets an empty one, as net/http sends a GET or HEAD
	// the same way; a bodiless request that net/http would resend because
	// of an Idempotency-Key header is sent with an empty chunked body), so
	// the failure comes back to the strategy, which retries it as any
	// other: counted, with backoff, paid from the retry quota. The cost is
	// that a stale connection, which net/http retried at once for free,
	// now costs a retry. DisableKeepAlives on Base also ends hidden
	// attempts, at the price of a connection per request.
	ExactAttempts bool

	// SendAttempts makes each attempt carry its number and the strategy's
	// attempt limit in the AttemptHeader header ("amz-sdk-request:
	// attempt=2; max=3", as the AWS SDKs send it), unless the request has
	// that header already, so that a server wrapped with NewHandler knows
	// whether its caller will retry (InboundFromContext). The limit is
	// sent when the strategy has a MaxAttempts() int method, as Standard
	// and Adaptive do. Each attempt then sends a copy of the request's
	// header.
	SendAttempts bool

	// Hedging, if set, hedges the requests that may be sent twice (those
	// the Transport would retry): when an attempt has not answered within
	// the hedge delay, another copy of the request is sent, and the first
	// success wins (see Hedging). The losers' requests are cancelled and
	// their responses closed. Other requests are never hedged. nil: no
	// hedging.
	Hedging *Hedging
}

var _ http.RoundTripper = (*Transport)(nil)

// drainLimit is how much of a failed response's body is read before it is
// closed: enough for a typical error document, so that the connection can
// be reused, but not so much that a large body costs more than a new
// connection would.
const drainLimit = 4 << 10

// RoundTrip sends req, retrying as the Transport's documentation says. It
// returns either a response or an error, never both. A nil Transport or
// request, or a Clock holding a nil pointer or function, is an error
// wrapping ErrInvalidConfig.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.check(req); err != nil {
		if req != nil && req.Body != nil {
			req.Body.Close() // a RoundTripper closes the body, even on errors
		}
		return nil, err
	}
	ctx := req.Context()
	var rt roundTrip // on the stack, unless hedged
	rt.t, rt.req, rt.base, rt.replay = t, req, t.Base, t.replayable(req)
	strategy := t.Strategy
	if strategy == nil {
		strategy = StrategyFromContext(ctx)
	}
	if m, ok := strategy.(interface{ MaxAttempts() int }); ok && t.SendAttempts {
		rt.maxAttempts = m.MaxAttempts()
	}
	if rt.base == nil {
		rt.base = http.DefaultTransport
	}
	var resp *http.Response
	var err error
	done := &rt // the round trip whose attempts were made
	if t.Hedging != nil && rt.replay {
		// The hedges' goroutines share it: on the heap.
		h := &roundTrip{t: rt.t, req: rt.req, base: rt.base, replay: true, maxAttempts: rt.maxAttempts, mu: new(sync.Mutex)}
		resp, err = doHedged(ctx, h.attempt, t.Hedging, []DoOption{WithStrategy(strategy), WithScope(t.scope(req))}, closeResponse)
		done = h
	} else {
		resp, err = Do(ctx, rt.attempt, WithStrategy(strategy), WithScope(t.scope(req)))
	}
	if err == nil {
		return resp, nil
	}
	if done.attempts == 0 && req.Body != nil {
		req.Body.Close() // a RoundTripper closes the body, even on errors
	}
	if last := done.failed; last != nil {
		if ctx.Err() == nil {
			return last, nil
		}
		discard(last)
	}
	return nil, err
}

// check reports what makes t unable to send req, if anything.
func (t *Transport) check(req *http.Request) error {
	switch {
	case t == nil:
		return configError("Transport", "a nil *Transport", "a non-nil *Transport (the zero Transport works)")
	case req == nil:
		return configError("RoundTrip request", "nil", "a non-nil *http.Request")
	case t.Clock != nil && isNil(t.Clock):
		return configError("Transport.Clock", nilValue(t.Clock), "a non-nil Clock (nil for the system clock)")
	}
	return nil
}

// CloseIdleConnections closes the idle connections of Base, if it has such
// a method. http.Client.CloseIdleConnections calls it. A nil Transport has
// none.
func (t *Transport) CloseIdleConnections() {
	if t == nil {
		return
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if c, ok := base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (t *Transport) scope(req *http.Request) string {
	switch {
	case t.Scope != nil:
		return t.Scope(req)
	case req.URL != nil:
		return req.URL.Host
	}
	return ""
}

// replayable reports whether req may be sent more than once.
func (t *Transport) replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	if t.Idempotent != nil {
		return t.Idempotent(req)
	}
	return IsIdempotent(req)
}

func (t *Transport) now() time.Time {
	if t.Clock != nil {
		return t.Clock.Now()
	}
	return time.Now()
}

// IsIdempotent reports whether sending req twice has the effect of sending
// it once, by the rule net/http applies before it resends a request: the
// method is GET (or empty), HEAD, OPTIONS or TRACE, or the header has an
// Idempotency-Key or X-Idempotency-Key entry (even one with no values,
// which net/http does not send). Unlike net/http, it also counts PUT and
// DELETE, which RFC 9110 defines as idempotent. A nil req is not
// idempotent.
func IsIdempotent(req *http.Request) bool {
	if req == nil {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	if _, ok := req.Header["Idempotency-Key"]; ok {
		return true
	}
	_, ok := req.Header["X-Idempotency-Key"]
	return ok
}

var errNilResponse = configError("CheckStatus response", "nil", "a non-nil *http.Response")

// StatusError is the error of an attempt whose response had a failing
// HTTP status. CheckStatus returns it. Classify reads its status code
// through HTTPStatusCode and its service error code through ErrorCode.
type StatusError struct {
	StatusCode int    // the response's status code, such as 503
	Status     string // the response's status line, such as "503 Service Unavailable"; may be empty
	Code       string // the service error code, such as "ThrottlingException"; "" if none
}

// Error describes the status and the service error code, if any.
func (e *StatusError) Error() string {
	if e == nil {
		return "retry: <nil *StatusError>"
	}
	status := e.Status
	if status == "" {
		status = strconv.Itoa(e.StatusCode) + " " + http.StatusText(e.StatusCode)
	}
	if e.Code != "" {
		return fmt.Sprintf("retry: HTTP status %s (%s)", status, e.Code)
	}
	return "retry: HTTP status " + status
}

// HTTPStatusCode returns e.StatusCode, or 0 for a nil e.
func (e *StatusError) HTTPStatusCode() int {
	if e == nil {
		return 0
	}
	return e.StatusCode
}

// ErrorCode returns e.Code, or "" for a nil e.
func (e *StatusError) ErrorCode() string {
	if e == nil {
		return ""
	}
	return e.Code
}

// CheckStatus is the default CheckResponse of a Transport: it returns nil
// for a status below 400 and a *StatusError otherwise. The error's Code is
// the service error code of the x-amzn-ErrorType header, as AWS JSON
// services send it ("ThrottlingException:http://..." gives
// "ThrottlingException"), so that throttling reported with a 400 status
// is retried as throttling. A nil resp is an error wrapping
// ErrInvalidConfig, which is not retried.
func CheckStatus(resp *http.Response) error {
	if resp == nil {
		return errNilResponse
	}
	if resp.StatusCode < 400 {
		return nil
	}
	code := headerField(resp.Header, "X-Amzn-Errortype")
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:] // a namespace prefix: "aws.protocols#ThrottlingException"
	}
	return &StatusError{StatusCode: resp.StatusCode, Status: resp.Status, Code: strings.TrimSpace(code)}
}

// roundTrip is the state of one RoundTrip call.
type roundTrip struct {
	t           *Transport
	req         *http.Request
	base        http.RoundTripper
	replay      bool // req may be sent again
	maxAttempts int  // the strategy's attempt limit, for SendAttempts; 0: unknown

	// mu is set when attempts may run at the same time (hedged), and held
	// for the fields below. A mutex of its own, not a field, so that an
	// unhedged round trip, which takes no lock, stays on the stack.
	mu       *sync.Mutex
	attempts int             // attempts started
	failed   *http.Response  // the latest failed attempt's response
	round    context.Context // hedged: the context of the latest round's attempts
}

func (rt *roundTrip) lock() {
	if rt.mu != nil {
		rt.mu.Lock()
	}
}

func (rt *roundTrip) unlock() {
	if rt.mu != nil {
		rt.mu.Unlock()
	}
}

// setFailed makes resp the latest failed response, closing the one before.
func (rt *roundTrip) setFailed(resp *http.Response) {
	rt.lock()
	defer rt.unlock()
	if rt.failed != nil {
		discard(rt.failed)
	}
	rt.failed = resp
}

// closeResponse closes the body of resp, the response of a hedged attempt
// that lost.
func closeResponse(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
}

// attempt sends req once: the first time as it is, later as a shallow
// copy with a fresh body. A copy is enough: a RoundTripper must not change
// the request it is given, and the first attempt hands Base the caller's
// own request anyway.
func (rt *roundTrip) attempt(ctx context.Context) (*http.Response, error) {
	rt.lock()
	if rt.failed != nil && (rt.mu == nil || ctx != rt.round) {
		// The failure before this retry, or the previous round's. (The
		// attempts of a hedged round share its context, and keep the
		// round's latest failure until a newer one replaces it: an
		// attempt may start while another's failure is the round's.)
		discard(rt.failed)
		rt.failed = nil
	}
	rt.round = ctx
	rt.attempts++
	n := rt.attempts
	rt.unlock()
	req := rt.req
	if n > 1 {
		req = req.WithContext(ctx)
		if rt.req.GetBody != nil {
			body, err := rt.req.GetBody()
			if err != nil {
				return nil, Permanent(fmt.Errorf("retry: rewinding the request body: %w", err))
			}
			req.Body = body
		}
	} else if ctx != req.Context() {
		req = req.WithContext(ctx) // a hedged attempt's own context, which a winning hedge cancels
	}
	if rt.t.ExactAttempts {
		req = unreplayable(ctx, req, req == rt.req)
	}
	if rt.t.SendAttempts && len(rt.req.Header[AttemptHeader]) == 0 {
		if req == rt.req {
			req = req.WithContext(ctx)
		}
		req.Header = req.Header.Clone()
		if req.Header == nil {
			req.Header = make(http.Header, 1)
		}
		v := "attempt=" + strconv.Itoa(n)
		if rt.maxAttempts > 0 {
			v += "; max=" + strconv.Itoa(rt.maxAttempts)
		}
		req.Header[AttemptHeader] = []string{v}
	}
	resp, err := rt.base.RoundTrip(req)
	switch {
	case err != nil:
		if resp != nil && resp.Body != nil {
			resp.Body.Close() // a broken RoundTripper returned both
		}
		if rt.replay && errors.Is(err, io.EOF) && Classify(err).Safety == SafetyMaybe {
			// The connection closed before a byte of the response came
			// (Base returns a response as soon as its header arrives), so
			// the request, which may be sent twice, is sent again, as the
			// AWS SDKs do.
			err = Transient(err)
		}
		return nil, rt.mark(err)
	case resp == nil:
		return nil, rt.mark(fmt.Errorf("retry: %T.RoundTrip returned neither a response nor an error", rt.base))
	}
	check := rt.t.CheckResponse
	if check == nil {
		check = CheckStatus
	}
	if err := check(resp); err != nil {
		if d, ok := parseRetryAfter(resp.Header, rt.t.now); ok && d > 0 {
			err = WithRetryAfter(err, d)
		}
		switch v := headerField(resp.Header, NoRetryHeader); {
		case strings.EqualFold(v, "false"):
			err = Permanent(fmt.Errorf("%w: %w", ErrNoRetryAnswer, err))
		case strings.EqualFold(v, "true"):
			err = Transient(err)
		}
		if rt.replay {
			release(resp)
		}
		rt.setFailed(resp)
		return nil, rt.mark(err)
	}
	return resp, nil
}

// unreplayable returns a copy of req, an attempt's request, that net/http's
// Transport will not send again by itself (see Request.isReplayable in
// net/http): its GetBody is nil, and if net/http would resend it without a
// body it has an empty body instead. callers says that req is the
// caller's own request, which must not change.
func unreplayable(ctx context.Context, req *http.Request, callers bool) *http.Request {
	if callers {
		req = req.WithContext(ctx)
	}
	req.GetBody = nil
	if (req.Body == nil || req.Body == http.NoBody) && netHTTPReplays(req) {
		req.Body = emptyBody{}
	}
	return req
}

// netHTTPReplays reports whether net/http's Transport resends a bodiless
// req by itself after a failure on a reused connection.
func netHTTPReplays(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// emptyBody is a request body with nothing in it that net/http cannot
// rewind.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }

// mark makes err, the failure of an attempt, not retryable if the request
// cannot be sent again. It keeps what Classify finds of throttling and
// timeouts, so that a strategy's rate limiter still learns from it.
func (rt *roundTrip) mark(err error) error {
	if rt.replay {
		return err
	}
	c := Classify(err)
	return &marked{err: err, safety: SafetyNo, throttle: c.Throttle, timeout: c.Timeout}
}

// release frees the connection of resp, a failed response that may be
// retried, while the strategy waits: a body of at most drainLimit bytes is
// read into memory and the original closed, so that the caller still gets
// the body intact if no retry follows. A longer body keeps its connection
// until the next attempt starts or RoundTrip returns.
func release(resp *http.Response) {
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	buf, err := io.ReadAll(io.LimitReader(resp.Body, drainLimit+1))
	if len(buf) > drainLimit {
		resp.Body = &prefixedBody{prefix: bytes.NewReader(buf), ReadCloser: resp.Body}
		return
	}
	resp.Body.Close()
	if err != nil {
		resp.Body = io.NopCloser(&failingReader{buf: bytes.NewReader(buf), err: err})
		return
	}
	resp.Body = io.NopCloser(bytes.NewReader(buf))
}

// prefixedBody is a body whose first bytes were already read into prefix.
type prefixedBody struct {
	prefix *bytes.Reader
	io.ReadCloser
}

func (b *prefixedBody) Read(p []byte) (int, error) {
	if b.prefix.Len() > 0 {
		return b.prefix.Read(p)
	}
	return b.ReadCloser.Read(p)
}

// failingReader replays what was read of a body and then the error that
// ended the read.
type failingReader struct {
	buf *bytes.Reader
	err error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.buf.Len() > 0 {
		return r.buf.Read(p)
	}
	return 0, r.err
}

// discard reads a little of resp's body, so that its connection can be
// reused if the body is short, and closes it.
func discard(resp *http.Response) {
	if resp.Body == nil || resp.Body == http.NoBody {
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, drainLimit)
	resp.Body.Close()
}
