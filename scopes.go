package retry

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"hash/maphash"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
	"unsafe"
)

// scopeState is the quota and rate state of one scope. Either may be nil:
// no retry quota, or no rate limiting. When all scopes share the default
// state, its name is "" whatever the scope.
type scopeState struct {
	owner   *engine
	name    string
	bucket  *TokenBucket
	limiter *RateLimiter
	// quiet is true when a first attempt's success has nothing to record:
	// it is the bucket's full flag when there is a bucket and no limiter,
	// alwaysQuiet without either, and neverQuiet with a limiter.
	quiet *atomic.Bool

	// For the scope cache: the cache's epoch when the scope was last used,
	// whether it was forgotten, and the order in which scopes were made.
	used      atomic.Uint64
	forgotten atomic.Bool
	seq       uint64
}

// succeeded records the success of a first attempt in st. With a full
// bucket and no rate limiter, the common case, it is one atomic load.
func (st *scopeState) succeeded() {
	if !st.quiet.Load() {
		st.record()
	}
}

// The quiet flags of scopes with neither a bucket nor a limiter, and of
// scopes with a limiter.
var (
	alwaysQuiet = func() *atomic.Bool {
		b := new(atomic.Bool)
		b.Store(true)
		return b
	}()
	neverQuiet = new(atomic.Bool)
)

// setQuiet sets st.quiet once st's bucket and limiter are set.
func (st *scopeState) setQuiet() {
	switch {
	case st.limiter != nil:
		st.quiet = neverQuiet
	case st.bucket != nil:
		st.quiet = &st.bucket.full
	default:
		st.quiet = alwaysQuiet
	}
}

// record records the success of a first attempt in st.
func (st *scopeState) record() {
	if l := st.limiter; l != nil && !l.countSuccess() {
		l.update(false)
	}
	if b := st.bucket; b != nil && !b.full.Load() {
		b.succeeded()
		_ = b.Release(b.cfg.initialTrySuccessIncrement)
	}
}

// DefaultMaxScopes is how many named scopes a strategy keeps state for by
// default, as the Smithy Java client does.
const DefaultMaxScopes = 128

// MaxMaxScopes is the most named scopes a strategy can keep state for:
// WithMaxScopes takes 1 to MaxMaxScopes. The bound caps the memory that
// arbitrary scope strings can take: with MaxMaxScopes short-named scopes,
// a *Standard holds about 31 MiB of scope state and an *Adaptive, which
// also keeps a rate limiter per scope, about 67 MiB (measured with names
// of 6 bytes), and about 1 KiB more for each scope whose successes, and
// again for each whose retry quota's tokens, goroutines count at the same
// moment (see TokenBucket).
const MaxMaxScopes = 1 << 16

// maxScopeName is the longest scope name a strategy keeps as it is: a
// longer one is kept as its key (see scopeKey), no longer than this.
const maxScopeName = 256

// scopeKey returns the name a scope's state is kept under: name itself if
// it is at most maxScopeName bytes long, and otherwise a copy of its first
// bytes followed by "...#" and a SHA-256 digest of the whole (96 bits, in
// hex), so that a strategy keeps at most maxScopeName bytes of each name,
// however long the names it is given, and two long names share state only
// if their digests collide.
func scopeKey(name string) string {
	if len(name) <= maxScopeName {
		return name
	}
	h := sha256.New()
	_, _ = io.WriteString(h, name)
	digest := hex.EncodeToString(h.Sum(nil)[:12])
	cut := maxScopeName - len("...#") - len(digest)
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return strings.Clone(name[:cut]) + "...#" + digest
}

