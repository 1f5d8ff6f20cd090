package redisretry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisDownKeepsShares: Redis stops; each process keeps its share
// until its lease ends, then its local algorithm never goes above it. Redis
// comes back empty: the shares are rebuilt from what the processes hold,
// without a burst, within two intervals.
func TestRedisDownKeepsShares(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	ctx := context.Background()
	var errs []error
	a := newTestFleet(t, rdb, "down", clock, WithRate(8), WithHeadroom(0), WithMember("a"), WithExactBelow(0),
		WithErrorHandler(func(err error) { errs = append(errs, err) }))
	b := newTestFleet(t, rdb, "down", clock, WithRate(8), WithHeadroom(0), WithMember("b"), WithExactBelow(0))
	both := func(n int) {
		for _, f := range []*Fleet{a, b} {
			attempts(f, n, nil)
		}
	}
	for range 3 {
		clock.Advance(time.Second)
		both(20)
		require.NoError(t, a.refresh(ctx))
		require.NoError(t, b.refresh(ctx))
	}
	require.InDelta(t, 4, a.Stats().Share, 1e-9)

	srv.Stop()
	for i := range 10 {
		clock.Advance(time.Second)
		both(20)
		require.Error(t, a.refresh(ctx))
		require.Error(t, b.refresh(ctx))
		for _, f := range []*Fleet{a, b} {
			ls := f.limiter.Stats()
			assert.LessOrEqual(t, ls.FillRate, 4.0, "second %d of the outage: a process never goes above its last share", i)
			assert.Positive(t, ls.FillRate)
		}
	}
	s := a.Stats()
	assert.False(t, s.Connected)
	assert.Equal(t, int64(10), s.Failures)
	assert.Error(t, s.LastError)
	assert.Len(t, errs, 10, "the error handler hears of every failure")
	assert.Equal(t, 4.0, a.limiter.Stats().FillRate, "the local algorithm holds the share while nothing is throttled")

	// Back, empty. The members come back one after the other and keep the
	// shares they pace at, no more: the first back does not take the whole
	// capacity, leaving nothing to the others for an interval. A newcomer
	// then gets only what they leave, and the three share equally within two
	// intervals.
	srv.Restart()
	// go-redis's pool waits a moment before it dials again after failures.
	require.Eventually(t, func() bool { return rdb.Ping(ctx).Err() == nil }, 10*time.Second, 10*time.Millisecond)
	clock.Advance(time.Second)
	both(20)
	require.NoError(t, a.refresh(ctx))
	assert.InDelta(t, 4, a.Stats().Share, 1e-9, "the first back keeps its share")
	require.NoError(t, b.refresh(ctx))
	assert.InDelta(t, 4, b.Stats().Share, 1e-9, "the second back keeps its share")
	fleets := []*Fleet{newTestFleet(t, rdb, "down", clock, WithRate(8), WithHeadroom(0), WithMember("c"), WithExactBelow(0)), a, b}
	sum := func() float64 {
		s := 0.0
		for _, f := range fleets {
			s += f.Stats().Share
		}
		return s
	}
	rebuilt := func(when string) {
		t.Helper()
		for round := range 3 {
			clock.Advance(time.Second)
			for _, f := range fleets {
				attempts(f, 20, nil)
				require.NoError(t, f.refresh(ctx))
			}
			if round > 0 || when == "restart" {
				assert.LessOrEqual(t, sum(), 8*(1+3e-6), "%s, round %d: no burst", when, round)
			}
		}
		for _, f := range fleets {
			assert.InDelta(t, 8/float64(len(fleets)), f.Stats().Share, 1e-6, "%s: two intervals on, equal shares again", when)
		}
	}
	rebuilt("restart")

	// Emptied again, and a newcomer comes first: nothing tells Redis of the
	// shares the others hold, so it gets the whole capacity; the others keep
	// theirs, and the shares add up to the capacity and the shares held
	// before for an interval, until the newcomer's next refresh.
	require.NoError(t, rdb.FlushAll(ctx).Err())
	d := newTestFleet(t, rdb, "down", clock, WithRate(8), WithHeadroom(0), WithMember("d"), WithExactBelow(0))
	clock.Advance(time.Second)
	attempts(d, 20, nil)
	require.NoError(t, d.refresh(ctx))
	assert.InDelta(t, 8, d.Stats().Share, 1e-6, "a newcomer first after Redis emptied gets it all")
	// A member back keeps its share, or its fair share among the members
	// Redis knows if that is less: the fourth gets a quarter.
	for i, f := range fleets {
		attempts(f, 20, nil)
		require.NoError(t, f.refresh(ctx))
		assert.InDelta(t, min(8.0/3, 8/float64(i+2)), f.Stats().Share, 1e-6, "member %d back", i+1)
	}
	fleets = append(fleets, d)
	assert.InDelta(t, 8+8.0/3+8.0/3+2, sum(), 1e-5)
	rebuilt("emptied, a newcomer first")
}

