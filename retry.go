// Package retry retries failed calls the way the AWS SDKs and the Smithy
// retry design do: it retries only errors that are safe to retry, waits an
// exponential backoff with jitter between attempts, and pays for every
// retry from a shared retry quota, so that when a service fails broadly
// its clients stop retrying instead of turning the outage into a retry
// storm. Adaptive mode adds a client-side rate limiter that slows sending
// while the service throttles.
//
// # Start here
//
// Most code needs three calls:
//
//	strategy, err := retry.NewStandard()            // or NewAdaptive(); once, shared
//	item, err := retry.Do(ctx, getItem, retry.WithStrategy(strategy))
//	errors.Is(err, retry.ErrMaxAttemptsExceeded)    // why it gave up; errors.Is(err, lastErr) holds too
//
// [Do] (and [Run], for functions that return only an error) calls the
// function until it succeeds or the strategy gives up. Without
// [WithStrategy] it uses [DefaultStrategy], shared by the whole process.
// Only errors known to be safe to retry are retried (see [Classify]): an
// HTTP 503 or 429, an AWS throttling code, a reset connection, a timeout;
// not a plain errors.New. Mark errors with [Transient] or [Permanent], or
// use [ClassifyAll] to retry everything but cancellation and permanent
// errors. [Transport] retries HTTP requests; the awsretry, grpcretry and
// otelretry modules of this repository plug a strategy into the AWS SDK
// for Go v2, gRPC and OpenTelemetry, and package retrytest helps test
// code that retries.
//
// # Strategies
//
// A [RetryStrategy] decides, and waits. Before the first attempt it issues
// a [RetryToken], once the attempt may go; after each failure it classifies
// the error and either waits the backoff and returns the token for the next
// attempt, or refuses with the reason; after a success it records the
// outcome. Because the strategy does the waiting, any loop that only
// acquires, attempts, refreshes and records, such as an SDK middleware's,
// gets everything the strategy offers: Do is that loop around a function,
// Transport around HTTP requests. [Poll] waits for an operation that
// finishes asynchronously.
//
// [NewStandard] builds the standard mode: at most 3 attempts by default,
// [ExponentialBackoff], and a [TokenBucket] retry quota per scope.
// [NewAdaptive] adds a client-side [RateLimiter] per scope. [WithProfile]
// selects the AWS SDKs' legacy or 2026 defaults instead, and
// [FromEnvironment] builds whatever AWS_RETRY_MODE, AWS_MAX_ATTEMPTS and
// the shared config file select. [WithHook] reports every decision, for
// logs ([SlogHook]) and metrics, and [Standard.AllStats] snapshots every
// scope's quota and rate.
//
// Strategies, buckets, backoffs and limiters are safe for concurrent use
// and meant to be shared: all per-call state lives in the tokens. They read
// time, and wait, only through a [Clock]: the default clock's timers are
// virtual inside a testing/synctest bubble, and a simulation drives the
// non-blocking methods of [Standard] and [Adaptive] on a clock of its own.
package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Error is the error Do and Run return when they give up. It wraps both
// the last attempt's error and the reason for giving up, so errors.Is and
// errors.As reach either:
//
//	errors.Is(err, lastErr)                // the attempt's own error
//	errors.Is(err, retry.ErrMaxAttemptsExceeded)
//	errors.Is(err, context.DeadlineExceeded) // the caller's context ended
type Error struct {
	// Attempts is the number of attempts made; 0 if none was.
	Attempts int
	// Err is the last attempt's error, or nil if no attempt was made.
	Err error
	// Reason says why no further attempt was made. It wraps
	// ErrNotRetryable, ErrMaxAttemptsExceeded, ErrRetryQuotaExceeded,
	// ErrRateLimited, ErrDeadlineTooSoon, ErrInvalidConfig, the context's
	// error, or whatever error the strategy gave.
	Reason error
}

