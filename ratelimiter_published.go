package retry

import (
	"math"
	"time"
)

// publishedCUBIC is the published algorithm of the AWS SDKs' adaptive
// retry mode (see RateLimiter and WithPublishedCUBIC), as the cross-SDK
// vectors check it.
type publishedCUBIC struct {
	calculated float64 // the last rate CUBIC calculated
}

// update is the published algorithm's Update. l.mu must be held.
func (p *publishedCUBIC) update(l *RateLimiter, now time.Time, throttled bool) {
	l.measure(now)
	if l.followAssignment(now) {
		return
	}
	if throttled && p.reduces(l, now) {
		rateToUse := l.measured
		if l.enabled.Load() {
			rateToUse = min(l.measured, l.fillRate)
		}
		l.lastMaxRate = rateToUse
		l.lastThrottle = now
		p.calculated = rateToUse * l.cfg.beta
		l.enabled.Store(true)
	} else if !throttled {
		dt := now.Sub(l.lastThrottle).Seconds()
		p.calculated = cubicRate(dt, l.lastMaxRate, l.cfg.beta, l.cfg.scaleConstant)
	}
	// A throttle within the cooldown leaves the calculated rate as it was.
	l.setRate(now, min(p.calculated, maxRateFactor*l.measured))
}

// reduces reports whether a throttle at now reduces the rate in the
// published algorithm: the first throttle always does, later ones only
// after the cooldown. l.mu must be held.
func (p *publishedCUBIC) reduces(l *RateLimiter, now time.Time) bool {
	return !l.enabled.Load() || now.Sub(l.lastThrottle) >= l.cfg.reductionCooldown
}

// resume starts the CUBIC curve from rate at t: the curve starts at beta
// times its maximum (at most the largest float64: a huge rate assigned, or
// a tiny beta, would make it infinite). l.mu must be held.
func (p *publishedCUBIC) resume(l *RateLimiter, t time.Time, rate float64) {
	l.restart(t, rate)
	p.calculated = rate
	l.lastMaxRate = min(rate/l.cfg.beta, math.MaxFloat64)
}

// learnedShare returns 0: the published algorithm learns no share.
func (p *publishedCUBIC) learnedShare() float64 { return 0 }

// cubicK returns the time, in seconds after a reduction from maxRate, at
// which the published CUBIC curve is back at maxRate.
func cubicK(maxRate, beta, scaleConstant float64) float64 {
	return math.Cbrt(maxRate * (1 - beta) / scaleConstant)
}

// cubicRate returns the rate the published CUBIC curve gives dt seconds
// after a reduction from maxRate. Where the curve's fall from maxRate to
// beta times it, over scaleConstant, is beyond float64 (a huge maxRate, a
// tiny scaleConstant), it is beta*maxRate: the curve's start, which it
// does not leave within any time a clock can tell.
func cubicRate(dt, maxRate, beta, scaleConstant float64) float64 {
	d := dt - cubicK(maxRate, beta, scaleConstant)
	if r := scaleConstant*d*d*d + maxRate; !math.IsNaN(r) && !math.IsInf(r, -1) {
		return r
	}
	return beta * maxRate
}
