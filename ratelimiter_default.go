package retry

import (
	"math"
	"time"
)

// The default algorithm's fixed parameters (see RateLimiter).
const (
	// evidenceWindows is how many of the newest measurement windows a cut
	// is decided on: one second with the default window.
	evidenceWindows = 2
	// significance is how many standard deviations above the tolerated
	// share the throttles must be to cut: with n attempts and a tolerated
	// share p, more than p*n + significance*sqrt(p*n).
	significance = 2
	// learnWindows and learnAttempts: the load-independent share is
	// learned over the last learnWindows windows, when they hold at least
	// learnAttempts attempts.
	learnWindows  = 8
	learnAttempts = 40
	// limitingShare: the limiter counts as limiting the client when it
	// sends at least this share of the allowed rate.
	limitingShare = 0.6
	// blockAttempts: evidence windows that hold at least this many
	// attempts, every one throttled, are a block (the service admits
	// nothing).
	blockAttempts = 10
	// learnCap: a learned share is refined with the windows that follow
	// while the client is free, on learnCap to twice as many of the
	// newest attempts once it has that many.
	learnCap = 1000
)

// excessShare is the default algorithm, which cuts the rate by the share
// of throttled attempts in excess of what it tolerates (see RateLimiter).
type excessShare struct {
	share shareState
}

// shareState is the default algorithm's record of throttled shares.
type shareState struct {
	open   windowCount               // the current measurement window
	recent [learnWindows]windowCount // the last closed windows, oldest first
	fresh  int                       // how many of recent hold counts

	// learned holds the attempts on which the load-independent throttled
	// share was learned.
	learned windowCount
	// quiet is the rate at which a test last found the throttled share
	// independent of the load (0: none did). While the limiter allows
	// about that rate or less, the share is learned anew from the windows
	// counted in quietCount.
	quiet      float64
	quietCount windowCount

	// blocked: the service admitted none of the recent attempts; the
	// next accepted attempt goes back to the rate in use before, which
	// resume holds (0: the limiter did not pace).
	blocked bool
	resume  float64

	test    causeTest // the test of the throttles' cause, while one runs
	descent descent   // the cuts made one after another while pacing

	// sinceCut counts the windows closed since the last cut (see
	// limiterConfig.evidenceAttempts).
	sinceCut int

	// The last cuts, newest first: when each was made and the rate in
	// use before it (0: the limiter did not pace). A block, found on two
	// windows every attempt of which was throttled, began with the cuts
	// of the second before it.
	cuts [evidenceWindows]struct {
		at     time.Time
		before float64
	}
}

// windowCount counts the attempts and throttles of measurement windows.
type windowCount struct{ attempts, throttles int }

// update is the default algorithm's Update: it counts the attempt in its
// measurement window and, when a window closes, decides whether to cut;
// then it sets the rate the growth curve gives. Until the first cut, it
// lets the limiter count the successes of the open window without the
// lock. l.mu must be held.
func (a *excessShare) update(l *RateLimiter, now time.Time, throttled bool) {
	a.foldUncounted(l)
	a.observe(l, now, throttled)
	if !l.enabled.Load() && l.assigned.Rate == 0 {
		l.fastUntil.Store(int64((l.lastWindow + l.cfg.window.Seconds()) * float64(time.Second)))
		l.readAt(int64(now.Sub(l.start)))
	} else {
		l.fastUntil.Store(0)
	}
}

// observe counts the attempt, decides on each window that closes, and
// sets the rate. l.mu must be held.
func (a *excessShare) observe(l *RateLimiter, now time.Time, throttled bool) {
	s := &a.share
	if closed := l.measure(now); closed > 0 {
		// Each window that closed is decided on in turn: the one that
		// holds the counts, then those without attempts since (measure
		// caps closed at learnWindows+1).
		for range closed {
			s.push(s.open)
			s.open = windowCount{}
			s.sinceCut++
			if l.assignedRate(now) == 0 {
				a.decide(l, now)
			}
		}
	}
	s.open.attempts++
	if throttled {
		s.open.throttles++
	} else if s.blocked {
		a.unblock(l, now)
	}
	if l.followAssignment(now) {
		return
	}
	l.setRate(now, a.rate(l, now))
}

// foldUncounted adds the successes counted without the lock to the open
// window's counts. l.mu must be held.
func (a *excessShare) foldUncounted(l *RateLimiter) {
	if n := l.takeUncounted(); n > 0 {
		l.count += n
		a.share.open.attempts += n
		l.total.attempts += n
	}
}

// resume starts the growth curve from rate at t. l.mu must be held.
func (a *excessShare) resume(l *RateLimiter, t time.Time, rate float64) { l.restart(t, rate) }

