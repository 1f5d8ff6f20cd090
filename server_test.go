package retry_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/retrykit/retry"
)

// chain starts a bottom service that answers every request with status,
// and layers services above it, each of which serves a request by calling
// the one below through a Transport of 3 attempts (no backoff) and
// answering with its status. It returns the top service's URL and the
// number of requests the bottom one saw. wrap, if not nil, wraps each
// layer's handler.
func chain(t *testing.T, status, layers int, wrap func(http.Handler) http.Handler) (string, *atomic.Int64) {
	t.Helper()
	bottom, count := countingServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
		w.WriteHeader(status)
	})
	url := bottom.URL
	for range layers {
		below := url
		client := &http.Client{Transport: &retry.Transport{Strategy: quickStrategy(t, 3), SendAttempts: true}}
		var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, below, nil)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			resp, err := client.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			w.WriteHeader(resp.StatusCode)
		})
		if wrap != nil {
			h = wrap(h)
		}
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		url = srv.URL
	}
	return url, count
}

// withPolicy returns a wrapper that serves a handler with NewHandler
// under policy p.
func withPolicy(p retry.LayerPolicy) func(*testing.T) func(http.Handler) http.Handler {
	return func(t *testing.T) func(http.Handler) http.Handler {
		return func(h http.Handler) http.Handler {
			w, err := retry.NewHandler(h, retry.WithLayerPolicy(p))
			require.NoError(t, err)
			return w
		}
	}
}

var nearest = withPolicy(retry.RetryNearestFailure)

// Three layers of 3 attempts each (the user's client and two services
// calling the bottom one, which fails every request): without
// coordination the bottom sees 27 attempts per user request; with
// NewHandler's default policy, 3.
func TestLayersDoNotMultiplyRetries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wrap   func(*testing.T) func(http.Handler) http.Handler
		status int
		want   int64
	}{
		{"no coordination, failing", func(*testing.T) func(http.Handler) http.Handler { return nil }, http.StatusServiceUnavailable, 27},
		{"nearest failure, failing", nearest, http.StatusServiceUnavailable, 3},
		{"nearest failure, throttling", nearest, http.StatusTooManyRequests, 3},
		{"every layer, failing", withPolicy(retry.RetryEveryLayer), http.StatusServiceUnavailable, 27},
		{"nearest failure, not retryable", nearest, http.StatusNotFound, 1},
		// The top retries; the layers below retry only on their caller's
		// last attempt: 1 + 1 + (1 + 1 + 3).
		{"if caller won't, failing", withPolicy(retry.RetryIfCallerWont), http.StatusServiceUnavailable, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			top, bottom := chain(t, tc.status, 2, tc.wrap(t))
			user := &http.Client{Transport: &retry.Transport{Strategy: quickStrategy(t, 3), SendAttempts: true}}
			resp, err := user.Get(top)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.want, bottom.Load(), "attempts at the bottom for one user request")
		})
	}
}

// A success costs the handler nothing more than its wrapper, and is
// answered with no header.
func TestHandlerSuccessUntouched(t *testing.T) {
	top, bottom := chain(t, http.StatusOK, 2, nearest(t))
	resp, err := http.Get(top)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Empty(t, resp.Header.Get(retry.NoRetryHeader))
	assert.Equal(t, int64(1), bottom.Load())
}

// A handler says itself that a retry cannot help; Transport honours it,
// and a "true" makes it retry what it otherwise would not.
func TestTransportHonoursNoRetryHeader(t *testing.T) {
	for _, tc := range []struct {
		value  string
		status int
		want   int64
	}{
		{"false", http.StatusServiceUnavailable, 1},
		{"FALSE", http.StatusServiceUnavailable, 1},
		{"true", http.StatusInternalServerError + 1, 3}, // 501 is not retried without it
		{"maybe", http.StatusServiceUnavailable, 3},
	} {
		t.Run(tc.value, func(t *testing.T) {
			srv, count := countingServer(t, func(w http.ResponseWriter, r *http.Request, _ int64) {
				if tc.value == "false" {
					retry.DontRetry(w)
				} else {
					w.Header().Set(retry.NoRetryHeader, tc.value)
				}
				w.WriteHeader(tc.status)
			})
			client := &http.Client{Transport: &retry.Transport{Strategy: quickStrategy(t, 3)}}
			resp, err := client.Get(srv.URL)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Equal(t, tc.want, count.Load())
		})
	}
	retry.DontRetry(nil) // does nothing
}

