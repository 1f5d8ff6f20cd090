package retry

import (
	"fmt"
	"math"
	"time"
)

// limiterConfig is the configuration of a RateLimiter. NewRateLimiter and
// NewAdaptive start from limiterDefaults, apply options, then validate;
// when the options select the published algorithm, they start again from
// its defaults, so options override its constants whatever their order.
type limiterConfig struct {
	clock             Clock
	published         bool // WithPublishedCUBIC
	beta              float64
	scaleConstant     float64
	smoothing         float64
	minFillRate       float64
	minCapacity       int
	window            time.Duration
	reductionCooldown time.Duration
	cooldownSet       bool // WithReductionCooldown was given
	tolerance         float64
	toleranceSet      bool    // WithThrottleTolerance was given
	demandClock       float64 // WithDemandClock; 0: seconds alone
	failFast          bool
	// absGrowth adds absGrowth*t^3 sends per second to the default
	// algorithm's growth curve: growth that does not scale with the
	// client's rate. Only tests set it (growth_tradeoff_test.go measures
	// what it does: it is not worth an option).
	absGrowth float64
	// attemptClock, if above 0, counts the growth curve's time in the
	// client's own attempts as well: t is the lesser of the seconds since
	// the cut and the attempts since it over attemptClock, so that a
	// client sending fewer than attemptClock attempts a second grows more
	// slowly. Only tests set it (growth_tradeoff_test.go measures it).
	attemptClock float64
	// evidenceAttempts, if above 0, makes the default algorithm decide a
	// cut on the windows closed since the last cut, once they hold at
	// least evidenceAttempts attempts (all of the recent windows, if they
	// hold fewer), instead of on the last evidenceWindows: a client
	// decides as often as it sends that many attempts, so that one sending
	// more cuts more often, as the published algorithm's cut on every
	// throttle does. Only tests set it (growth_tradeoff_test.go measures
	// it).
	evidenceAttempts int
}

// limiterDefaults returns the configuration of the default algorithm, or
// of the published one if published.
func limiterDefaults(published bool) limiterConfig {
	c := limiterConfig{
		clock:         systemClock{},
		published:     published,
		beta:          DefaultBeta,
		scaleConstant: DefaultScaleConstant,
		smoothing:     DefaultSmoothing,
		minFillRate:   DefaultMinFillRate,
		minCapacity:   DefaultMinCapacity,
		window:        DefaultMeasurementWindow,
		tolerance:     DefaultThrottleTolerance,
	}
	if published {
		c.beta, c.scaleConstant, c.tolerance = PublishedBeta, PublishedScaleConstant, 0
	}
	return c
}

// validate reports the first bad value in c.
func (c *limiterConfig) validate() error {
	switch {
	case isNil(c.clock):
		return configError("WithClock", nilValue(c.clock), "a non-nil Clock")
	case !(c.beta > 0 && c.beta < 1):
		return configError("WithBeta", c.beta, "in (0, 1)")
	case !(c.scaleConstant > 0 && c.scaleConstant <= math.MaxFloat64):
		return configError("WithScaleConstant", c.scaleConstant, "finite and > 0")
	case !(c.smoothing > 0 && c.smoothing <= 1):
		return configError("WithSmoothing", c.smoothing, "in (0, 1]")
	case !(c.minFillRate > 0 && c.minFillRate <= math.MaxFloat64):
		return configError("WithMinFillRate", c.minFillRate, "finite and > 0")
	case c.minCapacity < 1 || c.minCapacity > maxBurst:
		return configError("WithMinCapacity", c.minCapacity, fmt.Sprintf("a number from 1 to %d", maxBurst))
	case c.window <= 0:
		return configError("WithMeasurementWindow", c.window, "> 0")
	case c.reductionCooldown < 0:
		return configError("WithReductionCooldown", c.reductionCooldown, ">= 0")
	case c.cooldownSet && !c.published:
		return configError("WithReductionCooldown", c.reductionCooldown, "only with WithPublishedCUBIC (the default algorithm cuts by the throttled share instead)")
	case c.toleranceSet && c.published:
		return configError("WithThrottleTolerance", c.tolerance, "only without WithPublishedCUBIC (the published algorithm cuts on every throttle)")
	case !(c.tolerance >= 0 && c.tolerance < 1):
		return configError("WithThrottleTolerance", c.tolerance, "in [0, 1)")
	case !(c.demandClock >= 0 && c.demandClock <= math.MaxFloat64):
		return configError("WithDemandClock", c.demandClock, "finite and >= 0")
	case c.demandClock > 0 && c.published:
		return configError("WithDemandClock", c.demandClock, "only without WithPublishedCUBIC (its curve is specified in seconds)")
	}
	return nil
}

// WithPublishedCUBIC selects the published algorithm of the AWS SDKs'
// adaptive retry mode, exactly as the cross-SDK conformance vectors
// specify it: every throttle cuts the rate to PublishedBeta times the rate
// in use, and successes grow it along the CUBIC curve with
// PublishedScaleConstant (see RateLimiter). Other options override its
// constants whatever their order: WithBeta, WithScaleConstant,
// WithSmoothing, WithMinFillRate, WithMinCapacity, WithMeasurementWindow,
// and WithReductionCooldown, which only it accepts.
func WithPublishedCUBIC() RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.published = true })
}

