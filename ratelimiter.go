package retry

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Defaults for NewRateLimiter. The limiter runs retrykit's own algorithm
// unless WithPublishedCUBIC selects the published one; the constants below
// that only one algorithm uses say so.
const (
	// DefaultBeta is the default algorithm's cut: on congestion, the send
	// rate becomes DefaultBeta times the rate the service accepted.
	DefaultBeta = 0.9

	// PublishedBeta is the published algorithm's factor by which a
	// reduction multiplies the send rate in use, as in TCP CUBIC. The
	// cross-SDK vectors assume it.
	PublishedBeta = 0.7

	// DefaultScaleConstant scales the default algorithm's growth curve,
	// in units of the capacity estimate per second cubed: 0.02 brings the
	// rate back to the estimate about 1.7 s after a cut and takes it 16%
	// beyond 2 s later.
	DefaultScaleConstant = 0.02

	// PublishedScaleConstant scales the published algorithm's CUBIC
	// curve, in sends per second per second cubed.
	PublishedScaleConstant = 0.4

	// DefaultThrottleTolerance is the share of throttled attempts that the
	// default algorithm tolerates without cutting the rate, above the
	// share it has learned that cutting does not reduce.
	DefaultThrottleTolerance = 0.02

	// DefaultSmoothing is the weight of the newest measurement window in the
	// smoothed measured send rate (both algorithms).
	DefaultSmoothing = 0.8

	// DefaultMinFillRate is the lowest send rate, in sends per second, that
	// a RateLimiter allows (both algorithms).
	DefaultMinFillRate = 0.5

	// DefaultMinCapacity is the least number of send tokens the bucket
	// holds (both algorithms).
	DefaultMinCapacity = 1

	// DefaultMeasurementWindow is the width of the windows in which a
	// RateLimiter counts attempts to measure the send rate and, in the
	// default algorithm, the throttled share (both algorithms).
	DefaultMeasurementWindow = 500 * time.Millisecond
)

// maxRateFactor bounds the send rate to this multiple of the measured send
// rate, so a client that sends little cannot build up a rate it never used.
const maxRateFactor = 2

// The default algorithm's fixed parameters.
const (
	// recentWindows is how many measurement windows the default algorithm
	// looks back over: its evidence of congestion.
	recentWindows = 8
	// significance is how many standard deviations above the tolerated
	// share the throttles must be to count as congestion: with n attempts
	// and a tolerated share p, more than p*n + significance*sqrt(p*n).
	significance = 2
	// verifyAttempts and verifyWindows: a cut is judged on at least
	// verifyWindows windows after it (the settling one not counted), and
	// on at least verifyAttempts attempts unless recentWindows windows
	// pass first.
	verifyAttempts = 40
	verifyWindows  = 2
)

