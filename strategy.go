package retry

import "context"

// A RetryStrategy decides whether, and when, a failed operation is tried
// again. It issues a RetryToken for each attempt; all per-call state lives
// in the tokens, so one strategy can serve any number of concurrent calls.
//
// The contract is blocking: each method returns when the caller may act on
// its answer. A caller's own loop (an SDK middleware, an interceptor, a
// consumer) that does nothing but acquire, attempt, refresh, attempt, ...,
// record gets everything the strategy offers, backoff and client-side
// pacing included, with no timer code of its own:
//
//	tok, err := s.AcquireInitialToken(ctx, scope)
//	if err != nil {
//		// ErrRateLimited, ErrDeadlineTooSoon or ctx's error: no attempt.
//		// Any other error: one attempt, without retries.
//	}
//	for {
//		attemptErr := call(ctx)
//		if attemptErr == nil {
//			s.RecordSuccess(tok)
//			return nil
//		}
//		if tok, err = s.RefreshRetryToken(ctx, tok, attemptErr); err != nil {
//			return err // says why there is no next attempt; keep attemptErr too
//		}
//	}
//
// Do, Run and Transport drive any RetryStrategy this way and wait nothing
// themselves: every wait is the strategy's, so a strategy that returns at
// once gets immediate retries.
type RetryStrategy interface {
	// AcquireInitialToken returns the token for the first attempt, when
	// that attempt may be made: a strategy that paces sending (Adaptive)
	// waits here for a send slot. scope separates quota and rate state
	// (one per endpoint, for example); "" is the default scope.
	//
	// An error still allows exactly one attempt, without retries, unless
	// it wraps ErrRateLimited, ErrDeadlineTooSoon or ctx's error: then no
	// attempt may be made. A ctx that is already done is refused at once.
	AcquireInitialToken(ctx context.Context, scope string) (RetryToken, error)

	// RefreshRetryToken is called after the attempt admitted by token
	// failed with err. It returns the token for the next attempt when that
	// attempt may be made: it waits the backoff (never less than a
	// retry-after hint that err carries) and any send slot, unless ctx ends
	// first (the error wraps ctx's error) or ctx's deadline would pass
	// before the attempt could start (the error wraps ErrDeadlineTooSoon);
	// a wait cut short gives back what the token took from the retry
	// quota.
	//
	// When there is no next attempt it returns an error saying why
	// (wrapping ErrNotRetryable, ErrMaxAttemptsExceeded,
	// ErrRetryQuotaExceeded, ...): at once, or, where the strategy asks its
	// callers to wait before giving up (WithLongPolling), after waiting that
	// long itself.
	RefreshRetryToken(ctx context.Context, token RetryToken, err error) (RetryToken, error)

	// RecordSuccess reports that the attempt admitted by token succeeded.
	RecordSuccess(token RetryToken) error
}

// A Delegator is a RetryStrategy that, at times, does nothing but what
// another strategy does: a wrapper that adds a step only under some
// condition, such as redisretry's strategy, which admits each attempt in
// Redis while a fleet's rate is low and is an Adaptive strategy otherwise.
// While Delegate returns a strategy, Do and Run use that one for the call
// instead of the wrapper, and with a Standard or Adaptive strategy take
// their fast path: the wrapper costs a call to Delegate. Delegate must be
// cheap and safe for concurrent use; nil means the wrapper itself. Do and
// Run ask once per call, so a call's retries stay with the strategy its
// first attempt had.
type Delegator interface {
	RetryStrategy
	Delegate() RetryStrategy
}
