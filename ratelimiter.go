package retry

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Defaults for NewRateLimiter. A RateLimiter runs retrykit's own algorithm
// unless WithPublishedCUBIC selects the published one (see RateLimiter);
// each constant says which algorithm uses it.
const (
	// DefaultBeta bounds the default algorithm's cuts: one cut never takes
	// the send rate below DefaultBeta times the rate in use.
	DefaultBeta = 0.5

	// PublishedBeta is the published algorithm's factor by which each
	// throttle multiplies the send rate in use, as in TCP CUBIC. The
	// cross-SDK vectors assume it.
	PublishedBeta = 0.7

	// DefaultScaleConstant scales the default algorithm's growth curve,
	// in units of the capacity estimate per second cubed: the rate grows
	// 0.3% above the estimate in the first second after a cut, 2.4% in
	// two, 8% in three and 19% in four.
	DefaultScaleConstant = 0.003

	// PublishedScaleConstant scales the published algorithm's CUBIC
	// curve, in sends per second per second cubed.
	PublishedScaleConstant = 0.4

	// DefaultThrottleTolerance is the share of throttled attempts that the
	// default algorithm takes for load-independent throttling (a hot
	// partition key, a per-operation limit) while it is not limiting the
	// client's sends: up to it, throttles never cut the rate.
	DefaultThrottleTolerance = 0.1

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
// delays nothing, takes no token and takes no lock, and the default
// algorithm counts a success without the lock; while successes come
// faster than one every 0.5% of a measurement window (2.5 ms by default),
// up to 64 of them share one reading of the clock, so a window may count
// the successes of about 1% of a window after its end.
//
// # The default algorithm: cut by the excess throttled share
//
// A throttle says that the service refused an attempt, not why. When the
// service is overloaded, sending less makes throttles rarer; when it
// throttles a share of requests whatever the rate (a hot partition key, a
// per-operation limit), sending less only sends less. The limiter
// therefore reacts to the throttled share of its recent attempts, not to
// single throttles; and a share is the same for each member of a fleet of
// clients as for one big client, so a fleet reacts as one client would.
//
//   - Cut. Each measurement window (DefaultMeasurementWindow) that holds a
//     throttle, the limiter looks at the share of the attempts of the
//     last evidenceWindows (2) windows that were throttled (when the
//     window has closed: at the next attempt, which decides on each
//     window that closed since in turn, so that a client sending less
//     than an attempt a window decides on every throttle). If that share
//     is significantly above the tolerated share p (with n attempts, more
//     than p*n + 2*sqrt(p*n) throttles), it cuts the rate in use by the
//     share in excess of p: with p = 0, to the rate the service accepted.
//     One cut never goes below beta times the rate in use (DefaultBeta,
//     0.5). The rate after the cut is the capacity estimate W.
//   - Grow. From a cut the rate follows the curve W*(1 + c*t^3), t
//     seconds after the cut, with c the scale constant
//     (DefaultScaleConstant, 0.003): it stays close to W for two seconds,
//     then probes beyond it ever faster. Scaled to W, the curve grows each
//     member of a fleet in proportion to its share, as it grows one big
//     client. WithDemandClock counts t in the attempts the client asks for
//     as well, for a client that is one of many small ones.
//   - Load-independent throttling. While the limiter is not limiting the
//     client (it has not cut yet, or the client sends less than 60% of
//     the allowed rate), a share of throttles up to the throttle tolerance
//     (DefaultThrottleTolerance, 10%) never cuts: it cannot be congestion
//     this client causes. The limiter learns it, as the share over the
//     last 4 s (when they hold 40 attempts or more), and tolerates that
//     much (p above) when it limits the client later. A larger share cuts
//     the rate, and the cut is put to a test.
//   - Test of the cause. A cut from the rate the client wanted, on a
//     throttled share up to 60% and a second of 20 attempts or more, starts
//     a test (a client sending under 10 attempts a second does not test).
//     For up to 8 s the rate stays at half the rate the client sent before
//     the cut, or more, and the limiter compares the share there with the
//     share before. Had the throttles come from congestion this client
//     causes, the service would admit as many attempts a second at half the
//     rate, and the share would fall accordingly; if it fell by less than a
//     quarter of that (and, on 40 attempts or more, not by two standard
//     errors), the throttles do not depend on the load: the limiter learns
//     the share, tolerates it from then on, and goes back to the rate before
//     the cut. A fall of two standard errors on 20 attempts or more is
//     congestion. A service that had served the client less than it could
//     before the cut's evidence (a client that just started) may have
//     admitted up to twice its rate in it, and congestion then looks
//     independent of the load: such a verdict is checked on the half second
//     to 2 s back at the rate before the cut, and the share is forgotten if
//     it rose with the rate. While the client is free, the learned share
//     follows the windows that are not significantly above it (the newest
//     1,000 to 2,000 attempts). So a hot partition key that throttles a
//     quarter of the requests costs a few seconds at half the rate, not the
//     client's throughput. A client that is a small part of a fleet
//     congesting a service is not tested (it sends too little), or finds the
//     share fell with its own rate when the fleet cuts together; a client
//     that is under a quarter of the load, alone in cutting, would take the
//     fleet's congestion for load-independent throttling.
//   - Both at once. A client that overloads a service that also throttles a
//     hot key sees the share fall at half the rate, but to a share
//     significantly above what congestion from it alone would leave. If
//     that share is above the tolerance, the test moves on to a quarter of
//     the rate (if the client still sends 5 attempts a second there): a
//     share still that far above congestion's there does not depend on the
//     load; one above it, but not yet that far, keeps the test there until
//     its 8 s are up, as a small share leaves few throttles in two
//     seconds. The limiter learns it from the attempts at a quarter of the
//     rate alone, goes back to half, and from then on cuts only for the
//     share above it. Otherwise the limiter learns the share at half the
//     rate as it takes the throttles for congestion: it paces on from half
//     the rate, and tolerates that share instead of none. So it does with
//     a share that far above congestion's at a quarter but within the
//     tolerance: under overload such a share would cut the rate one
//     throttle at a time, far below what the service admits. Whenever it
//     limits the client to the rate at which a test learned the share (half
//     or a quarter of the rate before its cut), or less, it learns the
//     share anew, every 40 attempts. A test that cannot decide in 8 s takes
//     the throttles for congestion and tests again at the next cut, after
//     the same steps as a fall when the share at half the rate is well
//     above congestion's. A learned share is an estimate from a few hundred
//     attempts at most, so the cut's threshold counts its variance beside
//     the evidence's: with the share learned on m attempts,
//     2*sqrt(p*n + p*(1-p)*n*n/m).
//   - Descent. While the limiter paces the client it tolerates no
//     throttles beyond a learned share, so a load-independent share that
//     no test caught (none could start, or one took it for congestion)
//     cuts the rate at every window towards the minimum. The cuts form a
//     descent, begun at a cut whose share, over as many recent windows as
//     hold 20 attempts, is significantly above the tolerance, from 10
//     attempts a second or more. Once the client has sent 20 attempts at
//     a quarter of that rate or below, a share that stayed (as in the
//     test) is learned, and the limiter goes back to the rate before the
//     descent's first cut. A client of a fleet that the others' load
//     throttles sees a share that does not move with its own rate either;
//     its cuts, at the small share a fleet paces itself to, begin no
//     descent. Neither do the cuts for a hot key's share within the
//     tolerance that no test learned: they follow such a share s down,
//     one throttle at a time, until the curve grows between two throttles
//     as much as one throttle cuts, to about sqrt(0.003/s^3) attempts a
//     second (5 at 5%), whatever the service admits.
//   - Block. When the service admits nothing (the last two windows hold
//     10 attempts or more and every one was throttled: a service that
//     throttles from the first attempt, an account over its quota), the
//     limiter cuts to the minimum fill rate at once, as the service
//     admits nothing whatever the rate. The first attempt it admits again
//     takes the limiter back to the rate in use before the block (before
//     the cuts of the second in which it began; no limit if it did not
//     pace): a block says nothing about the rate the service admits, and
//     must not leave the rate at the floor. A client that sends less
//     than that is cut by the share as usual.
//
// In the storm simulation (go run ./examples/storm; a deterministic model
// of closed-loop clients, see the README), against clients that offer 3x
// a server's capacity, the default algorithm serves 95% of the capacity
// or more with under 5% of sends throttled, from one client or from a
// fleet of ten (but one client, over seeds 1-20 of the demo's two such
// scenarios, is 5.5-9.9% throttled on 5 runs of 40: the server's
// one-second windows mislead the first test of the throttles' cause on 3,
// and the check that undoes its verdict costs about a second, and on 2 a
// share learned in the first half second is tolerated; against a token
// bucket holding 1 or 2 s of its rate, full when the client starts, the
// check is paid on most runs, and 48 of 80 runs are 5-12% throttled; on
// seed 11 the client of 100 a second is 4.3-7.2% throttled in every 30 s
// up to 4:00 against the 1-s bucket, which hides the rate's growth past
// its own; the README's "One client at 3× is misled at first on some
// runs"); with 5% of attempts throttled whatever the load it completes as
// many requests as the standard mode, and with 10%, 25% and 50% from 95%
// to 100% as many (a client of 50 workers, over five seeds;
// over 200 seeds, up to 2% of the runs complete less than half: the
// README's "A hot key starves the client on some runs"). Under overload
// a small hot key costs more: a client offering 3x a service that also
// throttles 5% whatever the load completes a median of 95% as many as the
// standard mode over 200 seeds, but less than half on 8 of them: on 4
// the test at half the rate found none of about 40 attempts throttled,
// and on 3 it ran while the client's workers ramped up (the "Descent"
// above; the README's "A small hot key under overload starves it on some
// runs").
// A client sending under 10 attempts a second does not test the
// throttles' cause: with 3 workers and 25% throttled whatever the load it
// completes a fifth as many.
//
// # The published algorithm
//
// WithPublishedCUBIC selects the algorithm of the AWS SDKs' adaptive retry
// mode exactly, as the cross-SDK conformance vectors check it. The first
// throttle enables the limiter; every throttle cuts the rate to beta
// (PublishedBeta, 0.7) times the rate in use, which becomes the curve's
// maximum; successes grow it along the CUBIC curve c*(t-K)^3 + max, with
// K = cbrt(max*(1-beta)/c) and c = PublishedScaleConstant (0.4 sends per
// second per second cubed). With many attempts in flight, one overload
// throttles many at once and the rate collapses several times over; a
// steady load-independent share of throttles holds the rate at the minimum
// fill rate; and a throttle before the first measurement window has closed
// cuts the rate to the minimum. WithReductionCooldown limits it to one cut
// per congestion episode.
//
// # Waiting
//
// The token bucket's capacity is a whole number of tokens: the bucket holds
// at most floor(Capacity) tokens (see RateLimiterStats). A cut of the
// default algorithm empties the bucket: what it held was earned at the
// rate just cut. A cut of the published algorithm lowers the bucket's
// capacity to the new rate.
//
// A RateLimiter is safe for concurrent use by multiple goroutines; share one
// between all the clients of a service. Create RateLimiters with
// NewRateLimiter: a nil or zero RateLimiter never paces (Acquire returns 0),
// learns nothing (Update does nothing) and reports zeros (Stats), and the
// strategies refuse one (WithRateLimiter).
type RateLimiter struct {
	cfg   limiterConfig
	start time.Time // the clock's time at creation; measurement windows start here
	// monotonic says that the clock is the system clock, which now reads
	// with time.Now directly, and that start holds a monotonic reading: the
	// time since start is then time.Since(start), which reads only the
	// monotonic clock.
	monotonic bool

	// enabled is set, once, when the limiter starts pacing: the published
	// algorithm at its first throttle, the default one at its first cut,
	// from which its rate follows the growth curve. Acquire reads it
	// without the lock.
	enabled atomic.Bool

	// Until the default algorithm first cuts the rate, a success within the
	// open measurement window changes nothing but the window's count, so
	// Update counts it without the lock: fastUntil is then the end of the
	// open window, in nanoseconds since start (0: no such shortcut now), and
	// uncounted holds the attempts counted so, which the next locked Update
	// adds to the window before anything else. When successes come fast,
	// only every (fastMask+1)th one reads the clock to see whether the
	// window is over (see stride); each counter keeps the time since start
	// of its last reading. Once two goroutines have counted at the same moment,
	// successes are counted in spread instead, one counter per goroutine
	// as far as the counters go, so that CPUs counting at once do not
	// write the same memory (see successCounter).
	fastUntil atomic.Int64
	fastMask  atomic.Int64
	uncounted successCount
	spread    atomic.Pointer[spreadCounts]

	mu  sync.Mutex
	alg algorithm // sets the rate from the outcomes of attempts
	// bucket holds the send tokens; its limit is fillRate, its burst
	// floor(capacity).
	bucket   rate.Limiter
	measured float64 // smoothed measured send rate, per second
	count    int     // attempts counted since lastWindow began
	// lastWindow is where the last measurement window began, in seconds
	// since start.
	lastWindow float64
	// lastMaxRate is the rate the growth curve is centred on: published,
	// the rate in use at the last reduction; default, the capacity
	// estimate W.
	lastMaxRate  float64
	lastThrottle time.Time // when the curve last started; start before the first
	// lastAttempts is total.attempts when the curve last started, and
	// lastRefused refused then (WithDemandClock).
	lastAttempts int
	lastRefused  int64
	fillRate     float64
	capacity     float64
	burst        int // the bucket's burst: floor(capacity), or 0 just after a cut emptied it

	// assigned is the Assignment in force (see Assign): its Rate is 0 when
	// there is none. ceiling bounds the own algorithm's rate after an
	// assignment ended (0: no bound), and ceilingBurst is then the least
	// burst the bucket keeps (0: the rate's).
	assigned     Assignment
	ceiling      float64
	ceilingBurst int
	// pacedBefore is whether the limiter paced before an assignment of no
	// limit stopped it.
	pacedBefore bool
	// total counts every attempt and throttle since creation, and
	// refusals every time acquire found no send slot free.
	total    windowCount
	refusals int64
	// refused counts the attempts refused a send slot for good, which
	// will not be sent (see refuse): with total.attempts, the attempts
	// the client asked for (WithDemandClock). Atomic: Do's engine counts
	// a refusal without the lock.
	refused atomic.Int64
}

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
	// Default algorithm: the capacity estimate, the rate set by the last
	// cut.
	LastMaxRate float64

	// LastThrottle is when the growth curve last started: when the rate
	// was last reduced; the zero Time if it never was.
	LastThrottle time.Time

	// LearnedShare is the share of throttled attempts that the default
	// algorithm has learned not to depend on the client's rate, and
	// tolerates; 0 for the published algorithm.
	LearnedShare float64

	// Attempts and Throttles count the outcomes Update has recorded since
	// the limiter was created. A coordinator reads them at intervals and takes the
	// differences.
	Attempts, Throttles int64

	// Refusals counts the times since creation that an attempt asked for
	// a send slot and found none free: in fail-fast mode, each refusal;
	// otherwise each Acquire that returned a wait, and each time a
	// strategy polled for a slot in vain. It says that the limiter held
	// back demand, which the send rate alone does not show.
	Refusals int64

	// Assigned is the assignment in force (see Assign); its Rate is 0 when
	// there is none.
	Assigned Assignment
}

// An Assignment is a send rate that a coordinator outside the process gives
// a RateLimiter for a time: its share of a limit that a fleet of processes
// draws on, which no process can learn from its own attempts alone (the
// redisretry module is such a coordinator). See RateLimiter.Assign.
type Assignment struct {
	// Rate is the send rate assigned, in sends per second: a number above
	// 0, or math.Inf(1) for no limit. Until Until, the limiter paces at
	// exactly Rate, whatever it observes, below its minimum fill rate too.
	Rate float64

	// Burst, if above 0, is the most send tokens the bucket holds while
	// the assignment is in force, instead of the rate's whole number (at
	// least the minimum capacity); with a Ceiling, the bucket keeps room
	// for at least Burst tokens after the assignment ends too, until the
	// next. A coordinator that spaces the fleet's sends itself gives a
	// process a burst of a few tokens, so that a slot its process could
	// not use at once is not lost. Valid: 0 to 2^31-1.
	Burst int

	// Phase, in [0, 1), is the part of a send token the bucket holds when
	// the assignment starts the limiter pacing (when it paced before, the
	// bucket keeps what it held). Processes that start pacing at the same
	// rate at the same moment would otherwise send in step, one token
	// period apart, for as long as their rates stay the same; a
	// coordinator gives each a different phase. It is ignored when
	// NextSend is set.
	Phase float64

	// NextSend, if not zero, is when the first send token under the
	// assignment is due, by the limiter's clock: the bucket is set, whatever
	// it held or owed, as if it had been empty one token period before
	// NextSend, so that it owes the tokens due before NextSend when that is
	// ahead, and holds what it would have earned since, up to the burst,
	// when that has passed. A coordinator that booked the process's sends
	// itself and hands the pacing back to it (as when the coordinator
	// becomes unreachable) gives the time one token period after the last
	// send it booked: the process goes on at the cadence the coordinator
	// kept, and its sends already booked are not made again on top of
	// them. It is ignored with an infinite Rate. Valid: at most 2^31-1
	// token periods ahead.
	NextSend time.Time

	// Until is when the assignment ends, by the limiter's clock. If no
	// new assignment comes by then, the limiter's own algorithm takes over
	// as if it had cut the rate to Rate at Until (with an infinite Rate,
	// as if it had never cut).
	Until time.Time

	// Ceiling, if above 0, bounds the rate the limiter's own algorithm may
	// reach after the assignment ends, until the next assignment. A
	// coordinator that knows the fleet's limit sets it to Rate, so that a
	// process cut off from the coordinator never sends more than its last
	// share: a fleet that loses its coordinator keeps to the limit instead
	// of each process claiming all of it. It bounds the rate below the
	// minimum fill rate too. It is ignored with an infinite Rate.
	Ceiling float64
}

