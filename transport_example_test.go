package retry_test

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/retrykit/retry"
)

// A Transport makes any http.Client retry: here a server that is
// unavailable twice, then answers.
func ExampleTransport() {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "hello")
	}))
	defer srv.Close()

	// The zero Transport would do; this one waits no backoff, to keep the
	// example fast.
	strategy, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: &retry.Transport{Strategy: strategy}}
	defer client.CloseIdleConnections()

	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s after %d requests: %s", resp.Status, requests.Load(), body)
	// Output: 200 OK after 3 requests: hello
}

// With ExactAttempts, the strategy's attempt limit is the number of
// attempts the server sees: net/http does not resend a request by itself
// when a kept-alive connection turns out closed. Here the server drops the
// connection of the second request without an answer; the strategy,
// allowed one attempt, does not try again, and neither does net/http.
func ExampleTransport_exactAttempts() {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 2 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close() // a connection closed under the request
			}
			return
		}
		fmt.Fprintln(w, "hello")
	}))
	defer srv.Close()

	strategy, err := retry.NewStandard(retry.WithMaxAttempts(1))
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: &retry.Transport{Base: &http.Transport{}, Strategy: strategy, ExactAttempts: true}}
	defer client.CloseIdleConnections()
	for range 2 {
		resp, err := client.Get(srv.URL)
		if err != nil {
			fmt.Println("failed:", errors.Is(err, io.EOF))
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body) // read to the end: the connection is kept alive
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	fmt.Println("requests the server saw:", requests.Load())
	// Output:
	// 200 OK
	// failed: true
	// requests the server saw: 2
}
