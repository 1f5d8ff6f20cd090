package retry

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
)

// Goroutines taking and giving back tokens at once, without the lock,
// neither lose nor make tokens, and leave the full flag set exactly when
// the bucket is full (see checkFullFlag; contention may spread it).
func TestTokenBucketLockFreeStress(t *testing.T) {
	for _, start := range []int64{500, 480, 20} { // full; a little below; nearly empty
		b, err := NewTokenBucket()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Acquire(int(500 - start)); err != nil {
			t.Fatal(err)
		}
		takeAndGiveBack(t, b, start, false)
		checkFullFlag(t, b)
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

// A full bucket whose flag lost a race (a take cleared it after a
// give-back refilled the bucket and set it) gets it back from the next
// Release, which finds no room; a failing scope's flag stays down.
func TestTokenBucketFullFlagHeals(t *testing.T) {
	b, err := NewTokenBucket(WithMaxCapacity(10))
	if err != nil {
		t.Fatal(err)
	}
	b.full.Store(false)
	if err := b.Release(1); err != nil {
		t.Fatal(err)
	}
	if held := b.tokens.Load(); held != 10 || !b.full.Load() {
		t.Fatalf("%d tokens held, full flag %v; want 10, set", held, b.full.Load())
	}
	b.failed(Classification{Safety: SafetyYes})
	if err := b.Release(1); err != nil {
		t.Fatal(err)
	}
	if b.full.Load() {
		t.Fatal("a failing scope's full flag is set")
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

// checkFullFlag checks the full flag of b, which goroutines no longer
// use: it is set on a bucket that is not spread exactly when the bucket
// is full, and on a spread one only if it is full, and then once a
// give-back finds no room.
func checkFullFlag(t *testing.T, b *TokenBucket) {
	t.Helper()
	full, spread := b.holdsCapacity(), b.stripes.Load() != nil
	if flag := b.full.Load(); flag != full && (!spread || flag) {
		t.Fatalf("full flag %v with %d tokens held (spread: %v)", flag, b.held(), spread)
	}
	if spread && full {
		if err := b.Release(1); err != nil || !b.full.Load() || b.held() != b.capacity {
			t.Fatalf("a give-back to a full spread bucket: %v, full flag %v, %d held", err, b.full.Load(), b.held())
		}
	}
}

// takeAndGiveBack has 8 goroutines take random numbers of tokens from b
// and give back each take, 20,000 times each; hinted, each take and its
// give-back pick a random stripe (or the goroutine's). At the end the
// bucket holds exactly start tokens, counted part by part.
func takeAndGiveBack(t *testing.T, b *TokenBucket, start int64, hinted bool) {
	t.Helper()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), uint64(start)))
			for range 20_000 {
				n := 1 + r.IntN(10)
				hint := goroutineStripe
				if hinted {
					hint = stripeHint(r.IntN(64)) // 0, the goroutine's stripe, too
				}
				if _, err := b.acquire(n, hint); err == nil {
					if err := b.releaseFor(n, hint); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if got := rawHeld(b); got != start {
		t.Errorf("start %d: bucket holds %d after every take was given back", start, got)
	}
}

// rawHeld returns what b's count and stripes hold, added up without the
// cap held applies; b must be quiet.
func rawHeld(b *TokenBucket) int64 {
	n := b.tokens.Load()
	if sp := b.stripes.Load(); sp != nil {
		for i := range sp.parts {
			n += sp.parts[i].tokens()
		}
	}
	return n
}

// spreadBucket returns a bucket with the defaults but for opts, holding
// start tokens, spread.
func spreadBucket(t *testing.T, start int, opts ...TokenBucketOption) *TokenBucket {
	t.Helper()
	b, err := NewTokenBucket(opts...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(b.cfg.maxCapacity - start); err != nil {
		t.Fatal(err)
	}
	b.spread()
	if b.stripes.Load() == nil {
		t.Fatal("the bucket did not spread")
	}
	if got := b.held(); got != int64(start) {
		t.Fatalf("spreading changed what the bucket holds: %d, want %d", got, start)
	}
	return b
}

// A spread bucket is one quota: a take is paid while the bucket holds
// enough, wherever the tokens are, and refused only when it does not;
// tokens given back are kept up to the capacity, wherever they go, and
// the full flag is set exactly when the bucket is full.
func TestTokenBucketSpreadIsOneQuota(t *testing.T) {
	b := spreadBucket(t, 500)
	if got, want := b.centralCap, int64(500-spreadShards*b.stripeCap); got != want || b.stripeCap != 20 {
		t.Fatalf("stripes of %d, count up to %d; want 20 and %d", b.stripeCap, got, want)
	}
	if !b.full.Load() || !b.holdsCapacity() {
		t.Fatal("a full bucket, spread, is not full")
	}
	// Take every token, in takes of 7 from different stripes (hints),
	// then the last one: the stripes and the count pay all of it.
	for i := range 500 / 7 {
		if _, err := b.acquire(7, stripeHint(1+i*64)); err != nil {
			t.Fatalf("take %d: %v with %d held", i, err, b.held())
		}
	}
	if b.full.Load() {
		t.Fatal("full flag set on a bucket that was taken from")
	}
	if _, err := b.Acquire(500 % 7); err != nil {
		t.Fatalf("the last %d tokens: %v", 500%7, err)
	}
	if _, err := b.Acquire(1); !errors.Is(err, ErrRetryQuotaExceeded) {
		t.Fatalf("an empty spread bucket paid a take: %v", err)
	}
	// Give back more than the capacity, to one stripe: the bucket fills
	// every stripe and the count, and keeps no more.
	for range 600 {
		if err := b.releaseFor(1, 1); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.Stats().Available; got != 500 || !b.full.Load() || !b.holdsCapacity() {
		t.Fatalf("after giving back 600: holds %v, full flag %v; want 500, set", got, b.full.Load())
	}
	// A refused take leaves what it gathered.
	if _, err := b.Acquire(501); !errors.Is(err, ErrRetryQuotaExceeded) || b.held() != 500 {
		t.Fatalf("a take of 501 from 500: %v, %d held after", err, b.held())
	}
}

// Buckets that refill, or too small for stripes of twice the largest cost
// to hold at most half of them, never spread; the others spread on the
// first contended give-back.
func TestTokenBucketSpreadsOnlyWhereItCan(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   []TokenBucketOption
		stripe int64
	}{
		{"defaults", nil, 20},
		{"small", []TokenBucketOption{WithMaxCapacity(100)}, 0},
		{"just large enough", []TokenBucketOption{WithMaxCapacity(320)}, 20},
		{"large costs", []TokenBucketOption{WithTimeoutRetryCost(100)}, 0},
		{"initial try cost", []TokenBucketOption{WithInitialTryCost(12)}, 24},
		{"refills", []TokenBucketOption{WithRefillRate(1)}, 0},
	} {
		b, err := NewTokenBucket(c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if b.stripeCap != c.stripe {
			t.Errorf("%s: stripes of %d tokens, want %d", c.name, b.stripeCap, c.stripe)
		}
		b.spread()
		if spread := b.stripes.Load() != nil; spread != (c.stripe > 0) {
			t.Errorf("%s: spread %v", c.name, spread)
		}
	}
}

// Goroutines taking and giving back tokens at once, on a spread bucket,
// and giving back tokens they did not take (first-attempt successes),
// neither lose nor make tokens they should not: the bucket never holds
// more than its capacity nor less than zero, what was taken and given back
// is all there at the end, and the full flag is set exactly when the
// bucket is full.
func TestTokenBucketSpreadStress(t *testing.T) {
	for _, start := range []int64{500, 480, 200, 20} {
		b := spreadBucket(t, int(start))
		takeAndGiveBack(t, b, start, true)
		checkFullFlag(t, b)

		// Now give back more than was taken, from every goroutine at
		// once, with takes among them: the bucket fills and no more.
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for i := range 2_000 {
					if i%10 == 0 {
						if _, err := b.Acquire(5); err == nil {
							_ = b.Release(5)
						}
					}
					_ = b.Release(1)
				}
			})
		}
		wg.Wait()
		if got := rawHeld(b); got != 500 || !b.full.Load() {
			t.Errorf("start %d: after the increments, holds %d, full flag %v; want 500, set", start, got, b.full.Load())
		}
	}
}

// Spreading while goroutines give back and take tokens, on a bucket that
// has not spread yet, loses and makes no token: each round starts a fresh
// bucket, lets goroutines hammer it, spreads it in the middle, and checks
// the bucket at the end.
func TestTokenBucketSpreadWhileInUse(t *testing.T) {
	for round := range 200 {
		b, err := NewTokenBucket()
		if err != nil {
			t.Fatal(err)
		}
		start := 400 + round%100 // some rounds near the capacity, where give-backs are capped
		if _, err := b.Acquire(500 - start); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for i := range 200 {
					hint := stripeHint(g*1000 + i%3)
					if _, err := b.acquire(5, hint); err == nil {
						_ = b.releaseFor(5, hint)
					}
				}
			})
		}
		wg.Go(b.spread)
		wg.Wait()
		if got := b.held(); got != int64(start) {
			t.Fatalf("round %d: holds %d after every take was given back, want %d", round, got, start)
		}
		checkFullFlag(t, b)
	}
}

