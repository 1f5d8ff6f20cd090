package redisretry_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"
	"github.com/retrykit/retry"
	"github.com/retrykit/retry/redisretry"
)

// Every external-dns of an AWS account shares Route 53's limit of 5
// requests a second. Each process joins the limit once, and sends through
// the fleet's strategy. (The example needs a Redis on localhost:6379, so
// it is compiled but not run by go test.)
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{
		Addr:                  "localhost:6379",
		ContextTimeoutEnabled: true, // a stalled Redis cannot hold an attempt past WithAdmitTimeout
	})
	defer rdb.Close()

	fleet, err := redisretry.New(ctx, rdb, "route53", redisretry.WithRate(5))
	if err != nil {
		log.Fatal(err) // a bad option; a Redis that is down is not an error
	}
	defer fleet.Close()

	listZones := func(ctx context.Context) ([]string, error) { return []string{"example.com."}, nil }
	zones, err := retry.Do(ctx, listZones, retry.WithStrategy(fleet.Strategy()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(zones)

	s := fleet.Stats()
	fmt.Printf("share %.2f of %.2f requests a second, %d processes, exact admission %v\n",
		s.Share, s.Capacity, s.Members, s.Exact)
}

// A limit nobody configured: the fleet learns it from the throttles of all
// its processes, and divides it between them.
func ExampleNew_learned() {
	ctx := context.Background()
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 []string{"localhost:6379"},
		ContextTimeoutEnabled: true,
	})
	defer rdb.Close()

	fleet, err := redisretry.New(ctx, rdb, "partner-api",
		redisretry.WithStrategyOptions(retry.WithMaxAttempts(4)),
		redisretry.WithErrorHandler(func(err error) { log.Print(err) }))
	if err != nil {
		log.Fatal(err)
	}
	defer fleet.Close()
	_ = retry.Run(ctx, func(context.Context) error { return nil }, retry.WithStrategy(fleet.Strategy()))
}
