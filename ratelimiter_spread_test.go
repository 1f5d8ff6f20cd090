package retry

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// steppedClock is a clock that moves only when told.
type steppedClock struct{ ns atomic.Int64 }

func (c *steppedClock) Now() time.Time { return time.Unix(0, c.ns.Load()) }

// Once counting successes was contended, they are counted in the spread
// counters, and every one still reaches the window: none is lost, none
// counted twice.
func TestSpreadCountsEverySuccess(t *testing.T) {
	clock := new(steppedClock)
	l, err := NewRateLimiter(WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	l.Update(false) // the first accepted attempt, at 0
	clock.ns.Add(int64(100 * time.Millisecond))

	l.uncounted.read.Store(42)
	l.contended(&l.uncounted) // as a failed compare-and-swap does: counts, and spreads
	sp := l.spread.Load()
	if sp == nil {
		t.Fatal("counting not spread after contention")
	}
	for i := range sp.parts {
		if got := sp.parts[i].read.Load(); got != 42 {
			t.Fatalf("spread counter %d starts from reading %d, want the last reading, 42", i, got)
		}
	}

	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				l.Update(false)
			}
		})
	}
	wg.Wait()
	used := 0
	for i := range sp.parts {
		if sp.parts[i].n.Load() > 0 {
			used++
		}
	}
	if used == 0 {
		t.Fatal("no success counted in the spread counters")
	}
	clock.ns.Add(int64(500 * time.Millisecond)) // into the next window
	l.Update(true)
	// 1 + 1 (the contended one) + 8000 + 1 attempts closed the first 0.5 s window.
	if got, want := l.Stats().MeasuredRate, 8003/0.5; got != want {
		t.Errorf("measured rate %v, want %v: successes were lost or counted twice", got, want)
	}
	for i := range sp.parts {
		if n := sp.parts[i].n.Load(); n != 0 {
			t.Errorf("spread counter %d holds %d after the window closed, want 0", i, n)
		}
	}
}

// Goroutines alive at once, with stacks of their own, pick counters by their stacks'
// addresses: a goroutine keeps to its counter, and goroutines spread over
// several.
func TestSpreadCounterPerGoroutine(t *testing.T) {
	l, err := NewRateLimiter()
	if err != nil {
		t.Fatal(err)
	}
	l.spread.Store(new(spreadCounts))
	picked := make([]*successCount, 16)
	var wg, alive sync.WaitGroup
	alive.Add(len(picked))
	for g := range picked {
		wg.Go(func() {
			alive.Done()
			alive.Wait() // every goroutine alive at once, each on a stack of its own
			c := l.successCounter()
			for range 100 {
				if l.successCounter() != c {
					t.Error("a goroutine's counter changed between calls at the same depth")
					return
				}
			}
			picked[g] = c
		})
	}
	wg.Wait()
	distinct := map[*successCount]bool{}
	for _, c := range picked {
		distinct[c] = true
	}
	if len(distinct) < 4 {
		t.Errorf("16 goroutines picked %d of the 8 counters, want them spread over at least 4", len(distinct))
	}
}

// Two goroutines whose stacks pick the same spread counter would share
// it, and move its cache line between their CPUs at every success, for as
// long as they run (goroutines' stacks come from a pool: the same pairs
// meet again). A compare-and-swap that fails on a spread counter changes
// the salt: the two pick anew, and move apart within a few collisions.
func TestSpreadCountersMoveApartAfterCollision(t *testing.T) {
	l, err := NewRateLimiter()
	if err != nil {
		t.Fatal(err)
	}
	l.contended(&l.uncounted) // spreads the counting
	sp := l.spread.Load()
	// Two stack addresses that pick the same counter with the salt as it is.
	a := uintptr(0x4ee55ce2a)
	b := a + 1
	for sp.salt.pick(b) != sp.salt.pick(a) {
		b++
	}
	collisions := 0
	for sp.salt.pick(a) == sp.salt.pick(b) {
		if collisions++; collisions > 8 {
			t.Fatalf("%#x and %#x still share a counter after %d collisions", a, b, collisions-1)
		}
		before := sp.salt.v.Load()
		l.contended(&sp.parts[sp.salt.pick(a)].successCount) // as their failed compare-and-swap does
		if sp.salt.v.Load() == before {
			t.Fatal("a collision on a spread counter left the salt as it was")
		}
	}
	var n int64
	l.counters(func(c *successCount) { n += c.n.Load() })
	if want := int64(1 + collisions); n != want {
		t.Errorf("counters hold %d successes, want %d: every collision still counts its success", n, want)
	}
}