// After a collision on a stripe, calls pick their stripes anew: most of
// them move, and the same hint still picks one stripe until the next.
func TestTokenBucketStripesMoveApartAfterCollision(t *testing.T) {
	b := spreadBucket(t, 500)
	sp := b.stripes.Load()
	const calls = 256
	before := make([]*tokenStripe, calls)
	for i := range before {
		before[i] = sp.at(stripeHint(0x1000 + i*0x800)) // addresses of tokens on goroutines' stacks
	}
	sp.salt.collided()
	moved := 0
	for i := range before {
		hint := stripeHint(0x1000 + i*0x800)
		now := sp.at(hint)
		if now != before[i] {
			moved++
		}
		if again := sp.at(hint); again != now {
			t.Fatal("a hint picks different stripes without a collision between")
		}
	}
	if want := calls * (spreadShards - 2) / spreadShards; moved < want {
		t.Errorf("%d of %d calls moved to another stripe after a collision, want at least %d", moved, calls, want)
	}
}

// A give-back that finds no room while room moves around the bucket ahead
// of its look (a take makes room in a stripe it looked at, another
// give-back fills the one it is about to look at) does not drop its
// tokens, however often that happens: it drops them only once the whole
// bucket held its capacity. The hook moves the room, one stripe back, just
// before the give-back reaches it, 100 times.
func TestTokenBucketGiveBackFollowsMovingRoom(t *testing.T) {
	b := spreadBucket(t, 500)
	sp := b.stripes.Load()
	hint := stripeHint(0x1000)
	own := sp.at(hint)
	if _, err := b.acquire(5, hint); err != nil { // the give-back's tokens, from its own stripe
		t.Fatal(err)
	}
	// Fill its own stripe again from the last, so that the room it leaves
	// is elsewhere: the give-back finds its own stripe full.
	last := &sp.parts[spreadShards-1]
	if own == last {
		last = &sp.parts[0]
	}
	if got := last.takeUpTo(5); got != 5 {
		t.Fatalf("took %d from a full stripe, want 5", got)
	}
	if added, _, _ := own.put(5, b.stripeCap); added != 5 {
		t.Fatalf("own stripe took %d back, want 5", added)
	}
	moves := 0
	testHookStripeLook = func(sp *tokenStripes, i int) {
		if moves == 100 || sp.parts[i].tokens() == b.stripeCap {
			return
		}
		// The room is at i: a take from the stripe looked at before i,
		// and a give-back to i, move it there.
		behind := &sp.parts[(i+spreadShards-1)%spreadShards]
		if behind.takeUpTo(5) != 5 {
			t.Fatal("the stripe behind did not hold 5")
		}
		if added, _, _ := sp.parts[i].put(5, b.stripeCap); added != 5 {
			t.Fatal("the room was not at the stripe looked at")
		}
		moves++
	}
	defer func() { testHookStripeLook = nil }()
	if err := b.releaseFor(5, hint); err != nil {
		t.Fatal(err)
	}
	if got := rawHeld(b); got != 500 || moves != 100 {
		t.Fatalf("holds %d after the room moved %d times, want 500 after 100", got, moves)
	}
	checkFullFlag(t, b)
}

// A give-back that comes while a take's overdraft holds the count below
// zero does not let the undo take the count beyond the capacity: the
// steps of takeCentral, with a give-back between them.
func TestTokenBucketOverdraftUndoKeepsCapacity(t *testing.T) {
	b, err := NewTokenBucket(WithMaxCapacity(10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(2); err != nil {
		t.Fatal(err)
	}
	if held := b.tokens.Add(-10); held >= 0 { // a take of 10 from 8 overdraws
		t.Fatalf("count %d after overdrawing", held)
	}
	if err := b.Release(5); err != nil { // 8 + 5: the bucket is full, 3 are dropped
		t.Fatal(err)
	}
	b.putCentral(10) // the overdraft's undo
	if held := b.held(); held != 10 || !b.full.Load() {
		t.Fatalf("holds %d, full flag %v; want 10, set", held, b.full.Load())
	}
}