// scopeCache keeps the state of the most recently used named scopes. When
// it is full, the least recently used scope is forgotten; if it is seen
// again it starts afresh, with a full bucket and an idle limiter. The bound
// keeps arbitrary scope strings from growing memory without limit.
//
// Reading a kept scope takes no lock and, in the common case, writes no
// shared memory, so that many goroutines using the same scopes do not
// contend. Scopes in use are kept apart in hot slots, two for each name
// (see hotSlots), so that a strategy finds the scopes it is used with by a
// string comparison and two atomic loads, or a few more; all scopes are in
// a sync.Map, where a name in neither of its slots is found. Each creation
// of a scope starts a new epoch, and a use stamps the scope with the epoch
// (a write at most once per scope and epoch). Creating a scope takes a
// lock and, when the cache is full, forgets the scope with the oldest
// stamp among the next evictionWindow scopes in creation order, from where
// the last eviction left off: in a cache of at most evictionWindow scopes,
// that is the least recently used one, to the precision of an epoch (of
// scopes last used in the same epoch, the first created goes); in a larger
// one, an approximation that costs a constant time. A forgotten hot scope is
// told from a live one by its stamp: forgetting it started a new epoch.
type scopeCache struct {
	newState func(name string) *scopeState
	limit    int

	m     sync.Map // scope name to *scopeState
	hot   [hotSlots]atomic.Pointer[scopeState]
	seed  maphash.Seed // of the second hot slots
	epoch atomic.Uint64

	mu   sync.Mutex    // serializes creation and eviction
	ring []*scopeState // what m holds, in the order eviction looks at them
	hand int           // where the next eviction starts looking
	seq  uint64
}

// hotSlots is how many scopes can be hot at once. Each name given to a
// lookup has two slots: the first chosen by the address of its bytes, so
// that callers taking turns with many scopes, each name a constant or an
// option kept, find each of them hot with a comparison of addresses, and
// write nothing shared once they have; the second by a hash of its bytes,
// where a name made anew for each call finds its scope, and a name whose
// first slot another holds. A name takes the first of its slots that is
// free, or whose scope was not used since the last scope was made, and
// none if both hold scopes in use: it then costs a sync.Map lookup, and
// displaces nobody. With 512 slots, of 128 names taking turns (the default
// bound), over 20 runs, one was in its second slot on average and at most
// six in neither; with 256 slots, both chosen by address, 25 and 7 (at
// most 18), which cost a sync.Map lookup each time.
const (
	hotBits  = 9
	hotSlots = 1 << hotBits
)

// hotSlot returns the first hot slot of name, the one Do's fast path
// looks at.
func (c *scopeCache) hotSlot(name string) *atomic.Pointer[scopeState] {
	return &c.hot[addressHash(uintptr(unsafe.Pointer(unsafe.StringData(name))), hotBits)]
}

// otherSlot returns the second hot slot of name, from a hash of its bytes:
// a name made anew for each call (a Transport's host, parsed from each
// request's URL) finds its scope there, whatever the address of its bytes,
// and names whose first slots collide mostly have second slots apart.
func (c *scopeCache) otherSlot(name string) *atomic.Pointer[scopeState] {
	return &c.hot[maphash.String(c.seed, name)>>(64-hotBits)]
}

// hotIn returns the scope slot holds if it is the named one and already
// used in the current epoch, and nil otherwise.
func (c *scopeCache) hotIn(slot *atomic.Pointer[scopeState], name string) *scopeState {
	if st := slot.Load(); st != nil && sameString(st.name, name) && st.used.Load() == c.epoch.Load() {
		return st
	}
	return nil
}

// makeHot puts st, the named scope, in the first of its hot slots that
// holds it already, is free, or holds a scope not used in the current
// epoch (forgotten, or not used since the last scope was made); if both
// hold scopes in use, st stays out, so that two names whose slots collide
// do not take turns writing them.
func (c *scopeCache) makeHot(name string, st *scopeState) {
	e := c.epoch.Load()
	for _, hot := range [2]*atomic.Pointer[scopeState]{c.hotSlot(name), c.otherSlot(name)} {
		cur := hot.Load()
		if cur == st {
			return
		}
		if cur != nil && cur.used.Load() == e && !cur.forgotten.Load() {
			continue
		}
		if hot.CompareAndSwap(cur, st) && st.forgotten.Load() {
			// Forgotten since it was loaded: it must not stay hot. (If
			// touch saw the epoch its forgetting started, this sees the
			// flag, set before.)
			hot.CompareAndSwap(st, nil)
		}
		return
	}
}

// evictionWindow is how many scopes an eviction compares.
const evictionWindow = 32