// learnedShare returns the load-independent share learned.
func (a *excessShare) learnedShare() float64 { return a.share.learned.share() }

// learn takes the share of c for the load-independent share, which a test
// found at the rate quiet (0: learned without a test).
func (s *shareState) learn(c windowCount, quiet float64) {
	s.learned, s.quiet, s.quietCount = c, quiet, windowCount{}
}

// refine adds the counts of w to the learned share, halving the counts
// when they pass twice learnCap: the newest attempts weigh the most.
func (s *shareState) refine(w windowCount) {
	s.learned.attempts += w.attempts
	s.learned.throttles += w.throttles
	if s.learned.attempts > 2*learnCap {
		s.learned.attempts /= 2
		s.learned.throttles = (s.learned.throttles + 1) / 2
	}
}

// push adds a closed window to the recent ones, dropping the oldest when
// they are full.
func (s *shareState) push(w windowCount) {
	if s.fresh == len(s.recent) {
		copy(s.recent[:], s.recent[1:])
		s.fresh--
	}
	s.recent[s.fresh] = w
	s.fresh++
}

// span returns how many of the newest windows, n at least, it takes to
// hold need attempts: the fewest that do, or all the recent windows (n, if
// that is more) when none do.
func (s *shareState) span(n, need int) int {
	for n < s.fresh && s.counts(n).attempts < need {
		n++
	}
	return n
}

// settled reports whether the client had been sending before the newest
// n windows: the n windows before them hold at least as many attempts as
// the service admitted in them. A service that served the client less than
// it could before then (a client that just started, or came back from
// idle) may have credit saved, an unused window or a full bucket, and
// admit up to twice its rate in the windows that follow.
func (s *shareState) settled(n int) bool {
	if s.fresh < 2*n {
		return false
	}
	newest := s.counts(n)
	return s.counts(2*n).attempts-newest.attempts >= newest.attempts-newest.throttles
}

// counts returns the attempts and throttles of the newest n recent windows.
func (s *shareState) counts(n int) windowCount {
	var c windowCount
	for _, w := range s.recent[max(s.fresh-n, 0):s.fresh] {
		c.attempts += w.attempts
		c.throttles += w.throttles
	}
	return c
}

// share returns the throttled share of c; 0 without attempts.
func (c windowCount) share() float64 {
	if c.attempts == 0 {
		return 0
	}
	return float64(c.throttles) / float64(c.attempts)
}

// rate returns the attempts a second of c, counted over windows
// measurement windows of the given width.
func (c windowCount) rate(windows int, width time.Duration) float64 {
	return float64(c.attempts) / (float64(max(windows, 1)) * width.Seconds())
}

// above reports whether the share of c is significantly above that of
// known, counting the sampling error of both.
func (c windowCount) above(known windowCount) bool {
	if c.attempts == 0 || known.attempts == 0 {
		return false
	}
	p := known.share()
	se := math.Sqrt(max(p*(1-p), 1e-9) * (1/float64(c.attempts) + 1/float64(known.attempts)))
	return (c.share()-p)/se > significance
}