// A RateLimiter paces the attempts a client sends to a service: the
// client-side send-rate limiter of adaptive retry mode, which slows a
// client down when the service throttles it because it is overloaded,
// before retries make matters worse.
//
// Call Acquire before each attempt and wait the duration it returns before
// sending, and call Update with the outcome of every attempt. A RateLimiter
// measures the rate at which the client sends and sets the fill rate of a
// token bucket ([golang.org/x/time/rate.Limiter]) from what it observes. The
// rate never exceeds twice the measured send rate and never falls below the
// minimum fill rate. Before the limiter first reduces the rate, Acquire
// delays nothing, takes no token and takes no lock.
//
// # The default algorithm: cut on congestion, and check that it helped
//
// A throttle says the service refused an attempt, not why. When the
// service is overloaded, sending less makes throttles rarer; when it
// throttles a share of requests whatever the rate (a hot partition key, a
// per-operation limit), sending less only sends less. The limiter therefore
// reacts to the throttled share of its recent attempts, not to single
// throttles, and verifies each reduction:
//
//   - Evidence. It counts attempts and throttles in measurement windows
//     (DefaultMeasurementWindow) and looks at the last recentWindows (4)
//     of them. The share is the same for each member of a fleet of clients
//     as for one big client, so a fleet reacts as one client would.
//   - Cut. When the throttles are more than the tolerated share p explains
//     (with n attempts, more than p*n + 2*sqrt(p*n), and at least one
//     attempt accepted), the service is taken to be at capacity: the rate
//     it accepted over those windows is the estimate of the client's
//     share of the capacity, and the send rate is cut to beta times that
//     estimate (DefaultBeta, 0.9). p starts at the throttle tolerance
//     (DefaultThrottleTolerance, 2%) above the learned share (below).
//   - Verify. The window after a cut is left to settle (responses to
//     earlier sends, and the other members of a fleet cutting too); then
//     the throttled share of at least verifyAttempts (40) attempts or
//     recentWindows windows is compared with the share that caused the
//     cut. If it did not fall to half or less, the throttling does not
//     depend on the load: the limiter restores the rate it had before the
//     cut. Either way the share after the cut becomes the learned share,
//     which later cuts must exceed by the tolerance: a steady few percent
//     of load-independent throttles stops causing cuts.
//   - Grow. From a cut the rate follows a cubic curve centred on the
//     capacity estimate W: W*(1 + c*(t-K)^3), t seconds after the cut, with
//     K = cbrt((1-beta)/c) and c the scale constant (DefaultScaleConstant,
//     0.02). It climbs back to W, levels off there, and then probes beyond
//     it ever faster, so capacity that comes back is found within seconds.
//     Scaled to W, the curve grows each member of a fleet in proportion
//     to its share, as it grows one big client.
//   - Start-up. Until it first cuts, the limiter delays nothing. Throttles
//     with no accepted attempt in the recent windows (a burst of throttles
//     at start-up, or an outage reported as throttling) never cut: there is
//     no accepted rate to estimate from, and the retry quota already
//     contains the retries.
//
// In the storm simulation (go run ./examples/storm; a deterministic model
// of closed-loop clients, see the README), against clients that offer 3x a
// server's capacity, the default algorithm serves at least 95% of the
// capacity with under 5% of sends throttled, from one client or from a
// fleet of ten; with 5% of attempts throttled whatever the load it
// completes as many requests as the standard mode.
//
// # The published algorithm
//
// WithPublishedCUBIC selects the algorithm of the AWS SDKs' adaptive retry
// mode exactly, as the cross-SDK conformance vectors check it. The first
// throttle enables the limiter; every throttle cuts the rate to beta
// (PublishedBeta, 0.7) times the rate in use, which becomes the curve's
// maximum; successes grow it along the CUBIC curve
// c*(t-K)^3 + max, with K = cbrt(max*(1-beta)/c) and c =
// PublishedScaleConstant (0.4 sends per second per second cubed). With many
// attempts in flight, one overload throttles many at once and the rate
// collapses several times over; a steady load-independent share of
// throttles pins the rate at the minimum fill rate; and a throttle before
// the first measurement window has closed cuts the rate to the minimum.
// WithReductionCooldown limits it to one cut per congestion episode.
//
// # Waiting
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

	// enabled is set, once, when the limiter starts pacing; Acquire reads
	// it without the lock.
	enabled atomic.Bool

	mu       sync.Mutex
	bucket   rate.Limiter // the send tokens; its limit is fillRate, its burst floor(capacity)
	measured float64      // smoothed measured send rate, per second
	count    int          // attempts counted since lastWindow began
	// lastWindow is where the last measurement window began, in seconds
	// since start.
	lastWindow float64
	calculated float64 // published: the last rate CUBIC calculated
	// lastMaxRate is the rate the growth curve is centred on: published,
	// the rate in use at the last reduction; default, the capacity
	// estimate.
	lastMaxRate  float64
	lastThrottle time.Time // when the last reduction happened; start before the first
	fillRate     float64
	capacity     float64
	share        shareState // the default algorithm's state
}

// shareState is the default algorithm's view of the throttled share.
type shareState struct {
	open   windowCount                // the current measurement window
	recent [recentWindows]windowCount // the last closed windows, oldest first
	fresh  int                        // how many of recent hold counts

	accepted bool    // an attempt was accepted: throttles count from now on
	cut      bool    // the rate has been cut: it follows the curve
	learned  float64 // the throttled share found not to depend on the load

	quiet    int     // attempts since the last window with a throttle
	decShare float64 // the share that caused the last cut
	spiral   float64 // the rate before the first cut not yet shown to help; 0: none
	high     float64 // the rate in use at the last cut
	slot     int64   // the last verification slot seen

	trial              trial // a verification in progress
	suspect            bool  // a verification found the share did not fall
	excessSinceSlot    bool
	confirmedSinceSlot bool
	test               test // a concerted test in progress
}

