package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/retrykit/retry"
)

// A caller's own retry loop, as an SDK middleware or an interceptor has,
// needs no timer code: the strategy waits the backoff (and, in adaptive
// mode, for a send slot) before it returns the next token.
func ExampleRetryStrategy() {
	strategy, _ := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(time.Millisecond)))
	ctx := context.Background()

	attempts := 0
	call := func(ctx context.Context) error {
		attempts++
		if attempts < 3 {
			return &apiError{Status: 503}
		}
		return nil
	}

	err := func() error {
		tok, err := strategy.AcquireInitialToken(ctx, "")
		if err != nil {
			return err
		}
		for {
			attemptErr := call(ctx)
			if attemptErr == nil {
				return strategy.RecordSuccess(tok)
			}
			if tok, err = strategy.RefreshRetryToken(ctx, tok, attemptErr); err != nil {
				return errors.Join(attemptErr, err)
			}
			fmt.Println("retry", tok.RetryCount(), "after", tok.Delay())
		}
	}()
	fmt.Println("attempts:", attempts, "error:", err)
	// Output:
	// retry 1 after 1ms
	// retry 2 after 1ms
	// attempts: 3 error: <nil>
}

// The non-blocking path is for event loops and simulations that keep their
// own timers: the strategy decides at once, and the caller waits.
func ExampleStandard_PlanRetryToken() {
	strategy, _ := retry.NewStandard(retry.WithBackoff(retry.ConstantBackoff(2 * time.Second)))

	tok, _ := strategy.PlanInitialToken("")
	// ... the first attempt fails with a 503 ...
	next, wait, err := strategy.PlanRetryToken(tok, &apiError{Status: 503})
	fmt.Println("retry after", wait, err)
	// ... the event loop schedules the attempt after wait, then asks:
	slot, err := strategy.Admit(next)
	fmt.Println("send slot wait", slot, err)
	// ... the second attempt fails with a 400, which is not retried.
	_, wait, err = strategy.PlanRetryToken(next, &apiError{Status: 400})
	fmt.Println("give up after", wait, "because:", err)
	// Output:
	// retry after 2s <nil>
	// send slot wait 0s <nil>
	// give up after 0s because: retry: error is not retryable
}

// An adaptive strategy bounds how long an attempt waits for a send slot:
// under overload, a request that cannot be sent soon fails at once with
// ErrRateLimited instead of queueing until its deadline.
func ExampleWithMaxSendWait() {
	// A limiter that has seen throttling and whose send slots are taken
	// for the next few seconds, as under overload.
	limiter, _ := retry.NewRateLimiter(retry.WithPublishedCUBIC())
	limiter.Update(true)
	for {
		if wait, _ := limiter.Acquire(); wait > 5*time.Second {
			break
		}
	}

	strategy, _ := retry.NewAdaptive(retry.WithRateLimiter(limiter), retry.WithMaxSendWait(time.Second))
	_, err := retry.Do(context.Background(), func(context.Context) (string, error) {
		return "sent", nil
	}, retry.WithStrategy(strategy))
	fmt.Println(errors.Is(err, retry.ErrRateLimited))
	fmt.Println(err)
	// Output:
	// true
	// retry: client-side rate limit exceeded: no send slot within 1s (WithMaxSendWait) (no attempt made)
}
