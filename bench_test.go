package retry_test

import (
	"context"
	"testing"

	"github.com/retrykit/retry"
)

// key is what work hashes.
const key = "retrykit:bench"

// work is the function the benchmarks call: a small piece of real work (an
// FNV-1a hash of a 14-byte key, as in the bench module), kept out of line so
// the direct call and Do call the same code.
//
//go:noinline
func work(context.Context) (int, error) {
	h := uint32(2166136261)
	for i := range len(key) {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return int(h), nil
}

// BenchmarkDoSuccess compares Do succeeding at once with a direct call of
// the same function, in the same run.
func BenchmarkDoSuccess(b *testing.B) {
	ctx := context.Background()
	s, err := retry.NewStandard()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := work(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Do/default", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Do(ctx, work); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Do/standard", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := retry.Do(ctx, work, retry.WithStrategy(s)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkDoSuccessParallel runs Do succeeding at once from many
// goroutines sharing one strategy: with a full bucket it takes no lock.
func BenchmarkDoSuccessParallel(b *testing.B) {
	ctx := context.Background()
	s, err := retry.NewStandard()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := retry.Do(ctx, work, retry.WithStrategy(s)); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
