package retry

import (
	"fmt"
	"sync/atomic"
	"time"
)

// A RetryToken admits one attempt of an operation. A strategy issues the
// first with AcquireInitialToken and each later one with RefreshRetryToken;
// the token carries the per-call state, so the strategy itself stays
// shareable.
type RetryToken interface {
	// Delay is how long to wait before the attempt this token admits. The
	// first attempt may wait too, for example for a client-side rate
	// limiter.
	Delay() time.Duration
	// RetryCount is the number of attempts made so far minus the initial
	// one: 0 for the token of the first attempt.
	RetryCount() int
}

// TokenReleaser is implemented by strategies that can take back a token
// whose attempt was never made, such as when the caller's context ended
// during the token's delay. ReleaseToken gives back the retry quota the
// token took, without counting a success, and uses the token up. Do calls
// it when it abandons a token.
type TokenReleaser interface {
	ReleaseToken(token RetryToken) error
}

// token is the RetryToken of Standard and Adaptive.
type token struct {
	owner     *engine
	scope     *scopeState
	scopeName string
	retries   int
	delay     time.Duration
	cost      int    // quota tokens taken to issue this token
	pending   bool   // the attempt still needs a send slot (see Gate)
	used      uint32 // set once refreshed, recorded or released (atomic)

	prevBackoff time.Duration // the backoff chosen for this attempt, for a ChainedBackoff; 0 for the first
}

func (t *token) Delay() time.Duration { return t.delay }
func (t *token) RetryCount() int      { return t.retries }

// claim checks that rt is an unused token issued by e and marks it used, so
// that each token is refreshed, recorded or released at most once.
func (e *engine) claim(rt RetryToken) (*token, error) {
	t, err := e.unused(rt)
	if err == nil && !atomic.CompareAndSwapUint32(&t.used, 0, 1) {
		err = errTokenUsed
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// unused checks, without claiming it, that rt is a token issued by e that
// was not used yet.
func (e *engine) unused(rt RetryToken) (*token, error) {
	t, ok := rt.(*token)
	switch {
	case !ok || t == nil:
		return nil, fmt.Errorf("%w: %T was not issued by this strategy", ErrInvalidToken, rt)
	case t.owner != e:
		return nil, fmt.Errorf("%w: token was issued by another strategy", ErrInvalidToken)
	case atomic.LoadUint32(&t.used) != 0:
		return nil, errTokenUsed
	}
	return t, nil
}

var errTokenUsed = fmt.Errorf("%w: token was already used", ErrInvalidToken)
