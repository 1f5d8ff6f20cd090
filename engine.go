package retry

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// engine is the retry logic that Standard and Adaptive share. It is
// immutable after construction but for its scope cache, which has its own
// lock.
type engine struct {
	clock           Clock
	maxAttempts     int
	backoff         Backoff
	throttleBackoff Backoff
	classify        Classifier
	retryAfterLimit time.Duration // 0: none
	maxRetryAfter   time.Duration // the ceiling on a wait a hint lengthened
	maxSendWait     time.Duration // the longest an attempt waits for a send slot
	longPolling     bool
	hooks           []Hook
	// freeStart says that a first attempt needs nothing from the strategy
	// but a send slot: no hooks to call and no initial-try cost to pay.
	// Do then skips the token for a call that succeeds at once.
	freeStart bool

	def    scopeState // the default scope, "", and every scope when shared
	scopes *scopeCache

	// option is what WithStrategy returns for the strategy, made once so
	// that giving it costs no allocation (see bindOption).
	option doOption
}

// bindOption makes e.option, for s, the strategy whose engine e is: its
// fast scope is the default scope if Do may take its fast path with s.
func (e *engine) bindOption(s RetryStrategy) {
	e.option = doOption{kind: doStrategy, strategy: s}
	if e.freeStart {
		e.option.fast = &e.def
	}
}

// scopeState returns the state of the named scope, creating it if needed.
func (e *engine) scopeState(name string) *scopeState {
	if name == "" || e.scopes == nil {
		return &e.def
	}
	return e.scopes.get(name)
}

// The decisions. These never wait: they fill in a token whose delay says
// how long to wait before its attempt, and whose pending flag says that
// the attempt still needs a send slot (see admit).

// acquire fills t, a zero token, with the token for the first attempt.
func (e *engine) acquire(scope string, t *token) error {
	st := e.scopeState(scope)
	t.owner, t.scope, t.scopeName, t.pending = e, st, scope, st.limiter != nil
	if b := st.bucket; b != nil && b.cfg.initialTryCost > 0 {
		w, err := b.acquire(b.cfg.initialTryCost, t.stripeHint())
		if err != nil {
			return err
		}
		t.cost = b.cfg.initialTryCost
		t.delay = max(t.delay, w)
	}
	if len(e.hooks) > 0 {
		e.emit(Event{Kind: EventAttempt, Scope: scope, Attempt: 1, Delay: t.delay})
	}
	return nil
}

// refresh turns t, whose attempt failed with err, into the token for the
// next attempt, or says why there is none. A refusal of a long-polling
// strategy asks its caller to wait before giving up (a *refusal).
func (e *engine) refresh(t *token, err error) error {
	return e.refreshBy(t, err, time.Time{})
}

// refreshBy is refresh for an attempt that must start before deadline, a
// context's deadline on the system clock, if not zero: a retry whose delay
// would end after it is refused, as the wait would refuse it (see tooSoon),
// and its token given back, so that an EventRetry stands for an attempt
// that will be made.
func (e *engine) refreshBy(t *token, err error, deadline time.Time) error {
	made := t.retries + 1 // attempts made
	c := e.classify(err)
	reason := e.next(t, c)
	if reason == nil && !deadline.IsZero() && t.delay > 0 && time.Until(deadline) <= t.delay {
		e.giveBack(t)
		reason = deadlineTooSoon(t.delay)
	}
	if len(e.hooks) > 0 {
		ev := Event{Kind: EventRetry, Scope: t.scopeName, Attempt: made + 1, Delay: t.delay, Err: err, Classification: c}
		if reason != nil {
			ev.Kind, ev.Attempt, ev.Delay, ev.Reason = EventGiveUp, made, 0, reason
		}
		e.emit(ev)
	}
	return reason
}

