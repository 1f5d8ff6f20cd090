package awsretry_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	sdkretry "github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/retrykit/retry"
	"github.com/retrykit/retry/awsretry"
)

// BenchmarkGetItem compares a whole DynamoDB GetItem call, against an
// in-memory fake, retried by the SDK's own standard retryer and by a
// retrykit strategy through awsretry, on success and after two failures
// (503). Neither waits a backoff or keeps a retry quota, so that the rows
// differ only by what each retryer does per attempt.
//
//	go test -run '^$' -bench GetItem -benchmem . # in awsretry/
func BenchmarkGetItem(b *testing.B) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithoutRetryQuota())
	if err != nil {
		b.Fatal(err)
	}
	noWait := sdkretry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	retryers := []struct {
		name string
		opt  func(*config.LoadOptions) error
	}{
		{"sdk-standard", config.WithRetryer(func() aws.Retryer {
			return sdkretry.NewStandard(func(o *sdkretry.StandardOptions) {
				o.Backoff, o.RateLimiter = noWait, ratelimit.None
			})
		})},
		{"awsretry", awsretry.WithStrategy(s)},
	}
	for _, failures := range []int{0, 2} {
		script := func(string) []reply {
			r := make([]reply, failures)
			for i := range r {
				r[i] = unavailable
			}
			return r
		}
		for _, r := range retryers {
			b.Run(fmt.Sprintf("%s/failures=%d", r.name, failures), func(b *testing.B) {
				fake := newFake(script)
				client := newClient(b, fake, "", r.opt)
				ctx := context.Background()
				keys := make([]string, b.N)
				for i := range keys {
					keys[i] = fmt.Sprint("k", i)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					if err := get(ctx, client, keys[i]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
