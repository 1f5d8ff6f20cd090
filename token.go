package retry

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"
)

// A RetryToken admits one attempt of an operation. A strategy issues the
// first with AcquireInitialToken and each later one with RefreshRetryToken;
// the token carries the per-call state, so the strategy itself stays
// shareable. A token is used once: refreshed or recorded, it is spent.
type RetryToken interface {
	// Delay is the whole wait the strategy imposed before the attempt this
	// token admits: backoff and pacing; 0 for none. A token from the
	// non-blocking Plan methods reports the wait still to be made before
	// its attempt (see Standard.PlanRetryToken).
	Delay() time.Duration
	// RetryCount is the number of attempts made so far minus the initial
	// one: 0 for the token of the first attempt.
	RetryCount() int
}

// token is the RetryToken of Standard and Adaptive.
type token struct {
	owner     *engine
	scope     *scopeState
	scopeName string
	retries   int
	delay     time.Duration
	cost      int       // quota tokens taken to issue this token
	pending   bool      // the attempt still needs a send slot (see engine.admit)
	slotSince time.Time // when the attempt first asked for a send slot and found none
	used      uint32    // set once refreshed, recorded or released (atomic)

	prevBackoff time.Duration // the backoff chosen for this attempt, for a ChainedBackoff; 0 for the first
}

// stripeHint tells a spread retry quota which stripe t's call takes
// tokens from and gives them back to: t's address (see stripeHint).
func (t *token) stripeHint() stripeHint { return stripeHint(unsafe.Pointer(t)) }

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
