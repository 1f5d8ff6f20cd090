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
	// least this many attempts at half the rate (twice as many when it
	// could move on to a quarter), and for independent of the load on
	// twice as many over two seconds or more, or this many when its time
	// is up.
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
	// checkWindows: a verdict of independent of the load reached on
	// unsettled evidence is checked on up to this many windows (2 s) back
	// at the rate before the test's cut: against a service that counts in
	// windows of a second, the share of one second may be off by a
	// window's worth.
	checkWindows = 2 * evidenceWindows
	// testUndecided: a share more than this many standard errors above
	// what congestion from this client alone would leave, but not
	// significantly, is undecided. At a quarter of the rate, where
	// congestion would leave about none, it keeps the test going until
	// its time is up; at half the rate, where the share fell, it moves
	// the test on to a quarter if the share is within the tolerance. A 5%
	// hot key leaves 3 throttles or fewer of 100 attempts one time in
	// four, which is not significant; taken for congestion, the pacing
	// that follows tolerates no throttles, and the key's share cuts the
	// rate at every window, down to a tenth of what the service admits.
	// None of 100 is one time in 170. Asking 1.5 standard errors saves 9
	// starved runs of 200 where 1 saves 21 (docs/adaptive-limits.md, "The
	// hot key").
	testUndecided = 1
	// descentFall: a descent compares the share at this fraction of the
	// rate it began at, or below, with the share it began on.
	descentFall = 0.25
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
// that far above congestion's there does not depend on the load. A small
// hot key leaves few throttles in a few seconds at half or a quarter of
// the rate: a share within the tolerance left at half the rate above
// congestion's, but not that far, moves the test on to a quarter too, and
// one left so at a quarter keeps the test there until its time is up
// (testUndecided).
//
// A test may also find no answer at half the rate: the share fell, but
// neither significantly nor to where congestion would take it. Cuts are
// made on windows whose share is high, so the share of the cut's evidence
// is often high by chance, and a few dozen attempts at half the rate
// cannot tell a share that stayed from one that fell a little. If the
// share at half the rate is still well above what congestion from this
// client alone would leave, the test moves on to a quarter of the rate and
// compares with the attempts at half, which were not chosen for being
// high (unanswered). Found independent of the load there, the limiter
// goes back to the rate in use before the test's cut; found congestion,
// the next cut tests again, as after any test without an answer.
//
// When such a share at half the rate cannot be tested at a quarter (it is
// within the tolerance, where a quarter would read as congestion, or the
// client sends too little), the limiter learns it as it takes the
// throttles for congestion: the rate stays cut, but the pacing that follows
// tolerates that share instead of none, and grows back through it. So it
// does with a share within the tolerance at a quarter of the rate that is
// well above what congestion would leave there: a small share that does
// not depend on the load, under congestion, would otherwise cut the rate
// at every window while the limiter paces, one throttle at a time, far
// below what the service admits.
//
// A test's verdict rests on the cut's evidence being what the service
// admits. A service that served the client less than it could just before
// (a client that just started, or came back from idle) may have credit
// saved, an unused window or a full bucket, and admit up to twice its rate
// in the second that follows: congestion from this client then shows the
// same share at half the rate as before the cut, and looks independent of
// the load. A verdict of independent reached on such evidence (unsettled:
// see shareState.settled) is checked on the windows back at the rate
// before the cut, which are settled (see check); the limiter forgets the
// share if it rose with the rate, and the next cut tests again.
type causeTest struct {
	running bool
	again   bool        // a cut that could not start a test: start at the next, back to resume
	againAt time.Time   // when that cut was made: again lapses testWindows windows later
	windows int         // the windows closed since it started (while checking: since it went back)
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
	// unanswered: it moved on without an answer at half the rate, from a
	// cut made at the rate outer (0: the limiter did not pace).
	unanswered bool
	outer      float64
	// unsettled: the cut's evidence was not settled (see
	// shareState.settled). checking: the test found the throttles
	// independent of the load on such evidence, and the limiter checks
	// that verdict in the windows after it goes back (see check).
	unsettled bool
	checking  bool
}

