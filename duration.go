package retry

import (
	"math"
	"time"
)

// Saturating Duration arithmetic.
//
// A wait computed from options and hints can exceed what a time.Duration
// holds (about 292 years). Integer addition then wraps, and converting a
// float64 that does not fit to an integer gives an implementation-defined
// value (math.MinInt64 on amd64): either way a very long wait becomes a
// negative one, which every caller treats as no wait at all, and the
// retries go out at once. Every sum of durations that can overflow, and
// every float64-to-Duration conversion, goes through these helpers, which
// stop at the bounds instead.

const (
	maxDuration = time.Duration(math.MaxInt64)
	minDuration = time.Duration(math.MinInt64)
)

// satAdd returns a+b, or the bound the sum would pass.
func satAdd(a, b time.Duration) time.Duration {
	s := a + b
	// The sum overflowed iff a and b have the same sign and s has the other.
	if (a < 0) == (b < 0) && (s < 0) != (a < 0) {
		if a < 0 {
			return minDuration
		}
		return maxDuration
	}
	return s
}

// satMul returns d×f, rounded toward zero, or the bound the product would
// pass. A NaN product, such as 0×Inf, gives 0 (see satDuration).
func satMul(d time.Duration, f float64) time.Duration {
	return satDuration(float64(d) * f)
}

// satDuration converts ns nanoseconds to a Duration, rounding toward zero
// as a conversion does, and returning the bound ns is beyond if it does not
// fit. NaN has no meaningful duration: it gives 0. The callers' inputs are
// validated so that NaN does not arise; should it, 0 leaves the caller's
// own bounds (a cap, a floor, a hint) to decide.
func satDuration(ns float64) time.Duration {
	switch {
	case ns != ns: // NaN
		return 0
	case ns >= 1<<63: // float64(math.MaxInt64) rounds up to 2^63, which does not fit
		return maxDuration
	case ns <= -1<<63:
		return minDuration
	}
	return time.Duration(ns)
}
