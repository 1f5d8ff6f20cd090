package grpcretry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/retrykit/retry"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// call drives the attempts of one stream with the strategy, following the
// strategy contract's loop (acquire, attempt, refresh, attempt, ...,
// record): a stream's attempts are not one function that retry.Do could
// call again, as a unary call's are. The strategy does every wait.
type call struct {
	ctx      context.Context
	s        retry.RetryStrategy
	cfg      *config
	tok      retry.RetryToken
	tokErr   error // the strategy refused the initial token: one attempt, no retries
	attempts int
	send     bool // SendAttempts
	max      int  // the strategy's attempt limit, for SendAttempts; 0: unknown
}

// attemptContext returns the context of the next attempt: ctx, with the
// attempt's number and limit in its metadata under SendAttempts.
func (c *call) attemptContext(ctx context.Context) context.Context {
	if !c.send {
		return ctx
	}
	return withAttempt(ctx, c.attempts+1, c.max)
}

// withAttempt returns ctx with the attempt's number and the strategy's
// attempt limit (0: unknown) in its metadata, as SendAttempts sends them.
func withAttempt(ctx context.Context, attempt, limit int) context.Context {
	v := "attempt=" + strconv.Itoa(attempt)
	if limit > 0 {
		v += "; max=" + strconv.Itoa(limit)
	}
	return metadata.AppendToOutgoingContext(ctx, "amz-sdk-request", v)
}

// ready reports whether a call made with ctx is retried, or returns the
// error of a call that cannot be made: a bad option, a nil context, or a
// caller's context already done (whose deadline may have passed before
// its timer fired). A call with retries disabled is made as if there were
// no interceptor, its context done or not.
func (cfg *config) ready(ctx context.Context) (retried bool, err error) {
	switch {
	case cfg.err != nil:
		return false, newCallError(ctx, 0, nil, cfg.err)
	case ctx == nil:
		return false, newCallError(ctx, 0, nil, configError("interceptor", "a nil context.Context", "a non-nil Context"))
	case cfg.disabled:
		return false, nil
	}
	if done := callerDone(ctx); done != nil {
		return false, newCallError(ctx, 0, nil, done)
	}
	return true, nil
}

// strategyOf returns the strategy of a call made with ctx.
func (cfg *config) strategyOf(ctx context.Context) retry.RetryStrategy {
	if cfg.strategy != nil {
		return cfg.strategy
	}
	return retry.StrategyFromContext(ctx)
}

// attemptLimit returns the attempt limit SendAttempts sends with s's
// attempts: its MaxAttempts, if it has that method; 0 otherwise.
func (cfg *config) attemptLimit(s retry.RetryStrategy) int {
	if m, ok := s.(interface{ MaxAttempts() int }); ok && cfg.send {
		return m.MaxAttempts()
	}
	return 0
}

// gaveUp returns the error of a unary call made with ctx whose retry.Do
// or retry.DoHedged gave up with err (which has told the request ctx
// serves, if any): the last attempt's error as it was, before it was
// marked for the strategy.
func gaveUp(ctx context.Context, err error) error {
	var e *retry.Error
	if !errors.As(err, &e) {
		e = &retry.Error{Reason: err}
	}
	if c, ok := e.Err.(*classified); ok {
		e.Err = c.err
	}
	return callErrorOf(ctx, e)
}

// start returns the call of one RPC, after the strategy has admitted its
// first attempt, or nil if retries are disabled: the interceptor then
// calls gRPC directly. Its error, returned to the caller as is, means no
// attempt may be made.
func (cfg *config) start(ctx context.Context, method string, cc *grpc.ClientConn) (*call, error) {
	if retried, err := cfg.ready(ctx); !retried {
		return nil, err
	}
	c := &call{ctx: ctx, s: cfg.strategyOf(ctx), cfg: cfg, send: cfg.send}
	c.max = cfg.attemptLimit(c.s)
	tok, err := c.s.AcquireInitialToken(ctx, cfg.scopeOf(ctx, method, cc))
	if err == nil && tok == nil {
		err = fmt.Errorf("%w: %T.AcquireInitialToken returned no token", retry.ErrInvalidToken, c.s)
	}
	if err != nil && noAttempt(ctx, err) {
		return nil, newCallError(ctx, 0, nil, err)
	}
	c.tok, c.tokErr = tok, err
	return c, nil
}

// noAttempt reports whether err, the strategy's refusal of an initial
// token, forbids even the one attempt a refusal otherwise allows. A
// strategy that is not configured properly allows none either.
func noAttempt(ctx context.Context, err error) bool {
	return errors.Is(err, retry.ErrRateLimited) || errors.Is(err, retry.ErrDeadlineTooSoon) ||
		errors.Is(err, retry.ErrInvalidConfig) || (ctx.Err() != nil && errors.Is(err, ctx.Err()))
}