// TestRedisPausedDoesNotBlock: a Redis that stops answering (SIGSTOP) makes
// refreshes fail within their timeout and exact admission fall back to the
// local limiter within its timeout; when Redis answers again, both resume.
func TestRedisPausedDoesNotBlock(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	ctx := context.Background()
	f, err := New(ctx, rdb, "paused", WithRate(10), WithInterval(time.Hour), WithAdmitTimeout(50*time.Millisecond))
	require.NoError(t, err)
	defer f.Close()
	require.True(t, f.Stats().Exact)
	require.NoError(t, f.admit(ctx))

	srv.Pause()
	defer srv.Resume()
	// The attempt goes on: admit falls back instead of failing it.
	require.NoError(t, f.admit(ctx))
	s := f.Stats()
	assert.False(t, s.Exact, "exact admission stops until a refresh succeeds")
	assert.False(t, s.Connected)
	assert.True(t, isTimeout(s.LastError), "%v", s.LastError)
	assert.Equal(t, 10*(1-DefaultHeadroom)/1, f.limiter.Stats().Assigned.Ceiling, "the local limiter keeps to the share")
	require.NoError(t, f.admit(ctx), "no call to Redis now")

	rctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err = f.refresh(rctx)
	assert.True(t, isTimeout(err), "%v", err)

	srv.Resume()
	require.Eventually(t, func() bool { return f.refresh(ctx) == nil }, 10*time.Second, 10*time.Millisecond)
	assert.True(t, f.Stats().Exact)
	assert.True(t, f.Stats().Connected)
}

// TestHostileState: values in Redis that are corrupted, or written by
// someone hostile, never make a share negative, NaN or unbounded.
func TestHostileState(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	ctx := context.Background()
	f := newTestFleet(t, rdb, "hostile", clock, WithRate(5), WithMember("a"))
	for _, bad := range []map[string]string{
		{"cap": "nan", "level": "-5", "extra": "inf", "heldsum": "-1e300", "end": "0"},
		{"cap": "1e308", "level": "1e308", "extra": "1e308", "heldsum": "x", "end": "garbage", "ring": "1e308,1e308 nan,nan"},
		{"level": "1e-300", "extra": "-1", "heldsum": "1e308", "budget": "1e300", "asum": "0", "end": "1e30"},
		{"tat": "1e30", "cap": "-3", "w": "nan", "cut": "-1"},
	} {
		for k, v := range bad {
			require.NoError(t, rdb.HSet(ctx, f.keys[1], k, v).Err())
		}
		require.NoError(t, rdb.HSet(ctx, f.keys[0], "b", "1e308 nan -1 x", "c", "garbage", "d", "5 5 9e18 5").Err())
		clock.Advance(time.Second)
		attempts(f, 3, nil)
		require.NoError(t, f.refresh(ctx))
		s := f.Stats()
		assert.True(t, s.Share > 0 && s.Share <= 5*(1-DefaultHeadroom), "share %v from %v", s.Share, bad)
		assert.InDelta(t, 5*(1-DefaultHeadroom), s.Capacity, 1e-9)
		assert.True(t, s.RetryGrant >= 0 && s.RetryGrant <= maxGrant)
		res, wait, err := f.reserve(ctx, time.Second)
		require.NoError(t, err)
		assert.True(t, res == slotReserved && wait <= time.Second, "a hostile slot time is ignored: %v %v", res, wait)
	}

	// A learned rate: hostile capacities and estimates.
	l := newTestFleet(t, rdb, "hostile-learned", clock, WithMember("a"))
	for _, bad := range []map[string]string{
		{"cap": "-0.5"}, {"cap": "0"}, {"cap": "1e-300", "w": "-1"}, {"cap": "nan", "ev": "1,2,3 x,y,z 5,9,1"},
		{"cap": "1e308", "w": "1e308", "cut": "1e30"},
		{"cap": "5", "w": "5", "q": "nan", "qn": "0", "qend": "1e300", "test": "0 -1 nan 1e308"},
		{"q": "1e308", "qn": "-5", "test": "5 9 0.5 4"}, {"q": "0.9", "qn": "1e-300", "qend": "1e17", "test": "x y z w"},
		{"cap": "5", "w": "4", "cut": "0", "probed": "nan"}, {"cap": "5", "w": "4", "probed": "1e308"}, {"probed": "-1", "q": "0", "qend": "0"},
	} {
		for k, v := range bad {
			require.NoError(t, rdb.HSet(ctx, l.keys[1], k, v).Err())
		}
		clock.Advance(time.Second)
		attempts(l, 3, nil)
		require.NoError(t, l.refresh(ctx), "%v", bad)
		s := l.Stats()
		assert.True(t, s.Share > 0 && (math.IsInf(s.Share, 1) || s.Share <= s.Capacity), "share %v of %v from %v", s.Share, s.Capacity, bad)
		// A throttle told to exact admission (which may end a probe).
		l.limiter.Update(true)
		_, _, err := l.reserve(ctx, time.Second)
		require.NoError(t, err, "%v", bad)
	}
}

