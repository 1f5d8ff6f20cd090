package redisretry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/retrykit/retry"
)

// The metastable trigger of M. Brooker's "What is Backoff For?" (2022):
// requests arrive open-loop (a Poisson stream that does not slow down when
// the service does), the service takes 1 s + 0.01 s x the requests in
// progress, and finishes what clients abandoned; clients time out after
// 3 s and make 3 tries. Arrivals go from 40 to 80 a second for 8 s. Naive
// retries keep the service collapsed after the spike: every timeout adds a
// retry, which keeps the latency above the timeout. A retry quota per
// process (the AWS SDKs' 500 tokens, 10 a timeout) recovers only when each
// process's quota runs dry, which with many small processes is never. The
// fleet's budget (retries at most 20% of first attempts, or 10 a second
// for the whole fleet if that is more) bounds the retries whatever the
// number of processes.

const (
	msBase, msPerConcurrent = time.Second, 10 * time.Millisecond
	msTimeout, msTries      = 3 * time.Second, 3
	msCalm, msSpike         = 40.0, 80.0
	msSpikeFrom, msSpikeTo  = 10 * time.Second, 18 * time.Second
	msDuration              = 70 * time.Second
)

// msMode is how the processes decide on a retry.
type msMode string

const (
	msNone     msMode = "no retries"
	msNaive    msMode = "naive retries"
	msStandard msMode = "standard quota per process"
	msFleet    msMode = "fleet budget (redisretry)"
)

// msResult is what a metastable run measured.
type msResult struct {
	goodput   [int(msDuration / time.Second)]int // successes each second
	recovered time.Duration                      // after the spike's end, when goodput held 95% of arrivals; -1: never
	retries   int
	attempts  int
}

func runMetastable(t testing.TB, rdb *redis.Client, procs int, mode msMode, seed uint64) msResult {
	t.Helper()
	ctx := context.Background()
	clock := newVClock()
	s := &simulation{clock: clock, start: clock.Now(), rng: rand.New(rand.NewPCG(seed, 11))}
	var res msResult
	concurrency := 0
	name := fmt.Sprintf("ms-%d-%s-%d", procs, strings.ReplaceAll(string(mode), " ", "-"), seed)

	fleets := make([]*Fleet, procs)
	quotas := make([]*retry.TokenBucket, procs)
	for i := range procs {
		switch mode {
		case msFleet:
			fleets[i] = newTestFleet(t, rdb, name, clock, WithMember(fmt.Sprint(i)), WithExactBelow(0))
			f := fleets[i]
			var refresh func()
			refresh = func() {
				if err := f.refresh(ctx); err != nil {
					t.Fatal(err)
				}
				s.at(s.now()+f.cfg.interval, refresh)
			}
			s.at(time.Duration(s.rng.Float64()*float64(f.cfg.interval)), refresh)
		case msStandard:
			q, err := retry.NewTokenBucket(retry.WithClock(clock)) // the AWS SDKs' defaults
			if err != nil {
				t.Fatal(err)
			}
			quotas[i] = q
		}
	}
	// mayRetry reports whether process p may retry after a timeout.
	mayRetry := func(p int) bool {
		switch mode {
		case msNaive:
			return true
		case msStandard:
			_, err := quotas[p].Acquire(quotas[p].RetryCost(retry.Classification{Safety: retry.SafetyYes, Timeout: true}))
			return err == nil
		case msFleet:
			_, err := fleets[p].quota.Acquire(1)
			return err == nil
		}
		return false
	}
	// attempt sends try number try of a request of process p.
	var attempt func(p, try int)
	attempt = func(p, try int) {
		res.attempts++
		if try > 1 {
			res.retries++
		}
		service := msBase + time.Duration(concurrency)*msPerConcurrent
		concurrency++
		s.at(s.now()+service, func() { concurrency-- }) // finished, abandoned or not
		if service <= msTimeout {
			s.at(s.now()+service, func() {
				if sec := int(s.now() / time.Second); sec < len(res.goodput) {
					res.goodput[sec]++
				}
				if f := fleets[p]; f != nil {
					f.limiter.Update(false)
				}
				if q := quotas[p]; q != nil && try == 1 {
					_ = q.Release(1) // a first attempt's success earns a token
				}
			})
			return
		}
		s.at(s.now()+msTimeout, func() {
			if f := fleets[p]; f != nil {
				f.limiter.Update(false)
			}
			if try < msTries && mayRetry(p) {
				attempt(p, try+1)
			}
		})
	}
	var arrive func()
	arrive = func() {
		rate := msCalm
		if s.now() >= msSpikeFrom && s.now() < msSpikeTo {
			rate = msSpike
		}
		attempt(s.rng.IntN(procs), 1)
		s.at(s.now()+time.Duration(s.rng.ExpFloat64()/rate*float64(time.Second)), arrive)
	}
	s.at(0, arrive)
	if !s.run(msDuration) {
		t.Fatalf("the metastable simulation runs away at %v", s.now())
	}
	// Recovered: from then on, every 5 s of goodput averages at least 80%
	// of the arrivals (a Poisson second of 40 varies by 6).
	res.recovered = -1
	const window = 5
	for sec := int(msSpikeTo / time.Second); sec+window <= len(res.goodput); sec++ {
		held := true
		for from := sec; from+window <= len(res.goodput); from++ {
			sum := 0
			for _, n := range res.goodput[from : from+window] {
				sum += n
			}
			if float64(sum) < 0.8*msCalm*window {
				held = false
				break
			}
		}
		if held {
			res.recovered = time.Duration(sec)*time.Second - msSpikeTo
			break
		}
	}
	for _, f := range fleets {
		if f != nil {
			_ = f.Close()
		}
	}
	return res
}

