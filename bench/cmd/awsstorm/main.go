// Command awsstorm runs the retry-storm simulation of examples/storm with
// retrykit's standard and adaptive modes and the AWS SDK for Go v2's
// standard and adaptive retryers, on the same scenarios, the same
// workload and the same virtual clock, and prints the same table.
//
//	cd bench && go run ./cmd/awsstorm             # the table, a few seconds
//	cd bench && go run ./cmd/awsstorm -realtime   # and a 30-s run on the real clock
//
// How each retryer is driven, and what the SDK's API does and does not
// allow, is in package awsstorm and in the output.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/retrykit/retry/bench/awsstorm"
	"github.com/retrykit/retry/internal/storm"
)

func main() {
	seed := flag.Uint64("seed", 1, "seed of the workload and of the backoff jitter")
	realtime := flag.Bool("realtime", false, "also run scenario (b) on the real clock, retrykit adaptive against aws-adaptive (takes -duration of wall time)")
	duration := flag.Duration("duration", 30*time.Second, "length of the real-time run")
	flag.Parse()
	log.SetFlags(0)

	scenarios := storm.Scenarios()
	contenders := awsstorm.Contenders()
	start := time.Now()
	results, err := awsstorm.RunAll(scenarios, contenders, *seed)
	if err != nil {
		log.Fatal(err)
	}
	elapsed := time.Since(start)

	fmt.Printf("Retry storm, retrykit and aws-sdk-go-v2: %d scenarios x %d retryers, 5 minutes of virtual time each, seed %d\n\n",
		len(scenarios), len(contenders), *seed)
	fmt.Println("Retryers:")
	for _, c := range contenders {
		fmt.Printf("  %-13s %s\n", c.Name, c.Description)
	}
	fmt.Print(`
Model (that of examples/storm): closed-loop workers share one retryer; each
sends a request, retries as the retryer says, thinks 0.5-1.5 s, and sends the
next; a request gives up if its next attempt could not start within 10 s of
its start. The server answers after 20 ms; it serves its capacity per 1-s
window and answers the rest 429 (to the SDK: code "Throttling"); in an outage
it answers 503 (code "ServiceUnavailable").

`)
	if err := storm.WriteTable(os.Stdout, scenarios, results); err != nil {
		log.Fatal(err)
	}
	fmt.Print(notes)
	fmt.Printf("\nsimulated in %v\n", elapsed.Round(10*time.Millisecond))

	if *realtime {
		if err := runRealtime(os.Stdout, *duration, *seed); err != nil {
			log.Fatal(err)
		}
	}
}

