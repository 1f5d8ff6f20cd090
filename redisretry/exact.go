package redisretry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/retrykit/retry"
)

// exactStrategy is a Fleet's strategy when exact admission is possible:
// each attempt takes its token from the Adaptive strategy (backoff, retry
// budget, and the local limiter, which keeps the process near its share),
// and then, while exact admission is on, its slot of the fleet's rate in
// Redis.
type exactStrategy struct{ f *Fleet }

// AcquireInitialToken takes the Adaptive strategy's token for the first
// attempt, then admits the attempt in Redis.
func (s exactStrategy) AcquireInitialToken(ctx context.Context, scope string) (retry.RetryToken, error) {
	tok, err := s.f.adaptive.AcquireInitialToken(ctx, scope)
	s.f.wanted(err)
	if err != nil {
		return tok, err
	}
	return s.admitted(ctx, tok)
}

// RefreshRetryToken takes the Adaptive strategy's token for the next
// attempt, then admits the attempt in Redis.
func (s exactStrategy) RefreshRetryToken(ctx context.Context, token retry.RetryToken, err error) (retry.RetryToken, error) {
	next, err := s.f.adaptive.RefreshRetryToken(ctx, token, err)
	s.f.wanted(err)
	if err != nil {
		return next, err
	}
	return s.admitted(ctx, next)
}

// wanted counts an attempt the process asked to make under exact
// admission, once, whether the local limiter or Redis admitted it, made
// it wait or refused it: the demand the next lease reports (see measure).
// A retry refused for its own sake (not retryable, out of attempts or of
// budget) is not one.
func (f *Fleet) wanted(err error) {
	if f.exact.Load() && (err == nil || errors.Is(err, retry.ErrRateLimited) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		f.asked.Add(1)
	}
}

// admitted returns tok once its attempt is admitted; if it is not, it
// gives back what tok took (its attempt is not made) and says why.
func (s exactStrategy) admitted(ctx context.Context, tok retry.RetryToken) (retry.RetryToken, error) {
	if err := s.f.admit(ctx); err != nil {
		_ = s.f.adaptive.ReleaseToken(tok)
		return nil, err
	}
	return tok, nil
}

// Delegate returns the Adaptive strategy while exact admission is off:
// retry.Do then uses it directly, with its fast path (see retry.Delegator).
func (s exactStrategy) Delegate() retry.RetryStrategy {
	if s.f.exact.Load() {
		return nil
	}
	return s.f.adaptive
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
	start := time.Now()
	for {
		left := maxWait - time.Since(start)
		news := f.queueNews()
		if d, refuse, unsure := f.heldBack(left); refuse || d > 0 || unsure > 0 {
			// Redis would refuse the attempt, or ask it to wait; or it
			// might, and will soon say again how long the queue is.
			f.refusals.Add(1)
			var err error
			switch {
			case refuse:
				return fmt.Errorf("%w: no send slot within %v (redisretry.WithMaxWait %v)", retry.ErrRateLimited, max(left, 0), maxWait)
			case d > 0:
				err = sleep(ctx, d)
			default:
				err = sleepOr(ctx, unsure, news)
			}
			if err != nil {
				return fmt.Errorf("redisretry: waiting for a send slot: %w", err)
			}
			continue
		}
		res, wait, err := f.reserve(ctx, left)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("redisretry: waiting for a send slot: %w", ctx.Err())
		case err != nil:
			f.mu.Lock()
			now := f.clock.Now()
			f.failLocked(now, f.measure(now), fmt.Errorf("redisretry: admitting an attempt on %q: %w", f.name, err))
			f.mu.Unlock()
			// The local limiter paces from now on; this attempt, whose
			// token the strategy gave while Redis spaced the sends, waits
			// for a local slot too, so that a fleet that loses Redis does
			// not send all its waiting attempts at once.
			return f.localSlot(ctx, maxWait-time.Since(start))
		case res == slotRefused || res == slotOverShare && wait > left:
			return fmt.Errorf("%w: the fleet's next send slot is %v away (redisretry.WithMaxWait %v)", retry.ErrRateLimited, wait, maxWait)
		}
		if wait > 0 {
			if err := sleep(ctx, wait); err != nil {
				return fmt.Errorf("redisretry: waiting for a send slot: %w", err)
			}
		}
		if res == slotReserved {
			return nil
		}
		// Over its share: the process's own next slot is due now.
	}
}