// NewRateLimiter returns a RateLimiter configured by opts. Its state starts
// at its clock's time when it is created. Without options it runs the
// default algorithm with the Default* constants, the system clock, and
// waits rather than failing fast. A bad option value is an error wrapping
// ErrInvalidConfig.
func NewRateLimiter(opts ...RateLimiterOption) (*RateLimiter, error) {
	cfg, err := configure(opts, limiterDefaults, RateLimiterOption.applyLimiter,
		func(c *limiterConfig) bool { return c.published }, (*limiterConfig).validate)
	if err != nil {
		return nil, err
	}
	return newRateLimiter(cfg), nil
}

// newRateLimiter returns a RateLimiter with the validated configuration c.
func newRateLimiter(c limiterConfig) *RateLimiter {
	now := c.clock.Now()
	_, system := c.clock.(systemClock)
	l := &RateLimiter{cfg: c, start: now, lastThrottle: now, monotonic: system && now != now.Round(0)}
	if c.published {
		l.alg = new(publishedCUBIC)
	} else {
		l.alg = new(excessShare)
	}
	l.bucket.SetLimitAt(now, 0)
	return l
}

// An algorithm sets a RateLimiter's send rate from the outcomes of its
// attempts: the default one (excessShare, in ratelimiter_default.go) or
// the published one (publishedCUBIC, in ratelimiter_published.go). The
// limiter does the rest the same way for both: it paces sends with its
// token bucket, measures the send rate, keeps the growth curve's centre
// and start, follows assignments, and counts successes without the lock
// (ratelimiter_successes.go) while the algorithm lets it.
type algorithm interface {
	// update records the outcome of one attempt at now, which the
	// limiter's totals already count, and sets the rate. l.mu is held.
	update(l *RateLimiter, now time.Time, throttled bool)
	// resume starts the algorithm from rate at t, as if it had cut the
	// rate to it then: an assignment of that rate ended at t. l.mu is
	// held.
	resume(l *RateLimiter, t time.Time, rate float64)
	// learnedShare is the throttled share the algorithm has learned not
	// to depend on the client's rate (RateLimiterStats.LearnedShare).
	learnedShare() float64
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
	if !l.valid() {
		return 0, nil // the zero RateLimiter never paces
	}
	d, err := l.acquire(l.cfg.failFast)
	if err != nil {
		l.refuse()
	}
	return d, err
}

