package redisretry

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/retrykit/retry"
)

// exactStrategy is a Fleet's strategy when exact admission is possible: it
// admits each attempt in Redis, while the fleet's rate is low enough, and
// otherwise leaves everything to the Adaptive strategy.
type exactStrategy struct{ f *Fleet }

// AcquireInitialToken admits the first attempt in Redis, if exact
// admission is on, then takes the Adaptive strategy's token.
func (s exactStrategy) AcquireInitialToken(ctx context.Context, scope string) (retry.RetryToken, error) {
	if err := s.f.admit(ctx); err != nil {
		return nil, err
	}
	return s.f.adaptive.AcquireInitialToken(ctx, scope)
}

// RefreshRetryToken takes the Adaptive strategy's token for the next
// attempt (its backoff and retry budget), then admits it in Redis.
func (s exactStrategy) RefreshRetryToken(ctx context.Context, token retry.RetryToken, err error) (retry.RetryToken, error) {
	next, err := s.f.adaptive.RefreshRetryToken(ctx, token, err)
	if err != nil {
		return next, err
	}
	if err := s.f.admit(ctx); err != nil {
		_ = s.f.adaptive.ReleaseToken(next) // the retry is not made: give back its budget
		return nil, err
	}
	return next, nil
}

// RecordSuccess records a success with the Adaptive strategy.
func (s exactStrategy) RecordSuccess(token retry.RetryToken) error {
	return s.f.adaptive.RecordSuccess(token)
}

// admit waits for the attempt's slot of the fleet's rate, when exact
// admission is on. An attempt whose slot is further away than the maximum
// wait, or than ctx's deadline, is refused (the error wraps
// retry.ErrRateLimited); ctx ending during the wait is an error wrapping
// ctx's. When Redis fails, the attempt goes on under the local limiter.
func (f *Fleet) admit(ctx context.Context) error {
	if !f.exact.Load() {
		return nil
	}
	maxWait := f.cfg.maxWait
	if dl, ok := ctx.Deadline(); ok {
		maxWait = min(maxWait, time.Until(dl))
	}
	ok, wait, err := f.reserve(ctx, maxWait)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("redisretry: waiting for a send slot: %w", ctx.Err())
	case err != nil:
		f.mu.Lock()
		f.failLocked(f.clock.Now(), f.measure(f.clock.Now()), fmt.Errorf("redisretry: admitting an attempt on %q: %w", f.name, err))
		f.mu.Unlock()
		return nil
	case !ok:
		return fmt.Errorf("%w: the fleet's next send slot is %v away (redisretry.WithMaxWait %v)", retry.ErrRateLimited, wait, maxWait)
	case wait <= 0:
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("redisretry: waiting for a send slot: %w", ctx.Err())
	}
}

// reserve asks Redis for the next send slot within maxWait: ok says that
// it was reserved, wait how far away it is.
func (f *Fleet) reserve(ctx context.Context, maxWait time.Duration) (ok bool, wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.admitTimeout)
	defer cancel()
	res, err := gcraScript.Run(ctx, f.rdb, f.state, max(maxWait, 0).Microseconds(), f.cfg.burst, f.scriptNow()).Slice()
	if err != nil {
		return false, 0, err
	}
	if len(res) != 3 {
		return false, 0, fmt.Errorf("%w: %d values, want 3", errBadReply, len(res))
	}
	admitted, _ := res[0].(int64)
	w, werr := strconv.ParseFloat(fmt.Sprint(res[1]), 64)
	if werr != nil || !(w >= 0 && w <= maxRate) || admitted == 1 && w > float64(max(maxWait, 0).Microseconds())+1 {
		return false, 0, fmt.Errorf("%w: wait %v", errBadReply, res[1])
	}
	return admitted == 1, time.Duration(w * float64(time.Microsecond)), nil
}
