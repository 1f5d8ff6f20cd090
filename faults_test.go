package retry_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// quickStrategy allows n attempts with no backoff and no quota, so that a
// test against a loopback server counts attempts without waiting.
func quickStrategy(t *testing.T, n int) *retry.Standard {
	t.Helper()
	b, err := retry.NewExponentialBackoff(retry.WithInitialDelay(time.Nanosecond), retry.WithMaxBackoff(time.Nanosecond))
	require.NoError(t, err)
	s, err := retry.NewStandard(retry.WithMaxAttempts(n), retry.WithBackoff(b), retry.WithoutRetryQuota())
	require.NoError(t, err)
	return s
}

// countingServer counts the requests it receives and serves each with h.
func countingServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int64)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var count atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(w, r, count.Add(1))
	}))
	t.Cleanup(srv.Close)
	return srv, &count
}

// A response-header timeout of the underlying http.Transport ends one
// attempt, not the caller's request: it is retried as a timeout.
func TestTransportRetriesResponseHeaderTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, count := countingServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		select { // answers only after the client gave up on it
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	base := &http.Transport{ResponseHeaderTimeout: 50 * time.Millisecond}
	defer base.CloseIdleConnections()
	client := &http.Client{Transport: &retry.Transport{Base: base, Strategy: quickStrategy(t, 3)}}

	_, err := client.Get(srv.URL)
	require.Error(t, err)
	assert.Equal(t, int64(3), count.Load(), "every attempt timed out and was retried")
	var re *retry.Error
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 3, re.Attempts)
	assert.NotErrorIs(t, re.Reason, context.DeadlineExceeded, "the caller's own deadline did not pass")
}

// A dial timeout reports errors.Is(err, context.DeadlineExceeded) too, but
// it is the timeout of one attempt: nothing was sent.
func TestClassifyDialTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, err = (&net.Dialer{Timeout: time.Nanosecond}).Dial("tcp", ln.Addr().String())
	if err == nil {
		t.Skip("the dial won the race with its one-nanosecond timeout")
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)
	c := retry.Classify(err)
	assert.Equal(t, retry.SafetyYes, c.Safety, "%v", err)
	assert.True(t, c.Timeout)
}

// Only the context package's own DeadlineExceeded, the error a caller's
// context returns, is the caller's deadline; an error that merely matches
// it with an Is method, as net/http's header timeout does, is an attempt's.
func TestClassifyCallerDeadlineAndAttemptTimeout(t *testing.T) {
	assert.Equal(t, retry.SafetyNo, retry.Classify(context.DeadlineExceeded).Safety)
	assert.Equal(t, retry.SafetyNo, retry.Classify(&net.OpError{Op: "read", Err: context.DeadlineExceeded}).Safety,
		"the caller's deadline, wrapped")
	c := retry.Classify(attemptTimeout{})
	assert.Equal(t, retry.SafetyYes, c.Safety)
	assert.True(t, c.Timeout)
}

type attemptTimeout struct{}

func (attemptTimeout) Error() string        { return "net/http: timeout awaiting response headers" }
func (attemptTimeout) Timeout() bool        { return true }
func (attemptTimeout) Is(target error) bool { return target == context.DeadlineExceeded }

// hangUp closes the connection of the request it serves without a byte of
// response.
func hangUp(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if !assert.NoError(t, err) {
		return
	}
	conn.Close()
}

// A connection closed before any byte of the response was read is retried
// for a request that may be sent twice, and only for one.
func TestTransportRetriesConnectionClosedBeforeResponse(t *testing.T) {
	for _, tc := range []struct {
		method string
		header string
		want   int64
	}{
		{http.MethodGet, "", 3},
		{http.MethodPut, "", 3},
		{http.MethodDelete, "", 3},
		{http.MethodPost, "Idempotency-Key", 3},
		{http.MethodPost, "", 1},
		{http.MethodPatch, "", 1},
	} {
		t.Run(tc.method+tc.header, func(t *testing.T) {
			srv, count := countingServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
				_, _ = io.Copy(io.Discard, r.Body)
				hangUp(t, w)
			})
			base := &http.Transport{DisableKeepAlives: true} // no transparent retries by net/http
			defer base.CloseIdleConnections()
			client := &http.Client{Transport: &retry.Transport{Base: base, Strategy: quickStrategy(t, 3)}}
			req, err := http.NewRequest(tc.method, srv.URL, strings.NewReader("body"))
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set(tc.header, "k-1")
			}
			resp, err := client.Do(req)
			if resp != nil {
				resp.Body.Close()
			}
			require.Error(t, err)
			assert.Equal(t, tc.want, count.Load())
			assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
		})
	}
}

// staleConnServer serves its second request by closing the connection
// without an answer, as a server that timed out a kept-alive connection
// just as the request arrived; every other request gets 200.
func staleConnServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	return countingServer(t, func(w http.ResponseWriter, r *http.Request, n int64) {
		if n == 2 {
			hangUp(t, w)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
}

// net/http resends an idempotent request by itself when a reused
// connection fails: a hidden attempt. With ExactAttempts the strategy sees
// and counts every attempt, so its limit is the server's count.
func TestTransportExactAttempts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		exact         bool
		maxAttempts   int
		method        string
		header        string
		wantServer    int64 // attempts the server saw for the two requests
		wantSecondErr bool
	}{
		{"hidden attempt by net/http", false, 1, http.MethodGet, "", 3, false},
		{"exact, no retries", true, 1, http.MethodGet, "", 2, true},
		{"exact, retried by the strategy", true, 3, http.MethodGet, "", 3, false},
		{"exact HEAD", true, 1, http.MethodHead, "", 2, true},
		{"exact POST with an idempotency key", true, 1, http.MethodPost, "Idempotency-Key", 2, true},
		{"exact PUT with a body", true, 1, http.MethodPut, "", 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, count := staleConnServer(t)
			base := &http.Transport{}
			defer base.CloseIdleConnections()
			var events []retry.Event
			s, err := retry.NewStandard(retry.WithMaxAttempts(tc.maxAttempts), retry.WithBackoff(retry.NoBackoff),
				retry.WithHook(func(e retry.Event) { events = append(events, e) }))
			require.NoError(t, err)
			client := &http.Client{Transport: &retry.Transport{Base: base, Strategy: s, ExactAttempts: tc.exact}}
			var errs []error
			for range 2 {
				var body io.Reader
				if tc.method == http.MethodPut {
					body = strings.NewReader("payload")
				}
				req, err := http.NewRequest(tc.method, srv.URL, body)
				require.NoError(t, err)
				if tc.header != "" {
					req.Header.Set(tc.header, "k-1")
				}
				resp, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				errs = append(errs, err)
			}
			require.NoError(t, errs[0])
			assert.Equal(t, tc.wantSecondErr, errs[1] != nil, "second request: %v", errs[1])
			assert.Equal(t, tc.wantServer, count.Load(), "attempts the server saw")
			attempts := 0
			for _, e := range events {
				if e.Kind == retry.EventAttempt || e.Kind == retry.EventRetry {
					attempts++
				}
			}
			if tc.exact {
				assert.Equal(t, int(count.Load()), attempts, "the strategy counted every attempt")
			} else {
				assert.Equal(t, 2, attempts, "the strategy saw one attempt per request")
			}
		})
	}
}
