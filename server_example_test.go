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

// A service between a client and a failing database: each retries 3
// times, yet the database sees 3 attempts per user request, not 9, because
// the service, wrapped with NewHandler, answers "don't retry" once its own
// retries gave up.
func ExampleNewHandler() {
	var dbAttempts atomic.Int32
	db := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dbAttempts.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer db.Close()

	strategy, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: &retry.Transport{Strategy: strategy}}
	service, err := retry.NewHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, db.URL, nil) // the request's context
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
	}))
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(service)
	defer srv.Close()

	resp, err := client.Get(srv.URL) // the user's client retries too
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get(retry.NoRetryHeader))
	fmt.Println("database attempts:", dbAttempts.Load())
	// Output:
	// 503 Service Unavailable false
	// database attempts: 3
}