// TestHostileStateRandom: the same at random, over every field the
// scripts keep, the members' records and the slots, with the rate
// configured and learned, by leases and exact admission: whatever Redis
// holds, a refresh and an admission succeed (an error would drop the
// process to its local limiter until the corrupted value expires, which it
// never does while the fleet calls), and what they return is in range.
// It found a corrupted member count that failed every newcomer's refresh,
// a learned capacity or test record far below the least learned rate that
// made slots further ahead than any reply may say, and a process's want
// past what the script takes.
func TestHostileStateRandom(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	ctx := context.Background()
	fields := []string{"end", "start", "cap", "cut", "w", "level", "extra", "heldsum", "a", "t", "x", "ring",
		"budget", "asum", "ev", "q", "qn", "qend", "test", "probed", "tat", "seq"}
	odd := []string{"", "0", "-0", "1", "-1", "0.5", "5", "nan", "inf", "-inf", "1e308", "-1e308", "1e-300",
		"1e15", "9e18", "x", " ", "1 2", "1,2,3", "3 1 0.5 4", "0 0 0 0", "1 1 1 -1", "-5,-5"}
	for _, seed := range []uint64{1, 2, 3} {
		rng := rand.New(rand.NewPCG(seed, 0))
		// A value: an odd string, a time near the clock's, or a number of
		// any size and sign.
		val := func() string {
			switch rng.IntN(4) {
			case 0:
				off := []float64{0, 1, -1, 0.5, 1e6, -1e6, 3e6, 1e12, -1e12}[rng.IntN(9)]
				return fmt.Sprintf("%.17g", float64(clock.Now().UnixMicro())+off)
			case 1:
				return fmt.Sprintf("%.17g", math.Pow(10, rng.Float64()*40-20)*float64(1-2*rng.IntN(2)))
			}
			return odd[rng.IntN(len(odd))]
		}
		vals := func(n int, sep string) string {
			v := make([]string, n)
			for i := range v {
				v[i] = val()
			}
			return strings.Join(v, sep)
		}
		for i, opts := range [][]Option{{WithRate(5)}, {WithRate(500)}, {}, {WithExactBelow(0)}} {
			name := fmt.Sprintf("hostile-random-%d-%d", seed, i)
			a := newTestFleet(t, rdb, name, clock, append([]Option{WithMember("a")}, opts...)...)
			b := newTestFleet(t, rdb, name, clock, append([]Option{WithMember("b")}, opts...)...)
			for step := range 1000 {
				if rng.IntN(3) == 0 {
					k, v := fields[rng.IntN(len(fields))], val()
					switch k {
					case "ev", "ring":
						v = vals(3, ",") + " " + vals(3, ",")
					case "test":
						v = vals(4, " ")
					}
					require.NoError(t, rdb.HSet(ctx, a.keys[1], k, v).Err())
				}
				if rng.IntN(10) == 0 {
					require.NoError(t, rdb.HSet(ctx, a.keys[0], []string{"a", "b", "c"}[rng.IntN(3)], vals(5, " ")).Err())
				}
				if rng.IntN(10) == 0 {
					require.NoError(t, rdb.HSet(ctx, a.keys[2], []string{"a", "b"}[rng.IntN(2)], val()).Err())
				}
				clock.Advance(time.Duration(rng.IntN(2000)) * time.Millisecond)
				for _, f := range []*Fleet{a, b} {
					attempts(f, rng.IntN(20), func(int) bool { return rng.IntN(3) == 0 })
					require.NoError(t, f.refresh(ctx), "seed %d, %s, step %d", seed, name, step)
					s := f.Stats()
					require.True(t, s.Share > 0 && (math.IsInf(s.Share, 1) || s.Share <= s.Capacity*(1+1e-9)) &&
						s.RetryGrant >= 0 && s.RetryGrant <= maxGrant, "seed %d, %s, step %d: %+v", seed, name, step, s)
					res, wait, err := f.reserve(ctx, time.Second)
					require.NoError(t, err, "seed %d, %s, step %d", seed, name, step)
					require.True(t, wait >= 0 && (res != slotReserved || wait <= time.Second+time.Microsecond),
						"seed %d, %s, step %d: %v after %v", seed, name, step, res, wait)
				}
			}
		}
	}
}