// consider starts a test on a cut, if the cut is from the rate the client
// wanted (free) and the client sends enough to test at half of its rate in
// evidence, the attempts of the newest windows windows of s; and returns
// the floor the running test sets, half the rate sent before its cut, or 0
// if none runs. A test that finds the throttles independent of the load
// goes back to back, the rate before the cut (0: no pacing). A cut on too
// little evidence, or on a share above testMaxShare, starts a test at the
// next cut instead (within testWindows windows), which goes back to the
// rate before this one. l.mu must be held.
func (t *causeTest) consider(l *RateLimiter, now time.Time, free bool, s *shareState, evidence windowCount, windows int, back float64) float64 {
	if t.again && now.Sub(t.againAt) > testWindows*l.cfg.window {
		t.again = false
	}
	half := evidence.rate(windows, l.cfg.window) / 2
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
		t.unsettled = t.running && !s.settled(windows)
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
	n2 := float64(t.low.attempts)
	z, stayed, congested := compare(l, t.before, t.beforeWins, t.low, t.lowWins)
	if t.second {
		// At a quarter of the rate: a share still above what congestion
		// from this client alone would leave does not depend on the
		// load, and is learned from these attempts alone (those at half
		// the rate may hold some congestion).
		switch {
		case n2 >= 2*testAttempts && t.lowWins >= 2*evidenceWindows,
			n2 >= testAttempts && t.windows >= testWindows:
			switch {
			case t.undecided(congested) && t.windows < testWindows:
				return atHalf // more attempts will tell
			case !t.leftOver(congested):
				return t.congestion(l, now)
			case t.low.share() <= l.cfg.tolerance:
				// Within the tolerance, as at half the rate when no
				// quarter can test it: learn it as the throttles are
				// taken for congestion.
				s.learn(t.low, 0)
				return t.congestion(l, now)
			}
			return t.independent(l, now, s, t.low)
		case t.windows >= testWindows:
			return t.congestion(l, now)
		}
		return atHalf
	}
	switch {
	case n2 >= testAttempts && z > significance:
		// The share fell with the rate: congestion. If it fell to a
		// share well above what congestion from this client alone
		// would leave, part of it may not depend on the load: a
		// client that overloads a service that also throttles a hot
		// key. Test that part at half the rate again, or learn it.
		switch {
		case t.leftOver(congested):
			if t.followLeftOver(l, now, s, false) {
				return true
			}
		case t.canHalve(l) && n2 < 2*testAttempts:
			return atHalf // too few attempts to tell yet
		case t.undecided(congested) && t.low.share() <= l.cfg.tolerance && t.quarterCanTell(l):
			// A small share left, not yet significant (a 5% key
			// leaves 0-3 throttles of 40-75 attempts here): the
			// quarter's wait decides it.
			t.halve(l, now, false)
			return true
		}
		return t.congestion(l, now)
	case stayed && n2 >= 2*testAttempts && t.lowWins >= 2*evidenceWindows,
		stayed && n2 >= testAttempts && t.windows >= testWindows:
		return t.independent(l, now, s, windowCount{t.before.attempts + t.low.attempts, t.before.throttles + t.low.throttles})
	case t.windows >= testWindows:
		// No answer. A share at half the rate well above what
		// congestion would leave is tested at a quarter, or learned;
		// take the rest for congestion, and test again at the next cut.
		if t.leftOver(congested) && t.followLeftOver(l, now, s, true) {
			return true
		}
		*t = causeTest{again: true, againAt: now, resume: t.resume}
		return false
	}
	return atHalf
}

// check checks a verdict of independent of the load reached on unsettled
// evidence (see causeTest) on the windows since the limiter went back to
// the rate before the test's cut: it reports false until it decides, and
// no cut is decided on the windows before. If the share there is
// significantly above the share at half the rate, and by more than a share
// that does not depend on the load would leave (compare's stayed), the
// share rose with the rate: the limiter forgets the share learned. It
// decides after checkWindows windows; sooner if the share rose by twice
// the significance after evidenceWindows windows, or by three times after
// the first window back (the first is spent at the client's full rate, a
// congested client's retries included: a rise that large is no window's
// worth of a service's counting). A share at half the rate far
// above what congestion would leave there (more than 2*significance
// standard errors: the windows back rest on a short sample) is kept: a
// client that overloads a service that also throttles a hot key needs it.
// A client that does not go back to about twice the rate at half is not
// checked. l.mu must be held.
func (t *causeTest) check(l *RateLimiter, s *shareState) bool {
	t.windows++
	n := min(t.windows, checkWindows)
	back := s.counts(n)
	early := 2.0 * significance
	if t.windows < evidenceWindows {
		early = 3 * significance
	} else if back.rate(n, l.cfg.window) < 2*(1-testSlack)*t.low.rate(t.lowWins, l.cfg.window) {
		t.checking = false
		return true
	}
	z, stayed, congested := compare(l, back, n, t.low, t.lowWins)
	rose := z > significance && !stayed && t.excess(congested) <= 2*significance
	if t.windows < checkWindows && !(rose && z > early) {
		return false
	}
	t.checking = false
	if rose {
		s.learn(windowCount{}, 0)
	}
	return true
}