// next turns t into the token for the next attempt after a failure
// classified as c. The checks come in the order the AWS SDKs make them:
// retryable, attempts left, quota.
func (e *engine) next(t *token, c Classification) error {
	st := t.scope
	if st.limiter != nil {
		st.limiter.Update(c.Throttle)
	}
	if !c.Retryable() {
		// The service answered, so a retry that got this far did not feed
		// an outage: give back what it took instead of leaking it.
		if t.retries > 0 {
			e.giveBack(t)
		}
		if c.Safety == SafetyMaybe {
			return fmt.Errorf("%w: not known to be safe to retry", ErrNotRetryable)
		}
		return ErrNotRetryable
	}
	attempts := t.retries + 1
	if attempts >= e.maxAttempts {
		if st.bucket != nil {
			st.bucket.failed(c)
		}
		return ErrMaxAttemptsExceeded // the caller knows the count: it made the attempts
	}

	n := t.retries + 1
	b := e.backoff
	if c.Throttle {
		b = e.throttleBackoff
	}
	var raw time.Duration
	if cb, ok := b.(ChainedBackoff); ok {
		raw = cb.DelayAfter(n, t.prevBackoff) // depends on the previous retry's backoff, which the token carries
	} else {
		raw = b.Delay(n)
	}
	backoff := max(raw, 0)
	delay := max(backoff, c.RetryAfter)
	if e.retryAfterLimit > 0 {
		delay = min(delay, satAdd(backoff, e.retryAfterLimit))
	}
	if delay > backoff && delay > e.maxRetryAfter {
		return fmt.Errorf("%w: the service asked for a wait of %v, above the ceiling of %v (WithMaxRetryAfter)", ErrRetryAfterTooLong, c.RetryAfter, e.maxRetryAfter)
	}

	cost := 0
	if b := st.bucket; b != nil {
		if c.Timeout && t.retries > 0 {
			// A retry that timed out too: the service is slow, not
			// unlucky, and each retry adds work it may still be doing.
			b.failed(c)
		}
		if err := b.spendRetry(t.retries == 0); err != nil {
			if e.longPolling {
				return &refusal{err: err, wait: backoff}
			}
			return err
		}
		cost = b.RetryCost(c)
		w, err := b.acquire(cost, t.stripeHint())
		if err != nil {
			b.refundRetry()
			b.failed(c)
			if e.longPolling {
				return &refusal{err: err, wait: backoff}
			}
			return err
		}
		delay = max(delay, w)
	}
	t.retries, t.delay, t.cost, t.pending, t.slotSince = n, delay, cost, st.limiter != nil, time.Time{}
	t.prevBackoff = backoff // for the next retry's ChainedBackoff
	return nil
}

// admit checks that the attempt t admits may go now, once its delay is
// over. A token of a strategy without a rate limiter, or one already
// admitted, always may. Otherwise it takes a send slot, or says how long to
// wait before asking again, or refuses: with a fail-fast limiter when no
// slot is free, and whenever the attempt would wait for a slot longer than
// maxSendWait in all.
func (e *engine) admit(t *token) (time.Duration, error) {
	if !t.pending {
		return 0, nil
	}
	l := t.scope.limiter
	d, err := l.acquire(true)
	switch {
	case err == nil:
		t.pending = false
		return 0, nil
	case l.cfg.failFast:
		l.refuse()
		return 0, err
	}
	now := l.now()
	if t.slotSince.IsZero() {
		t.slotSince = now
	}
	if waited := now.Sub(t.slotSince); waited > e.maxSendWait-d {
		l.refuse()
		return 0, fmt.Errorf("%w: no send slot within %v (WithMaxSendWait)", ErrRateLimited, e.maxSendWait)
	}
	return max(d, 1), nil // a refusal always asks to wait
}

// record reports the success of the attempt t admitted.
func (e *engine) record(t *token) {
	if len(e.hooks) > 0 {
		e.emit(Event{Kind: EventSuccess, Scope: t.scopeName, Attempt: t.retries + 1})
	}
	st := t.scope
	if t.retries == 0 {
		st.record()
		return
	}
	if st.limiter != nil {
		st.limiter.Update(false)
	}
	if st.bucket != nil {
		st.bucket.succeeded()
	}
	e.giveBack(t) // a retry's success returns what it took
}

// abandon gives back t, whose attempt will not be made because of reason;
// lastErr is the previous attempt's error, if any.
func (e *engine) abandon(t *token, lastErr, reason error) {
	e.giveBack(t)
	if len(e.hooks) > 0 {
		e.emit(Event{Kind: EventGiveUp, Scope: t.scopeName, Attempt: t.retries, Err: lastErr, Reason: reason})
	}
}

// giveBack returns the quota t took.
func (e *engine) giveBack(t *token) {
	if t.scope.bucket != nil {
		_ = t.scope.bucket.releaseFor(t.cost, t.stripeHint())
	}
}

// The waits. These block, on the engine's clock, until the attempt of a
// token may go.

// acquireWait fills t with the token for the first attempt and waits until
// that attempt may go. On a failed wait it gives the token back.
func (e *engine) acquireWait(ctx context.Context, scope string, t *token) error {
	if ctx.Err() != nil {
		return contextReason(ctx)
	}
	if err := e.acquire(scope, t); err != nil {
		return err
	}
	if t.delay <= 0 && !t.pending {
		return nil
	}
	return e.await(ctx, t, nil)
}

// refreshWait turns t, whose attempt failed with err, into the token for
// the next attempt and waits until that attempt may go, or says why there
// is none.
func (e *engine) refreshWait(ctx context.Context, t *token, err error) error {
	deadline, _ := ctx.Deadline()
	reason := e.refreshBy(t, err, deadline)
	if r, ok := reason.(*refusal); ok {
		// Long polling: wait before giving up, so that a caller that polls
		// again at once does not spin.
		if werr := e.wait(ctx, r.wait); werr != nil {
			return fmt.Errorf("%w (its wait cut short: %w)", r.err, werr)
		}
		return r.err
	}
	if reason != nil {
		return reason
	}
	if t.delay <= 0 && !t.pending {
		return nil
	}
	return e.await(ctx, t, err)
}

