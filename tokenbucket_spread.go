package retry

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// A retry quota's count, spread.
//
// A bucket that does not refill counts its tokens in one atomic count. Many
// goroutines retrying at once against a bucket that is not full take
// tokens from it and give them back with every call, and so move its cache
// line between their CPUs twice a call: on two CPUs a call then takes
// longer than on one. Once giving tokens back finds the count contended
// (a compare-and-swap that fails), the bucket spreads it (see spread.go):
// each of spreadShards stripes holds up to stripeCap tokens of its own,
// and the count keeps the rest, up to centralCap = capacity -
// spreadShards*stripeCap, so that the tokens held never exceed the
// capacity. A call's retries take from its stripe (see stripeHint), else
// from the count, and give back to its stripe, then to the count, so that
// goroutines that keep retrying and succeeding each work on a line no
// other CPU writes; goroutines that meet on a stripe move apart (see
// collided).
//
// The quota stays one quota. A take that neither its stripe nor the count
// can pay gathers from every stripe before it is refused, so that it is
// refused only when the tokens held in all are fewer than it needs (of
// takes racing on a nearly empty bucket, one may be refused that a moment
// later would have been paid, as without stripes). Tokens given back that
// find the stripe and the count full go to any stripe with room; they are
// dropped only when the whole bucket held its capacity at one moment while
// they looked, as without stripes, and set the full flag then. Room moves
// while a give-back looks, as takes make it behind the look and other
// give-backs fill it ahead, so "every part looked full" is not enough: a
// stripe's word counts the takes from it beside its tokens, and a
// give-back that found no room reads every stripe again. If none was taken
// from since it looked, each stayed full from its look until then, and the
// count, read once between, was full too: at that moment the bucket held
// its capacity. Otherwise it looks again (a take made room, so looking
// again is progress). Stats adds up the stripes and the count.

// tokenStripes are the stripes of a spread bucket, and the salt mixed into
// the choice of a stripe.
type tokenStripes struct {
	salt  spreadSalt
	parts [spreadShards]tokenStripe
}

// A tokenStripe holds up to a bucket's stripeCap tokens, in the low
// stripeCountBits of its word, and counts the takes from it, modulo 2^32,
// in the high bits (see putRest). Only takes change the count of takes:
// a word that reads the same twice saw no take between.
type tokenStripe struct {
	w atomic.Uint64
	_ [spreadPad - unsafe.Sizeof(atomic.Uint64{})]byte
}

const (
	stripeCountBits = 32
	stripeCountMask = 1<<stripeCountBits - 1
	stripeTake      = 1 << stripeCountBits // added to a word by each take

	// maxStripeCap is the most tokens a stripe holds: a bucket whose
	// costs would need more does not spread.
	maxStripeCap = 1 << 30
)

// tokens returns what s holds.
func (s *tokenStripe) tokens() int64 { return int64(s.w.Load() & stripeCountMask) }

// take takes n from s if s holds n, and reports whether it did, and
// whether a compare-and-swap failed on the way.
func (s *tokenStripe) take(n int64) (ok, contended bool) {
	for {
		w := s.w.Load()
		if int64(w&stripeCountMask) < n {
			return false, contended
		}
		if s.w.CompareAndSwap(w, w-uint64(n)+stripeTake) { // no borrow: the count holds n
			return true, contended
		}
		contended = true
	}
}

// takeUpTo takes up to n from s, as much as s holds, and returns how
// much.
func (s *tokenStripe) takeUpTo(n int64) int64 {
	for {
		w := s.w.Load()
		k := min(n, int64(w&stripeCountMask))
		if k <= 0 {
			return 0
		}
		if s.w.CompareAndSwap(w, w-uint64(k)+stripeTake) {
			return k
		}
	}
}

// put adds up to n to s, no further than limit, and returns how much, the
// word it left s with or found full, and whether a compare-and-swap failed
// on the way.
func (s *tokenStripe) put(n, limit int64) (added int64, seen uint64, contended bool) {
	for {
		w := s.w.Load()
		k := min(n, limit-int64(w&stripeCountMask))
		if k <= 0 {
			return 0, w, contended
		}
		if s.w.CompareAndSwap(w, w+uint64(k)) {
			return k, w + uint64(k), contended
		}
		contended = true
	}
}

// stripeHint tells a spread bucket which stripe a call takes tokens from
// and gives them back to: the address of what it takes them for, a retry
// token, which is the same from the call's first take to its last
// give-back however deep in its goroutine's stack each happens, and stays
// the same from one call to the next of a goroutine that keeps its token
// on its stack (Do does); or goroutineStripe, 0, for the calling
// goroutine's stack (see spreadSalt).
type stripeHint uintptr

const goroutineStripe stripeHint = 0

// at returns the stripe that hint picks, mixed with the stripes' salt.
func (sp *tokenStripes) at(hint stripeHint) *tokenStripe {
	return &sp.parts[sp.salt.pick(uintptr(hint))]
}

