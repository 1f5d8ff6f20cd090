// Command storm simulates a retry storm and compares the retry modes: no
// retries, naive retries (fixed attempts, no quota), the standard mode and
// the adaptive mode (with its defaults and with the published algorithm of
// the AWS SDKs); then the backoff jitter kinds (none, full, equal,
// decorrelated) when many clients retry after one shared failure; then
// retries across the layers of a call chain, Brooker's metastable trigger
// split over 10, 100 and 1,000 clients, the adaptive mode at the limits of
// what one process can know, and hedged requests against a service with a
// slow tail.
//
//	go run ./examples/storm                 # prints the table, writes storm.svg
//	go run ./examples/storm -svg docs/storm.svg -seed 7
//	go run ./examples/storm -only fleet,hot-key
//	go run ./examples/storm -chain-svg docs/chain.svg -tail-svg docs/hedging.svg -frontier-svg docs/frontier.svg
//
// The simulation runs on virtual time (the strategies read a simulated
// Clock), so five minutes of traffic per mode and scenario take a few
// seconds in all, and the same seed gives the same numbers. The model and
// the definitions of the columns are in the output and in package
// internal/storm.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/retrykit/retry/internal/storm"
)

func main() {
	svgPath := flag.String("svg", "storm.svg", "where to write the chart (empty: no chart)")
	chainSVG := flag.String("chain-svg", "", "where to write the call-chain chart (empty: no chart)")
	tailSVG := flag.String("tail-svg", "", "where to write the hedging chart (empty: no chart)")
	frontierSVG := flag.String("frontier-svg", "", "where to write the chart of the tiny-burst fleets against the fixed-rate frontier (empty: no chart)")
	seed := flag.Uint64("seed", 1, "seed of the workload and of the backoff jitter")
	only := flag.String("only", "", "comma-separated names of the scenarios to run (empty: all)")
	wait := flag.Duration("max-send-wait", storm.MaxSendWait, "the longest an adaptive attempt waits for a send slot (0: no bound)")
	flag.Parse()
	log.SetFlags(0)

	scenarios := storm.Scenarios()
	if *only != "" {
		var picked []storm.Scenario
		for _, name := range strings.Split(*only, ",") {
			found := false
			for _, sc := range scenarios {
				if sc.Name == name {
					picked, found = append(picked, sc), true
				}
			}
			if !found {
				log.Fatalf("no scenario %q", name)
			}
		}
		scenarios = picked
	}
	bound := *wait
	if bound == 0 {
		bound = -1 // no bound
	}
	for i := range scenarios {
		scenarios[i].MaxSendWait = bound
	}
	start := time.Now()
	results, err := storm.RunAll(scenarios, storm.Modes, *seed)
	if err != nil {
		log.Fatal(err)
	}
	elapsed := time.Since(start)

	fmt.Printf("Retry storm: %d scenarios x %d modes, 5 minutes of virtual time each, seed %d\n\n", len(scenarios), len(storm.Modes), *seed)
	fmt.Println("Modes:")
	for _, m := range storm.Modes {
		fmt.Printf("  %-19s %s\n", m, m.Description())
	}
	fmt.Printf(`
Model: closed-loop workers share one strategy (in (d), 10 clients with 30
workers and a strategy each); each sends a request, retries as the strategy
says, thinks 0.5-1.5 s, and sends the next; a request gives up if its next
attempt could not start within 10 s of its start, and an adaptive attempt
that finds no send slot within %v fails at once (refused). The server answers
after 20 ms (in (d), plus 20-50 ms of network each way); it serves its
capacity per 1-s window (in (d), by a token bucket holding 0.1 s of capacity)
and answers the rest 429 (throttled); in (f) it also throttles 5%% of attempts
whatever the load; in an outage it answers 503.

`, waitText(*wait))
	if err := storm.WriteTable(os.Stdout, scenarios, results); err != nil {
		log.Fatal(err)
	}

	// The jitter kinds, compared on the storm every client's shared failure
	// sets off when it heals.
	jsc := storm.DefaultJitterScenario()
	jitter, err := storm.CompareJitter(jsc, storm.JitterKinds, *seed)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	if err := storm.WriteJitterTable(os.Stdout, jsc, jitter); err != nil {
		log.Fatal(err)
	}

	// Retries across the layers of a call chain (retry.NewHandler), over
	// five seeds from -seed on.
	seeds := storm.Seeds(*seed)
	chains, err := storm.CompareChains(storm.ChainScenarios(), storm.ChainConfigs(), seeds)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	if err := storm.WriteChainTable(os.Stdout, chains, len(seeds)); err != nil {
		log.Fatal(err)
	}
	if *chainSVG != "" {
		var buf bytes.Buffer
		cs := storm.ChainScenarios()
		if err := storm.WriteChainSVG(&buf, chains, cs[0].Name, cs[1].Name); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*chainSVG, buf.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("chart: %s\n", *chainSVG)
	}

	// Brooker's metastable trigger over 10, 100 and 1,000 clients, over the
	// same five seeds.
	metastable, err := storm.CompareMetastable(storm.MetastableScenarios(), storm.MetastableModes, seeds)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	if err := storm.WriteMetastableTable(os.Stdout, metastable, len(seeds)); err != nil {
		log.Fatal(err)
	}

	// Adaptive mode at the limits of what one process can know (small
	// clients, fairness, a tiny burst, load-independent throttles, a
	// service throttling from the start, a step), over the same seeds.
	limitScenarios := storm.LimitScenarios()
	limits, err := storm.CompareLimits(limitScenarios, seeds)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	if err := storm.WriteLimitsTable(os.Stdout, limitScenarios, limits, len(seeds)); err != nil {
		log.Fatal(err)
	}
	if *frontierSVG != "" {
		var buf bytes.Buffer
		if err := storm.WriteFrontierSVG(&buf, limitScenarios, limits, len(seeds)); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*frontierSVG, buf.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("chart: %s\n", *frontierSVG)
	}

	// Hedged requests against a service with a slow tail (retry.Hedging),
	// over the same five seeds.
	tails, err := storm.CompareTails(storm.TailScenarios(), storm.TailConfigs(), seeds)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	if err := storm.WriteTailTable(os.Stdout, tails, len(seeds)); err != nil {
		log.Fatal(err)
	}
	if *tailSVG != "" {
		var buf bytes.Buffer
		if err := storm.WriteTailSVG(&buf, tails); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*tailSVG, buf.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("chart: %s\n", *tailSVG)
	}
	if *svgPath != "" {
		var buf bytes.Buffer
		if err := storm.WriteSVG(&buf, scenarios, results, *seed); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(*svgPath, buf.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("\nchart: %s\n", *svgPath)
	}
	fmt.Printf("simulated in %v\n", elapsed.Round(10*time.Millisecond))
}

// waitText describes the bound on the wait for a send slot.
func waitText(d time.Duration) string {
	if d == 0 {
		return "any time (no bound)"
	}
	return d.String()
}