// TestParseLeaseRejects: a reply out of range is refused, and the Fleet
// keeps what it had.
func TestParseLeaseRejects(t *testing.T) {
	f := &Fleet{cfg: defaults()}
	f.cfg.rate = 5
	for _, res := range [][]string{
		{"1", "0", "1", "4.375", "1", "1"},
		{"1", "0", "1", "4.375", "1", "1", "-1"},
		{"1", "0", "1", "4.375", "1", "1", "nan"},
		{"1", "0", "1", "4.375", "1", "0", "0"},
		{"nan", "0", "1", "4.375", "1", "1", "0"},
		{"-2", "0", "1", "4.375", "1", "1", "0"},
		{"5", "0", "1", "4.375", "1", "1", "0"},
		{"1", "-1", "1", "4.375", "1", "1", "0"},
		{"1", "0", "0", "4.375", "1", "1", "0"},
		{"1", "0", "1", "100", "1", "1", "0"},
		{"1", "inf", "1", "4.375", "1", "1", "0"},
		{"1e300", "0", "1", "1e300", "1", "1", "0"},
		{"-1", "0", "1", "4.375", "1", "1", "0"},
		{"1", "0", "1", "4.375", "5", "1", "0"}, // a level above the capacity
	} {
		_, err := f.parseLease(res)
		assert.ErrorIs(t, err, errBadReply, "%q", res)
	}
	l, err := f.parseLease([]string{"2", "7", "3", "4.375", "-1", "1", "250000"})
	require.NoError(t, err)
	assert.Equal(t, lease{share: 2, own: 2, capacity: 4.375, grant: 7, members: 3, seq: 1, lead: 250 * time.Millisecond}, l)
	// Exact admission holds a process below the level to the level (see
	// ownRate), with a configured rate only.
	l, err = f.parseLease([]string{"1", "0", "3", "4.375", "1.5", "1", "0"})
	require.NoError(t, err)
	assert.Equal(t, [2]float64{1, 1.5}, [2]float64{l.share, l.own})
	l, err = f.parseLease([]string{"2", "0.25", "3", "4.375", "-1", "1", "0"})
	require.NoError(t, err)
	assert.Equal(t, 0.25, l.grant, "a fraction of a token")
	f.cfg.rate = 0
	l, err = f.parseLease([]string{"-1", "0", "1", "-1", "-1", "1", "0"})
	require.NoError(t, err)
	assert.True(t, math.IsInf(l.share, 1) && math.IsInf(l.capacity, 1))
	l, err = f.parseLease([]string{"1", "0", "3", "4.375", "1.5", "1", "0"})
	require.NoError(t, err)
	assert.Equal(t, [2]float64{1, 1}, [2]float64{l.share, l.own}, "learned: held to the share")
}