// compare compares the throttled share of low, the attempts of lowWins
// windows sent at a lower rate, with that of before, the attempts of
// beforeWins windows sent at a higher one. It returns how many standard
// errors the share fell by; whether it stayed where it was (it fell by
// less than testFall of the fall that congestion from this client alone
// would make); and the share that congestion would leave: the service would
// admit as many attempts a second as before.
func compare(l *RateLimiter, before windowCount, beforeWins int, low windowCount, lowWins int) (z float64, stayed bool, congested float64) {
	f, n1, n2 := before.share(), float64(before.attempts), float64(max(low.attempts, 1))
	sentSince := max(low.rate(lowWins, l.cfg.window), math.SmallestNonzeroFloat64)
	congested = max(1-(1-f)*before.rate(beforeWins, l.cfg.window)/sentSince, 0)
	z = (f - low.share()) / math.Sqrt(max(f*(1-f), 1e-9)*(1/n1+1/n2))
	stayed = low.share() >= f-(f-congested)*testFall
	return z, stayed, congested
}

// independent ends the test with the verdict that the throttles do not
// depend on the load: the limiter learns the share of c, measured at the
// rate the test holds, and goes back to the rate before the test's cut (or
// to half, from a quarter the test moved on to after the share fell at
// half). It reports that it restored the rate. l.mu must be held.
func (t *causeTest) independent(l *RateLimiter, now time.Time, s *shareState, c windowCount) bool {
	t.running = false
	s.learn(c, t.half)
	if t.unsettled && !t.second {
		t.checking, t.windows = true, 0
	}
	back := t.resume
	if t.unanswered {
		back = t.outer
	}
	restore(l, now, back)
	return true
}

// congestion ends the test with the verdict that the throttles come from
// congestion. A test at a quarter of the rate goes back to half, where the
// share was above what congestion alone would leave, and, if it found no
// answer at half, tests again at the next cut; it reports whether it went
// back. l.mu must be held.
func (t *causeTest) congestion(l *RateLimiter, now time.Time) bool {
	t.running = false
	if !t.second {
		return false
	}
	restore(l, now, t.resume)
	if t.unanswered {
		*t = causeTest{again: true, againAt: now, resume: t.outer}
	}
	return true
}

// leftOver reports whether the share in low is significantly above
// congested, the share congestion from this client alone would leave.
func (t *causeTest) leftOver(congested float64) bool {
	return t.excess(congested) > significance
}

// undecided reports whether the share in low is above congested, the
// share congestion from this client alone would leave, by more than
// testUndecided standard errors, but not significantly.
func (t *causeTest) undecided(congested float64) bool {
	e := t.excess(congested)
	return e > testUndecided && e <= significance
}

// excess returns how many standard errors the share in low is above
// congested.
func (t *causeTest) excess(congested float64) float64 {
	p, n := t.low.share(), float64(t.low.attempts)
	return (p - congested) / math.Sqrt(max(p*(1-p), 1e-9)/n)
}

// canHalve reports whether a test at half of half the rate sent before the
// cut could find a share well above what congestion would leave there
// that does not depend on the load: the share at half the rate is above
// the tolerance, and the client sends enough to test at a quarter.
func (t *causeTest) canHalve(l *RateLimiter) bool {
	return t.low.share() > l.cfg.tolerance && t.quarterCanTell(l)
}

// quarterCanTell reports whether the client sends enough at a quarter of
// the rate it sent before the test's cut for a test there: 2*testAttempts
// attempts within testWindows windows.
func (t *causeTest) quarterCanTell(l *RateLimiter) bool {
	return t.half/2*testWindows*l.cfg.window.Seconds() >= 2*testAttempts
}

// followLeftOver follows a share at half the rate well above what
// congestion from this client alone would leave (see leftOver), when the
// share fell with the rate or the test found no answer; unanswered says
// which. It moves the test on to a quarter of the rate if it can, and
// reports that it did. Otherwise the limiter learns that share: without
// it, pacing would tolerate no throttles, and a share that does not depend
// on the load would cut the rate at every window, down to the minimum.
// l.mu must be held.
func (t *causeTest) followLeftOver(l *RateLimiter, now time.Time, s *shareState, unanswered bool) bool {
	if t.canHalve(l) {
		t.halve(l, now, unanswered)
		return true
	}
	s.learn(t.low, 0)
	return false
}

