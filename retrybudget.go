package retry

import (
	"fmt"
	"math"
)

// The retry budget of a TokenBucket.
//
// A retry quota of absolute size (the AWS SDKs' 500 tokens) bounds the
// retries of one client; it does not bound those of a fleet. A thousand
// clients that each send a request every 25 seconds hold 500,000 tokens
// between them: when a service slows down past their timeouts, each
// timeout costs 10 and the fleet can retry 50,000 times, enough to keep
// the service overloaded long after whatever overloaded it has gone (M.
// Brooker's metastable trigger; the storm demo's metastable table). What
// bounds a fleet's retries whatever its size is a budget relative to each
// client's requests, as Finagle's and Envoy's retry budgets are.
//
// So a bucket also keeps a budget while its scope is failing: from the
// moment one of its requests gives up after a failure that could have been
// retried (out of attempts, or refused by the quota or the budget) until
// an attempt succeeds. While it fails, each request whose first attempt
// fails adds the budget's ratio of a retry (WithRetryBudget, default 20%),
// up to retryBudgetCap retries, and each retry takes one; a retry the
// budget cannot pay is refused, as the quota refuses one. A scope that has
// not failed, or has recovered, is bound by the quota alone: a client that
// meets an occasional error retries it as the AWS SDKs do. The budget
// starts empty, so in a failing fleet every client retries at most the
// budget's share of its own requests, and the fleet's load stays within
// 1.2 times the requests it receives, however many clients share it.

// budgetUnit is one retry, or one hedge, in the fixed-point units of a
// retry budget or of a Hedging's budget.
const budgetUnit = 1_000_000

// retryBudgetCap is the most retries the budget holds: a scope that fails
// for long, its retries refused by the quota, does not build up a burst of
// retries for the moment the quota has tokens again.
const retryBudgetCap = 10

// WithRetryBudget sets the share of its requests, in [0, 1], that a
// failing scope may retry (default DefaultRetryBudget, 0.2): while the
// scope fails, each request whose first attempt fails adds ratio of a
// retry to the budget, and each retry takes one, on top of its cost in
// tokens. A scope fails from the moment one of its requests gives up after
// a retryable failure (out of attempts, or refused by the quota or the
// budget) until an attempt succeeds. 0 turns the budget off: the quota
// alone bounds retries, as in the AWS SDKs. See TokenBucket.
func WithRetryBudget(ratio float64) TokenBucketOption {
	return bucketOption(func(c *bucketConfig) { c.retryBudget = ratio })
}

// setFull sets the full flag of a bucket that holds its capacity, unless
// its scope is failing: a failing scope's first-attempt successes must
// reach succeeded, which the full flag would let them skip. (A scope that
// starts failing after the flag is set clears it again: see failed.)
func (b *TokenBucket) setFull() {
	b.full.Store(true)
	if b.failing.Load() {
		b.full.Store(false)
	}
}

// failed notes that a request of the bucket's scope gave up after a
// retryable failure classified as c, or that a retry timed out: unless c
// is a throttle, the scope is failing, with an empty budget. A throttle
// says that the service holds a client back, not that it is broken: it
// may throttle one key or one operation whatever the load, and adaptive
// mode paces the client instead.
func (b *TokenBucket) failed(c Classification) {
	if b.cfg.retryBudget == 0 || c.Throttle || b.failing.Load() {
		return
	}
	b.budget.Store(0)
	b.failing.Store(true)
	b.full.Store(false) // after failing: see setFull
}

// succeeded notes that an attempt of the bucket's scope succeeded: the
// scope no longer fails.
func (b *TokenBucket) succeeded() {
	if !b.failing.Load() || !b.failing.CompareAndSwap(true, false) {
		return
	}
	// The full flag was held down while the scope failed.
	if b.cfg.refillRate == 0 {
		if b.holdsCapacity() {
			b.syncFull()
		}
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.level == float64(b.cfg.maxCapacity) {
		b.setFull()
	}
}

// spendRetry takes one retry from the budget of a failing scope, after a
// failed attempt; first says that it was a request's first attempt, which
// adds the budget's share of a retry first. A scope that is not failing
// spends nothing.
func (b *TokenBucket) spendRetry(first bool) error {
	if !b.failing.Load() {
		return nil
	}
	if first {
		add := int64(math.Round(b.cfg.retryBudget * budgetUnit))
		for {
			old := b.budget.Load()
			next := min(old+add, retryBudgetCap*budgetUnit)
			if next == old || b.budget.CompareAndSwap(old, next) {
				break
			}
		}
	}
	for {
		old := b.budget.Load()
		if old < budgetUnit {
			return fmt.Errorf("%w: the scope is failing, and its retries are at most %v of its requests (WithRetryBudget)",
				ErrRetryQuotaExceeded, b.cfg.retryBudget)
		}
		if b.budget.CompareAndSwap(old, old-budgetUnit) {
			return nil
		}
	}
}

// refundRetry gives back a retry that spendRetry took for a retry that the
// quota then refused.
func (b *TokenBucket) refundRetry() {
	if b.failing.Load() {
		b.budget.Add(budgetUnit)
	}
}