// TestCommandsPerProcess: in lease mode a process makes one call to Redis
// per interval, however many requests it sends; with exact admission, one
// more per attempt.
func TestCommandsPerProcess(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	ctx := context.Background()
	lease := newTestFleet(t, rdb, "lease", clock, WithRate(1000), WithMember("a"))
	exact := newTestFleet(t, rdb, "exact", clock, WithRate(40), WithMember("a"))
	require.NoError(t, lease.refresh(ctx)) // loads the script
	require.NoError(t, exact.refresh(ctx))
	_, _, err := exact.reserve(ctx, time.Second)
	require.NoError(t, err)
	before := commandCalls(t, rdb, "evalsha")
	for range 10 {
		clock.Advance(time.Second)
		for range 100 {
			_, err := retry.Do(ctx, func(context.Context) (int, error) { return 1, nil }, retry.WithStrategy(lease.Strategy()))
			require.NoError(t, err)
		}
		require.NoError(t, lease.refresh(ctx))
	}
	assert.Equal(t, int64(10), commandCalls(t, rdb, "evalsha")-before, "lease mode: one call per interval, none per request")

	before = commandCalls(t, rdb, "evalsha")
	for range 10 {
		clock.Advance(time.Second)
		for range 4 {
			res, _, err := exact.reserve(ctx, time.Second)
			require.NoError(t, err)
			require.Equal(t, slotReserved, res)
		}
		require.NoError(t, exact.refresh(ctx))
	}
	assert.Equal(t, int64(10+40), commandCalls(t, rdb, "evalsha")-before, "exact: one more call per attempt")
}

