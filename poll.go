package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// PollStatus is what one call of a polled function reports to [Poll].
type PollStatus int

const (
	// PollDone means the operation finished: Poll returns the value.
	PollDone PollStatus = iota
	// PollNotReady means the operation is still running: Poll waits and
	// asks again, each wait longer than the one before.
	PollNotReady
	// PollThrottled means the service asked the caller to slow down: Poll
	// waits twice as long as it would have for PollNotReady, and later
	// waits grow from there.
	PollThrottled
	// PollFailed means the operation failed for good: Poll stops and
	// returns the error.
	PollFailed
)

// String returns the constant's name, such as "PollNotReady", or
// "PollStatus(N)" for a value that names no constant.
func (s PollStatus) String() string {
	switch s {
	case PollDone:
		return "PollDone"
	case PollNotReady:
		return "PollNotReady"
	case PollThrottled:
		return "PollThrottled"
	case PollFailed:
		return "PollFailed"
	}
	return fmt.Sprintf("PollStatus(%d)", int(s))
}

// Errors returned by Poll, in addition to the package's other sentinels.
var (
	// ErrPollTimeout means Poll gave up because the maximum wait set with
	// WithPollMaxWait ran out, or would have before the next call. The
	// error also wraps the last error the polled function returned, if any.
	ErrPollTimeout = errors.New("retry: poll: maximum wait exceeded")

	// ErrInvalidPollStatus means the polled function broke Poll's contract:
	// it returned a PollStatus that names no constant, PollFailed with a nil
	// error, or PollDone with a non-nil error.
	ErrInvalidPollStatus = errors.New("retry: poll: invalid status")
)

// Defaults for Poll. Without options, the waits between calls are 100ms,
// 200ms, 400ms, ... up to 20s each (the incremental delay
// 2^retries × 100ms of the AWS general reference), with no jitter and no
// limit on the total wait other than the context.
const (
	// DefaultPollMinDelay is the first wait after PollNotReady.
	DefaultPollMinDelay = 100 * time.Millisecond
	// DefaultPollMaxDelay is the longest single wait.
	DefaultPollMaxDelay = 20 * time.Second
	// DefaultPollGrowth is the factor by which each wait exceeds the last.
	DefaultPollGrowth = 2.0
	// DefaultPollJitter is the fraction of each wait that is randomized.
	// Polling a single operation has no herd to scatter, so the default
	// keeps the waits exact.
	DefaultPollJitter = 0.0
)

// throttleFactor is how much longer Poll waits after PollThrottled than it
// would have after PollNotReady.
const throttleFactor = 2

// A PollOption configures Poll. Options only record values; Poll checks
// them all before it calls the polled function and reports a bad one as an
// error wrapping [ErrInvalidConfig]. An option may be reused, and shared by
// concurrent calls of Poll.
type PollOption interface {
	applyPoll(*pollConfig)
}

type pollConfig struct {
	minDelay, maxDelay time.Duration
	maxWait            time.Duration // 0: no limit
	growth, jitter     float64
	random             func() float64
	maxDelaySet        bool
	maxWaitSet         bool
}

type pollOption func(*pollConfig)

func (f pollOption) applyPoll(c *pollConfig) { f(c) }

// WithPollMinDelay sets the first wait after PollNotReady, and the least
// any wait can be shortened to by jitter. It must be above zero. The
// default is [DefaultPollMinDelay].
func WithPollMinDelay(d time.Duration) PollOption {
	return pollOption(func(c *pollConfig) { c.minDelay = d })
}

// WithPollMaxDelay sets the longest single wait between two calls. It must
// be at least the minimum delay. The default is [DefaultPollMaxDelay].
func WithPollMaxDelay(d time.Duration) PollOption {
	return pollOption(func(c *pollConfig) { c.maxDelay, c.maxDelaySet = d, true })
}

// WithPollGrowth sets the factor by which each wait exceeds the one before,
// up to the maximum delay. It must be at least 1; 1 polls at a fixed
// interval (PollThrottled still doubles it). The default is
// [DefaultPollGrowth].
func WithPollGrowth(f float64) PollOption {
	return pollOption(func(c *pollConfig) { c.growth = f })
}

// WithPollMaxWait limits the total time Poll spends, measured from the
// moment Poll is called. The context passed to the polled function ends
// at that limit (its [context.Cause] is ErrPollTimeout), and Poll gives up
// as soon as the next wait would reach it, returning an error wrapping
// [ErrPollTimeout]. It must be above zero.
// By default there is no limit besides the caller's context.
func WithPollMaxWait(d time.Duration) PollOption {
	return pollOption(func(c *pollConfig) { c.maxWait, c.maxWaitSet = d, true })
}

