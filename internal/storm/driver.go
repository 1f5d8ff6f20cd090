package storm

import (
	"time"

	"github.com/retrykit/retry"
)

// A Stepper is a strategy driven step by step, without blocking: the
// non-blocking path of the retry package's Standard and Adaptive
// (PlanInitialToken, PlanRetryToken, Admit, ReleaseToken), which makes the
// same decisions as the blocking RetryStrategy methods that retry.Do
// calls, and leaves the waiting to the caller: here, the event loop, on
// virtual time.
type Stepper interface {
	PlanInitialToken(scope string) (retry.RetryToken, error)
	PlanRetryToken(token retry.RetryToken, err error) (retry.RetryToken, time.Duration, error)
	Admit(token retry.RetryToken) (time.Duration, error)
	ReleaseToken(token retry.RetryToken) error
	RecordSuccess(token retry.RetryToken) error
}

// A driver makes every call the simulation makes to a strategy under test:
// the initial token, the token's delay, Admit for a send slot, then
// RecordSuccess, or the next token, or ReleaseToken for an attempt that
// will not be made. Nothing here waits: the event loop waits, on virtual
// time, for the durations these calls return.
type driver struct{ s Stepper }

// initial returns the token of a request's first attempt and how long to
// wait before asking for its send slot. On an error wrapping
// retry.ErrRateLimited the request makes no attempt; on any other error
// it makes one attempt and no retries, as retry.Do does.
func (d driver) initial() (retry.RetryToken, time.Duration, error) {
	tok, err := d.s.PlanInitialToken("")
	if err != nil {
		return nil, 0, err
	}
	return tok, tok.Delay(), nil
}

// admit asks whether the attempt tok admits may be sent now: 0 and nil
// mean send; a positive duration means ask again after it; an error means
// the attempt is not made (the caller releases tok). An Adaptive
// strategy's Admit refuses, wrapping retry.ErrRateLimited, an attempt
// whose wait for a send slot would pass its WithMaxSendWait.
func (d driver) admit(tok retry.RetryToken) (time.Duration, error) { return d.s.Admit(tok) }

// retry reports that the attempt tok admitted failed with err, and returns
// the next attempt's token and its delay; or, when the strategy gives up,
// an error and how long the caller waits before giving up (a long-polling
// strategy's refusal delay, else 0).
func (d driver) retry(tok retry.RetryToken, attemptErr error) (retry.RetryToken, time.Duration, time.Duration, error) {
	next, wait, err := d.s.PlanRetryToken(tok, attemptErr)
	if err != nil {
		return nil, 0, max(wait, 0), err
	}
	return next, wait, 0, nil
}

// success reports that the attempt tok admitted succeeded.
func (d driver) success(tok retry.RetryToken) { _ = d.s.RecordSuccess(tok) }

// release gives tok back: its attempt will not be made.
func (d driver) release(tok retry.RetryToken) {
	if tok != nil {
		_ = d.s.ReleaseToken(tok)
	}
}
