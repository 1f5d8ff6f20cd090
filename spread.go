package retry

import (
	"sync/atomic"
	"unsafe"
)

// Spreading a count that goroutines change at the same moment.
//
// A count that goroutines on different CPUs write at once moves its cache
// line from CPU to CPU with every write, so that adding CPUs makes each
// write slower. The rate limiter's count of successes and a retry quota's
// count of tokens therefore start as one count, which costs least when
// one goroutine at a time writes it, and once a write finds it contended
// (a compare-and-swap that fails) spread it over spreadShards parts on
// cache lines of their own, each goroutine writing the part its stack
// picks (a retry's tokens: the part its call picks, see stripeHint), mixed
// with a salt that changes when two of them meet on a part (see
// spreadSalt).

// spreadShards is how many parts a spread count has.
const (
	spreadBits   = 3
	spreadShards = 1 << spreadBits
)

// spreadPad is the size, in bytes, of each part of a spread count, padded:
// never on the same cache line as another part, nor on a pair of lines
// that CPUs prefetch together.
const spreadPad = 128

// A spreadSalt is mixed into the choice of the part of a spread count that
// a goroutine writes. A goroutine is told by the address of its stack (see
// goroutineStack), which is cheap to read and, unlike a random choice,
// stays the same from one call to the next, so that a goroutine that keeps
// to one CPU keeps to one part. Two goroutines whose stacks pick the same
// part would then share it for as long as they run (goroutines' stacks
// come from a pool, so the same pairs meet again and again): a
// compare-and-swap that fails on a part changes the salt, and every
// goroutine picks its part anew. Goroutines that keep meeting move apart
// within a few collisions; a few that meet by chance, among many, cost one
// write each time. (A stack that grows or moves only picks another part:
// every spread count is correct whichever part a goroutine writes.)
type spreadSalt struct {
	v atomic.Uint64
	_ [spreadPad - unsafe.Sizeof(atomic.Uint64{})]byte // the parts' lines stay the parts'
}

// pick returns the part that hint (an address; 0 for the calling
// goroutine's stack) picks, mixed with the salt.
func (s *spreadSalt) pick(hint uintptr) uint64 {
	if hint == 0 {
		hint = goroutineStack()
	}
	return addressHash(hint^uintptr(s.v.Load()), spreadBits)
}

// collided changes the salt after a compare-and-swap on a part failed.
func (s *spreadSalt) collided() { s.v.Add(0x9e3779b97f4a7c15) }

// goroutineStack returns the address of the calling goroutine's stack, to
// the 2 KiB of a goroutine's first stack.
func goroutineStack() uintptr {
	var here byte
	return uintptr(unsafe.Pointer(&here)) >> 11
}

// addressHash maps an address to one of 2^bits slots by Fibonacci
// hashing, which spreads nearby addresses over the slots.
func addressHash(p uintptr, bits uint) uint64 {
	return uint64(p) * 0x9e3779b97f4a7c15 >> (64 - bits)
}
