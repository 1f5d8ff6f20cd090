package retry

import "time"

// A Clock tells the time. Strategies, token buckets and rate limiters read
// time only through their Clock, so tests and simulations can drive them with
// virtual time. Implementations must be safe for concurrent use.
type Clock interface {
	Now() time.Time
}

// systemClock reads the real time. Every constructor uses it when no
// WithClock option is given.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// ClockFunc adapts an ordinary function to the Clock interface.
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }
