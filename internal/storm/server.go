package storm

import (
	"math"
	"math/rand/v2"
	"time"
)

// server decides the response to each attempt when it arrives.
type server struct {
	sc   *Scenario
	rand *rand.Rand // draws the throttles that do not depend on the load

	// Windows: what it may still serve in the current 1-second window.
	window     int64   // index of the current window; -1 before the first
	allowance  int     // attempts it may still serve in the window
	cumulative float64 // capacity of the windows so far

	// Bucket: its tokens at last.
	tokens float64
	last   time.Duration
}

func newServer(sc *Scenario, r *rand.Rand) server {
	return server{sc: sc, rand: r, window: -1, tokens: sc.Burst}
}

// answer decides the response to an attempt that arrives at t; the
// arrivals come in time order.
func (sv *server) answer(t time.Duration) error {
	rate, down := sv.sc.capacityAt(t)
	if down {
		return errUnavailable
	}
	if p := sv.sc.ThrottleShare; p > 0 && sv.rand.Float64() < p {
		return errThrottled
	}
	if sv.sc.Server == Bucket {
		return sv.bucket(t, rate)
	}
	return sv.windows(t, rate)
}

func (sv *server) windows(t time.Duration, rate float64) error {
	if w := int64(t / time.Second); w != sv.window {
		// A new window: its allowance is what the capacity adds to the
		// cumulative total, in whole requests, so fractions carry over.
		// Windows the loop skipped served nothing.
		before := math.Floor(sv.cumulative)
		sv.cumulative += rate
		sv.allowance = int(math.Floor(sv.cumulative) - before)
		sv.window = w
	}
	if sv.allowance <= 0 {
		return errThrottled
	}
	sv.allowance--
	return nil
}

// bucket refills the bucket at rate, the capacity now (a change of
// capacity takes effect from the next arrival), and takes a token.
func (sv *server) bucket(t time.Duration, rate float64) error {
	sv.tokens = min(sv.tokens+rate*(t-sv.last).Seconds(), sv.sc.Burst)
	sv.last = t
	if sv.tokens < 1 {
		return errThrottled
	}
	sv.tokens--
	return nil
}