// refuse counts an attempt refused a send slot for good: it will not be
// sent (see WithDemandClock).
func (l *RateLimiter) refuse() { l.refused.Add(1) }

// valid reports whether l was made by NewRateLimiter.
func (l *RateLimiter) valid() bool { return l != nil && l.cfg.clock != nil }

// admitNow takes a send slot if one is free now, for Do's fast path once
// the limiter paces (until then every attempt has one, which Do checks
// first), and reports whether it did. The token bucket has a lock of its
// own: taking a token needs neither the limiter's lock nor its rate.
func (l *RateLimiter) admitNow() bool {
	return l.bucket.AllowN(l.now(), 1)
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
	now := l.now()
	if failFast {
		if !l.bucket.AllowN(now, 1) {
			l.refusals++
			missing := 1 - l.bucket.TokensAt(now)
			return satDuration(math.Ceil(missing / l.fillRate * float64(time.Second))), ErrRateLimited
		}
		return 0, nil
	}
	r := l.bucket.ReserveN(now, 1)
	if !r.OK() {
		// Not reached: the fill rate and capacity are always positive.
		return 0, ErrRateLimited
	}
	d := r.DelayFrom(now)
	if d > 0 {
		l.refusals++
	}
	return d, nil
}

// Assign makes the limiter pace at the rate a coordinator assigns it, until
// the assignment ends (see Assignment); each call replaces the previous
// assignment. While an assignment is in force, the limiter still counts
// every attempt (Stats reports them), but neither algorithm changes the
// rate. When it ends, the limiter's own algorithm resumes from the
// assigned rate, below the assignment's ceiling if it has one: a process
// that loses its coordinator goes on from its last share, not from
// scratch.
//
// An assignment costs the send path nothing more than pacing does: an
// attempt takes a token from the same token bucket, which keeps the tokens
// it held (up to its new capacity) if the limiter paced, and otherwise
// starts with the assignment's phase, less than one token: an assignment
// starts no burst.
//
// Assign returns an error wrapping ErrInvalidConfig, and changes nothing,
// if the rate is not above 0 (NaN included), the ceiling is negative, NaN
// or infinite, the phase is outside [0, 1) or the burst outside its range;
// on the zero RateLimiter it changes nothing and returns nil.
func (l *RateLimiter) Assign(a Assignment) error {
	switch {
	case !(a.Rate > 0):
		return configError("Assignment.Rate", a.Rate, "> 0, or math.Inf(1) for no limit")
	case !(a.Ceiling >= 0 && a.Ceiling <= math.MaxFloat64):
		return configError("Assignment.Ceiling", a.Ceiling, "finite and >= 0 (0: none)")
	case !(a.Phase >= 0 && a.Phase < 1):
		return configError("Assignment.Phase", a.Phase, "in [0, 1)")
	case a.Burst < 0 || a.Burst > maxBurst:
		return configError("Assignment.Burst", a.Burst, fmt.Sprintf("0 to %d (0: as the rate calls for)", maxBurst))
	}
	if !l.valid() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var owed float64 // the token periods from now to NextSend, less one
	if !a.NextSend.IsZero() && !math.IsInf(a.Rate, 1) {
		owed = a.NextSend.Sub(now).Seconds()*a.Rate - 1
		if owed > maxBurst {
			return configError("Assignment.NextSend", a.NextSend, fmt.Sprintf("at most %d token periods (of %v) ahead", maxBurst, time.Duration(float64(time.Second)/a.Rate)))
		}
	}
	prev := l.assigned
	l.assigned, l.ceiling, l.ceilingBurst = a, a.Ceiling, 0
	if a.Ceiling > 0 {
		l.ceilingBurst = a.Burst
	}
	// Every success takes the lock while an assignment may end, so that
	// the limiter sees it end.
	l.fastUntil.Store(0)
	if !math.IsInf(a.Rate, 1) {
		started := !l.enabled.Load()
		if started {
			// The bucket's tokens were not counted at any rate while the
			// limiter did not pace: the assignment starts it empty.
			l.setBurst(now, 0)
		}
		l.enabled.Store(true)
		l.setRate(now, a.Rate)
		switch {
		case !a.NextSend.IsZero():
			l.setTokens(now, -owed)
		case started && a.Phase > 0:
			l.setTokens(now, a.Phase) // the bucket started empty
		}
		return nil
	}
	// No limit: the limiter stops pacing (Acquire takes no token) until
	// the assignment ends, and then paces again if it did before. The
	// token bucket is left as it is: golang.org/x/time/rate's infinite
	// limit counts tokens as NaN once it is lifted.
	if !math.IsInf(prev.Rate, 1) {
		l.pacedBefore = l.enabled.Load()
	}
	l.ceiling, l.ceilingBurst = 0, 0
	l.enabled.Store(false)
	l.fillRate = math.Inf(1)
	return nil
}

