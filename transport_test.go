package retry_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// scriptedServer answers the requests it receives with the statuses of
// script in turn, then with 200; each body is "<status> #<request>". It
// records the requests' bodies and headers.
type scriptedServer struct {
	*httptest.Server
	script []int
	header http.Header // added to every failed response

	mu      sync.Mutex
	bodies  []string
	headers []http.Header
}

func newScriptedServer(t *testing.T, script ...int) *scriptedServer {
	t.Helper()
	s := &scriptedServer{script: script, header: http.Header{}}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	return s
}

func (s *scriptedServer) start(t *testing.T) *scriptedServer {
	t.Helper()
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *scriptedServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(body))
	s.headers = append(s.headers, r.Header.Clone())
	n := len(s.bodies)
	s.mu.Unlock()
	status := http.StatusOK
	if n <= len(s.script) {
		status = s.script[n-1]
		for k, v := range s.header {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, "%d #%d", status, n)
}

func (s *scriptedServer) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// fast returns a standard strategy that retries at once, up to attempts
// attempts.
func fast(t *testing.T, attempts int) *retry.Standard {
	t.Helper()
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithMaxAttempts(attempts))
	require.NoError(t, err)
	return s
}

// recorder is a strategy that allows max attempts, each without delay, and
// records what it is told.
type recorder struct {
	max int

	mu        sync.Mutex
	scopes    []string
	failures  []retry.Classification
	successes int
}

type recorderToken struct{ retries int }

func (t *recorderToken) Delay() time.Duration { return 0 }
func (t *recorderToken) RetryCount() int      { return t.retries }

func (r *recorder) AcquireInitialToken(_ context.Context, scope string) (retry.RetryToken, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scopes = append(r.scopes, scope)
	return &recorderToken{}, nil
}

func (r *recorder) RefreshRetryToken(_ context.Context, tok retry.RetryToken, err error) (retry.RetryToken, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := retry.Classify(err)
	r.failures = append(r.failures, c)
	switch n := tok.RetryCount() + 1; {
	case !c.Retryable():
		return nil, retry.ErrNotRetryable
	case n >= r.max:
		return nil, retry.ErrMaxAttemptsExceeded
	default:
		return &recorderToken{retries: n}, nil
	}
}

func (r *recorder) RecordSuccess(retry.RetryToken) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.successes++
	return nil
}

// roundTripperFunc is a Base for tests without a network.
type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// trackedBody is a response body that knows whether it was read and closed.
type trackedBody struct {
	io.Reader
	read   int64
	closed bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.Reader.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *trackedBody) Close() error { b.closed = true; return nil }

func response(status int, body string, header ...string) (*http.Response, *trackedBody) {
	b := &trackedBody{Reader: strings.NewReader(body)}
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)), Header: h, Body: b}, b
}

// checkLeaks fails t if, once its other cleanups have run, goroutines of
// HTTP connections or of this package are left running.
func checkLeaks(t *testing.T) {
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			leaked := leakedGoroutines()
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("leaked goroutines:\n%s", strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(10 * time.Millisecond) // polling only: no timing is asserted
		}
	})
}

func leakedGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var leaked []string
	for _, g := range strings.Split(string(buf), "\n\n")[1:] { // [0] is this goroutine
		if strings.Contains(g, "net/http.(*persistConn)") || strings.Contains(g, "net/http.(*conn).serve") ||
			strings.Contains(g, "retrykit/retry.(*Transport)") {
			leaked = append(leaked, g)
		}
	}
	return leaked
}

func get(t *testing.T, rt http.RoundTripper, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	return rt.RoundTrip(req)
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return string(b)
}

func TestTransportRetriesUntilSuccess(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 503, 503).start(t)
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 3)}

	resp, err := get(t, tr, srv.URL)

	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "200 #3", readBody(t, resp))
	assert.Equal(t, 3, srv.requests())
}