// WithBeta sets the depth of rate reductions, in (0, 1). The default
// algorithm never cuts the rate below beta times the rate in use in one
// cut (DefaultBeta, 0.5); the published one cuts it to beta times the rate
// in use on every throttle (PublishedBeta, 0.7).
func WithBeta(beta float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.beta = beta })
}

// WithScaleConstant sets the scale of the curve along which the send rate
// grows after a reduction: a larger constant grows it faster. It must be
// finite and above 0. The default algorithm's curve is relative to the
// capacity estimate (DefaultScaleConstant, 0.003 per second cubed); the
// published one's is in sends per second (PublishedScaleConstant, 0.4).
func WithScaleConstant(scale float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.scaleConstant = scale })
}

// WithSmoothing sets the weight, in (0, 1], of the newest measurement window
// in the measured send rate; the rest of the weight stays with the previous
// measurement. 1 means no smoothing. The default is DefaultSmoothing (0.8),
// the published value.
func WithSmoothing(weight float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.smoothing = weight })
}

// WithMinFillRate sets the lowest send rate, in sends per second, that the
// limiter allows however often it is throttled. It must be finite and above
// 0. The default is DefaultMinFillRate (0.5), the published value.
func WithMinFillRate(perSecond float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.minFillRate = perSecond })
}

// WithMinCapacity sets the least number of send tokens the bucket holds:
// the number of attempts that may be sent at once even at the lowest rate.
// The default is DefaultMinCapacity (1), the published value. Valid: 1 to
// 2^31-1, the most tokens the bucket holds.
func WithMinCapacity(tokens int) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.minCapacity = tokens })
}

// WithMeasurementWindow sets the width of the windows in which the limiter
// counts attempts to measure the send rate (and, in the default algorithm,
// the throttled share); it must be above 0. The default is
// DefaultMeasurementWindow (500 ms), the published value.
func WithMeasurementWindow(d time.Duration) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.window = d })
}

// WithReductionCooldown makes the published algorithm (WithPublishedCUBIC)
// reduce the rate at most once per congestion episode: throttles within d
// of the last reduction still count as sends but do not reduce the rate
// again. It must be 0 or more; 0, the published behaviour, reduces on
// every throttle. It is an error without WithPublishedCUBIC.
func WithReductionCooldown(d time.Duration) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.reductionCooldown, c.cooldownSet = d, true })
}

// WithThrottleTolerance sets the share of throttled attempts, in [0, 1),
// that the default algorithm takes for load-independent throttling while
// it is not limiting the client: up to that share, throttles never cut the
// rate, and the limiter learns the share and tolerates it later (see
// RateLimiter). 0 takes every significant share for congestion. The
// default is DefaultThrottleTolerance (10%). It is an error with
// WithPublishedCUBIC.
func WithThrottleTolerance(share float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.tolerance, c.toleranceSet = share, true })
}

// WithDemandClock counts the default algorithm's growth curve's time in
// the attempts the client asks to send as well as in seconds: t is the
// lesser of the seconds since the cut and the attempts asked for since it
// over attemptsPerSecond. An attempt is asked for once it is sent, or
// refused a send slot for good (fail-fast, or past the strategy's
// WithMaxSendWait). 0, the default, counts seconds alone.
//
// It is for a client that is one of many small clients of a service,
// each asking for a few attempts a second. The curve in seconds gives such
// a client only a few attempts while its rate grows back from a cut, and
// it meets a throttle every few: a hundred clients of 3 workers, sending
// about one request a second each against a service that admits a third
// of them, are 17% throttled; counted in attempts asked for, 10 a second,
// 7% (the storm demo's limits table, "adaptive, demand clock"). Counting
// what the client asks for, not what it sends, keeps equal clients growing
// alike whatever their rates: one held further back does not grow more
// slowly and fall further behind, as long as it asks for as many attempts
// (a client whose callers wait for each answer asks for fewer once it is
// held back for long: with 20, equal clients of 30 workers at 3x were as
// unequal as 0.05 on one seed of five).
//
// The price is paid by a small client on its own, which cannot tell a
// fleet's congestion from its own: with 10, a client asking for 3
// attempts a second is back at full rate 14-33 s after a dip in a
// service's capacity, not 0-8 s, and against throttles that do not depend
// on the load it completes fewer requests (the same table). A client
// asking for attemptsPerSecond attempts a second or more is not affected.
// It is an error with WithPublishedCUBIC.
func WithDemandClock(attemptsPerSecond float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.demandClock = attemptsPerSecond })
}

// WithFailFast makes Acquire return an error wrapping ErrRateLimited when no
// send token is available now, instead of the time to wait for one. The
// default is to wait.
func WithFailFast(failFast bool) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.failFast = failFast })
}