// Error describes the reason, the number of attempts and the last error.
func (e *Error) Error() string {
	switch {
	case e == nil:
		return "retry: <nil *Error>"
	case e.Err == nil:
		return fmt.Sprintf("%v (no attempt made)", e.Reason)
	case e.Attempts == 1:
		return fmt.Sprintf("%v (after 1 attempt): %v", e.Reason, e.Err)
	}
	return fmt.Sprintf("%v (after %d attempts): %v", e.Reason, e.Attempts, e.Err)
}

// Unwrap returns the reason and the last attempt's error.
func (e *Error) Unwrap() []error {
	switch {
	case e == nil:
		return nil
	case e.Err == nil:
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

// A DoOption configures one call of Do or Run. A DoOption is one pointer:
// passing options costs the caller a word each, and no allocation.
type DoOption struct {
	o *doOption
}

// doOption is what a DoOption says. Options that WithStrategy makes for
// the strategies of this package are made once, with the strategy (see
// engine.option); the others are made by their With function, and stay
// on the caller's stack when it inlines the function, as Do and Run
// never keep them.
type doOption struct {
	kind     doOptionKind
	strategy RetryStrategy
	fast     *scopeState // strategy's default scope, if Do may take its fast path
	deleg    Delegator   // strategy, if it is a Delegator: asked once per call
	scope    string
	timeout  time.Duration
}

type doOptionKind uint8

const (
	doStrategy doOptionKind = iota + 1
	doScope
	doAttemptTimeout
)

// WithStrategy sets the strategy that decides on retries (default: the
// one ContextWithStrategy put in the call's context, else the
// process-wide DefaultStrategy). Valid: non-nil.
func WithStrategy(s RetryStrategy) DoOption {
	if e := engineOf(s); e != nil {
		return DoOption{&e.option}
	}
	d, _ := s.(Delegator)
	return DoOption{&doOption{kind: doStrategy, strategy: s, deleg: d}}
}

// engineOf returns the engine of s if s is a Standard or Adaptive made by
// its constructor, and nil otherwise.
func engineOf(s RetryStrategy) *engine {
	var e *engine
	switch s := s.(type) {
	case *Standard:
		if s != nil {
			e = &s.e
		}
	case *Adaptive:
		if s != nil {
			e = &s.e
		}
	}
	if !e.valid() {
		return nil
	}
	return e
}

// fastScopeOf returns the default scope of s if Do may take its fast path
// with s: s is a Standard or Adaptive whose first tokens cost nothing (see
// engine.freeStart). Otherwise it returns nil.
func fastScopeOf(s RetryStrategy) *scopeState {
	if e := engineOf(s); e != nil {
		return e.option.fast
	}
	return nil
}

// WithScope sets the scope the strategy keeps quota and rate state for,
// such as one per endpoint (default ""). A strategy keeps at most 256 bytes
// of a scope's name: a longer name is kept, and reported by Stats, as its
// first bytes and a digest of the whole.
func WithScope(scope string) DoOption {
	return DoOption{&doOption{kind: doScope, scope: scope}}
}

// WithAttemptTimeout bounds each attempt: fn gets a context that ends after
// d, and an attempt that fails once its own deadline passed is marked with
// TimedOut, so it is retried as a timeout. The caller's context still
// bounds the whole call. Valid: > 0.
func WithAttemptTimeout(d time.Duration) DoOption {
	return DoOption{&doOption{kind: doAttemptTimeout, timeout: d}}
}

type doConfig struct {
	strategy RetryStrategy
	scope    string
	timeout  time.Duration
	err      error
}

// apply sets cfg from opts. A bad option leaves cfg.err set.
func (cfg *doConfig) apply(opts []DoOption) {
	for _, opt := range opts {
		o := opt.o
		switch {
		case o == nil:
			cfg.err = configError("DoOption", "the zero DoOption", "an option made by a With function")
			return
		case o.kind == doStrategy && o.strategy != nil:
			cfg.strategy = o.strategy
			if o.deleg != nil {
				if s := o.deleg.Delegate(); s != nil {
					cfg.strategy = s
				}
			}
		case o.kind == doScope:
			cfg.scope = o.scope
		case o.kind == doAttemptTimeout && o.timeout > 0:
			cfg.timeout = o.timeout
		default:
			cfg.err = badDoOption(o)
			return
		}
	}
}

// badDoOption describes what is wrong with o.
func badDoOption(o *doOption) error {
	if o.kind == doStrategy {
		return configError("WithStrategy", "nil", "a non-nil RetryStrategy")
	}
	return configError("WithAttemptTimeout", o.timeout, "> 0")
}

// DefaultStrategy returns the strategy Do, Run and Transport use when none
// is given, neither by an option nor by the context (ContextWithStrategy):
// a Standard with default settings, shared by the whole process, so its
// retry quota is shared too. Give a strategy of your own to separate quotas
// or change settings.
func DefaultStrategy() *Standard { return defaultStrategy }

var defaultStrategy = func() *Standard {
	s, err := NewStandard()
	if err != nil {
		panic("retry: default strategy: " + err.Error()) // unreachable: the defaults are valid
	}
	return s
}()

// defaultScope is the default strategy's default scope, for Do's fast
// path.
var defaultScope = fastScopeOf(defaultStrategy)

// scopeFromContext returns the default scope of the strategy
// StrategyFromContext(ctx) gives, if Do may take its fast path with it,
// and otherwise nil. Until ContextWithStrategy is first called, it is the
// default strategy's, without a context lookup.
func scopeFromContext(ctx context.Context) *scopeState {
	if !contextStrategies.Load() {
		return defaultScope
	}
	return scopeFromContextValue(ctx)
}

func scopeFromContextValue(ctx context.Context) *scopeState {
	return fastScopeOf(StrategyFromContext(ctx))
}

// Run calls fn until it succeeds or the strategy gives up, as Do does.
func Run(ctx context.Context, fn func(context.Context) error, opts ...DoOption) error {
	if fn == nil {
		return &Error{Reason: configError("Run", "a nil function", "a non-nil func(context.Context) error")}
	}
	_, err := Do(ctx, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	}, opts...)
	return err
}

// Do calls fn until it succeeds or the strategy gives up, and returns fn's
// value. It
//
//   - returns at once if ctx is already done, without calling fn;
//   - asks the strategy for an initial token, which may wait (for a send
//     slot, in adaptive mode); if the strategy refuses, fn is called once
//     and not retried, unless the refusal wraps ErrRateLimited,
//     ErrDeadlineTooSoon, ErrInvalidConfig (a strategy not configured
//     properly) or ctx's error, which mean no attempt at all;
//   - after a success, records it with the strategy and returns the value;
//   - after a failure, asks the strategy for the next token, which waits
//     the backoff and any send slot, and gives up when the strategy
//     refuses or when ctx has ended. A strategy of this package refuses at
//     once, with ErrDeadlineTooSoon, a wait that ctx's deadline would cut
//     short.
//
// Do waits nothing itself: every wait is the strategy's. When Do gives up,
// its error is an *Error that wraps both the reason and the last attempt's
// error. Panics in fn propagate; Do leaves no goroutine or timer behind.
// A nil ctx or fn, or a bad option, is an *Error wrapping ErrInvalidConfig,
// with no attempt made.
//
// With a Standard or Adaptive strategy, a call that succeeds at once
// allocates nothing.
func Do[T any](ctx context.Context, fn func(context.Context) (T, error), opts ...DoOption) (T, error) {
	// The fast path: a Standard or Adaptive strategy whose first tokens
	// cost nothing (no hooks, no initial-try cost) needs no token for a
	// call that succeeds at once, only the scope's state. Everything else,
	// and every retry, goes through the general loop, out of line.
	var st *scopeState
	switch {
	case len(opts) == 1 && opts[0].o != nil && opts[0].o.fast != nil: // WithStrategy(s)
		st = opts[0].o.fast
	case len(opts) == 1 && opts[0].o != nil && opts[0].o.deleg != nil: // WithStrategy(s) of a Delegator
		st = fastScopeOf(opts[0].o.deleg.Delegate())
	case len(opts) == 0 && !contextStrategies.Load():
		st = defaultScope
	case len(opts) == 2: // WithStrategy(s) and WithScope(name), in either order
		a, b := opts[0].o, opts[1].o
		if a != nil && a.kind == doScope {
			a, b = b, a
		}
		if a != nil && a.fast != nil && b != nil && b.kind == doScope {
			if c := a.fast.owner.scopes; c != nil {
				if st = c.hotScope(b.scope); st == nil { // nil for "" and for any other scope
					st = c.otherHotScope(b.scope)
				}
			} else {
				st = a.fast // every scope shares the default one's state
			}
		}
		if st == nil {
			st = fastScope(ctx, opts)
		}
	case len(opts) == 1 && opts[0].o != nil && opts[0].o.kind == doScope && !contextStrategies.Load(): // WithScope(name)
		if c := defaultScope.owner.scopes; c != nil {
			if st = c.hotScope(opts[0].o.scope); st == nil {
				st = c.otherHotScope(opts[0].o.scope)
			}
		}
		if st == nil {
			st = fastScope(ctx, opts)
		}
	default:
		st = fastScope(ctx, opts)
	}
	if st == nil || ctx == nil || fn == nil {
		return do(ctx, fn, opts)
	}
	if ctx.Err() != nil {
		return doFrom(ctx, fn, st)
	}
	if l := st.limiter; l != nil && l.enabled.Load() && !l.admitNow() {
		return doFrom(ctx, fn, st)
	}
	v, err := fn(ctx)
	if err != nil {
		return retryAfterFirst(ctx, fn, st, err)
	}
	st.succeeded()
	return v, nil
}

// fastScope returns the state of the scope opts select, if Do may take
// its fast path for them: no option but WithStrategy and WithScope, and a
// strategy, given or from ctx, whose first tokens cost nothing (see
// fastScopeOf). Otherwise it returns nil.
func fastScope(ctx context.Context, opts []DoOption) *scopeState {
	var st *scopeState
	strategy, scope := false, ""
	for _, opt := range opts {
		switch o := opt.o; {
		case o == nil:
			return nil
		case o.kind == doStrategy:
			st, strategy = o.fast, true
			if o.deleg != nil {
				st = fastScopeOf(o.deleg.Delegate())
			}
		case o.kind == doScope:
			scope = o.scope
		default:
			return nil
		}
	}
	if !strategy {
		if ctx == nil {
			return nil
		}
		st = scopeFromContext(ctx)
	}
	if st == nil || scope == "" {
		return st
	}
	return st.owner.scopeState(scope)
}

// retryAfterFirst goes on after the fast path's first attempt, in scope
// st, failed with err: it holds the token the engine would have issued,
// and retries. The fast path has no hooks, so the token's scope name,
// which only events report, may be the state's.
func retryAfterFirst[T any](ctx context.Context, fn func(context.Context) (T, error), st *scopeState, err error) (T, error) {
	c := cursor{e: st.owner, t: token{owner: st.owner, scope: st, scopeName: st.name}}
	return retryLoop(ctx, fn, &c, 0, nil, nil, 1, err)
}

// doFrom is the general path for a call in scope st that the fast path
// cannot start at once: ctx is done, or the attempt must wait for a send
// slot.
func doFrom[T any](ctx context.Context, fn func(context.Context) (T, error), st *scopeState) (T, error) {
	if ctx.Err() != nil {
		var zero T
		return zero, &Error{Reason: contextReason(ctx)}
	}
	return start(ctx, fn, &cursor{e: st.owner}, st.name, 0, nil)
}

// do is Do's general path: any strategy, any option.
func do[T any](ctx context.Context, fn func(context.Context) (T, error), opts []DoOption) (T, error) {
	var cfg doConfig
	if err := cfg.prepare("Do", ctx, fn == nil, opts); err != nil {
		var zero T
		return zero, &Error{Reason: err}
	}
	var c cursor
	if err := c.init(cfg.strategy); err != nil {
		var zero T
		return zero, &Error{Reason: err}
	}
	return start(ctx, fn, &c, cfg.scope, cfg.timeout, nil)
}

// prepare sets cfg for a call of the function named caller with ctx, a
// function (nil if nilFn) and opts, or says why the call cannot be made.
func (cfg *doConfig) prepare(caller string, ctx context.Context, nilFn bool, opts []DoOption) error {
	cfg.apply(opts)
	switch {
	case cfg.err != nil:
		return cfg.err
	case ctx == nil:
		return configError(caller, "a nil context.Context", "a non-nil Context (context.Background() if none)")
	case nilFn:
		return configError(caller, "a nil function", "a non-nil func(context.Context) (T, error)")
	case ctx.Err() != nil:
		return contextReason(ctx)
	}
	if cfg.strategy == nil {
		cfg.strategy = StrategyFromContext(ctx)
	}
	return nil
}

// start acquires the initial token and makes the attempts, hedged by hr if
// not nil.
func start[T any](ctx context.Context, fn func(context.Context) (T, error), c *cursor, scope string, timeout time.Duration, hr *hedgeRun[T]) (T, error) {
	tokenErr := c.acquire(ctx, scope)
	if tokenErr != nil && noAttempt(ctx, tokenErr) {
		var zero T
		return zero, gaveUp(ctx, &Error{Reason: tokenErr})
	}
	if tokenErr != nil {
		hr = nil // a call the strategy refused makes its one attempt alone
	}
	return retryLoop(ctx, fn, c, timeout, tokenErr, hr, 0, nil)
}

// retryLoop makes attempts until one succeeds or the strategy gives up.
// tokenErr is the strategy's refusal of an initial token, which allows one
// attempt without retries. attempts is the number of attempts made so far
// and err the last one's error: a loop that starts after a failed attempt
// first asks for the next token. With hr, each attempt is a round of
// hedged attempts.
func retryLoop[T any](ctx context.Context, fn func(context.Context) (T, error), c *cursor, timeout time.Duration, tokenErr error, hr *hedgeRun[T], attempts int, err error) (T, error) {
	var zero T
	inAttempt := false
	defer func() {
		if inAttempt && tokenErr == nil {
			// fn panicked: its attempt gives back what it took from the
			// retry quota, and the panic goes on.
			c.release()
		}
	}()
	for {
		if attempts > 0 {
			switch {
			case ctx.Err() != nil:
				// The caller's context ended: never retry.
				return zero, &Error{Attempts: attempts, Err: err, Reason: contextReason(ctx)}
			case pastDeadline(ctx):
				// Its deadline has passed, though its timer has not fired yet.
				return zero, &Error{Attempts: attempts, Err: err, Reason: context.DeadlineExceeded}
			case tokenErr != nil:
				return zero, gaveUp(ctx, &Error{Attempts: attempts, Err: err, Reason: tokenErr})
			}
			if refusal := LayerRefusal(ctx); refusal != nil {
				c.stop(attempts, err, refusal)
				return zero, &Error{Attempts: attempts, Err: err, Reason: refusal}
			}
			if reason := c.refresh(ctx, err); reason != nil {
				return zero, gaveUp(ctx, &Error{Attempts: attempts, Err: err, Reason: reason})
			}
		}
		attempts++
		var v T
		inAttempt = true
		switch {
		case hr != nil:
			v, err = hr.round(ctx)
		case timeout > 0:
			v, err = attempt(ctx, fn, timeout)
		default:
			v, err = fn(ctx)
		}
		inAttempt = false
		if err == nil {
			if tokenErr == nil {
				c.recordSuccess()
			}
			return v, nil
		}
	}
}

// gaveUp returns e, the error of a call made with ctx that gave up, having
// told the request ctx serves, if any (see ReportGiveUp).
func gaveUp(ctx context.Context, e *Error) *Error {
	ReportGiveUp(ctx, e)
	return e
}

// noAttempt reports whether err, a strategy's refusal of an initial token,
// forbids even the one attempt a refusal otherwise allows.
func noAttempt(ctx context.Context, err error) bool {
	return errors.Is(err, ErrRateLimited) || errors.Is(err, ErrDeadlineTooSoon) ||
		errors.Is(err, ErrInvalidConfig) || (ctx.Err() != nil && errors.Is(err, ctx.Err()))
}

// attempt calls fn once, bounded by timeout.
func attempt[T any](ctx context.Context, fn func(context.Context) (T, error), timeout time.Duration) (T, error) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := fn(actx)
	if err != nil && actx.Err() != nil && ctx.Err() == nil {
		err = TimedOut(err)
	}
	return v, err
}