func TestTransportReturnsLastResponseWhenExhausted(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 503, 503, 503, 503).start(t)
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 3)}

	resp, err := get(t, tr, srv.URL)

	require.NoError(t, err, "a response, not an error, as http.Client would give")
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "503 #3", readBody(t, resp), "the last response, body intact")
	assert.Equal(t, 3, srv.requests())
}

func TestTransportDoesNotRetryClientErrors(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 404, 404).start(t)
	s := &recorder{max: 3}
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: s}

	resp, err := get(t, tr, srv.URL)

	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "404 #1", readBody(t, resp))
	assert.Equal(t, 1, srv.requests())
	require.Len(t, s.failures, 1)
	assert.Equal(t, retry.FaultClient, s.failures[0].Fault)
}

func TestTransportClassifiesResponses(t *testing.T) {
	date := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		status   int
		header   []string
		want     retry.Classification
		requests int
	}{
		{"retry-after seconds", 429, []string{"Retry-After", "2"},
			retry.Classification{Safety: retry.SafetyYes, Throttle: true, Fault: retry.FaultServer, RetryAfter: 2 * time.Second}, 2},
		{"x-amz-retry-after first", 429, []string{"Retry-After", "2", "x-amz-retry-after", "1500"},
			retry.Classification{Safety: retry.SafetyYes, Throttle: true, Fault: retry.FaultServer, RetryAfter: 1500 * time.Millisecond}, 2},
		{"retry-after date", 503, []string{"Retry-After", date.Add(3 * time.Second).Format(http.TimeFormat)},
			retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultServer, RetryAfter: 3 * time.Second}, 2},
		{"bad retry-after ignored", 503, []string{"Retry-After", "soon"},
			retry.Classification{Safety: retry.SafetyYes, Fault: retry.FaultServer}, 2},
		{"509", 509, nil, retry.Classification{Safety: retry.SafetyYes, Throttle: true, Fault: retry.FaultServer}, 2},
		{"408", 408, nil, retry.Classification{Safety: retry.SafetyYes, Timeout: true, Fault: retry.FaultClient}, 2},
		{"501", 501, nil, retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultServer}, 1},
		{"throttling error code", 400, []string{"x-amzn-ErrorType", "ThrottlingException:http://internal.amazon.com/coral/"},
			retry.Classification{Safety: retry.SafetyYes, Throttle: true}, 2},
		{"other error code", 400, []string{"x-amzn-ErrorType", "ValidationException"},
			retry.Classification{Safety: retry.SafetyNo, Fault: retry.FaultClient}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			srv := newScriptedServer(t, tc.status)
			for i := 0; i+1 < len(tc.header); i += 2 {
				srv.header.Set(tc.header[i], tc.header[i+1])
			}
			srv.start(t)
			s := &recorder{max: 3}
			tr := &retry.Transport{
				Base:     srv.Client().Transport,
				Strategy: s,
				Clock:    retry.ClockFunc(func() time.Time { return date }),
			}

			resp, err := get(t, tr, srv.URL)

			require.NoError(t, err)
			readBody(t, resp)
			require.NotEmpty(t, s.failures)
			assert.Equal(t, tc.want, s.failures[0])
			assert.Equal(t, tc.requests, srv.requests())
		})
	}
}

func TestTransportWaitsRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls []time.Time
		var bodies []*trackedBody
		base := roundTripperFunc(func(*http.Request) (*http.Response, error) {
			calls = append(calls, time.Now())
			if len(calls) == 1 {
				resp, b := response(503, "busy", "X-Amz-Retry-After", "1500", "Retry-After", "2")
				bodies = append(bodies, b)
				return resp, nil
			}
			resp, _ := response(200, "ok")
			return resp, nil
		})
		tr := &retry.Transport{Base: base, Strategy: fast(t, 3)}

		resp, err := get(t, tr, "http://example.test/")

		require.NoError(t, err)
		assert.Equal(t, "ok", readBody(t, resp))
		require.Len(t, calls, 2)
		assert.Equal(t, 1500*time.Millisecond, calls[1].Sub(calls[0]), "x-amz-retry-after is the minimum delay")
		assert.True(t, bodies[0].closed, "the failed response was closed")
		assert.EqualValues(t, len("busy"), bodies[0].read, "and drained")
	})
}