// WithPollJitter randomizes each wait: a wait of d becomes
// d - fraction×U×(d - min) for U uniform in [0, 1), where min is the
// minimum delay, so no wait is shorter than the minimum delay and 1 gives
// a uniform wait in (min, d]. The fraction must be in [0, 1]. The default
// is [DefaultPollJitter]. Jitter does not change how later waits grow.
func WithPollJitter(fraction float64) PollOption {
	return pollOption(func(c *pollConfig) { c.jitter = fraction })
}

// WithPollRand sets the source of the U used by WithPollJitter; by
// default it is [math/rand/v2.Float64]. f must return values in [0, 1);
// Poll stops with an error wrapping [ErrInvalidConfig] if it does not.
// If the option is shared by concurrent calls of Poll, f must be safe for
// concurrent use. It exists mainly to make jitter repeatable in tests.
func WithPollRand(f func() float64) PollOption {
	return pollOption(func(c *pollConfig) { c.random = f })
}

// newPollConfig applies opts to the defaults and validates the result.
func newPollConfig(opts []PollOption) (pollConfig, error) {
	c := pollConfig{
		minDelay: DefaultPollMinDelay,
		maxDelay: DefaultPollMaxDelay,
		growth:   DefaultPollGrowth,
		jitter:   DefaultPollJitter,
		random:   rand.Float64,
	}
	for _, o := range opts {
		if o == nil {
			return c, configError("PollOption", "nil", "a non-nil option")
		}
		o.applyPoll(&c)
	}
	switch {
	case c.minDelay <= 0:
		return c, configError("WithPollMinDelay", c.minDelay, "> 0")
	case c.maxDelay < c.minDelay:
		got := any(c.maxDelay)
		if !c.maxDelaySet {
			got = fmt.Sprintf("%v (the default)", c.maxDelay)
		}
		return c, configError("WithPollMaxDelay", got, fmt.Sprintf(">= the minimum delay (%v)", c.minDelay))
	case !(c.growth >= 1) || math.IsInf(c.growth, 0):
		return c, configError("WithPollGrowth", c.growth, "a finite number >= 1")
	case !(c.jitter >= 0 && c.jitter <= 1):
		return c, configError("WithPollJitter", c.jitter, "[0, 1]")
	case c.random == nil:
		return c, configError("WithPollRand", "nil", "a non-nil function")
	case c.maxWaitSet && c.maxWait <= 0:
		return c, configError("WithPollMaxWait", c.maxWait, "> 0")
	}
	return c, nil
}

