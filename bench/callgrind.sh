#!/usr/bin/env bash
# Counts the instructions each serial benchmark case executes per call,
# with callgrind, which does not depend on the machine's load. Each case
# runs twice, for N1 and N2 iterations; the difference, over N2-N1, is the
# count per call, so the program's start and the benchmark's setup cancel
# out. The output has the form of go test -bench lines, with the unit
# instr/op, so cmd/benchtable can merge it with a timed run.
#
#	./callgrind.sh                      # every serial case, some minutes
#	BENCH='Success$' ./callgrind.sh     # the cases of one benchmark
#	N1=20000 N2=220000 ./callgrind.sh   # more iterations, less noise
#
# It installs valgrind with apt-get where it is missing. Go programs run
# under valgrind only without asynchronous preemption, and are counted on
# one thread: GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1.
set -euo pipefail
cd "$(dirname "$0")"

BENCH="${BENCH:-.}"
N1="${N1:-10000}"
N2="${N2:-110000}"

if ! command -v valgrind >/dev/null; then
	echo "callgrind.sh: installing valgrind" >&2
	sudo=""
	if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
	$sudo apt-get update -qq >&2
	$sudo apt-get install -y -qq valgrind >&2
fi

mkdir -p results
bin="results/bench.test"
go test -c -o "$bin" .

# The cases: every sub-benchmark BENCH selects, less the parallel ones,
# which callgrind, running one thread at a time, cannot tell anything about.
cases=$(GOMAXPROCS=1 "./$bin" -test.run='^$' -test.bench="$BENCH" -test.benchtime=1x |
	awk '/^Benchmark[^ \t]*\// { print $1 }' | grep -v 'Parallel/' || true)
if [ -z "$cases" ]; then
	echo "callgrind.sh: no serial benchmark matches BENCH=$BENCH" >&2
	exit 1
fi

# count prints the instructions a run of case $1 for $2 iterations executes.
count() {
	local bench="${1%%/*}" sub="${1#*/}"
	GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind \
		--callgrind-out-file=/dev/null "./$bin" -test.run='^$' \
		-test.bench="^${bench}\$/^${sub}\$" -test.benchtime="${2}x" 2>&1 >/dev/null |
		awk '/Collected :/ { print $NF }'
}

echo "# instructions per call: (count(N2) - count(N1)) / (N2 - N1), N1=$N1 N2=$N2"
for c in $cases; do
	i1=$(count "$c" "$N1")
	i2=$(count "$c" "$N2")
	awk -v c="$c" -v i1="$i1" -v i2="$i2" -v n1="$N1" -v n2="$N2" \
		'BEGIN { printf "%s\t%d\t%.1f instr/op\n", c, n2 - n1, (i2 - i1) / (n2 - n1) }'
done
