package redisretry

import (
	"context"
	"testing"
	"time"

	"github.com/retrykit/retry"
)

// BenchmarkDo: what an admitted request costs with a Fleet in lease mode,
// beside a local Adaptive strategy whose limiter paces at the same rate.
// Both limiters pace (a rate of a billion a second, which the loop never
// reaches), so each call takes a send token.
//
//	go test -run '^$' -bench Do -benchmem ./redisretry
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	srv := startRedis(b)
	rdb := srv.client(b)
	work := func(context.Context) (int, error) { return 1, nil }
	run := func(b *testing.B, s retry.RetryStrategy) {
		opt := retry.WithStrategy(s)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Do(ctx, work, opt); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("local-adaptive", func(b *testing.B) {
		l, err := retry.NewRateLimiter()
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Assign(retry.Assignment{Rate: 1e9, Until: time.Now().Add(time.Hour)}); err != nil {
			b.Fatal(err)
		}
		s, err := retry.NewAdaptive(retry.WithRateLimiter(l))
		if err != nil {
			b.Fatal(err)
		}
		run(b, s)
	})
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"fleet-lease", []Option{WithRate(1e9 / (1 - DefaultHeadroom)), WithExactBelow(0), WithInterval(time.Hour)}},
		{"fleet-lease-exact-possible", []Option{WithRate(1e9 / (1 - DefaultHeadroom)), WithInterval(time.Hour)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f, err := New(ctx, rdb, "bench-"+tc.name, tc.opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if s := f.Stats(); !s.Connected || s.Exact {
				b.Fatalf("not in lease mode: %+v", s)
			}
			run(b, f.Strategy())
		})
	}
}
