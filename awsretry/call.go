package awsretry

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/smithy-go/middleware"
	"github.com/retrykit/retry"
)

// middlewareID is the ID of the middleware that AddMiddleware adds to the
// initialize step of an operation's stack.
const middlewareID = "RetrykitCallState"

// AddMiddleware adds to stack the middleware that gives each operation
// call the state a Retryer keeps for it, as the first of the initialize
// step, with the ID "RetrykitCallState". Its signature is that of an entry
// of the APIOptions of aws.Config and of the clients' Options. Adding it
// twice to one stack adds it once. WithStrategy adds it; a Retryer
// installed by hand needs it too.
//
// The state lives in the call's context as a stack value, which the SDK
// clears for every operation call, so that a call made inside another
// (such as an endpoint discovery request) has its own. After the call, the
// middleware ends what the SDK left open with the strategy (see Retryer).
func AddMiddleware(stack *middleware.Stack) error {
	if _, ok := stack.Initialize.Get(middlewareID); ok {
		return nil
	}
	return stack.Initialize.Add(callMiddleware{}, middleware.Before)
}

type callMiddleware struct{}

func (callMiddleware) ID() string { return middlewareID }

func (callMiddleware) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	middleware.InitializeOutput, middleware.Metadata, error,
) {
	c := new(call)
	c.release = c.endAttempt
	out, md, err := next.HandleInitialize(middleware.WithStackValue(ctx, callKey{}, c), in)
	c.finish(ctx)
	return out, md, err
}

type callKey struct{}

// callFrom returns the state of the call that ctx belongs to, or nil.
func callFrom(ctx context.Context) *call {
	c, _ := middleware.GetStackValue(ctx, callKey{}).(*call)
	return c
}

// phase is where a call stands with its strategy.
type phase uint8

const (
	phaseIdle   phase = iota // no token asked for yet
	phaseReady               // a token admits the next attempt, not yet begun
	phaseSent                // an attempt is under way
	phaseFailed              // the last attempt failed; the strategy has not been told
	phaseOver                // the strategy has been told how the call ended, or was never asked
)

// call is the state of one operation call. The SDK's retry middleware
// calls its methods one after another, from the goroutine of the call, and
// the call's middleware reads it once that middleware has returned, so it
// needs no lock.
type call struct {
	r        *Retryer
	release  func(error) error // c.endAttempt, made once per call
	token    retry.RetryToken  // nil when the initial token was refused
	phase    phase
	attempts int   // attempts begun
	lastErr  error // the failure of the last attempt, in phaseFailed
	noRetry  error // why the call gets no retries: the initial token's refusal
}

// beginAttempt admits the next attempt.
func (c *call) beginAttempt(ctx context.Context) (func(error) error, error) {
	switch c.phase {
	case phaseIdle:
		s := c.r.strategy
		tok, err := s.AcquireInitialToken(ctx, c.r.scope(ctx))
		if err == nil && tok == nil {
			err = fmt.Errorf("%w: %T.AcquireInitialToken returned no token", retry.ErrInvalidToken, s)
		}
		if err != nil {
			if errors.Is(err, retry.ErrRateLimited) || errors.Is(err, retry.ErrDeadlineTooSoon) ||
				(ctx.Err() != nil && errors.Is(err, ctx.Err())) {
				c.phase = phaseOver
				return nil, err
			}
			c.noRetry = err // one attempt, no retries
		}
		c.token = tok
	case phaseReady:
	default:
		return nil, fmt.Errorf("%w: attempt token asked for while %s", errOutOfOrder, c.phase)
	}
	c.phase = phaseSent
	c.attempts++
	return c.release, nil
}

// endAttempt is the release func of every token a call hands the SDK. The
// SDK calls one or two of them after each attempt, with its error; the
// first call records the outcome and the others do nothing.
func (c *call) endAttempt(err error) error {
	if c.phase != phaseSent {
		return nil
	}
	if err != nil {
		c.phase, c.lastErr = phaseFailed, err
		return nil
	}
	c.phase = phaseOver
	if c.token != nil {
		_ = c.r.strategy.RecordSuccess(c.token) // the attempt succeeded; bookkeeping changes nothing for the caller
	}
	return nil
}

// refresh asks the strategy for the token of the next attempt after the
// failure opErr, which the SDK has decided to retry.
func (c *call) refresh(ctx context.Context, opErr error) (func(error) error, error) {
	if c.phase != phaseFailed {
		return nil, fmt.Errorf("%w: retry token asked for while %s", errOutOfOrder, c.phase)
	}
	c.phase, c.lastErr = phaseOver, nil
	if c.noRetry != nil {
		return nil, fmt.Errorf("awsretry: no retries, the initial token was refused: %w", c.noRetry)
	}
	cl := c.r.classifyOnce(opErr) // the SDK has just asked IsErrorRetryable about it
	cl.Safety = retry.SafetyYes
	s := c.r.strategy
	tok, err := s.RefreshRetryToken(ctx, c.token, mark(opErr, cl))
	if err == nil && tok == nil {
		err = fmt.Errorf("%w: %T.RefreshRetryToken returned no token", retry.ErrInvalidToken, s)
	}
	if err != nil {
		return nil, err
	}
	c.token, c.phase = tok, phaseReady
	return c.release, nil
}

// errCallEnded is the cause of the context in which finish tells the
// strategy how a call ended.
var errCallEnded = errors.New("awsretry: the SDK ended the call")

// finish tells the strategy what the SDK left open when the call ended;
// ctx is the call's context.
func (c *call) finish(ctx context.Context) {
	if c.r == nil || c.token == nil {
		return
	}
	switch c.phase {
	case phaseReady, phaseSent:
		// A token whose attempt was never made (or never got a response:
		// the SDK failed to rewind the request body).
		if c.r.releaser != nil {
			_ = c.r.releaser.ReleaseToken(c.token)
		}
	case phaseFailed:
		if ctx.Err() != nil {
			return // as retry.Do: a call whose caller gave up refreshes nothing
		}
		// The SDK stopped without a retry token: the error was not
		// retryable, or the attempts ran out. Tell the strategy so, in a
		// context that has already ended, so that it decides and never
		// waits. If the SDK's attempt limit (RetryMaxAttempts) stopped the
		// call before the strategy's would, the error is marked not
		// retryable, so that the strategy refuses instead of granting.
		cl := c.r.classifyOnce(c.lastErr)
		if cl.Retryable() && (c.r.maxAttempts == 0 || c.attempts < c.r.maxAttempts) {
			cl.Safety = retry.SafetyNo
		}
		done, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
		cancel(errCallEnded)
		tok, err := c.r.strategy.RefreshRetryToken(done, c.token, mark(c.lastErr, cl))
		if err == nil && tok != nil && c.r.releaser != nil {
			_ = c.r.releaser.ReleaseToken(tok)
		}
	}
	c.phase = phaseOver
}

func (p phase) String() string {
	switch p {
	case phaseIdle:
		return "no attempt was begun"
	case phaseReady:
		return "an attempt was admitted"
	case phaseSent:
		return "an attempt was under way"
	case phaseFailed:
		return "an attempt had failed"
	}
	return "the call was over"
}
