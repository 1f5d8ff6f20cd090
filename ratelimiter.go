package retry

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults for NewRateLimiter. All but DefaultBeta and
// DefaultReductionCooldown are the published constants of the AWS SDKs'
// adaptive retry mode; WithBeta(PublishedBeta) and WithReductionCooldown(0)
// select the published algorithm exactly.
//
// The two departures were chosen by measurement, with the storm simulation
// (go run ./examples/storm: closed-loop clients offering 3x a server's
// capacity). The published algorithm cuts the rate on every throttled
// response of a burst and delivers about 60% of the server's capacity; a
// reduction at most once per congestion episode brings that to 92-96%,
// and a gentler cut (0.8) keeps the sawtooth that follows each cut
// shallower: 96-97% of capacity with under 2% of sends throttled.
const (
	// DefaultBeta is the factor by which a rate reduction multiplies the
	// send rate.
	DefaultBeta = 0.8

	// PublishedBeta is the published value of beta, which the cross-SDK
	// vectors assume, and TCP CUBIC's.
	PublishedBeta = 0.7

	// DefaultScaleConstant scales the cubic curve along which the send rate
	// grows back after a reduction.
	DefaultScaleConstant = 0.4

	// DefaultSmoothing is the weight of the newest measurement window in the
	// smoothed measured send rate.
	DefaultSmoothing = 0.8

	// DefaultMinFillRate is the lowest send rate, in sends per second, that
	// a RateLimiter allows.
	DefaultMinFillRate = 0.5

	// DefaultMinCapacity is the least number of send tokens the bucket holds.
	DefaultMinCapacity = 1

	// DefaultMeasurementWindow is the width of the windows in which a
	// RateLimiter counts attempts to measure the send rate.
	DefaultMeasurementWindow = 500 * time.Millisecond

	// DefaultReductionCooldown is how long after a rate reduction further
	// throttles are taken as part of the same congestion episode and do not
	// reduce the rate again. The published algorithm has no cooldown (0).
	DefaultReductionCooldown = 500 * time.Millisecond
)

// maxRateFactor bounds the send rate to this multiple of the measured send
// rate, so a client that sends little cannot build up a rate it never used.
const maxRateFactor = 2

// A RateLimiter paces the attempts a client sends to a service: it is the
// client-side send-rate limiter of the AWS SDKs' adaptive retry mode, which
// slows a client down when the service throttles it, before retries make
// matters worse.
//
// A RateLimiter measures the rate at which the client sends and sets the
// fill rate of a token bucket ([golang.org/x/time/rate.Limiter]) with the
// CUBIC congestion-control algorithm. A throttled attempt cuts the rate to
// beta times the rate in use (a multiplicative decrease). Successful
// attempts then grow it along a cubic curve that climbs quickly towards the
// rate at which the last throttle happened, levels off near it, and then
// probes beyond it. The rate never exceeds twice the measured send rate and
// never falls below the minimum fill rate.
//
// Until the first throttled attempt a RateLimiter delays nothing. From then
// on every attempt costs one token.
//
// Call Acquire before each attempt and wait the duration it returns before
// sending, and call Update with the outcome of every attempt.
//
// # Differences from the published algorithm
//
// The published algorithm reduces the rate on every throttled attempt. When
// many attempts are in flight, one overload of the service throttles many of
// them at once, and the rate collapses several times over. Like TCP's CUBIC,
// which reduces once per loss event, a RateLimiter by default reduces at
// most once per congestion episode: throttles within
// DefaultReductionCooldown of the last reduction do not reduce the rate
// again. WithReductionCooldown(0) restores the published behaviour exactly;
// with it, a RateLimiter passes the published conformance vectors.
//
// In a closed-loop simulation (60 clients that each send, retry a throttled
// attempt up to twice with backoff, think 1 s and send again; a service
// that serves 20 requests a second and throttles the rest), clients that
// waited out their reserved slots got 36% of the service's capacity, with
// 6% of sends throttled, under the published algorithm, and 69%, with 13%
// throttled, under the default. Clients that used fail-fast mode and tried
// again when a token was due got 54% (6% throttled) under the published
// algorithm and 95% (3% throttled) under the default.
//
// The token bucket's capacity is a whole number of tokens: the bucket holds
// at most floor(Capacity) tokens (see RateLimiterStats).
//
// A RateLimiter is safe for concurrent use by multiple goroutines; share one
// between all the clients of a service. The zero value is not usable: create
// RateLimiters with NewRateLimiter.
type RateLimiter struct {
	cfg   limiterConfig
	start time.Time // the clock's time at creation; measurement windows start here

	mu       sync.Mutex
	bucket   rate.Limiter // the send tokens; its limit is fillRate, its burst floor(capacity)
	enabled  bool         // a throttle has been seen: Acquire takes tokens
	measured float64      // smoothed measured send rate, per second
	count    int          // attempts counted since lastWindow began
	// lastWindow is where the last measurement window began, in seconds
	// since start.
	lastWindow   float64
	calculated   float64   // the last rate CUBIC calculated
	lastMaxRate  float64   // the rate in use at the last reduction
	lastThrottle time.Time // when the last reduction happened; start before the first
	fillRate     float64
	capacity     float64
}