func TestTransportIdempotency(t *testing.T) {
	alwaysIdempotent := func(*http.Request) bool { return true }
	for _, tc := range []struct {
		name       string
		method     string
		header     http.Header
		idempotent func(*http.Request) bool
		requests   int
	}{
		{"GET", http.MethodGet, nil, nil, 3},
		{"HEAD", http.MethodHead, nil, nil, 3},
		{"OPTIONS", http.MethodOptions, nil, nil, 3},
		{"PUT", http.MethodPut, nil, nil, 3},
		{"DELETE", http.MethodDelete, nil, nil, 3},
		{"POST", http.MethodPost, nil, nil, 1},
		{"PATCH", http.MethodPatch, nil, nil, 1},
		{"POST with Idempotency-Key", http.MethodPost, http.Header{"Idempotency-Key": {"k1"}}, nil, 3},
		{"POST with X-Idempotency-Key", http.MethodPost, http.Header{"X-Idempotency-Key": {"k1"}}, nil, 3},
		{"POST with unsent Idempotency-Key", http.MethodPost, http.Header{"Idempotency-Key": nil}, nil, 3},
		{"POST declared idempotent", http.MethodPost, nil, alwaysIdempotent, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLeaks(t)
			srv := newScriptedServer(t, 503, 503, 503).start(t)
			tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 3), Idempotent: tc.idempotent}
			req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL, strings.NewReader("payload"))
			require.NoError(t, err)
			for k, v := range tc.header {
				req.Header[k] = v
			}

			resp, err := tr.RoundTrip(req)

			require.NoError(t, err)
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			readBody(t, resp)
			assert.Equal(t, tc.requests, srv.requests())
		})
	}
}

func TestTransportRewindsBody(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 503, 500).start(t)
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 3)}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL, bytes.NewReader([]byte("the same body")))
	require.NoError(t, err)
	require.NotNil(t, req.GetBody)

	resp, err := tr.RoundTrip(req)

	require.NoError(t, err)
	assert.Equal(t, "200 #3", readBody(t, resp))
	assert.Equal(t, []string{"the same body", "the same body", "the same body"}, srv.bodies)
}

func TestTransportSendsUnrewindableBodyOnce(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 503, 503).start(t)
	s := &recorder{max: 3}
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: s}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL, io.NopCloser(strings.NewReader("once")))
	require.NoError(t, err)
	require.Nil(t, req.GetBody)

	resp, err := tr.RoundTrip(req)

	require.NoError(t, err)
	assert.Equal(t, "503 #1", readBody(t, resp))
	assert.Equal(t, []string{"once"}, srv.bodies)
	require.Len(t, s.failures, 1)
	assert.Equal(t, retry.SafetyNo, s.failures[0].Safety)
}

func TestTransportKeepsThrottleOfRequestsSentOnce(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 429)
	srv.header.Set("Retry-After", "1")
	srv.start(t)
	s := &recorder{max: 3}
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: s}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader("x"))
	require.NoError(t, err)

	resp, err := tr.RoundTrip(req)

	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	readBody(t, resp)
	assert.Equal(t, []retry.Classification{{Safety: retry.SafetyNo, Throttle: true, RetryAfter: time.Second}}, s.failures,
		"not retryable, yet a throttle the strategy can learn from")
}

func TestTransportReusesConnections(t *testing.T) {
	checkLeaks(t)
	var conns atomic.Int32
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 != 0 { // two failures, then a success
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(bytes.Repeat([]byte("x"), 2<<10)) // a body to drain
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 3)}

	for range 5 {
		resp, err := get(t, tr, srv.URL)
		require.NoError(t, err)
		require.Equal(t, "ok", readBody(t, resp))
	}

	assert.EqualValues(t, 15, n.Load())
	assert.EqualValues(t, 1, conns.Load(), "failed responses were drained and closed, so one connection served all")
}

