package retry

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventAttempt: the first attempt of a call is about to be made.
	EventAttempt EventKind = iota + 1
	// EventRetry: an attempt failed and another will be made after Delay.
	EventRetry
	// EventSuccess: an attempt succeeded.
	EventSuccess
	// EventGiveUp: an attempt failed and no other will be made, or a
	// retry was abandoned before its attempt (the caller's context ended).
	EventGiveUp
)

// String returns "attempt", "retry", "success" or "give-up".
func (k EventKind) String() string {
	switch k {
	case EventAttempt:
		return "attempt"
	case EventRetry:
		return "retry"
	case EventSuccess:
		return "success"
	case EventGiveUp:
		return "give-up"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// An Event is one decision of a strategy, reported to its hooks. Every
// attempt made with a token is announced by exactly one EventAttempt or
// EventRetry, and ends with one EventSuccess, EventRetry or EventGiveUp,
// unless the caller stops using its token without telling the strategy. (A
// call whose initial token was refused, as by a retry quota that charges
// first attempts, makes its one attempt without a token, unreported.)
type Event struct {
	Kind  EventKind
	Scope string // the scope of the call
	// Attempt is the number of the attempt the event is about, from 1: for
	// EventAttempt and EventRetry the one about to be made, for
	// EventSuccess and EventGiveUp the last one made.
	Attempt int
	// Delay is the wait before the attempt (EventAttempt, EventRetry).
	Delay time.Duration
	// Err is the failed attempt's error (EventRetry, EventGiveUp).
	Err error
	// Classification is what the strategy made of Err.
	Classification Classification
	// Reason says why no further attempt is made (EventGiveUp).
	Reason error
}

// A Hook observes a strategy's decisions, for logs and metrics. It is
// called synchronously on the goroutine making the decision, so it must be
// quick and safe for concurrent use; it must not call back into the
// strategy. Hooks cost nothing when none is set.
type Hook func(Event)

// WithHook adds a hook that the strategy calls for every Event. Hooks run
// in the order they were added. Valid: non-nil.
func WithHook(h Hook) StandardOption {
	return standardOption(func(c *standardConfig) {
		c.hooks = append(c.hooks, h)
		if h == nil {
			c.nilHook = true
		}
	})
}

// emit calls the engine's hooks, if any.
func (e *engine) emit(ev Event) {
	for _, h := range e.hooks {
		h(ev)
	}
}

// SlogHook returns a Hook that logs events to l: retries at level Info,
// give-ups at Warn, first attempts and successes at Debug. A nil l logs to
// slog.Default().
func SlogHook(l *slog.Logger) Hook {
	return func(ev Event) {
		logger := l
		if logger == nil {
			logger = slog.Default()
		}
		level := slog.LevelDebug
		switch ev.Kind {
		case EventRetry:
			level = slog.LevelInfo
		case EventGiveUp:
			level = slog.LevelWarn
		}
		ctx := context.Background()
		if !logger.Enabled(ctx, level) {
			return
		}
		attrs := []slog.Attr{slog.Int("attempt", ev.Attempt)}
		if ev.Scope != "" {
			attrs = append(attrs, slog.String("scope", ev.Scope))
		}
		switch ev.Kind {
		case EventAttempt, EventRetry:
			attrs = append(attrs, slog.Duration("delay", ev.Delay))
		}
		if ev.Err != nil {
			c := ev.Classification
			attrs = append(attrs, slog.Any("error", ev.Err), slog.String("safety", c.Safety.String()),
				slog.Bool("throttle", c.Throttle), slog.Bool("timeout", c.Timeout))
			if c.RetryAfter > 0 {
				attrs = append(attrs, slog.Duration("retry_after", c.RetryAfter))
			}
		}
		if ev.Reason != nil {
			attrs = append(attrs, slog.Any("reason", ev.Reason))
		}
		logger.LogAttrs(ctx, level, "retry: "+ev.Kind.String(), attrs...)
	}
}