// assignedRate returns the rate of the assignment in force at now, or 0
// if there is none; it ends an assignment whose time is up, and starts the
// own algorithm's curve from its rate. l.mu must be held.
func (l *RateLimiter) assignedRate(now time.Time) float64 {
	a := l.assigned
	if a.Rate == 0 {
		return 0
	}
	if now.Before(a.Until) {
		return a.Rate
	}
	l.assigned = Assignment{}
	if math.IsInf(a.Rate, 1) {
		l.enabled.Store(l.pacedBefore)
	} else {
		l.alg.resume(l, a.Until, a.Rate)
		// The measured rate may lag what the assignment allowed: let the
		// algorithm start from the assigned rate, not from twice a
		// measurement that the assignment held down.
		l.measured = max(l.measured, a.Rate/maxRateFactor)
	}
	return 0
}

// followAssignment sets the rate of the assignment in force at now, if
// there is one, and reports whether there is: the algorithm then leaves
// the rate alone. l.mu must be held.
func (l *RateLimiter) followAssignment(now time.Time) bool {
	r := l.assignedRate(now)
	if r > 0 && !math.IsInf(r, 1) {
		l.setRate(now, r)
	}
	return r > 0
}

// Update records the outcome of one attempt at the clock's current time:
// throttled reports whether the service throttled it. Every attempt counts
// towards the measured send rate; what a throttle does depends on the
// algorithm (see RateLimiter).
func (l *RateLimiter) Update(throttled bool) {
	if !l.valid() {
		return // the zero RateLimiter learns nothing and never paces
	}
	if !throttled && l.countSuccess() {
		return
	}
	l.update(throttled)
}

