package redisretry

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/retrykit/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentAdmission: two processes of one fleet, each with eight
// goroutines asking for slots as fast as they are given, while each
// process refreshes its lease in the background, on the real clock and
// Redis's. The invariants: no attempt is admitted beyond the fleet's rate
// (a slot every 25 ms, at 40 a second: n admissions take at least (n-1) x
// 25 ms), nor beyond a process's share, but for its burst; every refusal
// wraps retry.ErrRateLimited; both processes get slots. Run with -race.
func TestConcurrentAdmission(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a second of real time")
	}
	srv := startRedis(t)
	rdb := srv.client(t)
	ctx := context.Background()
	const rate = 40.0
	fleets := make([]*Fleet, 2)
	for i := range fleets {
		f, err := New(ctx, rdb, "concurrent", WithRate(rate), WithHeadroom(0), WithMember(string(rune('a'+i))),
			WithInterval(100*time.Millisecond), WithMaxWait(200*time.Millisecond))
		require.NoError(t, err)
		require.True(t, f.Stats().Exact)
		fleets[i] = f
	}
	defer func() {
		for _, f := range fleets {
			require.NoError(t, f.Close())
		}
	}()
	for _, f := range fleets {
		require.NoError(t, f.refresh(ctx)) // the first process makes room for the second
	}

	start := time.Now()
	stop := start.Add(time.Second)
	var admitted [2]atomic.Int64
	var wg sync.WaitGroup
	for i, f := range fleets {
		for range 8 {
			wg.Go(func() {
				for time.Now().Before(stop) {
					switch err := f.admit(ctx); {
					case err == nil:
						admitted[i].Add(1)
					case !errors.Is(err, retry.ErrRateLimited):
						t.Errorf("process %d: %v", i, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)

	// Redis spaces the slots 25 ms apart, and admit returns no sooner
	// than its slot: n slots need (n-1) x 25 ms, within the elapsed time
	// (and up to the longest wait booked ahead at the start, for slots
	// a process booked before the first of these calls: none here).
	total := admitted[0].Load() + admitted[1].Load()
	most := int64(elapsed.Seconds()*rate) + 1
	assert.LessOrEqual(t, total, most, "admitted in %v at %v a second", elapsed, rate)
	share := rate / 2
	for i := range fleets {
		n := admitted[i].Load()
		assert.Positive(t, n, "process %d got slots", i)
		assert.LessOrEqual(t, n, int64(elapsed.Seconds()*share)+int64(localBurst(share)), "process %d within its share and burst", i)
	}
	t.Logf("%d and %d admitted in %v (at most %d)", admitted[0].Load(), admitted[1].Load(), elapsed, most)
}
