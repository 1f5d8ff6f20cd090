package redisretry

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrykit/retry"
)

// BenchmarkDo: what an admitted request costs with a Fleet in lease mode,
// beside a local Adaptive strategy whose limiter paces at the same rate.
// Both limiters pace (a rate of a billion a second, which the loop never
// reaches), so each call takes a send token. The Fleets hold a lease as a
// refresh would leave it, and never call Redis: a request makes no call in
// lease mode, and callgrind (bench/callgrind.sh) cannot run a benchmark
// that starts a redis-server.
//
//	go test -run '^$' -bench 'Do$' -benchmem . # in redisretry/
func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
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
	const rate = 1e9
	lease := retry.Assignment{Rate: rate, Until: time.Now().Add(time.Hour)}
	b.Run("local-adaptive", func(b *testing.B) {
		l, err := retry.NewRateLimiter()
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Assign(lease); err != nil {
			b.Fatal(err)
		}
		s, err := retry.NewAdaptive(retry.WithRateLimiter(l))
		if err != nil {
			b.Fatal(err)
		}
		run(b, s)
	})
	unreachable := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer unreachable.Close()
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"fleet-lease", []Option{WithRate(rate), WithExactBelow(0)}},
		{"fleet-lease-exact-possible", []Option{WithRate(rate)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			f, err := newFleet(unreachable, "bench", tc.opts)
			if err != nil {
				b.Fatal(err)
			}
			// The lease a refresh gives the only member: the whole rate,
			// leases rather than exact admission at this rate.
			f.ls.share, f.ls.capacity = rate, rate
			if err := f.limiter.Assign(lease); err != nil {
				b.Fatal(err)
			}
			run(b, f.Strategy())
		})
	}
}

// BenchmarkRefresh: what one process's refresh costs in a fleet of 10,000
// members (a round trip on loopback and the script), and what the call
// that divides the capacity at the end of an interval costs: it reads every
// member's record and sorts the wants.
//
//	go test -run '^$' -bench Refresh . # in redisretry/
func BenchmarkRefresh(b *testing.B) {
	ctx := context.Background()
	srv := startRedis(b)
	rdb := srv.client(b)
	clock := newVClock()
	f := newTestFleet(b, rdb, "fleet10k", clock, WithRate(5000), WithExactBelow(0), WithLease(24*time.Hour))
	const members = 10_000
	for i := range members {
		f.cfg.member = fmt.Sprint(i)
		if err := f.refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
	// redisTime reports the time Redis spent in the scripts, a call.
	redisTime := func(b *testing.B, run func()) {
		rdb.ConfigResetStat(ctx)
		run()
		usec, calls := commandUsec(b, rdb, "evalsha")
		b.ReportMetric(float64(usec)/float64(calls), "redis-µs/call")
	}
	b.Run("call", func(b *testing.B) {
		redisTime(b, func() {
			i := 0
			for b.Loop() {
				f.cfg.member = fmt.Sprint(i % members)
				i++
				if err := f.refresh(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("divide", func(b *testing.B) {
		redisTime(b, func() {
			for b.Loop() {
				clock.Advance(f.cfg.interval) // every call ends an interval
				if err := f.refresh(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