// heldBack says what Redis's last answer under exact admission tells of
// an attempt that may wait left for its slot: refuse it without asking if
// the process's own next slot, or the fleet's next free slot, is further
// away than that; else wait until the process's own slot is due, and then
// ask. So an admitted attempt costs about one call, and a process held to
// its share asks no more often than it is admitted. The fleet's next free
// slot is taken to be as far ahead of now as it was of Redis's last answer
// (an admission, or a lease each interval): the shares add up to the
// fleet's rate, so its slots are booked about as fast as they are sent,
// and its queue stays about as long. The time of that slot, which only
// moves away as others book theirs, would say that the queue shrinks as
// it is sent, and an attempt that waited for its own slot would ask, and
// find the slots within its wait taken.
//
// About as long: the queue wanders as the fleet books its slots, one at a
// time and at random, and the queue last heard of may since have grown
// past the attempt's wait (see drift). That matters because the queue is
// usually as long as the longest wait: the shares add up to more than the
// fleet's rate (by the margins of the members' wants), so the queue grows
// until the attempts beyond it are refused; asking Redis at that edge,
// a call in eleven was refused (docs/design-notes.md has the figures). So
// an attempt whose wait the queue last heard of fits, but might no longer,
// does not ask. With a configured rate it waits for Redis to say again
// how long the queue is (the next lease, within an interval, or the
// answer to another attempt of this process), for at most unsure, after
// which the queue last heard of would no longer fit, and then decides
// again. With a learned rate it is refused: waiting was measured worse
// there, and traced: an attempt that waited had 0.2-0.6 s of its wait
// left, and most ran out before the next lease (docs/design-notes.md has
// the figures). See keepHeldBack for what a new lease changes. A process that
// saw a throttle Redis was not told of asks at once: the throttle may end
// a probe of a learned rate (see gcra.lua).
func (f *Fleet) heldBack(left time.Duration) (wait time.Duration, refuse bool, unsure time.Duration) {
	if f.limiter.Stats().Throttles > f.toldThrottles.Load() {
		return 0, false, 0
	}
	now := f.clock.Now().UnixNano()
	if own := f.ownAt.Load(); own != 0 {
		wait = max(time.Duration(own-now), 0)
	}
	queue := time.Duration(f.queue.Load())
	switch {
	case wait > left || queue > left:
		return wait, true, 0
	case queue == 0 || queue <= left-f.drift(now):
		return wait, false, 0
	case f.cfg.rate == 0 || queue == left:
		return wait, true, 0
	case wait > 0:
		return wait, false, 0 // decides again when its slot is due
	}
	return 0, false, left - queue
}

// queueNews returns a channel closed when Redis next says how long the
// fleet's queue is (see booked), for an attempt that waits for it.
func (f *Fleet) queueNews() <-chan struct{} {
	f.newsMu.Lock()
	defer f.newsMu.Unlock()
	if f.news == nil {
		f.news = make(chan struct{})
	}
	return f.news
}

// sleepOr waits d, or until news is closed (never, when nil) or ctx is
// done.
func sleepOr(ctx context.Context, d time.Duration, news <-chan struct{}) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-news:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queueDrift is how many standard deviations of its random walk the
// fleet's queue is taken to have grown by since Redis last said how long
// it was (see drift).
const queueDrift = 3

// drift is how much longer the fleet's queue may have grown since Redis
// last said how long it was: the fleet books its slots at about its rate,
// each when some process asks, at random, while they are sent at its
// rate, so over a time t the queue wanders as a random walk of about
// t×rate steps of 1/rate each, whose standard deviation is √(t/rate);
// drift is queueDrift of those, but at most half the longest wait
// (WithMaxWait), so that an estimate gone stale still lets an attempt that
// may wait that long ask when the queue last heard of was under half of
// it. now is UnixNano on the Fleet's clock.
func (f *Fleet) drift(now int64) time.Duration {
	age := max(now-f.heard.Load(), 0)
	d := time.Duration(queueDrift * math.Sqrt(float64(age)*float64(f.slot.Load())))
	return min(d, f.cfg.maxWait/2)
}

// booked records how far ahead of now the fleet's next free slot under
// exact admission is, as Redis said: the lead that a process that loses
// Redis waits out (see fallBackLocked), and, less what the fleet's burst
// lets go at once at capacity, the queue an attempt would wait in (see
// heldBack). A slot time further ahead than this process's admission
// honours (the longest wait, a second and the burst's slots: gcra.lua
// starts from now past it) is no booking: a corrupted value, or one booked
// by a process with a longer WithMaxWait. It also records when Redis said
// so, and the fleet's slot (1/capacity), which say how far the queue may
// have wandered since (see drift).
func (f *Fleet) booked(lead time.Duration, capacity float64) {
	step := 0.0 // the fleet's slot in nanoseconds; 0: no rate known
	if capacity > 0 && !math.IsInf(capacity, 1) {
		step = float64(time.Second) / capacity
	}
	most := f.cfg.maxWait + time.Second + time.Duration(float64(f.cfg.burst)*step)
	burst := time.Duration(float64(f.cfg.burst-1) * step)
	if lead > most {
		lead = 0
	}
	f.lead.Store(int64(min(lead, f.cfg.maxWait+time.Second)))
	f.queue.Store(int64(max(lead-burst, 0)))
	f.heard.Store(f.clock.Now().UnixNano())
	f.slot.Store(int64(step))
	f.newsMu.Lock()
	if f.news != nil {
		close(f.news)
		f.news = nil
	}
	f.newsMu.Unlock()
}

