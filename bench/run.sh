#!/usr/bin/env bash
# Runs the peer benchmarks COUNT times (default 10), keeps the raw output
# in results/, and prints the machine and a markdown table of the medians
# with each library's ratio to the direct call.
#
#	./run.sh                  # from anywhere; COUNT=5 ./run.sh for a quicker run
#	BENCH=ThreeAttempts ./run.sh
set -euo pipefail
cd "$(dirname "$0")"

COUNT="${COUNT:-10}"
BENCH="${BENCH:-.}"
BENCHTIME="${BENCHTIME:-1s}"

mkdir -p results
raw="results/$(date -u +%Y%m%dT%H%M%SZ).txt"

cpu="$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)"
machine="$(go version), $(nproc) CPUs, ${cpu:-unknown CPU}"

# COUNT rounds of -count=1 rather than one -count=COUNT: the rounds
# interleave the libraries, so a burst of load from elsewhere on the
# machine spreads over all of them instead of skewing one.
echo "machine: $machine" >"$raw"
for round in $(seq "$COUNT"); do
	echo "round $round of $COUNT: go test -run='^\$' -bench='$BENCH' -benchmem -count=1 -benchtime=$BENCHTIME >> $raw" >&2
	go test -run='^$' -bench="$BENCH" -benchmem -count=1 -benchtime="$BENCHTIME" >>"$raw"
done

echo "Machine: $machine. COUNT=$COUNT, raw output in bench/$raw."
echo
go run ./cmd/benchtable "$raw"