// test is a concerted verification.
type test struct {
	phase  int
	base   float64
	held   float64
	before windowCount
	after  windowCount
	spent  int
}

// trial is a verification: the rate held lower to see whether the
// throttled share falls.
type trial struct {
	phase  int // 0: none; 1: settling; 2: measuring
	before windowCount
	after  windowCount
	spent  int // windows measured
}

// windowCount counts the attempts and throttles of one measurement window.
type windowCount struct{ attempts, throttles int }

// RateLimiterStats is a snapshot of a RateLimiter's state.
type RateLimiterStats struct {
	// Enabled reports whether the limiter paces sends: the published
	// algorithm from its first throttle, the default one from its first
	// cut.
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

	// LastMaxRate is the rate the growth curve is centred on. Published
	// algorithm: the send rate in use when the rate was last reduced.
	// Default algorithm: the estimate of the client's share of the
	// service's capacity, the rate it accepted before the last cut.
	LastMaxRate float64

	// LastThrottle is when the rate was last reduced; the zero Time if it
	// never was. (Default algorithm: after a cut was found not to help and
	// the rate restored, the time from which the curve is at LastMaxRate
	// minus K.)
	LastThrottle time.Time

	// ToleratedShare is the share of throttled attempts the default
	// algorithm tolerates now without cutting: the learned
	// load-independent share plus the throttle tolerance. 0 for the
	// published algorithm.
	ToleratedShare float64
}

