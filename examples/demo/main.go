// Command demo shows retrykit at work on a flaky service and on an outage.
//
//	go run ./examples/demo
//
// It uses only the standard library and the retry package, and finishes in
// about a second.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/retrykit/retry"
)

// httpError is a failed response, as an API client would return it.
type httpError struct{ status int }

func (e *httpError) Error() string       { return fmt.Sprintf("HTTP %d", e.status) }
func (e *httpError) HTTPStatusCode() int { return e.status }

// service answers with the given statuses in turn, then 200, and counts
// every request it serves.
type service struct {
	statuses []int
	served   int
}

func (s *service) call(ctx context.Context) (string, error) {
	s.served++
	if s.served <= len(s.statuses) {
		return "", &httpError{status: s.statuses[s.served-1]}
	}
	return "200 OK", nil
}

func main() {
	ctx := context.Background()
	backoff, err := retry.NewExponentialBackoff(retry.WithInitialDelay(50*time.Millisecond), retry.WithScaleFactor(2))
	if err != nil {
		log.Fatal(err)
	}

	fmt.Println("1. A flaky service: two 503s, then success.")
	strategy, err := retry.NewStandard(retry.WithBackoff(backoff))
	if err != nil {
		log.Fatal(err)
	}
	flaky := &service{statuses: []int{503, 503}}
	start := time.Now()
	v, err := retry.Do(ctx, flaky.call, retry.WithStrategy(strategy))
	fmt.Printf("   result %q, error %v, %d requests, %v\n\n", v, err, flaky.served, time.Since(start).Round(10*time.Millisecond))

	fmt.Println("2. A client error (404) is not retried.")
	missing := &service{statuses: []int{404}}
	_, err = retry.Do(ctx, missing.call, retry.WithStrategy(strategy))
	fmt.Printf("   %v\n   requests: %d, not retryable: %v\n\n", err, missing.served, errors.Is(err, retry.ErrNotRetryable))

	fmt.Println("3. An outage: every request fails with 500. 40 calls, 3 attempts each at most,")
	fmt.Println("   sharing a retry quota of 50 tokens (5 per retry).")
	quota, err := retry.NewTokenBucket(retry.WithMaxCapacity(50))
	if err != nil {
		log.Fatal(err)
	}
	outage, err := retry.NewStandard(retry.WithRetryQuota(quota), retry.WithBackoff(retry.NoBackoff))
	if err != nil {
		log.Fatal(err)
	}
	down := &service{statuses: make([]int, 1000)}
	for i := range down.statuses {
		down.statuses[i] = 500
	}
	for call := 1; call <= 40; call++ {
		before := down.served
		_, err := retry.Do(ctx, down.call, retry.WithStrategy(outage))
		if call <= 6 || call%10 == 0 {
			fmt.Printf("   call %2d: %d requests, quota left %2.0f, quota exceeded: %v\n",
				call, down.served-before, quota.Stats().Available, errors.Is(err, retry.ErrRetryQuotaExceeded))
		}
	}
	fmt.Printf("   40 calls sent %d requests: %.2f per call. Without a quota: 120 (3.00 per call).\n",
		down.served, float64(down.served)/40)
}
