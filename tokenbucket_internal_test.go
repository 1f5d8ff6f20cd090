package retry

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// Goroutines taking and giving back tokens at once, without the lock,
// neither lose nor make tokens, never report the bucket below zero or
// above its capacity, and leave the full flag set exactly when the bucket
// is full.
func TestTokenBucketLockFreeStress(t *testing.T) {
	for _, start := range []int64{500, 480, 20} { // full; a little below; nearly empty
		b, err := NewTokenBucket()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Acquire(int(500 - start)); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), uint64(start)))
				for range 20_000 {
					n := 1 + r.IntN(10)
					if _, err := b.Acquire(n); err == nil {
						// Takes that fail overdraw the count for a moment;
						// what the bucket reports never leaves its range.
						if held := b.Stats().Available; held < 0 || held > 500 {
							t.Errorf("bucket holds %v, out of [0, 500]", held)
						}
						if err := b.Release(n); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		if got := b.Stats().Available; got != float64(start) {
			t.Errorf("start %d: bucket holds %v after every take was given back, want %d", start, got, start)
		}
		if full := b.full.Load(); full != (b.tokens.Load() == 500) {
			t.Errorf("start %d: full flag %v with %d tokens held", start, full, b.tokens.Load())
		}
	}
}

// Gives back racing to fill the bucket, against takes, never leave the
// full flag set on a bucket that is not full, where Release would skip
// the tokens it should give back.
func TestTokenBucketFullFlagRace(t *testing.T) {
	b, err := NewTokenBucket(WithMaxCapacity(10))
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2000 {
		if _, err := b.Acquire(2); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _ = b.Release(2) }) // fills it
		wg.Go(func() {                     // takes from it, before or after
			if _, err := b.Acquire(1); err == nil {
				_ = b.Release(1)
			}
		})
		wg.Wait()
		if held := b.tokens.Load(); held != 10 || !b.full.Load() {
			t.Fatalf("round %d: %d tokens held, full flag %v; want 10, set", round, held, b.full.Load())
		}
	}
}

// A failing scope holds its bucket's full flag down, so that first-attempt
// successes reach succeeded; when the failure ends, a bucket that holds
// its capacity sets it again, so that they cost one atomic load again.
// Both kinds of bucket: counted, and refilling under the lock.
func TestRetryBudgetFullFlag(t *testing.T) {
	for _, refill := range []float64{0, 1000} {
		cfg := defaultBucketConfig()
		cfg.refillRate = refill
		b := newTokenBucket(cfg)
		b.failed(Classification{Safety: SafetyYes})
		if b.full.Load() || !b.failing.Load() {
			t.Fatalf("refill %v: failing, the full flag is %v", refill, b.full.Load())
		}
		if err := b.Release(1); err != nil || b.full.Load() {
			t.Fatalf("refill %v: a release to a full bucket set the flag of a failing scope", refill)
		}
		b.succeeded()
		if !b.full.Load() || b.failing.Load() {
			t.Fatalf("refill %v: recovered, full %v failing %v", refill, b.full.Load(), b.failing.Load())
		}
		b.failed(Classification{Safety: SafetyYes, Throttle: true})
		if !b.full.Load() || b.failing.Load() {
			t.Fatalf("refill %v: a throttle started a failure", refill)
		}
	}
}
