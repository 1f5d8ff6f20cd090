#!/usr/bin/env bash
# Runs the peer benchmarks COUNT times (default 10), counts each serial
# case's instructions with callgrind.sh, keeps the raw output in results/,
# and prints one markdown table: medians, and each row's cost over the
# direct call in instructions and in nanoseconds, with the ratios.
#
#	./run.sh                  # from anywhere; COUNT=5 ./run.sh for a quicker run
#	BENCH=ThreeAttempts ./run.sh
#	INSTR=0 ./run.sh          # timings only, without callgrind
#	README=1 ./run.sh         # also write the table into both READMEs
set -euo pipefail
cd "$(dirname "$0")"

COUNT="${COUNT:-10}"
BENCH="${BENCH:-.}"
BENCHTIME="${BENCHTIME:-1s}"

mkdir -p results
raw="results/$(date -u +%Y%m%dT%H%M%SZ).txt"

cpu="$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)"
machine="$(go version | sed 's/^go version //'), $(nproc) CPUs, ${cpu:-unknown CPU}"

# COUNT rounds of -count=1 rather than one -count=COUNT: the rounds
# interleave the libraries, so a burst of load from elsewhere on the
# machine spreads over all of them instead of skewing one.
echo "machine: Machine: $machine." >"$raw"
for round in $(seq "$COUNT"); do
	echo "round $round of $COUNT: go test -run='^\$' -bench='$BENCH' -benchmem -count=1 -benchtime=$BENCHTIME >> $raw" >&2
	go test -run='^$' -bench="$BENCH" -benchmem -count=1 -benchtime="$BENCHTIME" >>"$raw"
done
command="cd bench && COUNT=$COUNT ./run.sh"
if [ "${INSTR:-}" != 0 ]; then
	echo "callgrind: BENCH='$BENCH' ./callgrind.sh >> $raw" >&2
	BENCH="$BENCH" ./callgrind.sh >>"$raw"
	echo "command: Made by \`$command\` ($COUNT timed rounds, medians; instructions from \`./callgrind.sh\`, the same cases, one thread, no GC)." >>"$raw"
else
	echo "command: Made by \`cd bench && INSTR=0 COUNT=$COUNT ./run.sh\` ($COUNT timed rounds, medians)." >>"$raw"
fi

readmes=()
if [ "${README:-}" = 1 ]; then
	readmes=(-readme README.md -readme ../README.md)
fi
echo "Raw output in bench/$raw." >&2
go run ./cmd/benchtable "${readmes[@]}" "$raw"
