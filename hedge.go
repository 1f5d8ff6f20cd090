package retry

import (
	"context"
	"errors"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Hedging makes a call send a second attempt when its attempt has not
// answered within a delay, take the first success and cancel the rest:
// hedged requests, which cut the tail of a call's latency at a small cost
// in load ("The Tail at Scale", Dean and Barroso, 2013). Give one to
// DoHedged or RunHedged, or set it as Transport.Hedging; nothing hedges
// otherwise.
//
// The hedge delay is fixed (WithHedgeDelay) or, by default, adaptive: the
// 0.95 quantile of the latency of the scope's recent first attempts
// (WithHedgeQuantile), estimated over the last 10 to 20 seconds within
// 6.25%, and never below WithMinHedgeDelay. An adaptive delay needs 20
// recent latencies in a scope before the scope's calls hedge: a scope that
// sees fewer calls than that in 10 seconds is better served by a fixed
// delay.
//
// Hedges are paid from a budget, so that hedging cannot double the load on
// a service that slows down because it is overloaded: every call adds
// WithHedgeBudget (default 0.1) of a hedge to its scope's budget, which
// holds at most WithHedgeBurst hedges, and every hedge takes one. Over any
// stretch of time a scope sends at most budget × calls + burst hedges. A
// throttling error or a server's retry hint (Retry-After, gRPC pushback)
// in a scope stops its hedges at once, for WithHedgePause or the hint,
// whichever is longer, as gRFC A6 asks. With a strategy of this package a
// hedge is also sent only while the scope's retry quota is at least half
// full, and, in adaptive mode, only if the rate limiter has a send slot
// free at once: a hedge never waits.
//
// Hedging composes with retries. Each attempt the strategy allows (the
// first, and each retry) is a round: the attempt, and up to WithMaxHedges
// hedges of it, each sent a hedge delay after the one before while no
// attempt of the round has succeeded. The first success ends the round and
// the call. An error the strategy would not retry ends it too, and cancels
// the others, as a failure the strategy retries does not: the other
// attempts go on, and only when all have failed does the strategy see the
// round's error (a throttle's before any other), wait its backoff and
// start the next round. Hedges do not count as attempts of the strategy:
// Error.Attempts and the strategy's events count rounds, and an
// EventHedge reports each hedge.
//
// The attempt of a round runs on the caller's goroutine, and each hedge on
// a goroutine of its own. When a round ends, the contexts of the attempts
// still running are cancelled, and DoHedged returns once all of them have
// returned: it leaves no goroutine behind, and a function that returns
// promptly when its context ends costs the caller nothing more than the
// cancellation. A successful value from an attempt that lost is closed if
// it is an io.Closer, and otherwise dropped (Transport closes a losing
// response's body); a function whose values hold other resources must
// free them itself when its context has ended. A panic in a hedge is
// raised again on the caller's goroutine, once the round's other attempts
// have returned.
//
// Hedge only calls that may be made twice: DoHedged hedges whatever it is
// given, so give it only idempotent work; Transport hedges only the
// requests it would retry.
//
// Delays are measured, and waited, on the system clock, which
// testing/synctest makes virtual. A Hedging is safe for concurrent use and
// meant to be shared by every call to a service: its budget and latency
// estimates are kept per scope (the scope given with WithScope, a Transport's
// host), for at most MaxHedgingScopes named scopes; the calls of further
// scopes share the state of the scope "".
type Hedging struct {
	cfg     hedgingConfig
	def     hedgeScope
	scopes  sync.Map // scope key → *hedgeScope
	nscopes atomic.Int32
}

// The defaults of NewHedging.
const (
	DefaultHedgeQuantile = 0.95
	DefaultMinHedgeDelay = time.Millisecond
	DefaultMaxHedges     = 1
	DefaultHedgeBudget   = 0.1
	DefaultHedgeBurst    = 10
	DefaultHedgePause    = 5 * time.Second
)

// MaxHedgingScopes is how many named scopes a Hedging keeps state for.
const MaxHedgingScopes = 128

const (
	// hedgeWindow is the span of one window of the latency sketch.
	hedgeWindow = 10 * time.Second
	// hedgeMinSamples is how many recent latencies an adaptive delay needs.
	hedgeMinSamples = 20
	// hedgeRecompute is how often, in recorded latencies, the adaptive
	// delay is estimated again.
	hedgeRecompute = 16
)

type hedgingConfig struct {
	delay     time.Duration // fixed delay; 0: adaptive
	quantile  float64       // 0: not set
	minDelay  time.Duration
	maxHedges int
	budget    float64
	burst     int
	pause     time.Duration
}

// A HedgingOption configures NewHedging.
type HedgingOption func(*hedgingConfig)

// WithHedgeDelay sends each hedge d after the attempt it backs up, or the
// hedge before it, started, instead of at an adaptive delay. Valid: > 0,
// and not with WithHedgeQuantile.
func WithHedgeDelay(d time.Duration) HedgingOption {
	return func(c *hedgingConfig) { c.delay = d }
}

// WithHedgeQuantile sets the quantile of the recent latency that the
// adaptive hedge delay is (default DefaultHedgeQuantile, 0.95: about 5 in
// 100 calls hedge when latencies are steady). Valid: 0.5 to 0.999.
func WithHedgeQuantile(q float64) HedgingOption {
	return func(c *hedgingConfig) { c.quantile = q }
}

// WithMinHedgeDelay sets the shortest adaptive hedge delay (default
// DefaultMinHedgeDelay, 1 ms). Valid: >= 0.
func WithMinHedgeDelay(d time.Duration) HedgingOption {
	return func(c *hedgingConfig) { c.minDelay = d }
}

// WithMaxHedges sets how many hedges a round may send besides its attempt
// (default DefaultMaxHedges, 1). Valid: 1 to 4, as gRFC A6 caps a hedged
// call at 5 attempts in flight.
func WithMaxHedges(n int) HedgingOption {
	return func(c *hedgingConfig) { c.maxHedges = n }
}

// WithHedgeBudget sets how much of a hedge each call adds to its scope's
// budget (default DefaultHedgeBudget, 0.1): hedges are at most this share
// of calls, plus the burst. Valid: 0.0001 to 1.
func WithHedgeBudget(ratio float64) HedgingOption {
	return func(c *hedgingConfig) { c.budget = ratio }
}

// WithHedgeBurst sets how many hedges a scope's budget holds, which it
// starts with (default DefaultHedgeBurst, 10). Valid: 1 to 1000.
func WithHedgeBurst(n int) HedgingOption {
	return func(c *hedgingConfig) { c.burst = n }
}

// WithHedgePause sets how long a scope sends no hedge after one of its
// attempts was throttled or got a retry hint (default DefaultHedgePause, 5
// s; a longer hint pauses longer). Valid: 0 to 1 hour.
func WithHedgePause(d time.Duration) HedgingOption {
	return func(c *hedgingConfig) { c.pause = d }
}

// NewHedging returns a Hedging configured by opts. A bad option is an
// error wrapping ErrInvalidConfig that names it and its valid range.
func NewHedging(opts ...HedgingOption) (*Hedging, error) {
	cfg := hedgingConfig{
		minDelay:  DefaultMinHedgeDelay,
		maxHedges: DefaultMaxHedges,
		budget:    DefaultHedgeBudget,
		burst:     DefaultHedgeBurst,
		pause:     DefaultHedgePause,
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, configError("HedgingOption", "nil", "an option made by a WithHedge… function")
		}
		opt(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	h := &Hedging{cfg: cfg}
	h.def.init(&cfg)
	return h, nil
}

func (c *hedgingConfig) validate() error {
	switch {
	case c.delay < 0 || (c.delay > 0 && c.quantile != 0):
		if c.delay < 0 {
			return configError("WithHedgeDelay", c.delay, "> 0")
		}
		return configError("WithHedgeDelay", c.delay, "a fixed delay or WithHedgeQuantile, not both")
	case c.delay == 0 && c.quantile == 0:
		c.quantile = DefaultHedgeQuantile
	}
	switch {
	case c.delay == 0 && !(c.quantile >= 0.5 && c.quantile <= 0.999): // NaN too
		return configError("WithHedgeQuantile", c.quantile, "0.5 to 0.999")
	case c.minDelay < 0:
		return configError("WithMinHedgeDelay", c.minDelay, ">= 0")
	case c.maxHedges < 1 || c.maxHedges > 4:
		return configError("WithMaxHedges", c.maxHedges, "1 to 4")
	case !(c.budget >= 0.0001 && c.budget <= 1):
		return configError("WithHedgeBudget", c.budget, "0.0001 to 1")
	case c.burst < 1 || c.burst > 1000:
		return configError("WithHedgeBurst", c.burst, "1 to 1000")
	case c.pause < 0 || c.pause > time.Hour:
		return configError("WithHedgePause", c.pause, "0 to 1h0m0s")
	}
	return nil
}

// DoHedged is Do with hedged attempts: it calls fn as Do does, and while
// an attempt has not answered within h's delay it sends another, as
// Hedging says. Give it only functions that may run more than once at the
// same time. A nil or zero h is an *Error wrapping ErrInvalidConfig, with
// no attempt made.
//
// Hedging is a function of its own, not an option of Do, so that Do's
// function never has to outlive its caller's frame: a closure given to Do
// stays on the caller's stack, and one given to DoHedged, which shares it
// with the goroutines of its hedges, is on the heap.
func DoHedged[T any](ctx context.Context, fn func(context.Context) (T, error), h *Hedging, opts ...DoOption) (T, error) {
	return doHedged(ctx, fn, h, opts, nil)
}

// RunHedged calls fn as DoHedged does, for functions that return only an
// error.
func RunHedged(ctx context.Context, fn func(context.Context) error, h *Hedging, opts ...DoOption) error {
	if fn == nil {
		return &Error{Reason: configError("RunHedged", "a nil function", "a non-nil func(context.Context) error")}
	}
	_, err := doHedged(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	}, h, opts, nil)
	return err
}

// doHedged is DoHedged, with discard to free the value of an attempt that
// lost (nil: closeLoser).
func doHedged[T any](ctx context.Context, fn func(context.Context) (T, error), h *Hedging, opts []DoOption, discard func(T)) (T, error) {
	var zero T
	var cfg doConfig
	err := cfg.prepare("DoHedged", ctx, fn == nil, opts)
	if err == nil && !h.valid() {
		err = configError("DoHedged", "a nil or zero *Hedging", "a Hedging made by NewHedging")
	}
	if err != nil {
		return zero, &Error{Reason: err}
	}
	hr := newHedgeRun(h, cfg.scope, fn, cfg.timeout, discard)
	if err := hr.c.init(cfg.strategy); err != nil {
		return zero, &Error{Reason: err}
	}
	return start(ctx, fn, hr.c, cfg.scope, cfg.timeout, hr)
}

// hedgeScope is a Hedging's state for one scope.
type hedgeScope struct {
	sketch      latencySketch
	delay       atomic.Int64 // the adaptive delay; 0 until known
	credits     atomic.Int64 // the budget, in budgetUnit per hedge
	pausedUntil atomic.Int64 // no hedges before this time, in Unix nanoseconds
	calls       atomic.Uint64
	hedges      atomic.Uint64
	wins        atomic.Uint64
}

func (st *hedgeScope) init(cfg *hedgingConfig) {
	st.sketch.window = hedgeWindow
	st.credits.Store(int64(cfg.burst) * budgetUnit)
}

// scope returns the state of the named scope.
func (h *Hedging) scope(name string) *hedgeScope {
	if name == "" {
		return &h.def
	}
	key := scopeKey(name)
	if st, ok := h.scopes.Load(key); ok {
		return st.(*hedgeScope)
	}
	if h.nscopes.Load() >= MaxHedgingScopes {
		return &h.def
	}
	st := new(hedgeScope)
	st.init(&h.cfg)
	got, loaded := h.scopes.LoadOrStore(key, st)
	if !loaded && h.nscopes.Add(1) > MaxHedgingScopes {
		// Another scope took the last place first.
		h.scopes.Delete(key)
		return &h.def
	}
	return got.(*hedgeScope)
}

// delay returns the hedge delay of st, or 0 if its calls do not hedge yet.
func (h *Hedging) delay(st *hedgeScope) time.Duration {
	if h.cfg.delay > 0 {
		return h.cfg.delay
	}
	return time.Duration(st.delay.Load())
}

// observe records the latency d of a round's first attempt in st.
func (h *Hedging) observe(st *hedgeScope, now time.Time, d time.Duration) {
	if h.cfg.delay > 0 {
		return
	}
	if n := st.sketch.record(now, d); n%hedgeRecompute != 1 {
		return
	}
	q, n := st.sketch.quantile(now, h.cfg.quantile)
	if n < hedgeMinSamples {
		st.delay.Store(0)
		return
	}
	st.delay.Store(int64(max(q, h.cfg.minDelay)))
}

// deposit adds one call's share to st's budget.
func (h *Hedging) deposit(st *hedgeScope) {
	st.calls.Add(1)
	add := int64(math.Round(h.cfg.budget * budgetUnit))
	limit := int64(h.cfg.burst) * budgetUnit
	for {
		old := st.credits.Load()
		if old >= limit {
			return
		}
		if st.credits.CompareAndSwap(old, min(old+add, limit)) {
			return
		}
	}
}

// spend takes one hedge from st's budget, if it holds one.
func (h *Hedging) spend(st *hedgeScope) bool {
	for {
		old := st.credits.Load()
		if old < budgetUnit {
			return false
		}
		if st.credits.CompareAndSwap(old, old-budgetUnit) {
			return true
		}
	}
}

// refund gives back a hedge spent but not sent.
func (h *Hedging) refund(st *hedgeScope) {
	st.credits.Add(budgetUnit)
}

// pause stops st's hedges for the pause, or hint if longer.
func (h *Hedging) pause(st *hedgeScope, now time.Time, hint time.Duration) {
	until := now.Add(max(h.cfg.pause, hint)).UnixNano()
	for {
		old := st.pausedUntil.Load()
		if old >= until || st.pausedUntil.CompareAndSwap(old, until) {
			return
		}
	}
}

// paused reports whether st sends no hedges now.
func (h *Hedging) paused(st *hedgeScope, now time.Time) bool {
	return now.UnixNano() < st.pausedUntil.Load()
}

// valid reports whether h was made by NewHedging. The decisions of a nil
// or zero Hedging send no hedge and record nothing.
func (h *Hedging) valid() bool { return h != nil && h.def.sketch.window > 0 }

// The decisions, for event loops on a clock of their own. DoHedged and
// Transport make these calls themselves, on the system clock; a simulation
// that models the calls of a hedging client on virtual time makes them
// instead, with its own now, and gets the same delays, budget and pauses.

// Delay returns the hedge delay of the named scope: the fixed delay, or the
// adaptive estimate; 0 if the scope's calls do not hedge yet.
func (h *Hedging) Delay(scope string) time.Duration {
	if !h.valid() {
		return 0
	}
	return h.delay(h.scope(scope))
}

// CountCall counts a call in the named scope, adding its share to the
// scope's hedge budget, as DoHedged does once per call.
func (h *Hedging) CountCall(scope string) {
	if !h.valid() {
		return
	}
	h.deposit(h.scope(scope))
}

// ObserveLatency records the latency of the first attempt of a round in
// the named scope, which ended at now, for the adaptive delay. An attempt
// cancelled because a hedge won counts the time it had taken: the delay
// is a quantile below it, which needs only its rank.
func (h *Hedging) ObserveLatency(scope string, now time.Time, latency time.Duration) {
	if !h.valid() {
		return
	}
	h.observe(h.scope(scope), now, latency)
}

// TakeHedge reports whether the named scope may send a hedge at now, and
// if so takes it from the scope's budget. It checks the pause and the
// budget; DoHedged also checks the strategy's retry quota and rate
// limiter, which a simulation models itself.
func (h *Hedging) TakeHedge(scope string, now time.Time) bool {
	if !h.valid() {
		return false
	}
	st := h.scope(scope)
	if h.paused(st, now) || !h.spend(st) {
		return false
	}
	st.hedges.Add(1)
	return true
}

// PushBack records that an attempt in the named scope was throttled, or
// got a retry hint, at now: the scope sends no hedge for the pause, or
// hint if longer.
func (h *Hedging) PushBack(scope string, now time.Time, hint time.Duration) {
	if !h.valid() {
		return
	}
	h.pause(h.scope(scope), now, hint)
}

// CountWin counts a call of the named scope that a hedge won, for Stats.
func (h *Hedging) CountWin(scope string) {
	if !h.valid() {
		return
	}
	h.scope(scope).wins.Add(1)
}

// HedgingStats is a snapshot of a Hedging's state for one scope.
type HedgingStats struct {
	// Delay is the hedge delay: the fixed one, or the adaptive estimate;
	// 0 while the scope has too few recent latencies to hedge.
	Delay time.Duration
	// Samples is the number of recent latencies the estimate is made of.
	Samples int64
	// Calls, Hedges and Wins count the scope's calls, the hedges they
	// sent, and the calls a hedge won.
	Calls, Hedges, Wins uint64
	// Budget is the number of hedges the budget allows now.
	Budget float64
	// Paused is how long the scope still sends no hedge after a throttle
	// or a retry hint; 0 if it may hedge.
	Paused time.Duration
}

// Stats returns the state of the named scope, at the system clock's now.
// A scope never used reports what a new one starts with.
func (h *Hedging) Stats(scope string) HedgingStats {
	if !h.valid() {
		return HedgingStats{}
	}
	st := &h.def
	if scope != "" {
		got, ok := h.scopes.Load(scopeKey(scope))
		if !ok {
			var fresh hedgeScope
			fresh.init(&h.cfg)
			return h.stats(&fresh)
		}
		st = got.(*hedgeScope)
	}
	return h.stats(st)
}

func (h *Hedging) stats(st *hedgeScope) HedgingStats {
	s := HedgingStats{
		Delay:  h.delay(st),
		Calls:  st.calls.Load(),
		Hedges: st.hedges.Load(),
		Wins:   st.wins.Load(),
		Budget: float64(st.credits.Load()) / budgetUnit,
	}
	if h.cfg.delay == 0 {
		_, s.Samples = st.sketch.quantile(time.Now(), h.cfg.quantile)
	}
	if until := time.Unix(0, st.pausedUntil.Load()); time.Now().Before(until) {
		s.Paused = time.Until(until)
	}
	return s
}

// hedgeRun is one call's hedging: its rounds, one per attempt the strategy
// allows, each the attempt and its hedges. The attempt runs on the
// caller's goroutine; each hedge on the goroutine of the timer that sends
// it.
type hedgeRun[T any] struct {
	h       *Hedging
	st      *hedgeScope
	c       *cursor // &cur
	cur     cursor  // the call's, shared with the hedges
	fn      func(context.Context) (T, error)
	timeout time.Duration
	discard func(T) // frees a losing attempt's value; nil: closeLoser

	mu       sync.Mutex
	ended    sync.Cond      // an attempt returned
	timers   sync.WaitGroup // timers armed and not yet done
	ctx      context.Context
	cancel   context.CancelFunc
	timer    *time.Timer
	delay    time.Duration
	launched int  // attempts started in the round
	running  int  // attempts of the round not yet returned
	closed   bool // the round sends no more hedges
	decided  bool // the round has its outcome: a success or an error not to retry
	won      bool // an attempt succeeded, with v
	v        T
	err      error // the round's error, if no attempt succeeded
	errRank  int   // how telling err is: 1 retryable, 2 throttle or hint, 3 not retryable
	panicked bool  // a hedge panicked, with pv
	pv       any
}

// newHedgeRun prepares hedging for a call in the named scope: it adds the
// call's share to the scope's budget. The caller initializes its cursor.
func newHedgeRun[T any](h *Hedging, scope string, fn func(context.Context) (T, error), timeout time.Duration, discard func(T)) *hedgeRun[T] {
	r := &hedgeRun[T]{h: h, st: h.scope(scope), fn: fn, timeout: timeout, discard: discard}
	r.c = &r.cur
	r.ended.L = &r.mu
	h.deposit(r.st)
	return r
}

// round makes one attempt of the call, with its hedges, and returns the
// first success, or the round's error when none succeeded.
func (r *hedgeRun[T]) round(ctx context.Context) (T, error) {
	var zero T
	r.ctx, r.cancel = context.WithCancel(ctx)
	r.launched, r.running, r.closed, r.decided, r.won = 1, 1, false, false, false
	r.v, r.err, r.errRank = zero, nil, 0
	r.delay = r.h.delay(r.st)
	if r.delay > 0 && !r.h.paused(r.st, time.Now()) {
		r.mu.Lock()
		r.arm()
		r.mu.Unlock()
	}
	r.first()
	if r.panicked {
		panic(r.pv)
	}
	if r.won {
		v := r.v
		r.v = zero
		return v, nil
	}
	return zero, r.err
}

// first makes the round's attempt on the caller's goroutine and waits for
// the round to end. If the attempt panics, the round is still ended: the
// hedges are cancelled and waited for, and the panic goes on.
func (r *hedgeRun[T]) first() {
	returned := false
	defer func() { r.end(!returned) }()
	start := time.Now()
	v, err := r.call()
	returned = true
	if r.ctx.Err() == nil || err == nil {
		r.h.observe(r.st, time.Now(), time.Since(start))
	} else if d := time.Since(start); d >= r.delay && r.delay > 0 {
		// Cancelled by a hedge that won: the attempt took at least this
		// long, which is all a quantile below it needs to know.
		r.h.observe(r.st, time.Now(), d)
	}
	r.mu.Lock()
	r.settle(v, err)
	r.mu.Unlock()
}

// end waits until every attempt of the round has returned, first
// cancelling them if abort (the round's attempt did not return), and stops
// its timer.
func (r *hedgeRun[T]) end(abort bool) {
	r.mu.Lock()
	if abort {
		r.running-- // the attempt, which will not settle
		r.closed, r.decided = true, true
		r.cancel()
	}
	for r.running > 0 {
		r.ended.Wait()
	}
	r.closed = true
	if r.timer != nil && r.timer.Stop() {
		r.timers.Done() // it will not run
	}
	r.timer = nil
	r.mu.Unlock()
	r.timers.Wait()
	r.cancel()
}

// arm sets the timer for the round's next hedge. r.mu is held.
func (r *hedgeRun[T]) arm() {
	r.timers.Add(1)
	r.timer = time.AfterFunc(r.delay, r.hedge)
}

// hedge sends a hedge, if the round and the budget still allow one, on
// the goroutine of the timer that calls it.
func (r *hedgeRun[T]) hedge() {
	defer r.timers.Done()
	r.mu.Lock()
	if r.closed || r.launched > r.h.cfg.maxHedges || !r.admit() {
		r.mu.Unlock()
		return
	}
	r.launched++
	r.running++
	since := time.Duration(r.launched-1) * r.delay // since the round's attempt started
	if r.launched <= r.h.cfg.maxHedges {
		r.arm()
	}
	r.mu.Unlock()
	r.st.hedges.Add(1)
	if e := r.c.e; e != nil && len(e.hooks) > 0 {
		e.emit(Event{Kind: EventHedge, Scope: r.c.t.scopeName, Attempt: r.c.t.retries + 1, Delay: since})
	}

	var v T
	var err error
	returned := false
	defer func() {
		var p any
		if !returned {
			if p = recover(); p == nil {
				p = errHedgeExited
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if !returned {
			r.running--
			if !r.panicked {
				r.panicked, r.pv = true, p
			}
			r.closed, r.decided = true, true
			r.cancel()
			r.ended.Broadcast()
			return
		}
		if err == nil && !r.decided {
			r.st.wins.Add(1)
		}
		r.settle(v, err)
	}()
	v, err = r.call()
	returned = true
}

// errHedgeExited is what the caller's goroutine panics with when a hedge's
// goroutine exited by runtime.Goexit, as testing's FailNow does.
var errHedgeExited = errors.New("retry: a hedge's function called runtime.Goexit")

// admit reports whether the round may send a hedge now, taking it from the
// budget and, in adaptive mode, a send slot from the rate limiter. r.mu is
// held.
func (r *hedgeRun[T]) admit() bool {
	if r.h.paused(r.st, time.Now()) || !r.h.spend(r.st) {
		return false
	}
	if e := r.c.e; e != nil && r.c.t.scope != nil {
		st := r.c.t.scope
		if b := st.bucket; b != nil {
			if s := b.Stats(); s.Available < float64(s.Capacity)/2 {
				r.h.refund(r.st)
				return false
			}
		}
		if l := st.limiter; l != nil {
			if _, err := l.acquire(true); err != nil {
				r.h.refund(r.st)
				return false
			}
		}
	}
	return true
}

// call makes one attempt.
func (r *hedgeRun[T]) call() (T, error) {
	if r.timeout > 0 {
		return attempt(r.ctx, r.fn, r.timeout)
	}
	return r.fn(r.ctx)
}

// settle takes in the outcome of an attempt that returned. r.mu is held.
func (r *hedgeRun[T]) settle(v T, err error) {
	r.running--
	defer r.ended.Broadcast()
	if r.running == 0 {
		r.closed = true
	}
	switch {
	case r.decided && err == nil:
		if r.discard != nil {
			r.discard(v)
		} else {
			closeLoser(v) // called, not made a func value: that would allocate
		}
		return
	case r.decided:
		// The round is over, but a service that pushes back on a losing
		// attempt still stops the scope's hedges.
		if c := r.classify(err); c.Throttle || c.RetryAfter > 0 {
			r.h.pause(r.st, time.Now(), c.RetryAfter)
		}
		return
	case err == nil:
		r.v, r.won, r.decided, r.closed = v, true, true, true
		r.cancel()
		return
	}
	c := r.classify(err)
	rank := 1
	if c.Throttle || c.RetryAfter > 0 {
		// The service pushes back: no more hedges, in this round or, for
		// a while, in the scope.
		r.h.pause(r.st, time.Now(), c.RetryAfter)
		r.closed, rank = true, 2
	}
	if !c.Retryable() {
		r.decided, r.closed, rank = true, true, 3
		r.cancel()
	}
	if rank >= r.errRank {
		r.err, r.errRank = err, rank
	}
}

// classify classifies err as the call's strategy does.
func (r *hedgeRun[T]) classify(err error) Classification {
	if e := r.c.e; e != nil {
		return e.classify(err)
	}
	return Classify(err)
}

// closeLoser closes v, the value of an attempt that lost, if it is an
// io.Closer.
func closeLoser[T any](v T) {
	if c, ok := any(v).(io.Closer); ok {
		_ = c.Close()
	}
}