// NewRateLimiter returns a RateLimiter configured by opts. Its state starts
// at its clock's time when it is created. Without options it runs the
// default algorithm with the Default* constants, the system clock, and
// waits rather than failing fast. A bad option value is an error wrapping
// ErrInvalidConfig.
func NewRateLimiter(opts ...RateLimiterOption) (*RateLimiter, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	cfg := limiterDefaults(false)
	for _, o := range opts {
		o.applyLimiter(&cfg)
	}
	if cfg.published {
		cfg = limiterDefaults(true)
		for _, o := range opts {
			o.applyLimiter(&cfg)
		}
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
// Until the limiter paces (see RateLimiterStats.Enabled), Acquire returns 0
// and a nil error, takes no token and takes no lock.
func (l *RateLimiter) Acquire() (time.Duration, error) {
	return l.acquire(l.cfg.failFast)
}

// acquire takes a send token. Without failFast it reserves the next slot
// and returns the wait for it; with failFast it takes a token only if one
// is there now, and otherwise returns ErrRateLimited with the time until
// one is due, consuming nothing.
func (l *RateLimiter) acquire(failFast bool) (time.Duration, error) {
	if !l.enabled.Load() {
		return 0, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
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
// towards the measured send rate; what a throttle does depends on the
// algorithm (see RateLimiter).
func (l *RateLimiter) Update(throttled bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.cfg.clock.Now()
	if l.cfg.published {
		l.updatePublished(now, throttled)
		return
	}
	l.updateDefault(now, throttled)
}

// updatePublished is the published algorithm's Update. l.mu must be held.
func (l *RateLimiter) updatePublished(now time.Time, throttled bool) {
	l.measure(now)
	if throttled && l.reduces(now) {
		rateToUse := l.measured
		if l.enabled.Load() {
			rateToUse = min(l.measured, l.fillRate)
		}
		l.lastMaxRate = rateToUse
		l.lastThrottle = now
		l.calculated = rateToUse * l.cfg.beta
		l.enabled.Store(true)
	} else if !throttled {
		dt := now.Sub(l.lastThrottle).Seconds()
		l.calculated = cubicRate(dt, l.lastMaxRate, l.cfg.beta, l.cfg.scaleConstant)
	}
	// A throttle within the cooldown leaves the calculated rate as it was.
	l.setRate(now, min(l.calculated, maxRateFactor*l.measured))
}

// updateDefault is the default algorithm's Update. l.mu must be held.
func (l *RateLimiter) updateDefault(now time.Time, throttled bool) {
	if closed := l.measure(now); closed > 0 {
		s := &l.share
		s.push(s.open)
		s.open = windowCount{}
		for range min(closed-1, recentWindows) {
			s.push(windowCount{}) // windows without attempts
		}
		l.decide(now)
	}
	switch {
	case !throttled:
		l.share.accepted = true
		l.share.open.attempts++
	case l.share.accepted:
		// Start-up: throttles before the first accepted attempt say
		// nothing about the rate the service accepts.
		l.share.open.attempts++
		l.share.open.throttles++
	}
	l.setRate(now, l.defaultRate(now))
}

// measure counts one attempt at now and, when now is in a later measurement
// window than the last one counted, folds the count into the measured rate.
// It returns how many windows closed: 0 while now is in the same window.
// l.mu must be held.
func (l *RateLimiter) measure(now time.Time) int {
	l.count++
	w := l.cfg.window.Seconds()
	window := math.Floor(now.Sub(l.start).Seconds()/w) * w
	if window <= l.lastWindow {
		return 0
	}
	current := float64(l.count) / (window - l.lastWindow)
	if !l.cfg.published && l.lastWindow == 0 && l.measured == 0 {
		// Start-up: the first measurement is taken as it is, not smoothed
		// with the zero before it.
		l.measured = current
	} else {
		l.measured = current*l.cfg.smoothing + l.measured*(1-l.cfg.smoothing)
	}
	closed := int(min(math.Round((window-l.lastWindow)/w), recentWindows+1))
	l.count = 0
	l.lastWindow = window
	return closed
}

// reduces reports whether a throttle at now reduces the rate in the
// published algorithm: the first throttle always does, later ones only
// after the cooldown. l.mu must be held.
func (l *RateLimiter) reduces(now time.Time) bool {
	return !l.enabled.Load() || now.Sub(l.lastThrottle) >= l.cfg.reductionCooldown
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

// tolerated returns the throttled share the default algorithm tolerates
// now.
func (l *RateLimiter) tolerated() float64 {
	return min(l.share.learned+l.cfg.tolerance, 1)
}

// DebugHook XXX temporary.
var DebugHook func(l *RateLimiter, now time.Time, what string, n, k int, rate, w float64)

// XXX tunables, temporary.
var (
	TuneSpan          = 2
	TuneMaxCut        = 0.5
	TuneSignificance  = 2.0
	TuneFast          = 0.1
	TuneFastStep      = 1.5
	TuneDepth         = 0.2
	TuneSlot          = 20 * time.Second
	TuneQuietExpect   = 3.0
	TuneTrialN        = 100
	TuneTrialW        = 4
	TuneLearnMin      = 40
	TuneTrials        = true
	TuneFastW         = 4
	TuneAllTest       = false
	TuneCutFull       = false
	TuneDirect        = true
	TuneLLR           = 3.0
	TuneMinTrack      = false
	TuneSpiralTest    = true
	TuneHalfLife      = 20.0
	TuneLearn         = true
	TuneRestoreOn     = true
	TuneHold          = 0.0
	TuneDeepTest      = false
	TuneNeedN         = true
	TuneSkipConfirmed = true
	TuneSkipSmall     = true
	TuneCutShare      = true
	TuneFree          = 0.1
	TuneBinding       = 0.6
	TuneHighDecay     = 0.99
	TuneHoldWorse     = 2.0
	TuneHoldBig       = 0.3
	TuneTestDepth     = 0.1
	TuneTestN         = 60
	TuneTestW         = 4
)

func (l *RateLimiter) debug(now time.Time, what string, c windowCount, a, b float64) {
	if DebugHook != nil {
		DebugHook(l, now, what, c.attempts, c.throttles, a, b)
	}
}

// decide runs the default algorithm when a measurement window has closed.
// l.mu must be held.
func (l *RateLimiter) decide(now time.Time) {
	s := &l.share
	last := s.recent[s.fresh-1]
	if last.throttles > 0 {
		s.quiet = 0
	} else if s.quiet += last.attempts; float64(s.quiet)*s.decShare >= TuneQuietExpect {
		// Had the share that caused the last cut stayed, this quiet
		// spell would have held TuneQuietExpect throttles: the cut
		// helped.
		s.spiral = 0
		s.confirmedSinceSlot = true
	}
	if TuneHalfLife > 0 {
		s.learned *= math.Exp2(-l.cfg.window.Seconds() / TuneHalfLife)
	}
	if ring := s.counts(len(s.recent)); ring.attempts >= TuneLearnMin && TuneMinTrack {
		s.learned = min(s.learned, ring.share())
	}
	if s.spiral > 0 && s.trial.phase == 0 && l.baseRate() >= s.spiral {
		s.spiral = 0 // recovered
	}
	if s.test.phase > 0 {
		l.judgeTest(now, last)
		return
	}
	if slot := now.UnixNano() / int64(TuneSlot); slot != s.slot {
		s.slot = slot
		participate := s.suspect
		if TuneAllTest {
			participate = s.excessSinceSlot
			if TuneSkipConfirmed && s.confirmedSinceSlot {
				participate = false
			}
			if TuneSkipSmall && l.measured*float64(TuneTestW)*l.cfg.window.Seconds() < float64(TuneTestN) {
				participate = false
			}
		}
		s.confirmedSinceSlot = false
		if TuneSpiralTest {
			participate = s.spiral > 0
		}
		if TuneDeepTest {
			participate = s.spiral > 0 && l.baseRate() <= (1-TuneDepth)*s.spiral
		}
		s.excessSinceSlot = false
		if participate && TuneTrials {
			l.startTest(now)
			return
		}
	}
	if s.spiral > 0 && TuneTrials && !TuneAllTest && !TuneSpiralTest {
		if s.trial.phase == 0 && l.baseRate() <= (1-TuneDepth)*s.spiral {
			// The rate is down by TuneDepth since the cuts began:
			// measure whether the share fell.
			s.trial.phase = 1
			s.trial.after = windowCount{}
			s.trial.spent = 0
			l.debug(now, "measure", s.trial.before, l.baseRate(), s.spiral)
		} else if s.trial.phase > 0 && l.judge(now, last) {
			return
		}
	}
	s.high *= TuneHighDecay
	span := s.counts(TuneSpan)
	p := l.tolerated()
	if TuneFree > 0 {
		free := !s.cut || l.measured < TuneBinding*l.fillRate
		if ring := s.counts(len(s.recent)); free && ring.attempts >= TuneLearnMin && ring.share() <= TuneFree {
			// Demand is below the allowed rate and the share is small:
			// this share is not congestion caused by this client.
			s.learned = ring.share()
		}
		if free {
			p = max(p, TuneFree)
		}
	}
	pn := p * float64(span.attempts)
	excess := float64(span.throttles) - pn - TuneSignificance*math.Sqrt(pn)
	if last.throttles == 0 || excess <= 0 {
		if TuneFast > 0 && s.cut && s.counts(TuneFastW).throttles == 0 && l.fillRate >= s.high*(1+TuneFast) && l.measured >= 0.9*l.fillRate {
			// Probed beyond the estimate without a throttle: the
			// capacity grew. Step up.
			l.lastMaxRate = l.fillRate * TuneFastStep
			l.lastThrottle = now
			l.debug(now, "fast", span, l.fillRate, l.lastMaxRate)
		}
		return
	}
	if TuneHold > 0 && now.Sub(l.lastThrottle).Seconds() < TuneHold && span.share() < max(TuneHoldWorse*s.decShare, TuneHoldBig) {
		return // one cut per episode
	}
	base := l.baseRate()
	cut := excess / float64(span.attempts)
	if TuneCutShare {
		cut = span.share() - p
	}
	if TuneCutFull {
		cut = span.share()
	}
	newRate := l.cfg.beta * base * max(1-cut, TuneMaxCut)
	s.high = max(s.high, base)
	s.excessSinceSlot = true
	if s.spiral == 0 {
		s.spiral = base
		s.trial = trial{before: s.counts(len(s.recent))}
	}
	s.decShare = span.share()
	l.reduce(now, newRate)
	l.debug(now, "dec", span, base, newRate)
}

// baseRate returns the send rate in use. l.mu must be held.
func (l *RateLimiter) baseRate() float64 {
	if l.share.cut {
		return min(l.measured, l.fillRate)
	}
	return l.measured
}

// reduce sets the capacity estimate to r, with the curve at its plateau,
// and empties the bucket. l.mu must be held.
func (l *RateLimiter) reduce(now time.Time, r float64) {
	l.share.cut = true
	l.lastMaxRate = r
	l.lastThrottle = now
	l.enabled.Store(true)
	// Empty the bucket: what it holds was earned at a rate just cut.
	l.bucket.SetBurstAt(now, 0)
}

// judge counts a window of the measurement and, when it has enough,
// decides whether the cuts since s.spiral helped; it reports whether it
// changed the rate. l.mu must be held.
func (l *RateLimiter) judge(now time.Time, last windowCount) bool {
	s := &l.share
	t := &s.trial
	if t.phase == 1 {
		t.phase = 2 // the settling window: responses to earlier sends
		return false
	}
	t.after.attempts += last.attempts
	t.after.throttles += last.throttles
	t.spent++
	if t.spent < 2 || (t.after.attempts < TuneTrialN && t.spent < len(s.recent)) {
		return false
	}
	t.phase = 0
	before, after := t.before.share(), t.after.share()
	// Which share explains the throttles since the cuts better: the one
	// before them (the throttling does not depend on the load) or the
	// learned floor (cutting removed the excess)?
	floor := s.learned + 0.005
	independent := false
	if before > floor {
		llr := float64(t.after.throttles)*math.Log(before/floor) +
			float64(t.after.attempts-t.after.throttles)*math.Log((1-before)/(1-floor))
		independent = llr > TuneLLR
	}
	if !independent {
		s.learned = min(s.learned, after)
		s.spiral = 0
		l.debug(now, fmt.Sprintf("dependent %.3f -> %.3f", before, after), t.after, l.baseRate(), l.lastMaxRate)
		return false
	}
	if TuneDirect {
		if TuneLearn {
			s.learned = after
		}
		restore := s.spiral
		if !TuneRestoreOn {
			restore = l.baseRate()
		}
		s.spiral = 0
		l.reduce(now, restore)
		l.debug(now, fmt.Sprintf("independent %.3f -> %.3f", before, after), t.after, restore, l.lastMaxRate)
		return true
	}
	// Cutting did not reduce the share: it may not depend on the load,
	// or other clients kept pushing. Test it with the whole fleet at the
	// next slot.
	s.suspect = true
	l.debug(now, fmt.Sprintf("suspect %.3f -> %.3f", before, after), t.after, s.spiral, l.lastMaxRate)
	return false
}

// startTest holds the rate TuneDepth lower, at a slot boundary that every
// client of a fleet shares. l.mu must be held.
func (l *RateLimiter) startTest(now time.Time) {
	s := &l.share
	base := l.baseRate()
	s.test = test{phase: 1, base: base, held: (1 - TuneTestDepth) * base, before: s.counts(TuneTestW)}
	l.reduce(now, s.test.held)
	l.debug(now, "test", s.test.before, base, s.test.held)
}

// judgeTest counts a window of the test and decides. l.mu must be held.
func (l *RateLimiter) judgeTest(now time.Time, last windowCount) {
	s := &l.share
	t := &s.test
	if t.phase == 1 {
		t.phase = 2
		return
	}
	t.after.attempts += last.attempts
	t.after.throttles += last.throttles
	t.spent++
	if t.spent < 2 || (t.after.attempts < TuneTestN && t.spent < TuneTestW) {
		return
	}
	t.phase = 0
	s.suspect = false
	before, after := t.before.share(), t.after.share()
	floor := s.learned + 0.005
	independent := false
	if before > floor && (!TuneNeedN || (t.after.attempts >= TuneTestN && t.before.attempts >= TuneTestN)) {
		llr := float64(t.after.throttles)*math.Log(before/floor) +
			float64(t.after.attempts-t.after.throttles)*math.Log((1-before)/(1-floor))
		e := before * float64(t.after.attempts)
		// A share that rose during the test is not load-independent:
		// other clients pushed harder.
		independent = llr > TuneLLR && float64(t.after.throttles) <= e+2*math.Sqrt(e)+1
	}
	if !independent {
		s.learned = min(s.learned, after)
		s.spiral = 0
		l.reduce(now, max(t.base*(1-before), t.held))
		l.debug(now, fmt.Sprintf("test: dependent %.3f -> %.3f", before, after), t.after, t.base, l.lastMaxRate)
		return
	}
	s.learned = after
	restore := max(s.spiral, t.base)
	s.spiral = 0
	l.reduce(now, restore)
	l.debug(now, fmt.Sprintf("test: independent %.3f -> %.3f", before, after), t.after, restore, l.lastMaxRate)
}

// defaultRate returns the rate the default algorithm allows at now.
// l.mu must be held.
func (l *RateLimiter) defaultRate(now time.Time) float64 {
	ceiling := maxRateFactor * l.measured
	switch {
	case !l.share.cut:
		return ceiling
	case l.share.test.phase > 0:
		return l.share.test.held
	}
	t := now.Sub(l.lastThrottle).Seconds()
	return min(l.lastMaxRate*(1+l.cfg.scaleConstant*t*t*t), ceiling)
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
// which the published CUBIC curve is back at maxRate.
func cubicK(maxRate, beta, scaleConstant float64) float64 {
	return math.Cbrt(maxRate * (1 - beta) / scaleConstant)
}

// cubicRate returns the rate the published CUBIC curve gives dt seconds
// after a reduction from maxRate.
func cubicRate(dt, maxRate, beta, scaleConstant float64) float64 {
	d := dt - cubicK(maxRate, beta, scaleConstant)
	return scaleConstant*d*d*d + maxRate
}

// Stats returns a consistent snapshot of the limiter's state.
func (l *RateLimiter) Stats() RateLimiterStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := RateLimiterStats{
		Enabled:      l.enabled.Load(),
		FillRate:     l.fillRate,
		MeasuredRate: l.measured,
		Capacity:     l.capacity,
		Tokens:       l.bucket.TokensAt(l.cfg.clock.Now()),
		LastMaxRate:  l.lastMaxRate,
	}
	if s.Enabled {
		s.LastThrottle = l.lastThrottle
	}
	if !l.cfg.published {
		s.ToleratedShare = l.tolerated()
	}
	return s
}

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
	toleranceSet      bool // WithThrottleTolerance was given
	failFast          bool
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
	case c.cooldownSet && !c.published:
		return configError("WithReductionCooldown", c.reductionCooldown, "only with WithPublishedCUBIC (the default algorithm verifies its cuts instead)")
	case c.toleranceSet && c.published:
		return configError("WithThrottleTolerance", c.tolerance, "only without WithPublishedCUBIC (the published algorithm cuts on every throttle)")
	case !(c.tolerance >= 0 && c.tolerance < 1):
		return configError("WithThrottleTolerance", c.tolerance, "in [0, 1)")
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

// WithBeta sets the depth of a rate reduction, in (0, 1). The default
// algorithm cuts the rate to beta times the rate the service accepted
// (DefaultBeta, 0.9); the published one to beta times the rate in use
// (PublishedBeta, 0.7).
func WithBeta(beta float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.beta = beta })
}

// WithScaleConstant sets the scale of the curve along which the send rate
// grows after a reduction: a larger constant grows it faster. It must be
// finite and above 0. The default algorithm's curve is relative to the
// capacity estimate (DefaultScaleConstant, 0.02 per second cubed); the
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

// WithMinCapacity sets the least number of send tokens the bucket holds, 1 or
// more: the number of attempts that may be sent at once even at the lowest
// rate. The default is DefaultMinCapacity (1), the published value.
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
// that the default algorithm tolerates above the share it has learned that
// cutting does not reduce (see RateLimiter). The default is
// DefaultThrottleTolerance (2%). It is an error with WithPublishedCUBIC.
func WithThrottleTolerance(share float64) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.tolerance, c.toleranceSet = share, true })
}

// WithFailFast makes Acquire return an error wrapping ErrRateLimited when no
// send token is available now, instead of the time to wait for one. The
// default is to wait.
func WithFailFast(failFast bool) RateLimiterOption {
	return limiterOption(func(c *limiterConfig) { c.failFast = failFast })
}
