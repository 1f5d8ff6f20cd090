package retry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/retrykit/retry"
)

// one is only read, so work is safe to call from many goroutines.
var one = 1

// work is the function the benchmarks call: near-empty (an increment of a
// value it reads), kept out of line, as in the bench module, so that what
// Do adds to it shows instead of being lost in the work.
//
//go:noinline
func work(context.Context) (int, error) {
	return one + 1, nil
}

// successCases are the ways the benchmarks call work: directly, and
// through Do with each kind of strategy and scope, every strategy shared
// by all calls.
func successCases(b *testing.B) []struct {
	name string
	call func(context.Context) (int, error)
} {
	s, err := retry.NewStandard()
	if err != nil {
		b.Fatal(err)
	}
	a, err := retry.NewAdaptive()
	if err != nil {
		b.Fatal(err)
	}
	standard, adaptive, host := retry.WithStrategy(s), retry.WithStrategy(a), retry.WithScope("api.example.com")
	return []struct {
		name string
		call func(context.Context) (int, error)
	}{
		{"direct", work},
		{"Do/default", func(ctx context.Context) (int, error) { return retry.Do(ctx, work) }},
		{"Do/standard", func(ctx context.Context) (int, error) { return retry.Do(ctx, work, standard) }},
		{"Do/standard-scope", func(ctx context.Context) (int, error) { return retry.Do(ctx, work, standard, host) }},
		{"Do/adaptive", func(ctx context.Context) (int, error) { return retry.Do(ctx, work, adaptive) }},
	}
}

// BenchmarkDoSuccess compares Do succeeding at once with a direct call of
// the same function, in the same run.
func BenchmarkDoSuccess(b *testing.B) {
	ctx := context.Background()
	for _, c := range successCases(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.call(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDoSuccessParallel is BenchmarkDoSuccess from GOMAXPROCS
// goroutines sharing each strategy: with a full bucket, the standard
// strategy's success path takes no lock and writes no shared memory,
// in a named scope too.
func BenchmarkDoSuccessParallel(b *testing.B) {
	for _, c := range successCases(b) {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := c.call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkDoOneRetry is a call that fails once and succeeds when retried
// at once, with the default retry quota: the retry path without waits.
func BenchmarkDoOneRetry(b *testing.B) {
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	transient := retry.Transient(errFlaky)
	failed := false
	fn := func(context.Context) (int, error) {
		if failed = !failed; failed {
			return 0, transient
		}
		return work(ctx)
	}
	opt := retry.WithStrategy(s)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := retry.Do(ctx, fn, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDoScopeChurn uses more named scopes than the strategy keeps,
// in turn, so that every call creates a scope and forgets another: the
// cost of the bound, at the largest bound allowed.
func BenchmarkDoScopeChurn(b *testing.B) {
	s, err := retry.NewStandard(retry.WithMaxScopes(retry.MaxMaxScopes))
	if err != nil {
		b.Fatal(err)
	}
	names := make([]retry.DoOption, 2*retry.MaxMaxScopes)
	for i := range names {
		names[i] = retry.WithScope(fmt.Sprintf("host-%d", i))
	}
	ctx := context.Background()
	opt := retry.WithStrategy(s)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := retry.Do(ctx, work, opt, names[i]); err != nil {
			b.Fatal(err)
		}
		i = (i + 1) % len(names)
	}
}

// BenchmarkDoScopes calls one named scope, and 2, 4, 16 and 128 (the
// default bound) named scopes in turn, as a Transport sending to that many
// hosts does: each scope should cost what one does.
func BenchmarkDoScopes(b *testing.B) {
	s, err := retry.NewStandard()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	opt := retry.WithStrategy(s)
	hosts := make([]retry.DoOption, retry.DefaultMaxScopes)
	for i := range hosts {
		hosts[i] = retry.WithScope(fmt.Sprintf("host-%d.example.com", i))
	}
	for _, n := range []int{1, 2, 4, 16, retry.DefaultMaxScopes} {
		b.Run(fmt.Sprintf("scopes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := retry.Do(ctx, work, opt, hosts[i]); err != nil {
					b.Fatal(err)
				}
				i++
				if i == n {
					i = 0
				}
			}
		})
		b.Run(fmt.Sprintf("scopes=%d/parallel", n), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := retry.Do(ctx, work, opt, hosts[i]); err != nil {
						b.Error(err)
						return
					}
					i++
					if i == n {
						i = 0
					}
				}
			})
		})
	}
}

// BenchmarkDoScopeForms calls one named scope in each way a caller may
// write it: the options kept or made per call, the strategy before or
// after the scope, the default strategy, or the name itself a string made
// anew for each call. Each should cost what the
// first does.
func BenchmarkDoScopeForms(b *testing.B) {
	s, err := retry.NewStandard()
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	opt, host := retry.WithStrategy(s), retry.WithScope("api.example.com")
	// The same name in 1024 strings of their own, as a Transport's host
	// is, parsed anew from each request's URL.
	fresh := make([]retry.DoOption, 1024)
	for i := range fresh {
		fresh[i] = retry.WithScope(strings.Clone("api.example.com"))
	}
	next := 0
	for _, c := range []struct {
		name string
		call func() (int, error)
	}{
		{"kept", func() (int, error) { return retry.Do(ctx, work, opt, host) }},
		{"scope-first", func() (int, error) { return retry.Do(ctx, work, host, opt) }},
		{"made-per-call", func() (int, error) {
			return retry.Do(ctx, work, retry.WithStrategy(s), retry.WithScope("api.example.com"))
		}},
		{"default-strategy", func() (int, error) { return retry.Do(ctx, work, host) }},
		{"name-made-per-call", func() (int, error) {
			next = (next + 1) % len(fresh)
			return retry.Do(ctx, work, opt, fresh[next])
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDoOneRetryParallel is BenchmarkDoOneRetry from GOMAXPROCS
// goroutines sharing the strategy, with a retry quota that is not full
// (a retry that succeeds gives its cost back, so it stays so): every call
// takes tokens from the quota and gives them back.
func BenchmarkDoOneRetryParallel(b *testing.B) {
	quota, err := retry.NewTokenBucket()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := quota.Acquire(100); err != nil {
		b.Fatal(err)
	}
	s, err := retry.NewStandard(retry.WithBackoff(retry.NoBackoff), retry.WithRetryQuota(quota))
	if err != nil {
		b.Fatal(err)
	}
	transient := retry.Transient(errFlaky)
	opt := retry.WithStrategy(s)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		failed := false
		fn := func(context.Context) (int, error) {
			if failed = !failed; failed {
				return 0, transient
			}
			return work(ctx)
		}
		for pb.Next() {
			if _, err := retry.Do(ctx, fn, opt); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if st := quota.Stats(); st.Available != 400 {
		b.Errorf("quota holds %v after the calls, want the 400 it started with", st.Available)
	}
}
