package retry

import (
	"math"
	"time"
)

// The test of the throttles' cause (see causeTest).
const (
	// testSlack: the test counts the windows in which the limiter allowed
	// and the client sent at most this much above half the rate it sent
	// before the cut (the growth curve takes the rate there in four
	// seconds).
	testSlack = 0.2
	// testAttempts: the test takes the throttles for congestion on at
	// least half this many attempts at half the rate, and for independent
	// of the load on at least twice as many over two seconds or more, or
	// this many when its time is up.
	testAttempts = 20
	// testFall: a share that fell by less than this part of the fall that
	// congestion from this client alone would make does not depend on the
	// load. In a fleet a client's own rate moves the share in proportion
	// to its part of the load, which no client knows: a client that is
	// more than testFall of the load is not misled.
	testFall = 0.25
	// testMaxShare: a cut on a larger throttled share starts no test (the
	// next cut may): congestion, or a test whose share before the cut
	// would rest on too few admitted attempts.
	testMaxShare = 0.6
	// testWindows: a test that has not decided after this many windows
	// (8 s) takes the throttles for congestion.
	testWindows = 2 * learnWindows
)

// A causeTest tells congestion from throttles that do not depend on the
// load (a hot partition key, a per-operation limit), which the default
// algorithm would otherwise cut for again and again, down to its minimum
// rate. It starts with a cut from the rate the client wanted and keeps the
// rate at half the rate the client sent before the cut, or more, until it
// decides. Had the throttles come from congestion this client causes, the
// service would admit as many attempts a second at half the rate as
// before, and the share would fall accordingly; a share that does not
// depend on the load stays where it was. In the second case the limiter
// learns the share, tolerates it from then on, and goes back to the rate
// in use before the cut.
//
// Both may hold at once: a client that overloads a service that also
// throttles a hot key. The share then falls at half the rate, but to one
// significantly above what congestion from this client alone would leave;
// the test moves on to a quarter of the rate (second), and a share still
// that far above congestion's there does not depend on the load.
type causeTest struct {
	running bool
	again   bool        // a cut that could not start a test: start at the next, back to resume
	againAt time.Time   // when that cut was made: again lapses testWindows windows later
	windows int         // the windows closed since it started
	before  windowCount // the attempts of the evidence of the cut that started it
	resume  float64     // the rate in use before that cut; 0: the limiter did not pace
	half    float64     // half the rate sent before the cut
	low     windowCount // the attempts sent at about half that rate
	lowWins int         // the windows in low
	// beforeWins is how many windows before spans: the cut's evidence,
	// or the windows at half the rate once the test has moved to a
	// quarter (second).
	beforeWins int
	second     bool // the test has moved on to a quarter of the rate
}

// consider starts a test on a cut, if the cut is from the rate the client
// wanted (free) and the client sends enough to test at half of its rate in
// evidence; and returns the floor the running test sets, half the rate
// sent before its cut, or 0 if none runs. A test that finds the throttles
// independent of the load goes back to back, the rate before the cut (0:
// no pacing). A cut on too little evidence, or on a share above
// testMaxShare, starts a test at the next cut instead (within testWindows
// windows), which goes back to the rate before this one. l.mu must be
// held.
func (t *causeTest) consider(l *RateLimiter, now time.Time, free bool, evidence windowCount, windows int, back float64) float64 {
	if t.again && now.Sub(t.againAt) > testWindows*l.cfg.window {
		t.again = false
	}
	half := float64(evidence.attempts) / (float64(windows) * l.cfg.window.Seconds()) / 2
	if !t.running && (free || t.again) && half*testWindows*l.cfg.window.Seconds() >= 2*testAttempts {
		switch {
		case evidence.attempts < testAttempts || evidence.share() > testMaxShare:
			if !t.again {
				*t = causeTest{again: true, againAt: now, resume: back}
			}
		case t.again:
			*t = causeTest{running: true, before: evidence, beforeWins: windows, resume: t.resume, half: half}
		default:
			*t = causeTest{running: true, before: evidence, beforeWins: windows, resume: back, half: half}
		}
	}
	if !t.running {
		return 0
	}
	return t.half
}

// run counts the window that closed last towards the test if the client
// sent at about half the rate in it (a quarter, in the second part), and
// decides when it can: congestion, and the test ends; a share above what
// congestion would leave, and the test moves on to a quarter of the rate;
// or independent of the load, and the limiter learns the share into s and
// goes back to the rate in use before the test's cut (half the rate, from
// a quarter). It reports whether it holds the rate, or has just restored
// it: no cut is decided on the window. l.mu must be held.
func (t *causeTest) run(l *RateLimiter, now time.Time, s *shareState) bool {
	w := s.recent[s.fresh-1]
	t.windows++
	atHalf := l.fillRate <= t.half*(1+testSlack) && float64(w.attempts) <= t.half*(1+testSlack)*l.cfg.window.Seconds()
	if atHalf {
		t.low.attempts += w.attempts
		t.low.throttles += w.throttles
		t.lowWins++
	}
	f, n1, n2 := t.before.share(), float64(t.before.attempts), float64(t.low.attempts)
	// Congestion would leave the service admitting as many attempts a
	// second as before the cut, and so this share at the rate sent since.
	sentBefore := n1 / (float64(t.beforeWins) * l.cfg.window.Seconds())
	sentSince := n2 / (float64(max(t.lowWins, 1)) * l.cfg.window.Seconds())
	congested := max(1-(1-f)*sentBefore/max(sentSince, math.SmallestNonzeroFloat64), 0)
	if t.second {
		// At a quarter of the rate: a share still above what congestion
		// from this client alone would leave does not depend on the
		// load, and is learned from these attempts alone (those at half
		// the rate may hold some congestion).
		switch {
		case n2 >= 2*testAttempts && t.lowWins >= 2*evidenceWindows,
			n2 >= testAttempts && t.windows >= testWindows:
			if t.low.share() <= l.cfg.tolerance || !t.leftOver(congested) {
				return t.congestion(l, now)
			}
			return t.independent(l, now, s, t.low)
		case t.windows >= testWindows:
			return t.congestion(l, now)
		}
		return atHalf
	}
	// How many standard errors the share fell by at about half the rate.
	z := (f - t.low.share()) / math.Sqrt(max(f*(1-f), 1e-9)*(1/n1+1/max(n2, 1)))
	stayed := t.low.share() >= f-(f-congested)*testFall
	switch {
	case n2 >= testAttempts/2 && z > significance:
		// The share fell with the rate: congestion. If it fell to a
		// share well above what congestion from this client alone
		// would leave, part of it may not depend on the load: a
		// client that overloads a service that also throttles a hot
		// key. Test that part at half the rate again.
		if t.low.share() > l.cfg.tolerance && t.canHalve(l) {
			if t.leftOver(congested) {
				t.halve(l, now)
				return true
			}
			if n2 < 2*testAttempts {
				return atHalf // too few attempts to tell yet
			}
		}
		return t.congestion(l, now)
	case stayed && n2 >= 2*testAttempts && t.lowWins >= 2*evidenceWindows,
		stayed && n2 >= testAttempts && t.windows >= testWindows:
		return t.independent(l, now, s, windowCount{t.before.attempts + t.low.attempts, t.before.throttles + t.low.throttles})
	case t.windows >= testWindows:
		// No answer: take it for congestion, and test again at the
		// next cut.
		*t = causeTest{again: true, againAt: now, resume: t.resume}
		return false
	}
	return atHalf
}

// independent ends the test with the verdict that the throttles do not
// depend on the load: the limiter learns the share of c, measured at the
// rate the test holds, and goes back to the rate before the test's cut (or
// to half, from a quarter). It reports that it restored the rate. l.mu must
// be held.
func (t *causeTest) independent(l *RateLimiter, now time.Time, s *shareState, c windowCount) bool {
	t.running = false
	s.learn(c, t.half)
	restore(l, now, t.resume)
	return true
}

// congestion ends the test with the verdict that the throttles come from
// congestion. A test at a quarter of the rate goes back to half, where the
// share was above what congestion alone would leave; it reports whether it
// did so. l.mu must be held.
func (t *causeTest) congestion(l *RateLimiter, now time.Time) bool {
	t.running = false
	if !t.second {
		return false
	}
	restore(l, now, t.resume)
	return true
}

// leftOver reports whether the share in low is significantly above
// congested, the share congestion from this client alone would leave.
func (t *causeTest) leftOver(congested float64) bool {
	p, n := t.low.share(), float64(t.low.attempts)
	return (p-congested)/math.Sqrt(max(p*(1-p), 1e-9)/n) > significance
}

// canHalve reports whether the client sends enough to test at half of
// half the rate sent before the cut.
func (t *causeTest) canHalve(l *RateLimiter) bool {
	return t.half/2*testWindows*l.cfg.window.Seconds() >= 2*testAttempts
}

// halve moves the test on to half of half the rate sent before its cut,
// with the attempts at half the rate as its evidence before, and half the
// rate as the rate to go back to. l.mu must be held.
func (t *causeTest) halve(l *RateLimiter, now time.Time) {
	t.before, t.beforeWins = t.low, t.lowWins
	t.low, t.lowWins, t.windows = windowCount{}, 0, 0
	t.resume = t.half
	t.half /= 2
	t.second = true
	l.restart(now, t.half)
	l.setBurst(now, 0)
}

// restore restarts the growth curve from rate r, or, with r = 0, stops
// pacing, as before the limiter's first cut. l.mu must be held.
func restore(l *RateLimiter, now time.Time, r float64) {
	if r == 0 {
		l.enabled.Store(false)
		return
	}
	l.restart(now, r)
	// The measured rate fell with the rate: let the curve start from the
	// rate restored, not from twice what was measured.
	l.measured = max(l.measured, r/maxRateFactor)
}