// now reads l's clock.
func (l *RateLimiter) now() time.Time {
	if l.monotonic {
		return time.Now() // the system clock, without the interface call
	}
	return l.cfg.clock.Now()
}

// sinceStart returns the time since l.start, by l's clock.
func (l *RateLimiter) sinceStart() time.Duration {
	if l.monotonic {
		return time.Since(l.start)
	}
	return l.cfg.clock.Now().Sub(l.start)
}

// update is Update under the lock.
func (l *RateLimiter) update(throttled bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total.attempts++
	if throttled {
		l.total.throttles++
	}
	l.alg.update(l, l.now(), throttled)
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
	closed := int(min(math.Round((window-l.lastWindow)/w), learnWindows+1))
	l.count = 0
	l.lastWindow = window
	return closed
}

// restart starts the growth curve at now from the rate r. l.mu must be
// held.
func (l *RateLimiter) restart(now time.Time, r float64) {
	l.lastMaxRate = r
	l.lastThrottle = now
	l.lastAttempts = l.total.attempts
	l.lastRefused = l.refused.Load()
	l.enabled.Store(true)
}

// setRate sets the fill rate and capacity the new rate calls for, within
// their minimums; an assigned rate is kept as it is, and the ceiling of the
// last assignment bounds the fill rate (below the minimum, too). It tells
// the token bucket only what changed: each of its setters brings the
// bucket's tokens up to now, which a later call does as well, so skipping
// one changes them by float rounding at most. The published algorithm sets
// the fill rate at every update all the same, as it is specified: that
// rounding, small as it is, would move its figures in the storm
// simulation. l.mu must be held.
func (l *RateLimiter) setRate(now time.Time, newRate float64) {
	fillRate, capacity := max(newRate, l.cfg.minFillRate), max(newRate, float64(l.cfg.minCapacity))
	switch {
	case l.assigned.Rate > 0:
		// An assigned rate is kept exactly, below the minimum fill rate
		// too: the coordinator knows the fleet's limit.
		fillRate = newRate
		if l.assigned.Burst > 0 {
			capacity = float64(l.assigned.Burst)
		}
	case l.ceiling > 0:
		fillRate = min(fillRate, l.ceiling)
		capacity = max(capacity, float64(l.ceilingBurst))
	}
	if fillRate != l.fillRate || l.cfg.published {
		l.fillRate = fillRate
		l.bucket.SetLimitAt(now, rate.Limit(fillRate))
	}
	l.capacity = capacity
	// The bucket holds whole tokens, at most maxBurst: a rate above
	// 2^31-1 attempts a second is never reached. (Float-to-int conversion
	// of an out-of-range value is not defined in Go.)
	l.setBurst(now, int(min(capacity, maxBurst)))
}