func TestTransportClosesLargeFailedBodies(t *testing.T) {
	checkLeaks(t)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(bytes.Repeat([]byte("x"), 1<<20)) // beyond what is drained
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 3)}

	resp, err := get(t, tr, srv.URL)

	require.NoError(t, err)
	assert.Equal(t, "ok", readBody(t, resp))
}

// refusedAddr returns a loopback address where connections are refused.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestTransportConnectionRefused(t *testing.T) {
	checkLeaks(t)
	addr := refusedAddr(t)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	s := &recorder{max: 3}
	tr := &retry.Transport{Base: base, Strategy: s}

	resp, err := get(t, tr, "http://"+addr+"/")

	require.Error(t, err)
	assert.Nil(t, resp)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
	var rerr *retry.Error
	require.ErrorAs(t, err, &rerr)
	assert.Equal(t, 3, rerr.Attempts)
	assert.Len(t, s.failures, 3)
	assert.Equal(t, []string{addr}, s.scopes, "the default scope is the URL's host")
}

func TestTransportThroughClient(t *testing.T) {
	checkLeaks(t)
	addr := refusedAddr(t)
	base := &http.Transport{}
	client := &http.Client{Transport: &retry.Transport{Base: base, Strategy: fast(t, 2)}}
	t.Cleanup(client.CloseIdleConnections)

	resp, err := client.Get("http://" + addr + "/")

	require.Error(t, err)
	assert.Nil(t, resp)
	var uerr *url.Error
	require.ErrorAs(t, err, &uerr)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.ErrorIs(t, err, retry.ErrMaxAttemptsExceeded)
}

func TestTransportCanceledDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		var body *trackedBody
		base := roundTripperFunc(func(*http.Request) (*http.Response, error) {
			calls++
			var resp *http.Response
			resp, body = response(503, "busy")
			return resp, nil
		})
		s := constant(t, time.Hour)
		tr := &retry.Transport{Base: base, Strategy: s}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Minute, cancel)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
		require.NoError(t, err)
		start := time.Now()

		resp, err := tr.RoundTrip(req)

		assert.Nil(t, resp)
		assert.ErrorIs(t, err, context.Canceled)
		var serr *retry.StatusError
		require.ErrorAs(t, err, &serr, "the error reaches the last attempt's failure")
		assert.Equal(t, 503, serr.StatusCode)
		assert.Equal(t, time.Minute, time.Since(start), "returned when the context ended")
		assert.Equal(t, 1, calls, "no retry after the context ended")
		assert.True(t, body.closed)
		assert.Equal(t, float64(retry.DefaultMaxCapacity), s.RetryQuota().Stats().Available,
			"the abandoned retry gave its quota back")
	})
}

func TestTransportDeadlineTooSoonReturnsResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		base := roundTripperFunc(func(*http.Request) (*http.Response, error) {
			calls++
			resp, _ := response(503, "busy")
			return resp, nil
		})
		s := constant(t, time.Hour)
		tr := &retry.Transport{Base: base, Strategy: s}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://example.test/", nil)
		require.NoError(t, err)
		start := time.Now()

		resp, err := tr.RoundTrip(req)

		require.NoError(t, err)
		assert.Equal(t, "busy", readBody(t, resp), "the response, body intact")
		assert.Equal(t, time.Duration(0), time.Since(start), "no wait into a deadline that would pass")
		assert.Equal(t, 1, calls)
		assert.Equal(t, float64(retry.DefaultMaxCapacity), s.RetryQuota().Stats().Available)
	})
}

func TestTransportContextAlreadyDone(t *testing.T) {
	var calls int
	base := roundTripperFunc(func(*http.Request) (*http.Response, error) {
		calls++
		return nil, errors.New("unreachable")
	})
	tr := &retry.Transport{Base: base, Strategy: fast(t, 3)}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	body := &trackedBody{Reader: strings.NewReader("x")}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://example.test/", body)
	require.NoError(t, err)

	resp, err := tr.RoundTrip(req)

	assert.Nil(t, resp)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, calls)
	assert.True(t, body.closed, "a RoundTripper closes the request body, even on errors")
}