// TestMetastableTrigger runs Brooker's trigger with the load split over 10,
// 100 and 1,000 processes, in each mode, seeds 1-3, and prints when goodput
// came back after the spike. It checks the target, the fleet's
// budget back within 10 s whatever the number of processes, and that naive
// retries stay collapsed (else the trigger says nothing).
func TestMetastableTrigger(t *testing.T) {
	if testing.Short() {
		t.Skip("the fleet simulation takes a while")
	}
	srv := startRedis(t)
	rdb := srv.client(t)
	type cell struct {
		back    string // when it was back: "3-5 s", or never
		retries span   // retries / attempts
	}
	cells := map[string]cell{} // by processes and mode
	var b strings.Builder
	fmt.Fprintf(&b, "\nBrooker's trigger: open-loop arrivals 40/s, 80/s from 10 s to 18 s; service 1 s + 10 ms x concurrency; timeout 3 s, 3 tries; seeds 1-3\n")
	fmt.Fprintf(&b, "%-10s  %-28s  %-22s  %s\n", "processes", "mode", "back after the spike", "retries / attempts")
	for _, procs := range []int{10, 100, 1000} {
		for _, mode := range []msMode{msNone, msNaive, msStandard, msFleet} {
			var back []string
			ratio, took := newSpan(), seconds{span: newSpan()}
			for _, seed := range []uint64{1, 2, 3} {
				r := runMetastable(t, rdb, procs, mode, seed)
				if r.recovered < 0 {
					back = append(back, "never")
				} else {
					back = append(back, fmt.Sprint(r.recovered))
				}
				took.add(r.recovered.Seconds())
				ratio.add(float64(r.retries) / float64(r.attempts))
				switch {
				case mode == msFleet && (r.recovered < 0 || r.recovered > 10*time.Second):
					t.Errorf("%d processes, seed %d: the fleet's budget came back after %v (never: -1s)", procs, seed, r.recovered)
				case mode == msNaive && r.recovered >= 0:
					t.Errorf("%d processes, seed %d: naive retries came back after %v: the trigger is too weak", procs, seed, r.recovered)
				}
			}
			fmt.Fprintf(&b, "%-10d  %-28s  %-22s  %s\n", procs, mode, strings.Join(back, ", "), ratio.pct())
			cells[fmt.Sprint(procs)+" / "+string(mode)] = cell{took.String(), ratio}
		}
	}
	t.Log(b.String())

	// The README's table: when each mode was back, and in brackets (where
	// it gives them) the share of attempts that were retries, in whole
	// percent but the fleet's.
	checkREADMETable(t, "| processes | no retries | naive retries |", func(row map[string]string) (map[string]string, bool) {
		want := map[string]string{}
		procs := strings.ReplaceAll(row["processes"], ",", "")
		for column, readme := range row {
			for _, mode := range []msMode{msNone, msNaive, msStandard, msFleet} {
				c, ok := cells[procs+" / "+string(mode)]
				if !ok || !strings.HasPrefix(column, string(mode)) {
					continue
				}
				want[column] = c.back
				if _, paren, ok := strings.Cut(readme, " ("); ok {
					format := "%.0f"
					if mode == msFleet {
						format = "%.1f"
					}
					_, rest, _ := strings.Cut(paren, "%") // the README's words after the share
					want[column] += " (" + c.retries.format(format, 100) + "%" + rest
				}
			}
		}
		return want, len(want) == 4
	})
}