// maxBurst is the most tokens the send-token bucket holds.
const maxBurst = math.MaxInt32

// setTokens makes the bucket hold x tokens at now (x below zero: it owes
// them), or its burst if x is more; x is at least -maxBurst. The bucket
// has no setter of its tokens: the tokens owed are reserved, whole, and
// the part of a token beyond them is earned by moving its last update back
// (the bucket counts from it). It sets an assignment's phase too. l.mu
// must be held.
func (l *RateLimiter) setTokens(now time.Time, x float64) {
	x = min(x, float64(l.burst))
	b, limit := &l.bucket, rate.Limit(l.fillRate)
	held := b.TokensAt(now)
	owe := 0
	if held > x {
		owe = int(math.Ceil(held - x)) // held <= burst and x >= -maxBurst: fits
	}
	// The reservation takes at most the burst at once: raise it for the
	// moment. Setting it updates the bucket to now.
	b.SetBurstAt(now, max(l.burst, owe))
	if owe > 0 {
		b.ReserveN(now, owe)
	}
	if part := x - (held - float64(owe)); part > 0 {
		b.SetLimitAt(now.Add(-time.Duration(part/l.fillRate*float64(time.Second))), limit)
	}
	b.SetBurstAt(now, l.burst) // and earns the part
}

// setBurst sets the bucket's burst, if it changes. l.mu must be held.
func (l *RateLimiter) setBurst(now time.Time, burst int) {
	if burst != l.burst {
		l.burst = burst
		l.bucket.SetBurstAt(now, burst)
	}
}

// Stats returns a consistent snapshot of the limiter's state.
func (l *RateLimiter) Stats() RateLimiterStats {
	if !l.valid() {
		return RateLimiterStats{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// The successes counted without the lock count as attempts; they stay
	// where they are, as their counters pace the clock readings.
	var uncounted int64
	l.counters(func(c *successCount) { uncounted += c.n.Load() })
	s := RateLimiterStats{
		Enabled:      l.enabled.Load(),
		FillRate:     l.fillRate,
		MeasuredRate: l.measured,
		Capacity:     l.capacity,
		Tokens:       l.bucket.TokensAt(l.cfg.clock.Now()),
		LastMaxRate:  l.lastMaxRate,
		LearnedShare: l.alg.learnedShare(),
		Attempts:     int64(l.total.attempts) + uncounted,
		Throttles:    int64(l.total.throttles),
		Refusals:     l.refusals,
		Assigned:     l.assigned,
	}
	if s.Enabled {
		s.LastThrottle = l.lastThrottle
	}
	return s
}
