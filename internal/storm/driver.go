package storm

import (
	"errors"
	"fmt"
	"time"

	"github.com/retrykit/retry"
)

// A driver makes every call the simulation makes to a strategy under test,
// through the strategy's non-blocking path: the initial token, the token's
// delay, Admit for a send slot, then RecordSuccess, or the next token, or
// ReleaseToken for an attempt that will not be made. Nothing here waits:
// the event loop waits, on virtual time, for the durations these calls
// return.
type driver struct {
	s        retry.RetryStrategy
	gate     retry.Gate          // nil: every attempt may go at once
	releaser retry.TokenReleaser // nil: nothing to give back

	// maxSendWait bounds the time one attempt waits for a send slot in
	// all; 0: no bound. Past it the attempt is refused (errSendWait), as
	// an Adaptive strategy's Admit does with WithMaxSendWait.
	maxSendWait time.Duration
}

// errSendWait is the refusal of an attempt whose wait for a send slot
// would pass the bound. It wraps retry.ErrRateLimited, as Admit's does.
var errSendWait = fmt.Errorf("%w: send slot wait exceeds the bound", retry.ErrRateLimited)

func newDriver(s retry.RetryStrategy, maxSendWait time.Duration) *driver {
	d := &driver{s: s, maxSendWait: maxSendWait}
	d.gate, _ = s.(retry.Gate)
	d.releaser, _ = s.(retry.TokenReleaser)
	return d
}

// initial returns the token of a request's first attempt and how long to
// wait before asking for its send slot. On an error wrapping
// retry.ErrRateLimited the request makes no attempt; on any other error
// it makes one attempt and no retries, as retry.Do does.
func (d *driver) initial() (retry.RetryToken, time.Duration, error) {
	tok, err := d.s.AcquireInitialToken("")
	if err != nil {
		return nil, 0, err
	}
	return tok, tok.Delay(), nil
}

// admit asks whether the attempt tok admits may be sent now, the attempt
// having waited waited for its send slot so far: 0 and nil mean send; a
// positive duration means ask again after it; an error means the attempt
// is not made (the caller releases tok).
func (d *driver) admit(tok retry.RetryToken, waited time.Duration) (time.Duration, error) {
	if d.gate == nil {
		return 0, nil
	}
	wait, err := d.gate.Admit(tok)
	switch {
	case err != nil:
		return 0, err
	case wait > 0 && d.maxSendWait > 0 && waited+wait > d.maxSendWait:
		return 0, errSendWait
	}
	return wait, nil
}

// retry reports that the attempt tok admitted failed with err, and returns
// the next attempt's token and its delay; or, when the strategy gives up,
// an error and how long the caller waits before giving up (a long-polling
// strategy's refusal delay, else 0).
func (d *driver) retry(tok retry.RetryToken, attemptErr error) (retry.RetryToken, time.Duration, time.Duration, error) {
	next, err := d.s.RefreshRetryToken(tok, attemptErr)
	if err != nil {
		var dr retry.DelayedRefusal
		var wait time.Duration
		if errors.As(err, &dr) {
			wait = max(dr.RefusalDelay(), 0)
		}
		return nil, 0, wait, err
	}
	return next, next.Delay(), 0, nil
}

// success reports that the attempt tok admitted succeeded.
func (d *driver) success(tok retry.RetryToken) { _ = d.s.RecordSuccess(tok) }

// release gives tok back: its attempt will not be made.
func (d *driver) release(tok retry.RetryToken) {
	if d.releaser != nil && tok != nil {
		_ = d.releaser.ReleaseToken(tok)
	}
}