// sleep waits d and reports true, or reports false as soon as ctx ends. Its
// timer is stopped either way.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// tooSoon reports whether ctx's deadline would pass before a wait of d
// ends.
func tooSoon(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return ok && d > 0 && time.Until(deadline) <= d
}

// pastDeadline reports whether ctx's deadline has passed by the clock,
// which can be so a moment before ctx's own timer ends it.
func pastDeadline(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// contextReason returns ctx's error, with its cause if that says more.
func contextReason(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// cursor holds the token of one Do call. For the strategies of this
// package it keeps the token inline and calls the engine directly, so that
// the token never escapes to the heap; for any other strategy it goes
// through the RetryStrategy interface.
type cursor struct {
	e  *engine // non-nil for Standard and Adaptive
	t  token   // the current token, when e != nil
	s  RetryStrategy
	rt RetryToken // the current token, when e == nil
}

// init sets the strategy, refusing the nil and zero values of this
// package's strategies, which cannot decide anything.
func (c *cursor) init(s RetryStrategy) error {
	c.s = s
	switch s := s.(type) {
	case *Standard:
		if c.e = s.engine(); c.e == nil {
			return configError("WithStrategy", "a nil or zero *Standard", "a strategy made by NewStandard")
		}
	case *Adaptive:
		if c.e = s.engine(); c.e == nil {
			return configError("WithStrategy", "a nil or zero *Adaptive", "a strategy made by NewAdaptive")
		}
	}
	return nil
}

func (c *cursor) acquire(ctx context.Context, scope string) error {
	if c.e != nil {
		return c.e.acquireWait(ctx, scope, &c.t)
	}
	rt, err := c.s.AcquireInitialToken(ctx, scope)
	if err == nil && rt == nil {
		err = fmt.Errorf("%w: %T.AcquireInitialToken returned no token", ErrInvalidToken, c.s)
	}
	c.rt = rt
	return err
}

func (c *cursor) refresh(ctx context.Context, err error) error {
	if c.e != nil {
		return c.e.refreshWait(ctx, &c.t, err)
	}
	rt, rerr := c.s.RefreshRetryToken(ctx, c.rt, err)
	if rerr == nil && rt == nil {
		rerr = fmt.Errorf("%w: %T.RefreshRetryToken returned no token", ErrInvalidToken, c.s)
	}
	c.rt = rt
	return rerr
}

// stop tells the hooks of this package's strategies that the call gives up
// after attempts attempts, the last failing with lastErr, for reason,
// without asking the strategy: the failed attempt keeps what it cost.
func (c *cursor) stop(attempts int, lastErr, reason error) {
	if e := c.e; e != nil && len(e.hooks) > 0 {
		e.emit(Event{Kind: EventGiveUp, Scope: c.t.scopeName, Attempt: attempts, Err: lastErr, Reason: reason})
	}
}

// errPanicked is the reason an attempt that panicked gives for giving up.
var errPanicked = errors.New("retry: the attempt panicked")

// release gives back the token of an attempt that panicked, so that the
// quota it took is not lost: for the strategies of this package directly,
// for any other through a ReleaseToken(RetryToken) error method if it has
// one (as Standard and Adaptive do).
func (c *cursor) release() {
	if c.e != nil {
		if c.t.scope != nil {
			c.e.abandon(&c.t, nil, errPanicked)
		}
		return
	}
	if r, ok := c.s.(interface{ ReleaseToken(RetryToken) error }); ok && c.rt != nil {
		_ = r.ReleaseToken(c.rt)
	}
}

func (c *cursor) recordSuccess() {
	if c.e != nil {
		c.e.record(&c.t)
		return
	}
	_ = c.s.RecordSuccess(c.rt) // fn succeeded; a bookkeeping error changes nothing for the caller
}