// With SendAttempts, each attempt says its number and the limit, and the
// handler reads them.
func TestInboundAttempts(t *testing.T) {
	var seen []string
	h, err := retry.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, ok := retry.InboundFromContext(r.Context())
		seen = append(seen, fmt.Sprintf("%v %d/%d will retry: %v", ok, in.Attempt, in.MaxAttempts, in.WillRetry()))
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: &retry.Transport{Strategy: quickStrategy(t, 3), SendAttempts: true}}
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, []string{"true 1/3 will retry: true", "true 2/3 will retry: true", "true 3/3 will retry: false"}, seen)
	assert.Empty(t, req.Header, "the caller's request is unchanged")
}

func TestParseAttemptHeader(t *testing.T) {
	var got retry.Inbound
	var ok bool
	h, err := retry.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok = retry.InboundFromContext(r.Context())
	}))
	require.NoError(t, err)
	for _, tc := range []struct {
		header string
		want   retry.Inbound
		ok     bool
	}{
		{"attempt=1; max=3", retry.Inbound{Attempt: 1, MaxAttempts: 3}, true},
		{" max=5 ;attempt=2 ", retry.Inbound{Attempt: 2, MaxAttempts: 5}, true},
		{"attempt=4", retry.Inbound{Attempt: 4}, true},
		{"", retry.Inbound{}, false},
		{"attempt=0; max=3", retry.Inbound{}, false},
		{"attempt=4; max=3", retry.Inbound{}, false},
		{"attempt=-1", retry.Inbound{}, false},
		{"attempt=1; max=99999999999999999999", retry.Inbound{}, false},
		{"attempt=1; ttl=5", retry.Inbound{}, false},
		{"attempt", retry.Inbound{}, false},
		{"attempt=1; max=3; " + string(make([]byte, 100)), retry.Inbound{}, false},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if tc.header != "" {
			r.Header.Set(retry.AttemptHeader, tc.header)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		assert.Equal(t, tc.ok, ok, "%q", tc.header)
		assert.Equal(t, tc.want, got, "%q", tc.header)
	}
	_, ok = retry.InboundFromContext(context.Background())
	assert.False(t, ok)
	var nilCtx context.Context
	_, ok = retry.InboundFromContext(nilCtx) // a nil context is no request's, not a panic
	assert.False(t, ok)
}

func TestNewHandlerBadInput(t *testing.T) {
	ok := http.NotFoundHandler()
	for _, tc := range []struct {
		h    http.Handler
		opts []retry.HandlerOption
		want string
	}{
		{nil, nil, "NewHandler handler"},
		{ok, []retry.HandlerOption{nil}, "NewHandler opts[0]"},
		{ok, []retry.HandlerOption{retry.WithLayerPolicy(7)}, "WithLayerPolicy"},
		{ok, []retry.HandlerOption{retry.WithLayerPolicy(-1)}, "RetryNearestFailure, RetryEveryLayer or RetryIfCallerWont"},
	} {
		h, err := retry.NewHandler(tc.h, tc.opts...)
		assert.Nil(t, h)
		require.ErrorIs(t, err, retry.ErrInvalidConfig)
		assert.ErrorContains(t, err, tc.want)
	}
	assert.Equal(t, "nearest-failure", retry.RetryNearestFailure.String())
	assert.Equal(t, "every-layer", retry.RetryEveryLayer.String())
	assert.Equal(t, "if-caller-wont", retry.RetryIfCallerWont.String())
	assert.Equal(t, "LayerPolicy(7)", retry.LayerPolicy(7).String())
}

// Do, given a request's context, tells the handler when it gave up, so
// that the handler's failing answer says not to retry.
func TestDoGiveUpMarksHandler(t *testing.T) {
	h, err := retry.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := retry.Do(r.Context(), func(context.Context) (int, error) {
			return 0, retry.Transient(errors.New("down"))
		}, retry.WithStrategy(quickStrategy(t, 2)))
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}))
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, "false", rec.Header().Get(retry.NoRetryHeader))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
}

// BenchmarkHandler is the cost NewHandler adds to a handler's success.
//
//	go test -run '^$' -bench Handler -benchmem .
func BenchmarkHandler(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	wrapped, err := retry.NewHandler(ok)
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
	}{{"plain", ok}, {"NewHandler", wrapped}} {
		b.Run(tc.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Header.Set(retry.AttemptHeader, "attempt=1; max=3")
			w := discardWriter{}
			b.ReportAllocs()
			for b.Loop() {
				tc.h.ServeHTTP(w, r)
			}
		})
	}
}

type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}