// failed reports that an attempt failed with err; trailer is the trailer
// metadata the server sent with it, if any. It returns nil once the next
// attempt may be made, or the error to give the caller.
func (c *call) failed(err error, trailer metadata.MD) error {
	c.attempts++
	if done := callerDone(c.ctx); done != nil {
		// The caller's deadline or cancellation: never retried.
		return newCallError(c.ctx, c.attempts, err, done)
	}
	if c.tokErr != nil {
		return newCallError(c.ctx, c.attempts, err, c.tokErr)
	}
	if refusal := retry.LayerRefusal(c.ctx); refusal != nil {
		return newCallError(c.ctx, c.attempts, err, refusal) // the caller of the request this call serves will retry
	}
	marked := c.cfg.mark(err, trailer)
	if p, ok := marked.err.(*pushedBack); ok {
		err = p
	}
	tok, reason := c.s.RefreshRetryToken(c.ctx, c.tok, marked)
	if reason == nil && tok == nil {
		reason = fmt.Errorf("%w: %T.RefreshRetryToken returned no token", retry.ErrInvalidToken, c.s)
	}
	if reason != nil {
		return newCallError(c.ctx, c.attempts, err, reason)
	}
	c.tok = tok
	return nil
}

// mark returns err, an attempt's error, with what the classifier and the
// trailer the server sent with it make of it, for the strategy. An error
// the server answered not to retry is wrapped in a *pushedBack first: a
// layer above should not retry it either.
func (cfg *config) mark(err error, trailer metadata.MD) *classified {
	return mark(cfg.classifier, err, trailer)
}

// mark is config.mark with the classifier given.
func mark(classify retry.Classifier, err error, trailer metadata.MD) *classified {
	if _, stop := pushback(trailer); stop {
		err = &pushedBack{err}
	}
	return &classified{err: err, c: withPushback(classify(err), trailer)}
}

// succeeded reports that an attempt succeeded.
func (c *call) succeeded() {
	if c.tokErr == nil {
		_ = c.s.RecordSuccess(c.tok) // the call succeeded; a bookkeeping error changes nothing for the caller
	}
}

// callerDone returns why the caller's context is done, or nil if it is
// not. A context whose deadline has passed is done, even if its timer has
// not fired yet: gRPC already reports such a call as DEADLINE_EXCEEDED, and
// the server may already have given up on it.
func callerDone(ctx context.Context) error {
	if ctx.Err() != nil {
		return contextReason(ctx)
	}
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// contextReason returns ctx's error, with its cause if that says more.
func contextReason(ctx context.Context) error {
	err := ctx.Err()
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("%w: %w", err, cause)
	}
	return err
}

// callError is the error the interceptors return when they give up. It
// unwraps to a *retry.Error, which wraps both the last attempt's error and
// the reason for giving up, and it carries the gRPC status the caller
// would have seen without the interceptor: the last attempt's, or the
// context's once the caller's context is done.
type callError struct {
	err *retry.Error
	st  *status.Status
}

func (e *callError) Error() string              { return e.err.Error() }
func (e *callError) Unwrap() error              { return e.err }
func (e *callError) GRPCStatus() *status.Status { return e.st }

// newCallError returns the error for a call that made attempts attempts,
// the last failing with err (nil if none was made), and gave up because of
// reason.
func newCallError(ctx context.Context, attempts int, err, reason error) error {
	e := callErrorOf(ctx, &retry.Error{Attempts: attempts, Err: err, Reason: reason})
	retry.ReportGiveUp(ctx, e.err) // for the request this call serves, if a server interceptor keeps its Layer
	return e
}

// callErrorOf returns the error for a call made with ctx that gave up as r
// says.
func callErrorOf(ctx context.Context, r *retry.Error) *callError {
	e := &callError{err: r}
	err, reason := r.Err, r.Reason
	var done error
	if ctx != nil {
		done = callerDone(ctx)
	}
	switch {
	case done != nil:
		e.st = status.FromContextError(done)
	case err != nil:
		e.st = status.Convert(err)
	case errors.Is(reason, retry.ErrRateLimited):
		e.st = localRefusal(reason)
	case errors.Is(reason, retry.ErrDeadlineTooSoon):
		e.st = status.New(codes.DeadlineExceeded, reason.Error())
	default:
		e.st = status.New(codes.Internal, reason.Error())
	}
	return e
}

// pushedBack is the error of an attempt whose server answered not to
// retry it (a negative pushback): it wraps the attempt's error and
// retry.ErrNoRetryAnswer, and keeps the attempt's status.
type pushedBack struct{ err error }

func (e *pushedBack) Error() string              { return e.err.Error() }
func (e *pushedBack) Unwrap() []error            { return []error{e.err, retry.ErrNoRetryAnswer} }
func (e *pushedBack) GRPCStatus() *status.Status { return status.Convert(e.err) }