func newScopeCache(limit int, newState func(name string) *scopeState) *scopeCache {
	return &scopeCache{newState: newState, limit: limit, seed: maphash.MakeSeed()}
}

// lookup returns the state of a scope the cache keeps, without creating
// it or counting a use.
func (c *scopeCache) lookup(name string) (*scopeState, bool) {
	if v, ok := c.m.Load(scopeKey(name)); ok {
		return v.(*scopeState), true
	}
	return nil, false
}

// snapshot returns the scopes the cache keeps, from the most to the least
// recently used (to the precision of an epoch: of scopes last used in the
// same one, the last created first).
func (c *scopeCache) snapshot() []*scopeState {
	c.mu.Lock()
	all := slices.Clone(c.ring)
	c.mu.Unlock()
	slices.SortFunc(all, func(a, b *scopeState) int { return compareUse(b, a) })
	return all
}

// get returns the state of the named scope, creating it if needed, and
// counts a use. The hot scope, already used in the current epoch, is
// returned at once: it was not forgotten since (forgetting a scope starts
// a new epoch), and its use is counted.
func (c *scopeCache) get(name string) *scopeState {
	name = scopeKey(name)
	if st := c.hotScope(name); st != nil {
		return st
	}
	return c.find(name)
}

// hotScope returns the hot scope of name's slot if it is the named one
// and already used in the current epoch, and nil otherwise. It is small
// enough to inline into Do's fast path.
func (c *scopeCache) hotScope(name string) *scopeState {
	if st := c.hotSlot(name).Load(); st != nil && sameString(st.name, name) && st.used.Load() == c.epoch.Load() {
		return st
	}
	return nil
}

// otherHotScope is hotScope for the second hot slot of name: Do's fast
// path asks it when the first slot does not hold the scope.
func (c *scopeCache) otherHotScope(name string) *scopeState {
	return c.hotIn(c.otherSlot(name), name)
}

// sameString reports whether a == b, without comparing their bytes when
// they are the same string, as a scope's name given by a constant or a
// kept option always is.
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// find is get for a scope not in the first of its hot slots, or whose use
// is not counted yet.
func (c *scopeCache) find(name string) *scopeState {
	if st := c.otherHotScope(name); st != nil {
		return st
	}
	v, ok := c.m.Load(name)
	if !ok {
		return c.create(name)
	}
	st := v.(*scopeState)
	c.touch(st)
	c.makeHot(name, st)
	return st
}

// touch counts a use of st, writing only if its stamp changes.
func (c *scopeCache) touch(st *scopeState) {
	if e := c.epoch.Load(); st.used.Load() != e {
		st.used.Store(e)
	}
}

// create returns the state of the named scope, creating it unless another
// goroutine just did, and forgets a scope first if the cache is full.
func (c *scopeCache) create(name string) *scopeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m.Load(name); ok {
		st := v.(*scopeState)
		c.touch(st)
		return st
	}
	c.seq++
	st := c.newState(name)
	st.seq = c.seq
	if len(c.ring) < c.limit {
		c.ring = append(c.ring, st)
	} else {
		i := c.leastRecentlyUsed()
		old := c.ring[i]
		old.forgotten.Store(true)
		c.m.Delete(old.name)
		c.ring[i] = st
		c.hand = (i + 1) % len(c.ring)
	}
	c.m.Store(name, st)
	st.used.Store(c.epoch.Add(1)) // after the flag, which makeHot relies on
	c.makeHot(name, st)
	return st
}

// leastRecentlyUsed returns the index in c.ring of the scope with the
// oldest stamp, of the evictionWindow scopes from the hand on (of those
// stamped in the same epoch, the first created). c.mu must be held.
func (c *scopeCache) leastRecentlyUsed() int {
	n := len(c.ring)
	best := c.hand
	for k := 1; k < min(n, evictionWindow); k++ {
		i := (c.hand + k) % n
		if compareUse(c.ring[i], c.ring[best]) < 0 {
			best = i
		}
	}
	return best
}

// compareUse orders a and b from the least to the most recently used.
func compareUse(a, b *scopeState) int {
	return cmp.Or(cmp.Compare(a.used.Load(), b.used.Load()), cmp.Compare(a.seq, b.seq))
}