// await waits t's delay and then for a send slot. If it cannot, it gives
// the token back and says why; lastErr is the failure that t retries.
func (e *engine) await(ctx context.Context, t *token, lastErr error) error {
	d := t.delay
	for {
		if err := e.wait(ctx, d); err != nil {
			e.abandon(t, lastErr, err)
			return err
		}
		var err error
		if d, err = e.admit(t); err != nil {
			e.abandon(t, lastErr, err)
			return err
		}
		if d <= 0 {
			return nil
		}
		t.delay = satAdd(t.delay, d)
	}
}

// wait waits d on the engine's clock, unless ctx ends first or its
// deadline would pass before the wait ends. It returns why it did not
// wait, or nil.
func (e *engine) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if tooSoon(ctx, d) {
		return deadlineTooSoon(d)
	}
	switch c := e.clock.(type) {
	case systemClock:
		if !sleep(ctx, d) {
			return contextReason(ctx)
		}
		return nil
	case Sleeper:
		if err := c.Sleep(ctx, d); err != nil {
			if ctx.Err() != nil {
				return contextReason(ctx)
			}
			return err
		}
		return nil
	}
	return fmt.Errorf("%w: WithClock: a %T cannot wait; a strategy that waits needs a clock that implements Sleeper (event loops use the Plan methods instead)", ErrInvalidConfig, e.clock)
}

// deadlineTooSoon is the reason for not waiting d: the caller's deadline
// would pass first.
func deadlineTooSoon(d time.Duration) error {
	return fmt.Errorf("%w (waiting %v): %w", ErrDeadlineTooSoon, d, context.DeadlineExceeded)
}

// refusal is a refusal that asks the caller to wait before giving up.
type refusal struct {
	err  error
	wait time.Duration
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// The exported methods, shared by Standard and Adaptive. Each refuses the
// engine of a nil or zero strategy, which cannot decide anything.

// valid reports whether e was built by a constructor.
func (e *engine) valid() bool { return e != nil && e.classify != nil }

var errZeroStrategy = configError("strategy", "a nil or zero *Standard or *Adaptive", "one made by NewStandard or NewAdaptive")

// The errors of a nil context, and of a nil error to refresh a token with.
// Both leave the token unused.
var (
	errNilContext = configError("ctx", "nil", "a non-nil context.Context (context.Background() if none)")
	errNilFailure = configError("err", "nil", "the error the attempt failed with (RecordSuccess reports a success)")
)

func (e *engine) acquireInitialToken(ctx context.Context, scope string) (RetryToken, error) {
	switch {
	case !e.valid():
		return nil, errZeroStrategy
	case ctx == nil:
		return nil, errNilContext
	}
	t := new(token)
	if err := e.acquireWait(ctx, scope, t); err != nil {
		return nil, err
	}
	return t, nil
}

func (e *engine) refreshRetryToken(ctx context.Context, rt RetryToken, err error) (RetryToken, error) {
	switch {
	case !e.valid():
		return nil, errZeroStrategy
	case ctx == nil:
		return nil, errNilContext
	case err == nil:
		return nil, errNilFailure
	}
	t, cerr := e.successor(rt)
	if cerr != nil {
		return nil, cerr
	}
	if err := e.refreshWait(ctx, t, err); err != nil {
		return nil, err
	}
	return t, nil
}

func (e *engine) recordSuccess(rt RetryToken) error {
	if !e.valid() {
		return errZeroStrategy
	}
	t, err := e.claim(rt)
	if err != nil {
		return err
	}
	e.record(t)
	return nil
}

func (e *engine) planInitialToken(scope string) (RetryToken, error) {
	if !e.valid() {
		return nil, errZeroStrategy
	}
	t := new(token)
	if err := e.acquire(scope, t); err != nil {
		return nil, err
	}
	return t, nil
}

func (e *engine) planRetryToken(rt RetryToken, err error) (RetryToken, time.Duration, error) {
	switch {
	case !e.valid():
		return nil, 0, errZeroStrategy
	case err == nil:
		return nil, 0, errNilFailure
	}
	t, cerr := e.successor(rt)
	if cerr != nil {
		return nil, 0, cerr
	}
	if reason := e.refresh(t, err); reason != nil {
		if r, ok := reason.(*refusal); ok {
			return nil, r.wait, r.err
		}
		return nil, 0, reason
	}
	return t, t.delay, nil
}

// successor claims rt, a token of e, and returns a copy of it to refresh.
func (e *engine) successor(rt RetryToken) (*token, error) {
	old, err := e.claim(rt)
	if err != nil {
		return nil, err
	}
	return &token{owner: e, scope: old.scope, scopeName: old.scopeName, retries: old.retries, cost: old.cost, prevBackoff: old.prevBackoff}, nil
}

func (e *engine) admitToken(rt RetryToken) (time.Duration, error) {
	if !e.valid() {
		return 0, errZeroStrategy
	}
	t, err := e.unused(rt)
	if err != nil {
		return 0, err
	}
	return e.admit(t)
}

func (e *engine) releaseToken(rt RetryToken) error {
	if !e.valid() {
		return errZeroStrategy
	}
	t, err := e.claim(rt)
	if err != nil {
		return err
	}
	e.abandon(t, nil, errTokenReleased)
	return nil
}

var errTokenReleased = errors.New("retry: token released before its attempt")