// TestExactOneCallPerAdmission: under exact admission a process held to
// its share asks Redis only when its own next slot is due, as Redis said
// with its last answer: an attempt that could not have its slot within
// its wait is refused without a call, and one that can waits and then
// costs one call. A throttle Redis was not told of is told at once. (The
// share is 20 a second, 50 ms a slot; the calls are counted on the real
// clock, the waits on virtual time.)
func TestExactOneCallPerAdmission(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	ctx := context.Background()
	opts := []Option{WithRate(20), WithHeadroom(0), WithMember("a")}
	f, err := newFleet(rdb, "one-call", opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	require.NoError(t, f.refresh(ctx))
	require.True(t, f.Stats().Exact)
	acquire := func() error {
		tok, err := f.Strategy().AcquireInitialToken(ctx, "")
		if err == nil {
			require.NoError(t, f.Strategy().RecordSuccess(tok))
		}
		return err
	}
	require.NoError(t, acquire()) // loads the script
	before := commandCalls(t, rdb, "evalsha")
	for range 5 {
		require.NoError(t, acquire())
	}
	assert.Equal(t, int64(5), commandCalls(t, rdb, "evalsha")-before, "one call per admitted attempt (each waits for its slot first)")
	// Each attempt counts once in the demand the next lease reports,
	// though each of the last five was told to wait before it asked, and
	// so does one the local limiter refused; a retry refused for its own
	// sake does not.
	f.wanted(fmt.Errorf("wrapped: %w", retry.ErrRateLimited))
	f.wanted(retry.ErrRetryQuotaExceeded)
	f.wanted(retry.ErrNotRetryable)
	f.mu.Lock()
	at, prev := f.ls.at, f.ls.demand
	r := f.measure(at.Add(time.Second))
	f.mu.Unlock()
	assert.InDelta(t, wantSmoothing*7+(1-wantSmoothing)*prev, r.demand, 1e-9, "7 attempts a second")

	clock := newVClock()
	v := newTestFleet(t, rdb, "one-call-virtual", clock, opts...)
	require.NoError(t, v.refresh(ctx))
	res, _, err := v.reserve(ctx, time.Second)
	require.NoError(t, err)
	require.Equal(t, slotReserved, res)
	slot := 50*time.Millisecond + time.Microsecond // rounded up: Redis's clock counts whole microseconds
	wait, refuse, _ := v.heldBack(time.Second)
	assert.Equal(t, slot, wait, "until the process's own next slot")
	assert.False(t, refuse)
	_, refuse, _ = v.heldBack(slot - time.Microsecond)
	assert.True(t, refuse, "not due within the wait")
	before = commandCalls(t, rdb, "evalsha")
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, v.admit(short), retry.ErrRateLimited)
	assert.Zero(t, commandCalls(t, rdb, "evalsha")-before, "refused without a call")
	clock.Advance(slot)
	// The fleet's queue is taken to be as long as Redis last said (a
	// slot), though that slot's time has come, and to have wandered since,
	// by up to three standard deviations of its walk over a slot's time:
	// 3 × √(50ms × 50ms) = 150ms. An attempt whose wait that may pass
	// waits for Redis to say again, without a call (TestExactWaitsForNews).
	wait, refuse, unsure := v.heldBack(slot + 3*slot - time.Millisecond)
	assert.True(t, wait == 0 && !refuse, "the queue may have grown past the wait")
	assert.InDelta(t, 3*slot-time.Millisecond, unsure, float64(2*time.Microsecond), "wait for news at most until the queue last heard of no longer fits")
	wait, refuse, unsure = v.heldBack(slot + 3*slot + time.Millisecond)
	assert.True(t, wait == 0 && !refuse && unsure == 0, "due: ask")
	res, _, err = v.reserve(ctx, time.Second)
	require.NoError(t, err)
	assert.Equal(t, slotReserved, res, "Redis agrees")

	v.limiter.Update(true)
	wait, refuse, _ = v.heldBack(0)
	assert.True(t, wait == 0 && !refuse, "a throttle to tell: ask at once")
	_, _, err = v.reserve(ctx, time.Second) // tells it
	require.NoError(t, err)

	// A slot time further ahead than admission honours (corrupted, or
	// booked by a process with a longer WithMaxWait) is not a booking: the
	// script starts from now, and the lease that reports it must not make
	// the process refuse every attempt without asking.
	clock.Advance(time.Second)
	require.NoError(t, rdb.HSet(ctx, v.keys[1], "tat", fmtFloat(float64(clock.Now().Add(time.Hour).UnixMicro()))).Err())
	require.NoError(t, v.refresh(ctx))
	wait, refuse, unsure = v.heldBack(retry.DefaultMaxSendWait)
	assert.True(t, wait == 0 && !refuse && unsure == 0, "asks Redis")
	res, _, err = v.reserve(ctx, retry.DefaultMaxSendWait)
	require.NoError(t, err)
	assert.Equal(t, slotReserved, res, "Redis admits it")

	// A share of 0.2 a second: the next slot 5 s ahead, further than any
	// wait. A lease with a share under which Redis would give it now (5 s
	// is more than the 2 s wait and a slot at 10 a second) forgets it.
	slow := newTestFleet(t, rdb, "one-call-slow", clock, WithRate(0.2), WithHeadroom(0), WithMember("a"))
	require.NoError(t, slow.refresh(ctx))
	res, _, err = slow.reserve(ctx, time.Second)
	require.NoError(t, err)
	require.Equal(t, slotReserved, res)
	keep := func(share float64) {
		slow.mu.Lock()
		defer slow.mu.Unlock()
		slow.keepHeldBack(clock.Now(), lease{share: share, own: share, capacity: share})
	}
	keep(0.2)
	wait, _, _ = slow.heldBack(time.Minute)
	assert.Equal(t, 5*time.Second+time.Microsecond, wait, "kept")
	keep(10)
	assert.Zero(t, slow.ownAt.Load(), "forgotten")
	res, _, err = slow.reserve(ctx, time.Second)
	require.NoError(t, err)
	assert.Equal(t, slotOverShare, res, "with the share Redis holds (0.2), the slot is not due")
}