func TestTransportDoesNotMutateRequest(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 503, 503).start(t)
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 3)}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/a?b=c", strings.NewReader("body"))
	require.NoError(t, err)
	req.Header.Set("X-Trace", "1")
	before := *req
	header := req.Header.Clone()

	resp, err := tr.RoundTrip(req)

	require.NoError(t, err)
	readBody(t, resp)
	assert.Equal(t, 3, srv.requests())
	assert.Equal(t, header, req.Header)
	assert.Equal(t, srv.URL+"/a?b=c", req.URL.String())
	assert.True(t, before.Body == req.Body, "the same body")
	assert.Same(t, before.URL, req.URL)
	assert.Equal(t, before.Method, req.Method)
	assert.Equal(t, before.ContentLength, req.ContentLength)
	assert.Equal(t, t.Context(), req.Context())
	for _, h := range srv.headers {
		assert.Equal(t, "1", h.Get("X-Trace"))
	}
}

func TestTransportScope(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t).start(t)
	s := &recorder{max: 3}
	tr := &retry.Transport{
		Base:     srv.Client().Transport,
		Strategy: s,
		Scope:    func(r *http.Request) string { return "api:" + r.URL.Path },
	}

	resp, err := get(t, tr, srv.URL+"/items")

	require.NoError(t, err)
	readBody(t, resp)
	assert.Equal(t, []string{"api:/items"}, s.scopes)
	assert.Equal(t, 1, s.successes)
}

func TestTransportCustomCheckResponse(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 404, 404).start(t)
	tr := &retry.Transport{
		Base:     srv.Client().Transport,
		Strategy: fast(t, 3),
		CheckResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusNotFound {
				return retry.Transient(errors.New("not there yet"))
			}
			return retry.CheckStatus(resp)
		},
	}

	resp, err := get(t, tr, srv.URL)

	require.NoError(t, err)
	assert.Equal(t, "200 #3", readBody(t, resp))
}

func TestTransportRewindFailure(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 503, 503).start(t)
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 3)}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL, strings.NewReader("body"))
	require.NoError(t, err)
	errRewind := errors.New("cannot rewind")
	req.GetBody = func() (io.ReadCloser, error) { return nil, errRewind }

	resp, err := tr.RoundTrip(req)

	assert.Nil(t, resp)
	assert.ErrorIs(t, err, errRewind)
	assert.ErrorIs(t, err, retry.ErrNotRetryable)
	assert.Equal(t, 1, srv.requests())
}

func TestTransportConcurrent(t *testing.T) {
	checkLeaks(t)
	var seen sync.Map // path → struct{}: each path fails once, then succeeds
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, loaded := seen.LoadOrStore(r.URL.Path, struct{}{}); !loaded {
			w.WriteHeader(http.StatusBadGateway)
		}
		io.WriteString(w, r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 2)} // 20 retries at most in flight: well within the quota

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			for j := range 10 {
				path := fmt.Sprintf("/%d/%d", i, j)
				resp, err := get(t, tr, srv.URL+path)
				if assert.NoError(t, err) {
					assert.Equal(t, http.StatusOK, resp.StatusCode)
					assert.Equal(t, path, readBody(t, resp))
				}
			}
		})
	}
	wg.Wait()
}

func TestTransportZeroValue(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 503).start(t)
	var tr retry.Transport // http.DefaultTransport and the default strategy
	t.Cleanup(tr.CloseIdleConnections)

	resp, err := get(t, &tr, srv.URL)

	require.NoError(t, err)
	assert.Equal(t, "200 #2", readBody(t, resp))
}

