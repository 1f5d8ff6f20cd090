package retry_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hangingFirstServer answers every request but the first at once with
// "answer #n"; the first it holds until the client gives up on it.
type hangingFirstServer struct {
	*httptest.Server
	requests  atomic.Int32
	abandoned chan struct{} // closed when the first request's context ended
}

func newHangingFirstServer(t *testing.T) *hangingFirstServer {
	s := &hangingFirstServer{abandoned: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.requests.Add(1)
		if n == 1 {
			<-r.Context().Done()
			close(s.abandoned)
			return
		}
		_, _ = w.Write([]byte("answer #" + string(rune('0'+n))))
	}))
	t.Cleanup(s.Close)
	return s
}

func TestTransportHedgesSlowRequest(t *testing.T) {
	checkLeaks(t)
	srv := newHangingFirstServer(t)
	h := newHedging(t, retry.WithHedgeDelay(time.Millisecond))
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 3), Hedging: h}
	t.Cleanup(tr.CloseIdleConnections)

	resp, err := get(t, tr, srv.URL)

	require.NoError(t, err)
	assert.Equal(t, "answer #2", readBody(t, resp))
	<-srv.abandoned // the hanging attempt was cancelled
	assert.EqualValues(t, 2, srv.requests.Load())
	hs := h.Stats(strings.TrimPrefix(srv.URL, "http://"))
	assert.EqualValues(t, 1, hs.Hedges)
	// The server holds whichever request reaches it first, which is
	// usually, not always, the first attempt: the hedge won, or the first
	// attempt did after the hedge overtook it.
	assert.LessOrEqual(t, hs.Wins, uint64(1))
}

func TestTransportNeverHedgesUnsafeRequests(t *testing.T) {
	checkLeaks(t)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		time.Sleep(20 * time.Millisecond) // slower than the hedge delay; no time is asserted
	}))
	t.Cleanup(srv.Close)
	h := newHedging(t, retry.WithHedgeDelay(time.Millisecond))
	tr := &retry.Transport{Base: srv.Client().Transport, Strategy: fast(t, 3), Hedging: h}
	t.Cleanup(tr.CloseIdleConnections)

	for _, method := range []string{http.MethodPost, http.MethodPatch} {
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL, strings.NewReader("order"))
		require.NoError(t, err)
		resp, err := tr.RoundTrip(req)
		require.NoError(t, err)
		readBody(t, resp)
	}
	// A PUT whose body cannot be sent again is not hedged either.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL, struct{ *strings.Reader }{strings.NewReader("x")})
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	readBody(t, resp)

	assert.EqualValues(t, 3, requests.Load(), "one attempt each")
	assert.Zero(t, h.Stats(strings.TrimPrefix(srv.URL, "http://")).Hedges)
}

func TestTransportHedgeClosesLosingResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Both attempts answer 200, the first after 20 ms, the hedge
		// (sent at 10 ms) after 5 ms: the hedge wins and the first
		// attempt's response, which ignored the cancellation, is closed.
		var mu sync.Mutex
		var bodies []*trackedBody
		var calls atomic.Int32
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			n := calls.Add(1)
			if n == 1 {
				time.Sleep(20 * time.Millisecond)
			} else {
				time.Sleep(5 * time.Millisecond)
			}
			resp, b := response(200, "body")
			mu.Lock()
			bodies = append(bodies, b)
			mu.Unlock()
			return resp, nil
		})
		h := newHedging(t, retry.WithHedgeDelay(10*time.Millisecond))
		tr := &retry.Transport{Base: base, Strategy: newStandard(t), Hedging: h}
		start := time.Now()
		resp, err := get(t, tr, "http://example.com/")
		require.NoError(t, err)
		require.Len(t, bodies, 2)
		winner, loser := bodies[0], bodies[1]
		if resp.Body == bodies[1] {
			winner, loser = bodies[1], bodies[0]
		}
		assert.Same(t, winner, resp.Body)
		assert.False(t, winner.closed)
		assert.True(t, loser.closed, "the losing response was closed")
		// The hedge answered at 10 + 5 ms; RoundTrip returns when the first
		// attempt, which ignored its cancellation, has returned too.
		assert.Equal(t, 20*time.Millisecond, time.Since(start))
	})
}

// A hedged request that failed with a response and then, in the next
// round, with a connection error returns the connection error: the
// earlier round's response is not the last word.
func TestTransportHedgedGiveUpReturnsTheLastRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var bodies []*trackedBody
		var calls atomic.Int32
		refused := errors.New("connection refused")
		base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if calls.Add(1) == 1 {
				resp, b := response(503, "busy")
				bodies = append(bodies, b)
				return resp, nil
			}
			return nil, retry.Transient(refused)
		})
		h := newHedging(t, retry.WithHedgeDelay(time.Hour)) // rounds alone, on the hedged path
		tr := &retry.Transport{Base: base, Strategy: fast(t, 2), Hedging: h}
		resp, err := get(t, tr, "http://example.com/")
		require.ErrorIs(t, err, refused)
		assert.Nil(t, resp)
		assert.EqualValues(t, 2, calls.Load())
		require.Len(t, bodies, 1)
		assert.True(t, bodies[0].closed, "the first round's 503 was closed")
	})
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