// stripeCapFor returns the most tokens each stripe of a bucket with cfg
// holds once spread: twice the largest cost of a try, so that a stripe can
// pay a retry and take its refund back, or 0, not to spread, when the
// stripes would hold more than half the bucket's capacity or more than
// maxStripeCap each, or when the bucket refills (it counts under its
// lock).
func stripeCapFor(cfg bucketConfig) int64 {
	most := max(cfg.retryCost, cfg.timeoutRetryCost, cfg.throttlingRetryCost, cfg.initialTryCost, 1)
	c := 2 * int64(most) // costs are at most 2^53: no overflow
	if cfg.refillRate != 0 || c > maxStripeCap || c*spreadShards > int64(cfg.maxCapacity)/2 {
		return 0
	}
	return c
}

// spread spreads the count of b, unless it is spread already or too small
// to spread: the count keeps at most centralCap tokens, and what it holds
// beyond goes to the stripes, which can hold it all.
func (b *TokenBucket) spread() {
	if b.stripeCap == 0 || b.stripes.Load() != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stripes.Load() != nil {
		return
	}
	sp := new(tokenStripes)
	b.centralCap = b.capacity - spreadShards*b.stripeCap // read only once stripes are seen
	var unused [spreadShards]uint64
	b.putStripes(sp, b.takeExcess(), &unused) // into stripes no one else sees yet: all of it fits
	b.stripes.Store(sp)
	// A give-back that read no stripes may have filled the count beyond
	// centralCap after the move: put that right.
	b.normalize(sp)
}

// takeExcess takes what the count holds beyond centralCap, and returns
// how much.
func (b *TokenBucket) takeExcess() int64 {
	for {
		held := b.tokens.Load()
		excess := held - b.centralCap
		if excess <= 0 {
			return 0
		}
		if b.tokens.CompareAndSwap(held, b.centralCap) {
			return excess
		}
	}
}

// normalize moves what the count of a spread bucket holds beyond
// centralCap to the rest of the bucket (see putRest), and clears the full
// flag if it is set on a bucket that is not full. Only a give-back or an
// overdraft's undo that raced with spread can leave the count beyond
// centralCap; each calls it after.
func (b *TokenBucket) normalize(sp *tokenStripes) {
	if excess := b.takeExcess(); excess > 0 {
		b.putRest(sp, excess)
	}
	if b.full.Load() {
		b.syncFull()
	}
}

// takeSpread takes n tokens from a spread bucket if it holds them, and
// otherwise takes nothing and says so: from the stripe picked, else from
// the count, else gathered from every stripe and the count.
func (b *TokenBucket) takeSpread(sp *tokenStripes, n int64, hint stripeHint) error {
	ok, contended := sp.at(hint).take(n)
	if contended {
		sp.salt.collided()
	}
	if !ok && !b.takeCentral(n) {
		got := int64(0)
		for i := range sp.parts {
			got += sp.parts[i].takeUpTo(n - got)
		}
		got += takeUpTo(&b.tokens, n-got)
		if got < n {
			b.putSpread(sp, got, hint)
			return fmt.Errorf("%w: retry costs %d, bucket holds %d", ErrRetryQuotaExceeded, n, b.held())
		}
	}
	b.clearFull()
	return nil
}

// putSpread gives n tokens back to a spread bucket: to the stripe picked,
// then to the rest of the bucket (see putRest).
func (b *TokenBucket) putSpread(sp *tokenStripes, n int64, hint stripeHint) {
	put, _, contended := sp.at(hint).put(n, b.stripeCap)
	if contended {
		sp.salt.collided()
	}
	if n -= put; n > 0 {
		b.putRest(sp, n)
	}
}

// putRest gives n tokens back to a spread bucket: to the count, then to
// any stripe with room, then to the count again. If none has room, it
// reads the stripes again: if none was taken from since it looked, the
// bucket held its capacity when it last read the count, and the rest is
// dropped and the full flag set; if one was, it looks again.
func (b *TokenBucket) putRest(sp *tokenStripes, n int64) {
	if n -= b.putCentral(n); n == 0 {
		return
	}
	var seen [spreadShards]uint64
	for {
		if n -= b.putStripes(sp, n, &seen); n == 0 {
			return
		}
		if n -= b.putCentral(n); n == 0 {
			return
		}
		if sp.unchangedSince(&seen) {
			break
		}
	}
	if b.full.Load() {
		return
	}
	// The bucket was full a moment ago; a take may have come since, which
	// syncFull sees. (A give-back that fills the bucket exactly leaves the
	// flag to the next one, which finds no room: the check reads every
	// stripe, which other goroutines write, and a give-back that fills its
	// own stripe is common.)
	b.syncFull()
}

// unchangedSince reports whether every stripe's word is still the one in
// seen: no stripe was taken from since (see tokenStripe).
func (sp *tokenStripes) unchangedSince(seen *[spreadShards]uint64) bool {
	for i := range sp.parts {
		if sp.parts[i].w.Load() != seen[i] {
			return false
		}
	}
	return true
}