func TestCheckStatus(t *testing.T) {
	for _, tc := range []struct {
		status    int
		errorType string
		want      error
	}{
		{200, "", nil},
		{304, "", nil},
		{404, "", &retry.StatusError{StatusCode: 404, Status: "404 Not Found"}},
		{400, "ThrottlingException:http://internal.amazon.com/coral/com.amazon.coral.availability/",
			&retry.StatusError{StatusCode: 400, Status: "400 Bad Request", Code: "ThrottlingException"}},
		{400, "aws.protocoltests#ComplexError", &retry.StatusError{StatusCode: 400, Status: "400 Bad Request", Code: "ComplexError"}},
		{503, "", &retry.StatusError{StatusCode: 503, Status: "503 Service Unavailable"}},
	} {
		resp, _ := response(tc.status, "", "X-Amzn-ErrorType", tc.errorType)
		assert.Equal(t, tc.want, retry.CheckStatus(resp), "status %d, %q", tc.status, tc.errorType)
	}
	assert.EqualError(t, &retry.StatusError{StatusCode: 429}, "retry: HTTP status 429 Too Many Requests")
	assert.EqualError(t, &retry.StatusError{StatusCode: 400, Status: "400 Bad Request", Code: "SlowDown"},
		"retry: HTTP status 400 Bad Request (SlowDown)")
}

func TestIsIdempotent(t *testing.T) {
	for _, tc := range []struct {
		method string
		header http.Header
		want   bool
	}{
		{"", nil, true},
		{"GET", nil, true},
		{"TRACE", nil, true},
		{"PUT", nil, true},
		{"DELETE", nil, true},
		{"POST", nil, false},
		{"PATCH", nil, false},
		{"CONNECT", nil, false},
		{"POST", http.Header{"Idempotency-Key": {"a"}}, true},
		{"PATCH", http.Header{"X-Idempotency-Key": nil}, true},
		{"POST", http.Header{"idempotency-key": {"a"}}, false}, // not canonical: net/http does not see it either
	} {
		req := &http.Request{Method: tc.method, Header: tc.header}
		assert.Equal(t, tc.want, retry.IsIdempotent(req), "%s %v", tc.method, tc.header)
	}
}

func TestTransportBrokenBase(t *testing.T) {
	errBroken := errors.New("broken")
	resp, body := response(200, "ignored")
	both := roundTripperFunc(func(*http.Request) (*http.Response, error) { return resp, errBroken })
	neither := roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, nil })

	got, err := (&retry.Transport{Base: both, Strategy: fast(t, 3)}).RoundTrip(httptest.NewRequest("GET", "http://example.test/", nil))
	assert.Nil(t, got)
	assert.ErrorIs(t, err, errBroken)
	assert.True(t, body.closed, "a response returned with an error is closed")

	got, err = (&retry.Transport{Base: neither, Strategy: fast(t, 3)}).RoundTrip(httptest.NewRequest("GET", "http://example.test/", nil))
	assert.Nil(t, got)
	assert.ErrorContains(t, err, "returned neither a response nor an error")
}

// An Adaptive strategy's rate limiter gates the Transport's attempts: once
// throttled, a fail-fast limiter refuses the request before it is sent.
func TestTransportAdaptiveRateLimits(t *testing.T) {
	checkLeaks(t)
	srv := newScriptedServer(t, 429).start(t)
	// The published algorithm: its first throttle enables the limiter.
	a, err := retry.NewAdaptive(retry.WithPublishedCUBIC(), retry.WithFailFast(true), retry.WithMaxAttempts(1))
	require.NoError(t, err)
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: a, Scope: func(*http.Request) string { return "" }}

	resp, err := get(t, tr, srv.URL)
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	readBody(t, resp)
	require.True(t, a.RateLimiter().Stats().Enabled, "the 429 reached the limiter")

	refused := 0
	for range 5 {
		resp, err := get(t, tr, srv.URL)
		if err != nil {
			require.ErrorIs(t, err, retry.ErrRateLimited)
			refused++
			continue
		}
		readBody(t, resp)
	}
	assert.Positive(t, refused, "the limiter refused sends at its minimum rate")
	assert.Less(t, srv.requests(), 6)
}

// closeRecorder is a response body that records when it is closed.
type closeRecorder struct {
	io.Reader
	closed *atomic.Bool
}