// halve moves the test on to half of half the rate sent before its cut,
// with the attempts at half the rate as its evidence before, and half the
// rate as the rate to go back to; unanswered says that it found no answer
// at half the rate (see causeTest). l.mu must be held.
func (t *causeTest) halve(l *RateLimiter, now time.Time, unanswered bool) {
	if unanswered {
		t.unanswered, t.outer = true, t.resume
	}
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

// A descent is the way back from cuts for throttles that do not depend on
// the load when no test of their cause ran, or one took them for
// congestion on an unlucky sample. While the limiter paces the client it
// tolerates no throttles, so such a share cuts the rate again at every
// window, down to the minimum, where no test can run.
//
// A descent begins at a cut while pacing whose share, counted over as many
// recent windows as hold testAttempts attempts, is significantly above the
// tolerance, from a rate high enough to measure at a quarter of it within
// testWindows windows; and follows the cuts after it. Once the
// client has sent testAttempts attempts or more at descentFall of that
// rate or below, it compares their share with the share it began on: had
// the throttles come from congestion this client causes, the service would
// admit as many attempts a second as before, and at a quarter of the rate
// the share would fall to none. A share that stayed does not depend on the
// load: the limiter learns it, at the rate it was measured at, and goes
// back to the rate in use before the descent's first cut. Either way the
// descent ends; the next cut may begin another.
//
// A client among many that share a service's capacity sees a share that
// does not move with its own rate either. The significance asked of the
// first cut, on testAttempts attempts or more, keeps a fleet's clients,
// which pace each other to a small share, from taking it for a
// load-independent one (on fewer, two of ten equal clients at 10× did,
// within ten minutes).
type descent struct {
	running    bool
	from       float64     // the rate sent in the windows the first cut's share was counted on
	before     windowCount // the attempts of those windows
	beforeWins int         // how many they are
	resume     float64     // the rate in use before the first cut; 0: no pacing
	low        windowCount // the attempts sent at descentFall of from, or below
	lowWins    int         // the windows in low
}

// begin starts a descent at a cut made from the rate back (0: no pacing),
// on the attempts of the newest windows windows, or of as many more of the
// recent ones as hold testAttempts; unless one runs, they hold fewer, their
// share is not significantly above the tolerance, or the client sends too
// little to measure at a quarter of its rate. l.mu must be held.
func (d *descent) begin(l *RateLimiter, s *shareState, windows int, back float64) {
	windows = s.span(windows, testAttempts)
	evidence := s.counts(windows)
	from := evidence.rate(windows, l.cfg.window)
	tol := l.cfg.tolerance
	significant := (evidence.share()-tol)/math.Sqrt(max(tol*(1-tol), 1e-9)/float64(max(evidence.attempts, 1))) > significance
	if d.running || !significant || evidence.attempts < testAttempts || from*descentFall*testWindows*l.cfg.window.Seconds() < testAttempts {
		return
	}
	*d = descent{running: true, from: from, before: evidence, beforeWins: windows, resume: back}
}

// step counts the window that closed last if the client sent at
// descentFall of the descent's rate or below in it, and decides when it
// can. It reports whether it restored the rate: no cut is decided on the
// window. A descent without a cut for 2*testWindows windows lapses. l.mu
// must be held.
func (d *descent) step(l *RateLimiter, now time.Time, s *shareState) bool {
	if !d.running {
		return false
	}
	if s.sinceCut > 2*testWindows {
		d.running = false
		return false
	}
	w, low := s.recent[s.fresh-1], d.from*descentFall*(1+testSlack)
	if l.fillRate <= low && float64(w.attempts) <= low*l.cfg.window.Seconds() {
		d.low.attempts += w.attempts
		d.low.throttles += w.throttles
		d.lowWins++
	}
	if d.low.attempts < testAttempts || d.lowWins < 2*evidenceWindows {
		return false
	}
	d.running = false
	if z, stayed, _ := compare(l, d.before, d.beforeWins, d.low, d.lowWins); z > significance || !stayed {
		return false
	}
	s.learn(d.low, d.from*descentFall)
	restore(l, now, d.resume)
	return true
}
