package retry

import (
	"container/list"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A RetryStrategy decides whether, and when, a failed operation is tried
// again. It issues a RetryToken for each attempt; all per-call state lives
// in the tokens, so one strategy can serve any number of concurrent calls.
// Do and Transport drive any RetryStrategy; a caller with its own loop uses
// the three methods directly:
//
//	token, err := s.AcquireInitialToken(scope)
//	// err != nil: make one attempt, without retries.
//	for {
//		// wait token.Delay(), then attempt
//		if attemptErr == nil {
//			s.RecordSuccess(token)
//			break
//		}
//		if token, err = s.RefreshRetryToken(token, attemptErr); err != nil {
//			break // err says why not
//		}
//	}
type RetryStrategy interface {
	// AcquireInitialToken returns the token for the first attempt. scope
	// separates quota and rate state (one per endpoint, for example); ""
	// is the default scope. An error here still allows exactly one
	// attempt.
	AcquireInitialToken(scope string) (RetryToken, error)
	// RefreshRetryToken returns the token for the next attempt after the
	// attempt admitted by token failed with err, or an error saying why
	// there is none.
	RefreshRetryToken(token RetryToken, err error) (RetryToken, error)
	// RecordSuccess reports that the attempt admitted by token succeeded.
	RecordSuccess(token RetryToken) error
}

// DelayedRefusal is implemented by errors from RefreshRetryToken that ask
// the caller to wait before giving up, as a long-polling strategy's does
// when its retry quota is spent (see WithLongPolling). Do and Transport
// wait RefusalDelay, unless the context ends first, then return the error.
type DelayedRefusal interface {
	error
	RefusalDelay() time.Duration
}

type delayedRefusal struct {
	err   error
	delay time.Duration
}

func (r *delayedRefusal) Error() string               { return r.err.Error() }
func (r *delayedRefusal) Unwrap() error               { return r.err }
func (r *delayedRefusal) RefusalDelay() time.Duration { return r.delay }

// A Gate is implemented by strategies whose tokens must pass a check right
// before their attempt, such as Adaptive, whose client-side rate limiter
// gives out send slots. After waiting a token's delay, a caller asks Admit
// whether the attempt may go now: 0 and a nil error mean yes; a positive
// duration means no send slot yet, ask again after that long; an error
// means the attempt must not be made (a fail-fast limiter's refusal wraps
// ErrRateLimited). Do and Transport do this for every token.
type Gate interface {
	Admit(token RetryToken) (time.Duration, error)
}

// scopeState is the quota and rate state of one scope. Either may be nil:
// no retry quota, or no rate limiting.
type scopeState struct {
	bucket  *TokenBucket
	limiter *RateLimiter
}

// engine is the retry logic that Standard and Adaptive share. It is
// immutable after construction but for its scope cache, which has its own
// lock.
type engine struct {
	maxAttempts     int
	backoff         Backoff
	throttleBackoff Backoff
	classify        Classifier
	retryAfterLimit time.Duration // 0: none
	longPolling     bool
	hooks           []Hook

	def    scopeState // the default scope, "", and every scope when shared
	scopes *scopeCache
}

// scope returns the state of the named scope, creating it if needed.
func (e *engine) scope(name string) *scopeState {
	if name == "" || e.scopes == nil {
		return &e.def
	}
	return e.scopes.get(name)
}

// acquire fills t, a zero token, with the token for the first attempt.
func (e *engine) acquire(scope string, t *token) error {
	st := e.scope(scope)
	t.owner, t.scope, t.scopeName, t.pending = e, st, scope, st.limiter != nil
	if b := st.bucket; b != nil && b.cfg.initialTryCost > 0 {
		w, err := b.Acquire(b.cfg.initialTryCost)
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
// next attempt, or says why there is none.
func (e *engine) refresh(t *token, err error) error {
	c := e.classify(err)
	reason := e.next(t, c)
	if len(e.hooks) > 0 {
		ev := Event{Kind: EventRetry, Scope: t.scopeName, Attempt: t.retries + 1, Delay: t.delay, Err: err, Classification: c}
		if reason != nil {
			ev.Kind, ev.Delay, ev.Reason = EventGiveUp, 0, reason
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
		return fmt.Errorf("%w (%d of %d)", ErrMaxAttemptsExceeded, attempts, e.maxAttempts)
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

	cost := 0
	if st.bucket != nil {
		cost = st.bucket.RetryCost(c)
		w, err := st.bucket.Acquire(cost)
		if err != nil {
			if e.longPolling {
				return &delayedRefusal{err: err, delay: backoff}
			}
			return err
		}
		delay = max(delay, w)
	}
	t.retries, t.delay, t.cost, t.pending = n, delay, cost, st.limiter != nil
	t.prevBackoff = backoff // for the next retry's ChainedBackoff
	return nil
}

// admit checks that the attempt t admits may go now. A token of a strategy
// without a rate limiter, or one already admitted, always may.
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
		return 0, err
	}
	return max(d, 1), nil // a refusal always asks to wait
}

// record reports the success of the attempt t admitted.
func (e *engine) record(t *token) {
	if len(e.hooks) > 0 {
		e.emit(Event{Kind: EventSuccess, Scope: t.scopeName, Attempt: t.retries + 1})
	}
	st := t.scope
	if st.limiter != nil {
		st.limiter.Update(false)
	}
	if st.bucket == nil {
		return
	}
	if t.retries == 0 {
		_ = st.bucket.Release(st.bucket.cfg.initialTrySuccessIncrement)
	} else {
		_ = st.bucket.Release(t.cost)
	}
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
		_ = t.scope.bucket.Release(t.cost)
	}
}

// The exported methods, shared by Standard and Adaptive.

func (e *engine) acquireInitialToken(scope string) (RetryToken, error) {
	t := new(token)
	if err := e.acquire(scope, t); err != nil {
		return nil, err
	}
	return t, nil
}

func (e *engine) refreshRetryToken(rt RetryToken, err error) (RetryToken, error) {
	old, cerr := e.claim(rt)
	if cerr != nil {
		return nil, cerr
	}
	t := &token{owner: e, scope: old.scope, scopeName: old.scopeName, retries: old.retries, cost: old.cost, prevBackoff: old.prevBackoff}
	if err := e.refresh(t, err); err != nil {
		return nil, err
	}
	return t, nil
}

func (e *engine) recordSuccess(rt RetryToken) error {
	t, err := e.claim(rt)
	if err != nil {
		return err
	}
	e.record(t)
	return nil
}

func (e *engine) admitToken(rt RetryToken) (time.Duration, error) {
	t, err := e.unused(rt)
	if err != nil {
		return 0, err
	}
	return e.admit(t)
}

func (e *engine) releaseToken(rt RetryToken) error {
	t, err := e.claim(rt)
	if err != nil {
		return err
	}
	e.abandon(t, nil, errTokenReleased)
	return nil
}

var errTokenReleased = errors.New("retry: token released before its attempt")

// DefaultMaxScopes is how many named scopes a strategy keeps state for by
// default, as the Smithy Java client does.
const DefaultMaxScopes = 128

// scopeCache keeps the state of the most recently used named scopes. When
// it is full, the least recently used scope is forgotten; if it is seen
// again it starts afresh, with a full bucket and an idle limiter. The bound
// keeps arbitrary scope strings from growing memory without limit.
type scopeCache struct {
	newState func() *scopeState
	limit    int

	mu  sync.Mutex
	m   map[string]*list.Element // of *scopeEntry
	lru list.List                // front: most recently used
}

type scopeEntry struct {
	name  string
	state *scopeState
}

func newScopeCache(limit int, newState func() *scopeState) *scopeCache {
	return &scopeCache{newState: newState, limit: limit, m: make(map[string]*list.Element)}
}

func (c *scopeCache) get(name string) *scopeState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[name]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*scopeEntry).state
	}
	if c.lru.Len() >= c.limit {
		oldest := c.lru.Back()
		c.lru.Remove(oldest)
		delete(c.m, oldest.Value.(*scopeEntry).name)
	}
	st := c.newState()
	c.m[name] = c.lru.PushFront(&scopeEntry{name: name, state: st})
	return st
}