// decide runs the default algorithm when a measurement window has closed:
// cut to the minimum while the service admits nothing; otherwise move a
// running test of the throttles' cause on, learn the load-independent
// share, then cut if the evidence calls for it. l.mu must be held.
func (a *excessShare) decide(l *RateLimiter, now time.Time) {
	s := &a.share
	// Not limiting the client: it has not cut yet, or the client sends
	// well below the allowed rate.
	free := !l.enabled.Load() || l.measured < limitingShare*l.fillRate
	// The rate in use: the measured rate, or the allowed rate while the
	// limiter limits the client.
	base := l.fillRate
	if free {
		base = l.measured
	}
	// The rate to go back to if what follows (a block, a cut) proves
	// wrong: the rate in use, or 0 if the limiter did not pace.
	back := base
	if !l.enabled.Load() {
		back = 0
	}
	n, wait := a.evidenceSpan(l)
	evidence := s.counts(n)
	if evidence.attempts >= blockAttempts && evidence.throttles == evidence.attempts {
		a.block(l, now, back)
		return
	}
	if wait {
		return
	}
	// While a test's verdict is checked, the share is learned as usual,
	// but no cut is decided.
	checking := s.test.checking && !s.test.check(l, s)
	if s.test.running && s.test.run(l, now, s) {
		s.descent.running = false
		return
	}
	if free {
		s.descent.running = false
	} else if s.descent.step(l, now, s) {
		return
	}
	p, known := s.learned.share(), s.learned
	if free {
		// A small share is not congestion this client causes: learn it.
		// A learned share follows the windows that are not
		// significantly above it: a test's estimate rests on few
		// attempts, and the service's share may move.
		if c := s.counts(learnWindows); c.attempts >= learnAttempts && c.share() <= l.cfg.tolerance {
			s.learn(c, 0)
		} else if s.learned.attempts > 0 && !c.above(s.learned) {
			s.refine(s.recent[s.fresh-1])
		}
		p, known = s.learned.share(), s.learned
		if p <= l.cfg.tolerance {
			p, known = l.cfg.tolerance, windowCount{}
		}
	} else if s.quiet > 0 && base <= s.quiet*(1+testSlack) {
		// At the rate where a test found the share independent of the
		// load, or below: whatever is throttled there is that share.
		w := s.recent[s.fresh-1]
		s.quietCount.attempts += w.attempts
		s.quietCount.throttles += w.throttles
		if s.quietCount.attempts >= learnAttempts {
			s.learn(s.quietCount, s.quiet)
			p, known = s.learned.share(), s.learned
		}
	}
	if checking {
		return
	}
	na := float64(evidence.attempts)
	pn := p * na
	// The variance of the throttles expected: the evidence's own, and
	// that of the learned share, measured on known.attempts attempts.
	v := pn
	if known.attempts > 0 {
		v += p * (1 - p) / float64(known.attempts) * na * na
	}
	if s.recent[s.fresh-1].throttles == 0 || float64(evidence.throttles) <= pn+significance*math.Sqrt(v) {
		return
	}
	cut := base * max(1-(evidence.share()-p), l.cfg.beta)
	// A test of the throttles' cause keeps the rate at half the rate
	// sent before its cut or more.
	if floor := s.test.consider(l, now, free, s, evidence, min(n, s.fresh), back); floor > 0 {
		if base <= floor {
			return
		}
		cut = max(cut, floor)
	}
	if !s.test.running {
		s.descent.begin(l, s, min(n, s.fresh), back)
	}
	s.sinceCut = 0
	copy(s.cuts[1:], s.cuts[:])
	s.cuts[0].at, s.cuts[0].before = now, back
	l.restart(now, cut)
	// Empty the bucket: what it holds was earned at the rate just cut.
	l.setBurst(now, 0)
}

// evidenceSpan returns how many of the newest windows a cut is decided
// on: evidenceWindows, or with limiterConfig.evidenceAttempts the fewest
// that hold that many attempts (at most all the recent ones), not reaching
// back before the last cut: wait reports that the windows since the last
// cut hold too few to decide anything on yet but a block. l.mu must be
// held.
func (a *excessShare) evidenceSpan(l *RateLimiter) (n int, wait bool) {
	s, need := &a.share, l.cfg.evidenceAttempts
	n = evidenceWindows
	if need == 0 {
		return n, false
	}
	n = s.span(n, need)
	if n > s.sinceCut && l.enabled.Load() {
		if s.counts(s.sinceCut).attempts < need {
			return n, true
		}
		n = s.sinceCut
	}
	return n, false
}

// block cuts the rate to the minimum while the service admits nothing,
// and remembers the rate to go back to, back (0: no pacing), for the next
// accepted attempt. l.mu must be held.
func (a *excessShare) block(l *RateLimiter, now time.Time, back float64) {
	s := &a.share
	if !s.blocked {
		s.blocked = true
		s.resume = back
		// Go back to before the cuts the block began with.
		for _, c := range s.cuts {
			if now.Sub(c.at) <= evidenceWindows*l.cfg.window {
				s.resume = c.before
			}
		}
	}
	s.test.running = false
	s.descent.running = false
	l.restart(now, l.cfg.minFillRate)
	l.setBurst(now, 0)
}

// unblock goes back to the rate in use before the block: an admitted
// attempt says the service admits again, at a rate the block says nothing
// about. l.mu must be held.
func (a *excessShare) unblock(l *RateLimiter, now time.Time) {
	a.share.blocked = false
	restore(l, now, a.share.resume)
}

// rate returns the rate the default algorithm allows at now. l.mu must be
// held.
func (a *excessShare) rate(l *RateLimiter, now time.Time) float64 {
	ceiling := maxRateFactor * l.measured
	if !l.enabled.Load() { // not cut yet
		return ceiling
	}
	t := now.Sub(l.lastThrottle).Seconds()
	if a := l.cfg.attemptClock; a > 0 {
		t = min(t, float64(l.total.attempts-l.lastAttempts)/a)
	}
	if a := l.cfg.demandClock; a > 0 {
		asked := l.total.attempts - l.lastAttempts + int(l.refused.Load()-l.lastRefused)
		t = min(t, float64(asked)/a)
	}
	return min(l.lastMaxRate*(1+l.cfg.scaleConstant*t*t*t)+l.cfg.absGrowth*t*t*t, ceiling)
}