// localSlot waits for a send slot of the local limiter, within maxWait.
func (f *Fleet) localSlot(ctx context.Context, maxWait time.Duration) error {
	d, err := f.limiter.Acquire()
	switch {
	case err != nil:
		return fmt.Errorf("redisretry: %w", err)
	case d > maxWait:
		return fmt.Errorf("%w: no local send slot within %v (redisretry.WithMaxWait)", retry.ErrRateLimited, maxWait)
	case d > 0:
		if err := sleep(ctx, d); err != nil {
			return fmt.Errorf("redisretry: waiting for a send slot: %w", err)
		}
	}
	return nil
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error { return sleepOr(ctx, d, nil) }

// What exact admission says of an attempt.
const (
	slotRefused   = 0 // no slot within the longest wait
	slotReserved  = 1 // a slot, after the wait
	slotOverShare = 2 // the process is over its share: ask again after the wait
)

// reserve asks Redis for the next send slot within maxWait, at the rate
// this process is held to (see ownRate); it returns what Redis said and
// how long to wait.
func (f *Fleet) reserve(ctx context.Context, maxWait time.Duration) (res int, wait time.Duration, err error) {
	f.mu.Lock()
	own := f.ls.own
	f.mu.Unlock()
	if math.IsInf(own, 1) {
		own = 0
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.admitTimeout)
	defer cancel()
	configured := 0.0
	if f.cfg.rate > 0 {
		configured = f.cfg.rate * (1 - f.cfg.headroom)
	}
	// The throttles seen since the last call, which end a probe of a
	// learned rate at once (see gcra.lua).
	seen := f.limiter.Stats().Throttles
	throttled := max(seen-f.toldThrottles.Swap(seen), 0)
	reply, err := gcraScript.Run(ctx, f.rdb, f.slots, max(maxWait, 0).Microseconds(), f.cfg.burst, f.scriptNow(),
		f.cfg.member, fmtFloat(own), localBurst(own), f.cfg.maxWait.Microseconds(), fmtFloat(configured),
		throttled, fmtFloat(f.cfg.start), f.cooldown().Microseconds(), fmtFloat(learnMinRate)).Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(reply) != 5 {
		return 0, 0, fmt.Errorf("%w: %d values, want 5", errBadReply, len(reply))
	}
	r, _ := reply[0].(int64)
	w, werr := strconv.ParseFloat(fmt.Sprint(reply[1]), 64)
	ahead, aerr := strconv.ParseFloat(fmt.Sprint(reply[3]), 64)
	own, oerr := strconv.ParseFloat(fmt.Sprint(reply[4]), 64)
	if werr != nil || aerr != nil || oerr != nil || !(w >= 0 && w <= maxRate) || !(ahead >= 0 && ahead <= maxRate) ||
		!(own >= 0 && own <= maxRate) || r < slotRefused || r > slotOverShare ||
		r == slotReserved && w > float64(max(maxWait, 0).Microseconds())+1 {
		return 0, 0, fmt.Errorf("%w: %v", errBadReply, reply)
	}
	wait = time.Duration(w * float64(time.Microsecond))
	// What the answer says of the next attempts (see heldBack): when this
	// process's own next slot is due, and how far ahead the fleet's next
	// free slot is (the slots booked ahead, less the fleet's burst).
	now := f.clock.Now()
	f.ownAt.Store(0)
	if own > 0 {
		// Rounded up: Redis's clock counts whole microseconds, and a slot
		// is due once it reads the slot's time.
		f.ownAt.Store(now.Add(time.Duration(math.Ceil(own)+1) * time.Microsecond).UnixNano())
	}
	c, _ := strconv.ParseFloat(fmt.Sprint(reply[2]), 64) // -1 when no rate is known
	f.booked(time.Duration(ahead*float64(time.Microsecond)), c)
	if r != slotReserved {
		f.refusals.Add(1)
	}
	return int(r), wait, nil
}
