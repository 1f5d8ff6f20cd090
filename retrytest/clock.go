package retrytest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/retrykit/retry"
)

// epoch is where a Clock starts when given no start time.
var epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// A Clock is a manual clock for tests: its time moves only when Advance
// moves it. It implements retry.Sleeper, so strategies, token buckets and
// rate limiters built with retry.WithClock(c) read their time from it, and
// the strategies also wait on it: a retry's backoff ends when the test
// advances the clock past it, or when the waiting call's context ends,
// never on real time. Waiters and BlockUntilWaiters tell the test when the
// code under test is waiting, so that it can advance the clock at the
// right moment without sleeping.
//
// A Clock is safe for concurrent use. The zero Clock is ready to use and
// starts at 2000-01-01 00:00:00 UTC, as NewClock does without a start time.
type Clock struct {
	mu      sync.Mutex
	started bool // now is set
	now     time.Time
	waiters []*waiter
	changed chan struct{} // closed, and replaced, when waiters changes; nil if nobody listens
}

// waiter is one Sleep call in progress.
type waiter struct {
	until time.Time
	done  chan struct{} // closed when the clock reaches until
}

// NewClock returns a Clock that reads start until it is advanced. The zero
// start means 2000-01-01 00:00:00 UTC: strategies take the zero time.Time
// to mean "never", so a clock must not read it.
func NewClock(start time.Time) *Clock {
	c := &Clock{}
	if !start.IsZero() {
		c.now, c.started = start, true
	}
	return c
}

// init sets the start time of a zero Clock. c.mu must be held.
func (c *Clock) init() {
	if !c.started {
		c.now, c.started = epoch, true
	}
}

// Now returns the clock's time. It implements retry.Clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	return c.now
}

// Sleep waits until the clock has advanced by d, and returns nil; or until
// ctx ends, and returns ctx's error. A d of zero or less returns at once,
// with ctx's error if ctx has ended. It implements retry.Sleeper.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	c.mu.Lock()
	c.init()
	w := &waiter{until: c.now.Add(d), done: make(chan struct{})}
	c.waiters = append(c.waiters, w)
	c.notify()
	c.mu.Unlock()

	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if i := slices.Index(c.waiters, w); i >= 0 {
			c.waiters = slices.Delete(c.waiters, i, i+1)
			c.notify()
		}
		return ctx.Err()
	}
}

// Advance moves the clock forward by d and wakes every Sleep whose wait
// has ended. A negative d moves the clock back, as a stepped wall clock
// moves, and wakes nobody.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advance(d)
}

// advance is Advance with c.mu held.
func (c *Clock) advance(d time.Duration) {
	c.init()
	c.now = c.now.Add(d)
	n := len(c.waiters)
	c.waiters = slices.DeleteFunc(c.waiters, func(w *waiter) bool {
		if w.until.After(c.now) {
			return false
		}
		close(w.done)
		return true
	})
	if len(c.waiters) != n {
		c.notify()
	}
}

// Waiters returns the number of Sleep calls waiting on the clock now.
func (c *Clock) Waiters() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// BlockUntilWaiters returns once at least n Sleep calls are waiting on the
// clock at the same time, or with ctx's error when ctx ends first. A test
// calls it before Advance, to be sure that the code under test has started
// the wait that Advance should end. n must be 0 or more.
func (c *Clock) BlockUntilWaiters(ctx context.Context, n int) error {
	if n < 0 {
		return fmt.Errorf("%w: retrytest: BlockUntilWaiters n = %d, want 0 or more", retry.ErrInvalidConfig, n)
	}
	for {
		c.mu.Lock()
		if len(c.waiters) >= n {
			c.mu.Unlock()
			return nil
		}
		changed := c.changes()
		c.mu.Unlock()

		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Run calls f and, while f runs, moves the clock to the end of each wait as
// soon as one is pending, so that the code under test waits no real time
// and the test needs no Waiters, BlockUntilWaiters or Advance. It returns
// how far it moved the clock: the total of the waits, which a test can
// compare with the backoff it expects.
//
//	clock := retrytest.NewClock(time.Time{})
//	s := retrytest.Standard(t, retry.WithClock(clock))
//	waited := clock.Run(func() {
//		_, err = retry.Do(ctx, fn, retry.WithStrategy(s))
//	})
//
// f runs on the caller's goroutine, so it may call t.Fatal. When several
// goroutines wait on the clock at once, Run ends the earliest wait first,
// as soon as any is pending; a test that must see several waits start
// before time moves uses BlockUntilWaiters and Advance instead.
func (c *Clock) Run(f func()) (advanced time.Duration) {
	stop, stopped := make(chan struct{}), make(chan struct{})
	var moved time.Duration
	go func() {
		defer close(stopped)
		moved = c.advanceWaits(stop)
	}()
	defer func() { // also when f panics or calls t.FailNow
		close(stop)
		<-stopped
		advanced = moved
	}()
	f()
	return 0 // set by the deferred function
}

// advanceWaits moves the clock to the end of the earliest pending wait
// whenever one is pending, until stop is closed, and returns how far it
// moved the clock.
func (c *Clock) advanceWaits(stop <-chan struct{}) time.Duration {
	var moved time.Duration
	for {
		c.mu.Lock()
		if len(c.waiters) > 0 {
			next := c.waiters[0].until
			for _, w := range c.waiters[1:] {
				if w.until.Before(next) {
					next = w.until
				}
			}
			d := next.Sub(c.now)
			c.advance(d)
			moved += d
			c.mu.Unlock()
			continue
		}
		changed := c.changes()
		c.mu.Unlock()
		select {
		case <-changed:
		case <-stop:
			return moved
		}
	}
}

// changes returns a channel that notify closes when the waiters change.
// c.mu must be held.
func (c *Clock) changes() <-chan struct{} {
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

// notify tells BlockUntilWaiters that the waiters changed. c.mu must be
// held.
func (c *Clock) notify() {
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

var _ retry.Sleeper = (*Clock)(nil)
