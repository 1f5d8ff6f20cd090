package retry

import (
	"context"
	"time"
)

// A Clock tells the time. Strategies, token buckets and rate limiters read
// time only through their Clock, so tests and simulations can drive them with
// virtual time. Implementations must be safe for concurrent use.
//
// A strategy also waits on its clock. The default clock waits on ordinary
// timers, which testing/synctest makes virtual: a test in a synctest
// bubble needs no clock of its own. A Clock that also implements Sleeper
// provides the waits of strategies built on it, as a manual test clock
// does. A strategy given any other Clock never waits on real time for a
// wait computed from that clock: its blocking methods fail with an error
// wrapping ErrInvalidConfig when they would have to wait, and an event
// loop on virtual time drives it with the non-blocking Plan methods
// instead (see Standard.PlanInitialToken).
type Clock interface {
	// Now returns the current time.
	Now() time.Time
}

// A Sleeper is a Clock that can also wait, such as a manual clock in a
// test or a simulation's virtual clock driven by other goroutines. A
// strategy still weighs each wait against the time left before its
// context's deadline, which a context measures on the real clock: with a
// virtual clock, give contexts no deadline, or one that real time makes
// sense of.
type Sleeper interface {
	Clock
	// Sleep returns when d has passed on the clock, or when ctx ends,
	// whichever comes first; then it returns an error, ctx's or its own.
	Sleep(ctx context.Context, d time.Duration) error
}

// systemClock reads the real time. Every constructor uses it when no
// WithClock option is given.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// ClockFunc adapts an ordinary function to the Clock interface.
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }
