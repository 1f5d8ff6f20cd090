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
func (t *causeTest) consider(l *RateLimiter, now time.Time, free bool, evidence windowCount, back float64) float64 {
	if t.again && now.Sub(t.againAt) > testWindows*l.cfg.window {
		t.again = false
	}
	half := float64(evidence.attempts) / (evidenceWindows * l.cfg.window.Seconds()) / 2
	if !t.running && (free || t.again) && half*testWindows*l.cfg.window.Seconds() >= 2*testAttempts {
		switch {
		case evidence.attempts < testAttempts || evidence.share() > testMaxShare:
			if !t.again {
				*t = causeTest{again: true, againAt: now, resume: back}
			}
		case t.again:
			*t = causeTest{running: true, before: evidence, resume: t.resume, half: half}
		default:
			*t = causeTest{running: true, before: evidence, resume: back, half: half}
		}
	}
	if !t.running {
		return 0
	}
	return t.half
}

// run counts w, the window that closed, towards the test if the client
// sent at about half the rate in it, and decides when it can: congestion,
// and the test ends; or independent of the load, and the limiter learns
// the share into learned and goes back to the rate in use before the
// test's cut. It reports whether it holds the rate at half, or has just
// restored it: no cut is decided on the window. l.mu must be held.
func (t *causeTest) run(l *RateLimiter, now time.Time, w windowCount, learned *float64) bool {
	t.windows++
	atHalf := l.fillRate <= t.half*(1+testSlack) && float64(w.attempts) <= t.half*(1+testSlack)*l.cfg.window.Seconds()
	if atHalf {
		t.low.attempts += w.attempts
		t.low.throttles += w.throttles
		t.lowWins++
	}
	f, n1, n2 := t.before.share(), float64(t.before.attempts), float64(t.low.attempts)
	// How many standard errors the share fell by at about half the rate.
	z := (f - t.low.share()) / math.Sqrt(max(f*(1-f), 1e-9)*(1/n1+1/max(n2, 1)))
	// Congestion would leave the service admitting as many attempts a
	// second as before the cut, and so this share at the rate sent since.
	sentBefore := n1 / (evidenceWindows * l.cfg.window.Seconds())
	sentSince := n2 / (float64(max(t.lowWins, 1)) * l.cfg.window.Seconds())
	congested := max(1-(1-f)*sentBefore/max(sentSince, math.SmallestNonzeroFloat64), 0)
	stayed := t.low.share() >= f-(f-congested)*testFall
	switch {
	case n2 >= testAttempts/2 && z > significance:
		t.running = false // congestion: the share fell with the rate
		return false
	case stayed && n2 >= 2*testAttempts && t.lowWins >= 2*evidenceWindows,
		stayed && n2 >= testAttempts && t.windows >= testWindows:
		t.running = false
		*learned = windowCount{t.before.attempts + t.low.attempts, t.before.throttles + t.low.throttles}.share()
		restore(l, now, t.resume)
		return true
	case t.windows >= testWindows:
		t.running = false // no answer: take it for congestion
		return false
	}
	return atHalf
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