// RateLimiterStats is a snapshot of a RateLimiter's state.
type RateLimiterStats struct {
	// Enabled reports whether the limiter has seen a throttle. Sending is
	// limited from then on.
	Enabled bool

	// FillRate is the number of send tokens added per second: the send
	// rate now allowed. It is 0 until the first Update.
	FillRate float64

	// MeasuredRate is the smoothed measured send rate, per second.
	MeasuredRate float64

	// Capacity is the most send tokens the bucket may hold, which bounds
	// how many attempts can be sent at once. The bucket holds whole tokens,
	// so at most floor(Capacity). It is 0 until the first Update.
	Capacity float64

	// Tokens is the number of send tokens available now. It is negative
	// when callers have reserved tokens that are not yet available.
	Tokens float64

	// LastMaxRate is the send rate in use when the rate was last reduced:
	// the rate the cubic curve climbs back towards.
	LastMaxRate float64

	// LastThrottle is when the rate was last reduced; the zero Time if it
	// never was.
	LastThrottle time.Time
}

// NewRateLimiter returns a RateLimiter configured by opts. Its state starts
// at its clock's time when it is created. Without options it uses the
// Default* constants, the system clock, and waits rather than failing fast.
// A bad option value is an error wrapping ErrInvalidConfig.
func NewRateLimiter(opts ...RateLimiterOption) (*RateLimiter, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	cfg := defaultLimiterConfig()
	for _, o := range opts {
		o.applyLimiter(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return newRateLimiter(cfg), nil
}

// newRateLimiter returns a RateLimiter with the validated configuration c.
func newRateLimiter(c limiterConfig) *RateLimiter {
	now := c.clock.Now()
	l := &RateLimiter{cfg: c, start: now, lastThrottle: now}
	l.bucket.SetLimitAt(now, 0)
	return l
}

// Acquire reserves one send slot and reports how long the caller must wait
// before sending. Concurrent callers get successive slots, so sends never
// exceed the fill rate. A slot is not given back if the caller then does not
// send.
//
// A reserved slot keeps its time when the rate changes later, so callers
// that reserve while the rate is low may wait longer than the rate they
// finally send at calls for. Callers that can instead try again (fail-fast
// mode) keep up with a rising rate.
//
// In fail-fast mode (see WithFailFast) Acquire never reserves: if no token
// is available now, it takes nothing and returns an error wrapping
// ErrRateLimited, with the time until a token is due at the current rate.
//
// Until the limiter has seen a throttle, Acquire returns 0 and a nil error
// and takes no token.
func (l *RateLimiter) Acquire() (time.Duration, error) {
	return l.acquire(l.cfg.failFast)
}

// acquire takes a send token. Without failFast it reserves the next slot
// and returns the wait for it; with failFast it takes a token only if one
// is there now, and otherwise returns ErrRateLimited with the time until
// one is due, consuming nothing.
func (l *RateLimiter) acquire(failFast bool) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.enabled {
		return 0, nil
	}
	now := l.cfg.clock.Now()
	if failFast {
		if !l.bucket.AllowN(now, 1) {
			missing := 1 - l.bucket.TokensAt(now)
			return time.Duration(math.Ceil(missing / l.fillRate * float64(time.Second))), ErrRateLimited
		}
		return 0, nil
	}
	r := l.bucket.ReserveN(now, 1)
	if !r.OK() {
		// Not reached: the fill rate and capacity are always positive.
		return 0, ErrRateLimited
	}
	return r.DelayFrom(now), nil
}

// Update records the outcome of one attempt at the clock's current time:
// throttled reports whether the service throttled it. Every attempt counts
// towards the measured send rate; a throttle reduces the allowed rate (at
// most once per congestion episode, see WithReductionCooldown), and a
// success lets it grow.
func (l *RateLimiter) Update(throttled bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.clock.Now()
	l.measure(now)
	measured := l.measured
	if measured == 0 && l.cfg.reductionCooldown > 0 {
		// No measurement window has closed yet: estimate the rate from the
		// attempts counted so far, as if the window closed now, instead of
		// taking it for zero and cutting the rate to the minimum on the
		// first throttle. (The published algorithm, cooldown 0, does not.)
		measured = float64(l.count) / l.cfg.window.Seconds()
	}
	if throttled && l.reduces(now) {
		rateToUse := measured
		if l.enabled {
			rateToUse = min(measured, l.fillRate)
		}
		l.lastMaxRate = rateToUse
		l.lastThrottle = now
		l.calculated = rateToUse * l.cfg.beta
		l.enabled = true
	} else if !throttled {
		dt := now.Sub(l.lastThrottle).Seconds()
		l.calculated = cubicRate(dt, l.lastMaxRate, l.cfg.beta, l.cfg.scaleConstant)
	}
	// A throttle within the cooldown leaves the calculated rate as it was.
	l.setRate(now, min(l.calculated, maxRateFactor*measured))
}

// measure counts one attempt at now and, when now is in a later measurement
// window than the last one counted, folds the count into the measured rate.
// l.mu must be held.
func (l *RateLimiter) measure(now time.Time) {
	l.count++
	w := l.cfg.window.Seconds()
	window := math.Floor(now.Sub(l.start).Seconds()/w) * w
	if window > l.lastWindow {
		current := float64(l.count) / (window - l.lastWindow)
		l.measured = current*l.cfg.smoothing + l.measured*(1-l.cfg.smoothing)
		l.count = 0
		l.lastWindow = window
	}
}

// reduces reports whether a throttle at now reduces the rate: the first
// throttle always does, later ones only after the cooldown.
// l.mu must be held.
func (l *RateLimiter) reduces(now time.Time) bool {
	return !l.enabled || now.Sub(l.lastThrottle) >= l.cfg.reductionCooldown
}

// setRate sets the fill rate and capacity the new rate calls for, within
// their minimums. l.mu must be held.
func (l *RateLimiter) setRate(now time.Time, newRate float64) {
	l.fillRate = max(newRate, l.cfg.minFillRate)
	l.capacity = max(newRate, float64(l.cfg.minCapacity))
	l.bucket.SetLimitAt(now, rate.Limit(l.fillRate))
	// Float-to-int conversion of an out-of-range value is not defined in Go.
	l.bucket.SetBurstAt(now, int(min(l.capacity, math.MaxInt32)))
}

// cubicK returns the time, in seconds after a reduction from maxRate, at
// which the cubic curve is back at maxRate.
func cubicK(maxRate, beta, scaleConstant float64) float64 {
	return math.Cbrt(maxRate * (1 - beta) / scaleConstant)
}

// cubicRate returns the rate the cubic curve gives dt seconds after a
// reduction from maxRate.
func cubicRate(dt, maxRate, beta, scaleConstant float64) float64 {
	d := dt - cubicK(maxRate, beta, scaleConstant)
	return scaleConstant*d*d*d + maxRate
}

// Stats returns a consistent snapshot of the limiter's state.
func (l *RateLimiter) Stats() RateLimiterStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := RateLimiterStats{
		Enabled:      l.enabled,
		FillRate:     l.fillRate,
		MeasuredRate: l.measured,
		Capacity:     l.capacity,
		Tokens:       l.bucket.TokensAt(l.cfg.clock.Now()),
		LastMaxRate:  l.lastMaxRate,
	}
	if l.enabled {
		s.LastThrottle = l.lastThrottle
	}
	return s
}

