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
	// A retry that the caller's deadline leaves no time for is not
	// announced: the strategy gives up at once (EventGiveUp). Only a
	// context cancelled during the wait, or a send slot not found in time,
	// turns an announced retry into an EventGiveUp.
	EventRetry
	// EventSuccess: an attempt succeeded.
	EventSuccess
	// EventGiveUp: an attempt failed and no other will be made, or a
	// retry was abandoned before its attempt (the caller's context ended),
	// or an attempt panicked. Reason says why.
	EventGiveUp
	// EventHedge: a hedge of the current attempt is about to be sent,
	// Delay after that attempt started (see Hedging). Attempt is the
	// number of the attempt it backs up: hedges are not attempts of the
	// strategy.
	EventHedge
)

// String returns "attempt", "retry", "success", "give-up" or "hedge".
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
	case EventHedge:
		return "hedge"
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
	Kind  EventKind // what happened
	Scope string    // the scope of the call
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

// SlogHook returns a Hook that logs events to l, one record per event:
//
//	"first attempt"          Debug  the first attempt of a call is about to be made
//	"retrying after failure" Info   an attempt failed; the next is made after delay
//	"attempt succeeded"      Debug
//	"giving up"              Warn   no further attempt will be made; reason says why
//
// Each record has the attributes scope (omitted for the default scope ""),
// attempt (the number of the attempt about to be made, or, for successes
// and give-ups, of the last one made), delay (the wait before a retry, or
// before a first attempt that waits), error (the failed attempt's error),
// throttle, timeout and retry_after (only when the strategy classified the
// error so), and reason (why there is no further attempt). Durations are
// logged as strings such as "1.5s" or "2.405ms", rounded to the
// millisecond from a second up and to the microsecond from a millisecond
// up, so that every handler, JSON included, prints them readably.
//
// A nil l logs to slog.Default(), as it is when the event happens. Records
// carry no context and are skipped cheaply when l's handler does not log
// their level. Add attributes of your own with l.With.
func SlogHook(l *slog.Logger) Hook {
	return func(ev Event) {
		logger := l
		if logger == nil {
			logger = slog.Default()
		}
		level, msg := slog.LevelDebug, "first attempt"
		switch ev.Kind {
		case EventRetry:
			level, msg = slog.LevelInfo, "retrying after failure"
		case EventSuccess:
			msg = "attempt succeeded"
		case EventGiveUp:
			level, msg = slog.LevelWarn, "giving up"
		case EventHedge:
			msg = "hedging a slow attempt"
		}
		ctx := context.Background()
		if !logger.Enabled(ctx, level) {
			return
		}
		var buf [8]slog.Attr
		attrs := buf[:0]
		if ev.Scope != "" {
			attrs = append(attrs, slog.String("scope", ev.Scope))
		}
		attrs = append(attrs, slog.Int("attempt", ev.Attempt))
		if ev.Kind == EventRetry || ev.Delay > 0 {
			attrs = append(attrs, slog.String("delay", readableDuration(ev.Delay)))
		}
		if ev.Err != nil {
			attrs = append(attrs, slog.Any("error", ev.Err))
			c := ev.Classification
			if c.Throttle {
				attrs = append(attrs, slog.Bool("throttle", true))
			}
			if c.Timeout {
				attrs = append(attrs, slog.Bool("timeout", true))
			}
			if c.RetryAfter > 0 {
				attrs = append(attrs, slog.String("retry_after", readableDuration(c.RetryAfter)))
			}
		}
		if ev.Reason != nil {
			attrs = append(attrs, slog.Any("reason", ev.Reason))
		}
		logger.LogAttrs(ctx, level, msg, attrs...)
	}
}

// readableDuration formats d as time.Duration.String does, without the
// nanoseconds of jitter that no reader needs: rounded to the microsecond
// from a millisecond up, and to the millisecond from a second up.
func readableDuration(d time.Duration) string {
	switch {
	case d >= time.Second || d <= -time.Second:
		d = d.Round(time.Millisecond)
	case d >= time.Millisecond || d <= -time.Millisecond:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}
