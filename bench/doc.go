// Package bench compares the cost of retrykit's retry loop with the retry
// libraries Go programs would otherwise use, on the same work function.
//
// It is a module of its own, so that the library's users never download
// the peers. The benchmarks are in peers_test.go; run.sh runs them and
// prints a table of medians (see README.md). Package awsstorm and
// cmd/awsstorm run the SDK's retryers through retrykit's retry-storm
// simulation, next to retrykit's modes.
package bench