// limiterConfig is the configuration of a RateLimiter. NewRateLimiter and
// NewAdaptive start from defaultLimiterConfig, apply options, then validate.
type limiterConfig struct {
	clock             Clock
	beta              float64
	scaleConstant     float64
	smoothing         float64
	minFillRate       float64
	minCapacity       int
	window            time.Duration
	reductionCooldown time.Duration
	failFast          bool
}

// defaultLimiterConfig returns the configuration made of the Default*
// constants.
func defaultLimiterConfig() limiterConfig {
	return limiterConfig{
		clock:             systemClock{},
		beta:              DefaultBeta,
		scaleConstant:     DefaultScaleConstant,
		smoothing:         DefaultSmoothing,
		minFillRate:       DefaultMinFillRate,
		minCapacity:       DefaultMinCapacity,
		window:            DefaultMeasurementWindow,
		reductionCooldown: DefaultReductionCooldown,
	}
}

// validate reports the first bad value in c.
func (c *limiterConfig) validate() error {
	switch {
	case c.clock == nil:
		return configError("WithClock", c.clock, "a non-nil Clock")
	case !(c.beta > 0 && c.beta < 1):
		return configError("WithBeta", c.beta, "in (0, 1)")
	case !(c.scaleConstant > 0 && c.scaleConstant <= math.MaxFloat64):
		return configError("WithScaleConstant", c.scaleConstant, "finite and > 0")
	case !(c.smoothing > 0 && c.smoothing <= 1):
		return configError("WithSmoothing", c.smoothing, "in (0, 1]")
	case !(c.minFillRate > 0 && c.minFillRate <= math.MaxFloat64):
		return configError("WithMinFillRate", c.minFillRate, "finite and > 0")
	case c.minCapacity < 1:
		return configError("WithMinCapacity", c.minCapacity, "1 or more")
	case c.window <= 0:
		return configError("WithMeasurementWindow", c.window, "> 0")
	case c.reductionCooldown < 0:
		return configError("WithReductionCooldown", c.reductionCooldown, ">= 0")
	}
	return nil
}