const notes = `
How the SDK runs here (aws-sdk-go-v2 v1.47.7, its default retry mode):

  aws-standard  runs on virtual time through the SDK's public API alone. Its
                retry quota (aws/ratelimit TokenRateLimit) and its retry
                decisions read no clock. Its backoff draws from crypto/rand
                (aws/retry/jitter_backoff.go:41, an unexported field, no
                io.Reader option), so StandardOptions.Backoff is replaced with
                the same formula, rand * 2^attempt s capped at 20 s, on the
                simulation's seeded source.
  aws-adaptive  cannot run on virtual time through the SDK's API. Its client
                rate limiter reads the wall clock through sdk.NowTime, a
                variable of the SDK's internal package internal/sdk (time.go:9
                sets it to time.Now), at aws/retry/adaptive_ratelimit.go:35
                (newAdaptiveRateLimit), :92 and :97 (Update), :124
                (updateMeasuredRate) and :137 (tokenBucketRefill); and its
                GetAttemptToken waits for a send slot in a real timer,
                sdk.SleepWithContext (aws/retry/adaptive.go:143,
                internal/sdk/time.go:33). NewAdaptiveMode takes no clock, and
                internal/sdk cannot be imported from outside the SDK. The row
                above swaps the two variables through go:linkname for the
                length of each run (the SDK's own tests swap them too): the
                clock reads the simulation's, and a sleep returns its duration
                to the simulation, which asks again after that long, as the
                SDK's loop does after its sleep. That is not API: it holds for
                this SDK version (a rename fails to link). -realtime runs it
                with no redirection, on the real clock, as a cross-check.

Readings:
  - aws-adaptive and retrykit's adaptive-published mode (examples/storm), the
    same published algorithm, agree to within 0.2 points of goodput and of
    throttled share in every scenario. retrykit's default adaptive mode keeps
    97-100% of an overloaded server's capacity where the SDK's keeps 53-63%
    with one client, and fails more requests: nearly all of them refused,
    unsent, when no send slot is free within its MaxSendWait (2 s).
  - aws-standard retries later: 0-2 s before its second attempt and 0-4 s
    before its third (retrykit's standard: up to 10 ms, then 15 ms). So in
    the brownout its retries reach a later 1-s window of the server and
    succeed (43 failed requests to 931), at the price of latency, which the
    table does not show. Its quota gets 1 token back for every successful
    attempt, retries included (retrykit's for a first attempt only), so
    under sustained overload it retries more (1.126 attempts per request to
    1.074). Both quotas stop retries in the outage alike.
  - The SDK's adaptive mode never refills its retry quota on success: its
    attempt token (aws/retry/adaptive.go:148) only updates the rate limiter,
    and NoRetryIncrement is paid by the standard retryer's attempt token,
    which adaptive mode does not take. Once an outage has drained the quota,
    the client never retries again (reported as aws/aws-sdk-go-v2#3550). In
    scenario (a) nothing fails after the heal, so the table does not show it;
    the package's TestAdaptiveQuotaNeverRefills does.
  - In the simulation a request whose wait for a send slot would end past its
    deadline gives up at once, as retrykit's Do does; the SDK sleeps until
    the deadline. That frees aws-adaptive's workers earlier than the SDK
    would, which does not change what the server serves; -realtime, where
    the SDK sleeps as it does, agrees.
`

func runRealtime(w io.Writer, d time.Duration, seed uint64) error {
	var sc storm.Scenario
	for _, s := range storm.Scenarios() {
		if s.Name == "overload" {
			sc = s
		}
	}
	sc.Duration = d
	fmt.Fprintf(w, "\nReal time: scenario (b) for %v of wall time, retrykit adaptive and aws-adaptive side by side\n", d)
	fmt.Fprintf(w, "(each with its own in-process server of %g req/s on the real clock, %d worker goroutines, no network),\n", sc.Capacity, sc.Workers)
	fmt.Fprintf(w, "next to the simulation of the same %v on virtual time. NOISY: the real-time numbers depend on\n", d)
	fmt.Fprintf(w, "the machine's scheduling and timers and change from run to run; the virtual ones do not.\n\n")

	start := time.Now()
	rt, err := awsstorm.RunRealtime(sc, seed)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	virtual := map[string]storm.Result{}
	rk, err := storm.Run(sc, storm.Adaptive, seed)
	if err != nil {
		return err
	}
	virtual[rk.Mode] = rk
	sdk, err := awsstorm.RunAdaptive(sc, seed)
	if err != nil {
		return err
	}
	virtual[sdk.Mode] = sdk

	var b strings.Builder
	fmt.Fprintf(&b, "%-14s %-8s %9s %8s %7s %9s %8s\n", "mode", "clock", "requests", "failed", "amplif", "throttled", "goodput")
	for _, r := range rt {
		v := virtual[r.Mode]
		fmt.Fprintf(&b, "  %-12s %-8s %9d %8d %7.3f %8.1f%% %7.1f%%\n", r.Mode, "real", r.Requests, r.Failed,
			r.Amplification, 100*r.ThrottledShare, 100*r.Goodput)
		fmt.Fprintf(&b, "  %-12s %-8s %9d %8d %7.3f %8.1f%% %7.1f%%\n", "", "virtual", v.Requests, v.Failed,
			v.Amplification, 100*v.ThrottledShare, 100*v.Goodput)
	}
	fmt.Fprintf(&b, "\nran in %v of wall time\n", wall.Round(100*time.Millisecond))
	_, err = io.WriteString(w, b.String())
	return err
}