// Poll calls fn until it reports PollDone or PollFailed, waiting between
// calls as fn's status asks, and returns the value from fn's last call.
//
// The first call happens at once. After PollNotReady, Poll waits the
// minimum delay, then each wait is the growth factor times the one before
// (see [DefaultPollMinDelay], [DefaultPollGrowth]), never more than the
// maximum delay. After PollThrottled, the wait is twice what PollNotReady
// would have waited (still capped), and later waits grow from there. A
// PollNotReady or PollThrottled result may carry an error, such as the
// transient failure that kept fn from learning the status; Poll keeps the
// most recent one to report if it gives up.
//
// Poll returns:
//   - fn's value and a nil error after PollDone;
//   - fn's value and error, unchanged, after PollFailed;
//   - fn's last value and an error wrapping [ErrInvalidPollStatus] (and
//     fn's error, if any) when fn returns a status that names no
//     constant, PollFailed with a nil error, or PollDone with an error;
//   - an error wrapping [ErrPollTimeout] when the limit set by
//     [WithPollMaxWait] runs out or would before the next call;
//   - an error wrapping [ErrDeadlineTooSoon] and
//     [context.DeadlineExceeded] when ctx's deadline would pass before the
//     next call, so Poll stops instead of waiting for it, as Do does;
//   - an error wrapping ctx.Err() (and [context.Cause], if different) when
//     ctx ends; if ctx is done already, fn is not called;
//   - an error wrapping [ErrInvalidConfig], without calling fn, when an
//     option, ctx or fn is invalid (nil).
//
// The errors that end a wait also wrap the most recent error fn returned,
// so errors.Is reaches it.
//
// fn is passed a context that ends with ctx or at the maximum wait. Poll
// runs fn on the calling goroutine, starts no goroutines, and stops its
// timers before it returns. It does not consult or spend any retry quota:
// waiting for an operation to finish is not a failure. Poll keeps no state
// between calls and is safe for concurrent use.
func Poll[T any](ctx context.Context, fn func(context.Context) (T, PollStatus, error), opts ...PollOption) (T, error) {
	var v T
	switch {
	case ctx == nil:
		return v, configError("Poll context", "nil", "a non-nil context.Context")
	case fn == nil:
		return v, configError("Poll function", "nil", "a non-nil function")
	}
	cfg, err := newPollConfig(opts)
	if err != nil {
		return v, err
	}
	parent := ctx
	if parent.Err() != nil {
		return v, pollCanceled(parent, 0, nil)
	}
	var deadline time.Time // zero: no maximum wait
	if cfg.maxWait > 0 {
		deadline = time.Now().Add(cfg.maxWait)
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(parent, deadline, ErrPollTimeout)
		defer cancel()
	}

	var (
		last error // most recent non-nil error from fn
		base = cfg.minDelay
	)
	for calls := 1; ; calls++ {
		var status PollStatus
		v, status, err = fn(ctx)
		switch status {
		case PollDone:
			if err != nil {
				return v, fmt.Errorf("%w: PollDone with error: %w", ErrInvalidPollStatus, err)
			}
			return v, nil
		case PollFailed:
			if err == nil {
				return v, fmt.Errorf("%w: PollFailed with a nil error", ErrInvalidPollStatus)
			}
			return v, err
		case PollNotReady, PollThrottled:
			if err != nil {
				last = err
			}
		default:
			if err != nil {
				return v, fmt.Errorf("%w: %v: %w", ErrInvalidPollStatus, status, err)
			}
			return v, fmt.Errorf("%w: %v", ErrInvalidPollStatus, status)
		}
		if ctx.Err() != nil {
			return v, pollStopped(parent, calls, last)
		}

		var wait time.Duration
		wait, base = cfg.step(base, status)
		if cfg.jitter > 0 {
			u := cfg.random()
			if !validDraw(u) {
				return v, configError("WithPollRand", u, "a value in [0, 1)")
			}
			span := wait - cfg.minDelay
			wait -= min(satMul(span, cfg.jitter*u), span) // float64 rounding must not cross the minimum
		}
		end := time.Now().Add(wait)
		pd, hasPD := parent.Deadline()
		switch {
		case hasPD && !end.Before(pd) && (deadline.IsZero() || pd.Before(deadline)):
			return v, pollError(fmt.Errorf("%w: %w", ErrDeadlineTooSoon, context.DeadlineExceeded), calls, last)
		case !deadline.IsZero() && !end.Before(deadline):
			return v, pollTimeout(calls, last)
		}
		if !sleep(ctx, wait) {
			return v, pollStopped(parent, calls, last)
		}
	}
}

// step returns the wait after a call that reported s, given the current
// base delay, and the base delay for the next call.
func (c *pollConfig) step(base time.Duration, s PollStatus) (wait, next time.Duration) {
	wait = base
	if s == PollThrottled {
		wait = c.grow(base, throttleFactor)
	}
	return wait, c.grow(wait, c.growth)
}

// grow returns d×f, or the maximum delay if that is less.
func (c *pollConfig) grow(d time.Duration, f float64) time.Duration {
	g := float64(d) * f
	if g >= float64(c.maxDelay) {
		return c.maxDelay
	}
	return satDuration(g)
}

// pollStopped reports why Poll's context ended after calls calls: the
// caller's context, or else the maximum wait.
func pollStopped(parent context.Context, calls int, last error) error {
	if parent.Err() != nil {
		return pollCanceled(parent, calls, last)
	}
	return pollTimeout(calls, last)
}

func pollTimeout(calls int, last error) error {
	return pollError(ErrPollTimeout, calls, last)
}

// pollCanceled reports that the caller's context ended.
func pollCanceled(parent context.Context, calls int, last error) error {
	reason := contextReason(parent)
	if calls == 0 {
		return fmt.Errorf("retry: poll: %w before the first call", reason)
	}
	return pollError(fmt.Errorf("retry: poll: %w", reason), calls, last)
}

// pollError wraps reason and, if not nil, the last error from fn.
func pollError(reason error, calls int, last error) error {
	n := fmt.Sprintf("%d calls", calls)
	if calls == 1 {
		n = "1 call"
	}
	if last == nil {
		return fmt.Errorf("%w after %s", reason, n)
	}
	return fmt.Errorf("%w after %s: %w", reason, n, last)
}
