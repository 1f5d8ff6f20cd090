package retry

import (
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"
)

// latencySketch estimates quantiles of recent latencies, for the adaptive
// hedge delay. It counts latencies in log-spaced buckets, sketchSub per
// doubling, so a quantile it reports is at most 1/sketchSub (6.25%) above
// the true one and never below it. Counts are kept per window of time; a
// quantile covers the current window and the one before, so the estimate
// follows a latency that shifts within two windows.
//
// Recording is lock-free but for the first record of a new window, which
// clears the slot it reuses. Records racing with that clearing may be lost
// or counted in the new window: the sketch is an estimate, and a few
// samples at a window's edge do not move a quantile.
type latencySketch struct {
	window time.Duration
	mu     sync.Mutex // held to clear a slot for a new window
	slots  [2]sketchSlot
}

const (
	sketchSub     = 16             // buckets per doubling: 6.25% resolution
	sketchBuckets = 40 * sketchSub // up to 2^42 ns, about 73 minutes
)

// sketchSlot holds the counts of one window.
type sketchSlot struct {
	epoch  atomic.Int64 // the window the counts are for: now / window
	n      atomic.Int64
	counts [sketchBuckets]atomic.Uint32
}

// sketchBucket returns the bucket that counts a latency of ns nanoseconds:
// latencies below sketchSub ns each have their own; above, each doubling
// is split in sketchSub equal buckets.
func sketchBucket(ns int64) int {
	if ns < sketchSub {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - 1 // ns is in [2^e, 2^(e+1))
	m := int(uint64(ns)>>(e-4)) & (sketchSub - 1)
	return min((e-3)*sketchSub+m, sketchBuckets-1)
}

// sketchUpper returns the smallest latency, in nanoseconds, above every
// latency bucket i counts.
func sketchUpper(i int) int64 {
	if i < sketchSub {
		return int64(i) + 1
	}
	e, m := i/sketchSub+3, i%sketchSub
	return int64(sketchSub+m+1) << (e - 4)
}

// epochAt returns the window that now falls in.
func (s *latencySketch) epochAt(now time.Time) int64 {
	return now.UnixNano() / int64(s.window)
}

// record counts a latency of d, measured at now, and returns the number of
// latencies recorded in now's window so far.
func (s *latencySketch) record(now time.Time, d time.Duration) int64 {
	w := s.epochAt(now)
	slot := &s.slots[w&1]
	if slot.epoch.Load() != w {
		s.mu.Lock()
		if slot.epoch.Load() != w {
			for i := range slot.counts {
				slot.counts[i].Store(0)
			}
			slot.n.Store(0)
			slot.epoch.Store(w)
		}
		s.mu.Unlock()
	}
	slot.counts[sketchBucket(int64(d))].Add(1)
	return slot.n.Add(1)
}

// quantile returns the q-quantile of the latencies recorded in now's
// window and the one before, and how many there are. With none, it
// returns 0, 0.
func (s *latencySketch) quantile(now time.Time, q float64) (time.Duration, int64) {
	w := s.epochAt(now)
	var live [2]*sketchSlot
	var n int64
	for i := range s.slots {
		if e := s.slots[i].epoch.Load(); e == w || e == w-1 {
			live[i] = &s.slots[i]
			n += s.slots[i].n.Load()
		}
	}
	if n == 0 {
		return 0, 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for b := range sketchBuckets {
		for _, slot := range live {
			if slot != nil {
				seen += int64(slot.counts[b].Load())
			}
		}
		if seen >= rank {
			return time.Duration(sketchUpper(b)), n
		}
	}
	// Records raced with the walk: the counts summed to less than n.
	return time.Duration(sketchUpper(sketchBuckets - 1)), n
}