// WithBeta sets the factor by which a rate reduction multiplies the send
// rate, in (0, 1). The default is DefaultBeta (0.8); PublishedBeta (0.7)
// is the published value.
func WithBeta(beta float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.beta = beta })
}

// WithScaleConstant sets the scale of the cubic curve along which the send
// rate grows after a reduction: a larger constant grows it faster. It must
// be finite and above 0. The default is DefaultScaleConstant (0.4), the
// published value.
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

// WithMinCapacity sets the least number of send tokens the bucket holds, 1 or
// more: the number of attempts that may be sent at once even at the lowest
// rate. The default is DefaultMinCapacity (1), the published value.
func WithMinCapacity(tokens int) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.minCapacity = tokens })
}

// WithMeasurementWindow sets the width of the windows in which the limiter
// counts attempts to measure the send rate; it must be above 0. The default
// is DefaultMeasurementWindow (500 ms), the published value.
func WithMeasurementWindow(d time.Duration) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.window = d })
}

// WithReductionCooldown sets how long after a rate reduction further
// throttles are taken as part of the same congestion episode: they still
// count as sends but do not reduce the rate again. It must be 0 or more.
// The default is DefaultReductionCooldown (500 ms, one measurement window);
// 0 reduces the rate on every throttle, as the published algorithm does.
func WithReductionCooldown(d time.Duration) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.reductionCooldown = d })
}

// WithFailFast makes Acquire return an error wrapping ErrRateLimited when no
// send token is available now, instead of the time to wait for one. The
// default is to wait.
func WithFailFast(failFast bool) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.failFast = failFast })
}