// NewLayer is the building block for servers of other protocols.
func TestNewLayer(t *testing.T) {
	l, err := retry.NewLayer(retry.RetryNearestFailure, retry.Inbound{Attempt: 2, MaxAttempts: 3})
	require.NoError(t, err)
	ctx := l.Context(t.Context())
	in, ok := retry.InboundFromContext(ctx)
	assert.True(t, ok)
	assert.Equal(t, retry.Inbound{Attempt: 2, MaxAttempts: 3}, in)
	assert.False(t, l.GaveUp())
	retry.ReportGiveUp(ctx, &retry.Error{Attempts: 1, Reason: retry.ErrNotRetryable}) // a 404: nothing to pass on
	assert.False(t, l.GaveUp())
	retry.ReportGiveUp(ctx, &retry.Error{Attempts: 3, Reason: retry.ErrMaxAttemptsExceeded})
	assert.True(t, l.GaveUp())
	var nilCtx context.Context
	retry.ReportGiveUp(nilCtx, nil) // does nothing

	every, err := retry.NewLayer(retry.RetryEveryLayer, retry.Inbound{})
	require.NoError(t, err)
	retry.ReportGiveUp(every.Context(t.Context()), &retry.Error{Attempts: 3, Reason: retry.ErrRetryQuotaExceeded})
	assert.False(t, every.GaveUp(), "RetryEveryLayer passes nothing on")
	_, ok = retry.InboundFromContext(every.Context(t.Context()))
	assert.False(t, ok)

	for _, in := range []retry.Inbound{{Attempt: 0, MaxAttempts: 3}, {Attempt: 4, MaxAttempts: 3}, {Attempt: 1, MaxAttempts: -1}} {
		_, err := retry.NewLayer(retry.RetryNearestFailure, in)
		require.ErrorIs(t, err, retry.ErrInvalidConfig, "%+v", in)
	}
	_, err = retry.NewLayer(9, retry.Inbound{})
	require.ErrorIs(t, err, retry.ErrInvalidConfig)
}

func TestLayerRefusal(t *testing.T) {
	for _, tc := range []struct {
		policy retry.LayerPolicy
		in     retry.Inbound
		refuse bool
	}{
		{retry.RetryIfCallerWont, retry.Inbound{Attempt: 1, MaxAttempts: 3}, true},
		{retry.RetryIfCallerWont, retry.Inbound{Attempt: 3, MaxAttempts: 3}, false},
		{retry.RetryIfCallerWont, retry.Inbound{Attempt: 1}, false}, // the limit unknown
		{retry.RetryIfCallerWont, retry.Inbound{}, false},
		{retry.RetryNearestFailure, retry.Inbound{Attempt: 1, MaxAttempts: 3}, false},
	} {
		l, err := retry.NewLayer(tc.policy, tc.in)
		require.NoError(t, err)
		err = retry.LayerRefusal(l.Context(t.Context()))
		assert.Equal(t, tc.refuse, errors.Is(err, retry.ErrCallerWillRetry), "%v %+v: %v", tc.policy, tc.in, err)
	}
	assert.NoError(t, retry.LayerRefusal(t.Context()))

	// Do stops after one attempt, with the reason.
	l, err := retry.NewLayer(retry.RetryIfCallerWont, retry.Inbound{Attempt: 1, MaxAttempts: 2})
	require.NoError(t, err)
	calls := 0
	_, err = retry.Do(l.Context(t.Context()), func(context.Context) (int, error) {
		calls++
		return 0, retry.Transient(errors.New("down"))
	}, retry.WithStrategy(quickStrategy(t, 3)))
	require.ErrorIs(t, err, retry.ErrCallerWillRetry)
	assert.ErrorContains(t, err, "attempt 1 of 2")
	assert.Equal(t, 1, calls)
}

// A call that does not retry because its caller will is one EventGiveUp.
func TestLayerRefusalEvent(t *testing.T) {
	var kinds []retry.EventKind
	var reason error
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithHook(func(e retry.Event) {
		kinds = append(kinds, e.Kind)
		reason = e.Reason
	}))
	require.NoError(t, err)
	l, err := retry.NewLayer(retry.RetryIfCallerWont, retry.Inbound{Attempt: 1, MaxAttempts: 3})
	require.NoError(t, err)
	_, err = retry.Do(l.Context(t.Context()), func(context.Context) (int, error) {
		return 0, retry.Transient(errors.New("down"))
	}, retry.WithStrategy(s))
	require.ErrorIs(t, err, retry.ErrCallerWillRetry)
	assert.Equal(t, []retry.EventKind{retry.EventAttempt, retry.EventGiveUp}, kinds)
	assert.ErrorIs(t, reason, retry.ErrCallerWillRetry)
}
