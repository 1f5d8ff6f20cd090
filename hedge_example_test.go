package retry_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/retrykit/retry"
)

// A call whose first attempt hangs is answered by its hedge, sent 10 ms
// later; the hanging attempt is cancelled before DoHedged returns.
func ExampleDoHedged() {
	hedging, err := retry.NewHedging(retry.WithHedgeDelay(10 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	var attempts atomic.Int32
	getItem := func(ctx context.Context) (string, error) {
		n := attempts.Add(1)
		if n == 1 {
			<-ctx.Done() // a replica stuck in a pause
			return "", ctx.Err()
		}
		return fmt.Sprintf("item from attempt %d", n), nil
	}

	item, err := retry.DoHedged(context.Background(), getItem, hedging)
	if err != nil {
		log.Fatal(err)
	}
	stats := hedging.Stats("")
	fmt.Println(item)
	fmt.Printf("calls %d, hedges %d, won by a hedge %d\n", stats.Calls, stats.Hedges, stats.Wins)
	// Output:
	// item from attempt 2
	// calls 1, hedges 1, won by a hedge 1
}

// Transport hedges the requests it would retry. Here the server holds the
// first request to reach it until the client gives up on it, and answers
// the other.
func ExampleTransport_hedging() {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == 1 {
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, "hello from the request not held")
	}))
	defer srv.Close()

	hedging, err := retry.NewHedging(retry.WithHedgeDelay(5 * time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Transport: &retry.Transport{Base: srv.Client().Transport, Hedging: hedging}}
	resp, err := client.Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Status, string(body))
	// Output: 200 OK hello from the request not held
}
