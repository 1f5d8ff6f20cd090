package retry

import (
	"sync/atomic"
	"unsafe"
)

// Counting successes without the lock. Until the default algorithm first
// cuts the rate, a success within the open measurement window changes
// nothing but the window's count (see RateLimiter.fastUntil).

// countSuccess counts a success without the lock if it falls within the
// open window of the default algorithm before its first cut (see
// fastUntil), and reports whether it did. Most calls, when successes come
// fast, do not read the clock.
func (l *RateLimiter) countSuccess() bool {
	end := l.fastUntil.Load()
	if end == 0 {
		return false
	}
	c := l.successCounter()
	old := c.n.Load()
	if (old+1)&l.fastMask.Load() != 0 {
		// Not this success's turn to read the clock.
		if !c.n.CompareAndSwap(old, old+1) {
			l.contended(c)
		}
		return true
	}
	return l.countReading(c, end)
}

// countReading is countSuccess for a success whose turn it is to read the
// clock: it counts the success in c if the window, which ends at end, is
// still open, and adapts the stride.
func (l *RateLimiter) countReading(c *successCount, end int64) bool {
	elapsed := int64(l.sinceStart())
	l.stride(c, l.fastMask.Load(), elapsed)
	if elapsed >= end {
		return false
	}
	c.n.Add(1)
	return true
}

// successCount counts successes without the lock, and keeps the time
// since start of its last clock reading.
type successCount struct {
	n    atomic.Int64
	read atomic.Int64
}

// spreadCounts are the counters of successes of a limiter that goroutines
// count at the same moment, each on cache lines of its own, and the salt
// mixed into the choice of a counter.
type spreadCounts struct {
	salt  spreadSalt
	parts [spreadShards]struct {
		successCount
		_ [spreadPad - unsafe.Sizeof(successCount{})]byte
	}
}

// successCounter returns the counter a success is counted in: uncounted,
// until counting there was contended, and then the spread counter of the
// calling goroutine (see spreadSalt).
func (l *RateLimiter) successCounter() *successCount {
	sp := l.spread.Load()
	if sp == nil {
		return &l.uncounted
	}
	return &sp.parts[sp.salt.pick(0)].successCount
}

// contended counts a success in c, whose counting was contended: from then
// on the counting is spread, and goroutines that meet on a spread counter
// move apart.
func (l *RateLimiter) contended(c *successCount) {
	c.n.Add(1)
	if sp := l.spread.Load(); sp != nil {
		sp.salt.collided()
		return
	}
	sp := new(spreadCounts)
	read := l.uncounted.read.Load()
	for i := range sp.parts {
		sp.parts[i].read.Store(read)
	}
	l.spread.CompareAndSwap(nil, sp)
}

// counters calls f with every counter of successes counted without the
// lock: uncounted, and the spread ones once there are.
func (l *RateLimiter) counters(f func(*successCount)) {
	f(&l.uncounted)
	if sp := l.spread.Load(); sp != nil {
		for i := range sp.parts {
			f(&sp.parts[i].successCount)
		}
	}
}

// takeUncounted returns the successes counted without the lock, and
// zeroes their counters.
func (l *RateLimiter) takeUncounted() int {
	var n int64
	l.counters(func(c *successCount) { n += c.n.Swap(0) })
	return int(n)
}

// readAt sets the time of the last clock reading of every counter to
// elapsed, the time since start.
func (l *RateLimiter) readAt(elapsed int64) {
	l.counters(func(c *successCount) { c.read.Store(elapsed) })
}

// maxFastStride bounds how many successes share one clock reading.
const maxFastStride = 64

// stride adapts how many successes share one clock reading, from the time
// since c's last reading, which c's last mask+1 successes took: it doubles
// the stride while they take under 0.5% of a measurement window, and when
// they take over 1% it shrinks it to what would have taken 1% (to 1 at
// once when successes slow down a lot). So the successes a window may
// count after its end, fewer than the stride in each counter, arrived
// within about 1% of a window of it when the rate is steady, and a client
// that sends one attempt every 2.5 ms or slower (with the default window)
// reads the clock for each.
func (l *RateLimiter) stride(c *successCount, mask, elapsed int64) {
	took := elapsed - c.read.Swap(elapsed)
	switch limit := int64(l.cfg.window / 100); {
	case took < limit/2 && mask < maxFastStride-1:
		l.fastMask.CompareAndSwap(mask, 2*mask+1)
	case took > limit && mask > 0:
		n := mask + 1
		for n > 1 && n*took > limit*(mask+1) {
			n /= 2 // took/(mask+1) per success: n of them take n*took/(mask+1)
		}
		l.fastMask.CompareAndSwap(mask, n-1)
	}
}