// TestExactWaitsForNews: an attempt whose wait the fleet's queue may have
// grown past, as far as this process last heard, waits for Redis to say
// again how long the queue is, and then asks: one call, and admitted.
func TestExactWaitsForNews(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	ctx := context.Background()
	clock := newVClock()
	f := newTestFleet(t, rdb, "news", clock, WithRate(5), WithHeadroom(0), WithMaxWait(time.Minute))
	require.NoError(t, f.refresh(ctx))
	require.True(t, f.Stats().Exact)
	// Heard an hour ago that 35 s of the fleet's slots are booked: the
	// queue may since have wandered by half the longest wait, 30 s, past an
	// attempt's minute. (A wait that long leaves a slow machine time to
	// bring the lease below before the attempt would give up.)
	f.booked(35*time.Second, 5)
	clock.Advance(time.Hour)
	_, refuse, unsure := f.heldBack(time.Minute)
	require.True(t, !refuse && unsure == 25*time.Second, "unsure: %v %v", refuse, unsure)

	held, calls := f.refusals.Load(), commandCalls(t, rdb, "evalsha")
	done := make(chan error, 1)
	go func() { done <- f.admit(ctx) }()
	require.Eventually(t, func() bool { return f.refusals.Load() > held }, 20*time.Second, time.Millisecond, "the attempt waits")
	require.NoError(t, f.refresh(ctx)) // the lease says the queue is empty
	require.NoError(t, <-done, "admitted once Redis said again")
	assert.Equal(t, held+1, f.refusals.Load(), "held back once")
	assert.Equal(t, int64(2), commandCalls(t, rdb, "evalsha")-calls, "the lease and one call for the attempt")
}

// TestHeldBackDrift: the fleet's queue, as Redis last said it, is taken to
// have wandered since by up to three standard deviations of its walk
// (√(age/rate)), at most half the longest wait; a queue last heard to be
// empty never holds an attempt back. An attempt whose wait the queue may
// have grown past waits, with a configured rate, for Redis to say again
// how long it is, at most until the queue last heard of would no longer
// fit; with a learned rate it is refused.
func TestHeldBackDrift(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never called
	defer rdb.Close()
	clock := newVClock()
	f := newTestFleet(t, rdb, "drift", clock, WithRate(5), WithHeadroom(0), WithBurst(1)) // a slot every 200 ms
	learned := newTestFleet(t, rdb, "drift-learned", clock, WithBurst(1))
	f.booked(1500*time.Millisecond, 5)
	learned.booked(1500*time.Millisecond, 5)
	ask := func(f *Fleet, left time.Duration) bool {
		wait, refuse, unsure := f.heldBack(left)
		return wait == 0 && !refuse && unsure == 0
	}
	refused := func(f *Fleet, left time.Duration) bool {
		_, refuse, _ := f.heldBack(left)
		return refuse
	}
	assert.True(t, ask(f, 1500*time.Millisecond), "just heard: the queue is as long as Redis said")
	assert.True(t, refused(f, 1500*time.Millisecond-time.Microsecond), "just heard, longer than the wait")

	clock.Advance(50 * time.Millisecond) // 3 × √(50ms × 200ms) = 300ms
	_, refuse, unsure := f.heldBack(1790 * time.Millisecond)
	assert.True(t, !refuse && unsure == 290*time.Millisecond, "may have grown past the wait: wait for news, at most until 1500 ms are left")
	assert.True(t, refused(learned, 1790*time.Millisecond), "may have grown past the wait, learned")
	assert.True(t, ask(f, 1810*time.Millisecond), "cannot have")
	assert.True(t, ask(learned, 1810*time.Millisecond), "cannot have, learned")
	news := f.queueNews()
	f.booked(time.Second, 5)
	select {
	case <-news:
	default:
		t.Error("Redis said again how long the queue is: the attempts waiting for that are woken")
	}
	assert.True(t, ask(f, 1790*time.Millisecond), "just heard")

	clock.Advance(time.Hour) // 3 × √(1h × 200ms) is more than half the longest wait, 1 s
	_, refuse, unsure = f.heldBack(1900 * time.Millisecond)
	assert.True(t, !refuse && unsure == 900*time.Millisecond, "unsure")
	assert.True(t, refused(f, time.Second), "no time left to hear again")
	assert.True(t, ask(f, 2*time.Second+time.Millisecond), "an estimate gone stale still lets an attempt ask")

	f.booked(0, 5)
	clock.Advance(time.Hour)
	assert.True(t, ask(f, 0), "an empty queue, however old the news, is asked")
	f.booked(time.Second, math.Inf(1))
	clock.Advance(time.Hour)
	assert.True(t, ask(f, time.Second), "no rate known: no drift")
}