func (b closeRecorder) Close() error { b.closed.Store(true); return nil }

// observingStrategy lets one retry happen and records, while it decides,
// whether the failed response's body had been closed already.
type observingStrategy struct {
	recorder
	closed          *atomic.Bool
	closedAtRefresh bool
}

func (s *observingStrategy) RefreshRetryToken(ctx context.Context, tok retry.RetryToken, err error) (retry.RetryToken, error) {
	s.closedAtRefresh = s.closed.Load()
	return s.recorder.RefreshRetryToken(ctx, tok, err)
}

func TestTransportFreesConnectionBeforeTheWait(t *testing.T) {
	var closed atomic.Bool
	calls := 0
	base := roundTripperFunc(func(*http.Request) (*http.Response, error) {
		calls++
		if calls == 1 {
			return &http.Response{StatusCode: 503, Header: http.Header{},
				Body: closeRecorder{Reader: strings.NewReader("busy"), closed: &closed}}, nil
		}
		resp, _ := response(200, "ok")
		return resp, nil
	})
	s := &observingStrategy{recorder: recorder{max: 3}, closed: &closed}
	tr := &retry.Transport{Base: base, Strategy: s}
	resp, err := get(t, tr, "http://example.test/")
	require.NoError(t, err)
	assert.Equal(t, "ok", readBody(t, resp))
	assert.True(t, s.closedAtRefresh, "the small failed body was read and its connection freed before the strategy waited")
}

func TestTransportReturnsLargeFailedBodyIntact(t *testing.T) {
	checkLeaks(t)
	body := strings.Repeat("0123456789", 1000) // 10 KB, beyond what is buffered
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 2)}

	resp, err := get(t, tr, srv.URL)

	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, body, readBody(t, resp), "the last response, all of its body")
}

func TestTransportStrategyFromContext(t *testing.T) {
	s := &recorder{max: 2}
	base := roundTripperFunc(func(*http.Request) (*http.Response, error) {
		resp, _ := response(200, "ok")
		return resp, nil
	})
	req, err := http.NewRequestWithContext(retry.ContextWithStrategy(t.Context(), s), http.MethodGet, "http://example.test/", nil)
	require.NoError(t, err)
	resp, err := (&retry.Transport{Base: base}).RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, []string{"example.test"}, s.scopes, "a Transport without a Strategy uses the context's")
	assert.Equal(t, 1, s.successes)
}

// Nil values get an error or a zero answer, never a panic.
func TestTransportNilValues(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)

	var nilTransport *retry.Transport
	_, err := nilTransport.RoundTrip(req)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "a nil *Transport")
	nilTransport.CloseIdleConnections() // nothing to close

	_, err = (&retry.Transport{}).RoundTrip(nil)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)

	body := closeRecorder{Reader: strings.NewReader("x"), closed: new(atomic.Bool)}
	post := httptest.NewRequest(http.MethodPost, "http://example.com/", body)
	_, err = (&retry.Transport{Clock: retry.ClockFunc(nil)}).RoundTrip(post)
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "Transport.Clock = a nil retry.ClockFunc")
	assert.True(t, body.closed.Load(), "a RoundTripper closes the body, even on errors")

	require.ErrorIs(t, retry.CheckStatus(nil), retry.ErrInvalidConfig)
	assert.False(t, retry.IsIdempotent(nil))

	var se *retry.StatusError
	assert.Equal(t, "retry: <nil *StatusError>", se.Error())
	assert.Zero(t, se.HTTPStatusCode())
	assert.Empty(t, se.ErrorCode())
	c := retry.Classify(fmt.Errorf("wrapped: %w", error(se)))
	assert.False(t, c.Retryable(), "a nil *StatusError says nothing about safety")

	var re *retry.Error
	assert.Equal(t, "retry: <nil *Error>", re.Error())
	assert.Nil(t, re.Unwrap())

	var b *retry.TokenBucket
	assert.Zero(t, b.RetryCost(retry.Classification{Throttle: true}))
}
