package retry_test

import (
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