// isTimeout reports whether err is a timeout: go-redis reports a deadline
// that cut a read short as the connection's i/o timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// TestCloseKeepsShare: after Close the strategy paces on its local limiter
// at the last share, never above it, also under exact admission (whose
// local limiter did not pace while Redis spaced the sends).
func TestCloseKeepsShare(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	ctx := context.Background()
	for _, exactBelow := range []float64{0, DefaultExactBelow} {
		f := newTestFleet(t, rdb, "close", clock, WithRate(8), WithHeadroom(0), WithMember("a"), WithExactBelow(exactBelow))
		require.NoError(t, f.refresh(ctx))
		require.Equal(t, exactBelow > 0, f.Stats().Exact)
		require.NoError(t, f.Close())
		assert.False(t, f.Stats().Exact)
		a := f.limiter.Stats().Assigned
		assert.Equal(t, 8.0, a.Rate, "exact below %v", exactBelow)
		assert.Equal(t, 8.0, a.Ceiling)
		n, err := rdb.HLen(ctx, f.keys[0]).Result()
		require.NoError(t, err)
		assert.Zero(t, n, "Close leaves the fleet")
		require.NoError(t, f.Close(), "a second Close does nothing")
	}
}

// TestFallbackAfterExactAdmission: a process that loses Redis under exact
// admission lets the sends Redis booked for the fleet go first: its local
// limiter's first slot is its own slot on the fleet's grid once the
// fleet's bookings are done, not at once. Back with Redis, its local
// limiter still keeps it to its slots for an interval, while the others
// may still be sending on theirs, and then leaves the spacing to Redis.
func TestFallbackAfterExactAdmission(t *testing.T) {
	srv := startRedis(t)
	rdb := srv.client(t)
	clock := newVClock()
	ctx := context.Background()
	var fleet []*Fleet
	for i := range 9 {
		fleet = append(fleet, newTestFleet(t, rdb, "booked", clock, WithRate(5), WithMember(fmt.Sprint("m", i)), WithInterval(time.Second)))
	}
	for range 2 {
		for _, f := range fleet {
			require.NoError(t, f.refresh(ctx))
		}
	}
	a := fleet[8]
	share := a.Stats().Share
	require.True(t, a.Stats().Exact)
	require.InDelta(t, 5*(1-DefaultHeadroom)/9, share, 1e-9)
	// Eight members book the fleet's next slots, one each; a takes the
	// ninth, 8 slots ahead.
	step := time.Second * 8 / 35 // 1/4.375 s
	for i, f := range fleet {
		res, wait, err := f.reserve(ctx, 2*time.Second)
		require.NoError(t, err)
		require.Equal(t, slotReserved, res)
		assert.InDelta(t, float64(time.Duration(i)*step), float64(wait), float64(time.Millisecond), "member %d", i)
	}
	lead := time.Duration(a.lead.Load())
	assert.InDelta(t, float64(9*step), float64(lead), float64(time.Millisecond), "the fleet's bookings reach 9 slots ahead")

	a.mu.Lock()
	a.failLocked(clock.Now(), a.measure(clock.Now()), errors.New("redis down"))
	a.mu.Unlock()
	require.False(t, a.Stats().Exact)
	d, _ := a.limiter.Acquire()
	assert.GreaterOrEqual(t, d, lead, "no local send before the fleet's bookings are done")
	assert.Less(t, d, lead+time.Duration(float64(time.Second)/share), "the first of its slots after them")
	if p := a.phaseAt(clock.Now().Add(d), share); p > 1e-6 && p < 1-1e-6 {
		t.Errorf("the first local send is %v of a slot off the process's slot on the fleet's grid", p)
	}

	// Back: for an interval, the local limiter paces as well.
	clock.Advance(time.Second)
	require.NoError(t, a.refresh(ctx))
	s := a.limiter.Stats()
	assert.True(t, a.Stats().Exact)
	assert.True(t, s.Enabled, "the first interval back, the local limiter still paces")
	assert.InDelta(t, a.Stats().Share, s.FillRate, 1e-9, "at its share")
	clock.Advance(time.Second)
	require.NoError(t, a.refresh(ctx))
	assert.False(t, a.limiter.Stats().Enabled, "then Redis alone spaces the sends")
}