// testHookStripeLook, if set by a test, runs before a give-back looks at
// stripe i for room.
var testHookStripeLook func(sp *tokenStripes, i int)

// putStripes gives up to n tokens to the stripes with room, in order, and
// returns how many it gave; seen holds the word it left each stripe it
// looked at with, or found full (all of them, unless it gave all n).
func (b *TokenBucket) putStripes(sp *tokenStripes, n int64, seen *[spreadShards]uint64) int64 {
	given := int64(0)
	for i := range sp.parts {
		if given == n {
			break
		}
		if testHookStripeLook != nil {
			testHookStripeLook(sp, i)
		}
		var k int64
		k, seen[i], _ = sp.parts[i].put(n-given, b.stripeCap)
		given += k
	}
	return given
}

// takeCentral takes n tokens from the count if it holds them, with one
// atomic add (see takeCounted), and reports whether it did.
func (b *TokenBucket) takeCentral(n int64) bool {
	if b.tokens.Add(-n) >= 0 {
		return true
	}
	// The overdraft's undo. Give-backs that came meanwhile may have
	// filled the count: what it has no room for goes to the stripes, once
	// spread, and is dropped otherwise, where the count held the capacity.
	if rest := n - b.putCentral(n); rest > 0 {
		if sp := b.stripes.Load(); sp != nil {
			b.putRest(sp, rest)
		}
	}
	return false
}

// putCentral adds up to n tokens to the count, no further than its limit
// (the capacity, or centralCap once spread), and returns how many it added.
func (b *TokenBucket) putCentral(n int64) int64 {
	for {
		sp := b.stripes.Load()
		limit := b.capacity
		if sp != nil {
			limit = b.centralCap
		}
		held := b.tokens.Load()
		// An overdraft in progress holds the count below zero for a
		// moment, and its undo will add back what it took: adding to it
		// now, as if the count were that low, could take the count beyond
		// its limit once undone. The undo, which comes here too, caps it.
		add := min(n, limit-held)
		if add <= 0 {
			return 0
		}
		if b.tokens.CompareAndSwap(held, held+add) {
			if sp == nil {
				b.settle(held + add)
			}
			return add
		}
	}
}

// settle follows a give-back that brought the count to held, reading no
// stripes: if that filled the bucket, it sets the full flag (see
// syncFull); if the bucket spread meanwhile, it puts the count within
// centralCap.
func (b *TokenBucket) settle(held int64) {
	if held == b.capacity {
		b.syncFull()
	}
	if sp := b.stripes.Load(); sp != nil {
		b.normalize(sp)
	}
}

// syncFull makes the full flag say whether a bucket that does not refill
// holds its capacity (while its scope is not failing: see setFull), for
// a give-back that may have filled it or found it full. Takes and
// give-backs move the count while it writes, so it reads the count again
// after its write, and writes again if the count moved across full: of
// goroutines racing here, the last to write checks last, and the flag
// is never left set on a bucket that is not full (Release checks the
// count too, for the moment it is), nor, once the bucket is quiet, clear
// on a full one, where every Release would take the slow path.
func (b *TokenBucket) syncFull() {
	for {
		full := b.holdsCapacity()
		if full {
			b.setFull()
		} else if b.full.Load() {
			b.full.Store(false)
		}
		if b.holdsCapacity() == full {
			return
		}
	}
}

// holdsCapacity reports whether the bucket holds its capacity.
func (b *TokenBucket) holdsCapacity() bool {
	sp := b.stripes.Load()
	if sp == nil {
		return b.tokens.Load() == b.capacity
	}
	if b.tokens.Load() != b.centralCap {
		return false
	}
	for i := range sp.parts {
		if sp.parts[i].tokens() != b.stripeCap {
			return false
		}
	}
	return true
}

// held returns the tokens a bucket that does not refill holds: its count,
// and its stripes once spread. (A take's overdraft, given back at once, is
// not counted.) The parts of a spread bucket are read one after the other,
// while goroutines may move tokens between them: a token moved from the
// count to a stripe read later counts twice, so the sum is capped at the
// capacity, which the bucket never holds more than.
func (b *TokenBucket) held() int64 {
	n := max(b.tokens.Load(), 0)
	if sp := b.stripes.Load(); sp != nil {
		for i := range sp.parts {
			n += sp.parts[i].tokens()
		}
	}
	return min(n, b.capacity)
}

// clearFull clears the full flag after a take, writing only if it is set.
func (b *TokenBucket) clearFull() {
	if b.full.Load() {
		b.full.Store(false)
	}
}

// takeUpTo takes up to n from c, as much as c holds, and returns how much.
func takeUpTo(c *atomic.Int64, n int64) int64 {
	for {
		held := c.Load()
		k := min(n, held)
		if k <= 0 {
			return 0
		}
		if c.CompareAndSwap(held, held-k) {
			return k
		}
	}
}
