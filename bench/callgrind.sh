#!/usr/bin/env bash
# Counts the instructions each serial benchmark case executes per call,
# with callgrind, which does not depend on the machine's load. Each case
# runs twice, for two numbers of iterations; the difference of the counts
# over the difference of the iterations is the count per call, so the
# program's start and the benchmark's setup cancel out. The output has
# the form of go test -bench lines, with the unit instr/op, so
# cmd/benchtable can merge it with a timed run.
#
#	./callgrind.sh                      # every serial case, some minutes
#	BENCH='Success$' ./callgrind.sh     # the cases of one benchmark
#	INSTR=100000000 ./callgrind.sh      # longer runs, less noise
#
# It installs valgrind with apt-get where it is missing. Go programs run
# under valgrind only without asynchronous preemption, and are counted on
# one thread: GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1. The runtime must not
# use the RDTSCP instruction, which valgrind cannot decode on some CPUs
# (AMD EPYC among them: the run dies with SIGILL part-way):
# GODEBUG=cpu.rdtscp=off. A run that valgrind does not finish cleanly,
# or whose benchmark does not pass, stops the script with an error rather
# than give a partial count. The garbage
# collector is off (GOGC=off), because when its cycles fall would make the
# counts of the libraries that allocate depend on the iteration counts: an
# allocation counts what allocating costs, not the collection it causes
# later, which favours the libraries that allocate.
set -euo pipefail
cd "$(dirname "$0")"

BENCH="${BENCH:-.}"

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
# which callgrind, running one thread at a time, cannot tell anything
# about, and the gRPC ones, whole calls through a client and a server
# whose goroutines hand work to each other, which valgrind's one thread
# runs in an order that changes the count by up to 2x from run to run;
# each with its time per call in a quick run without valgrind, to size
# its runs.
quick=$(GOMAXPROCS=1 "./$bin" -test.run='^$' -test.bench="$BENCH" -test.benchtime=2000x |
	awk '/^Benchmark[^ \t]*\// && !/Parallel\// && !/^BenchmarkGRPC/ { print $1, $3 }')
if [ -z "$quick" ]; then
	echo "callgrind.sh: no serial benchmark matches BENCH=$BENCH" >&2
	exit 1
fi

# count prints the instructions a run of case $1 for $2 iterations
# executes, or fails, saying why, if the run did not end cleanly.
count() {
	local bench="${1%%/*}" sub="${1#*/}" log out n
	log=$(mktemp)
	if ! out=$(GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOMAXPROCS=1 GOGC=off valgrind --tool=callgrind \
		--callgrind-out-file=/dev/null --log-file="$log" "./$bin" -test.run='^$' \
		-test.bench="^${bench}\$/^${sub}\$" -test.benchtime="${2}x" 2>&1) ||
		grep -q 'Process terminating' "$log" || ! grep -q '^PASS' <<<"$out"; then
		echo "callgrind.sh: the run of $1 for $2 iterations did not finish cleanly:" >&2
		tail -n 5 "$log" >&2
		tail -n 5 <<<"$out" >&2
		rm -f "$log"
		return 1
	fi
	n=$(awk '/Collected :/ { print $NF }' "$log")
	rm -f "$log"
	if [ -z "$n" ]; then
		echo "callgrind.sh: valgrind reported no count for $1" >&2
		return 1
	fi
	echo "$n"
}

# Each case runs N1 iterations, then N1+D, with D sized so that the
# difference is about INSTR instructions (at least 2000 iterations, at
# most 100000): enough that the runtime's own background work, some
# thousands of instructions, is lost in it.
N1="${N1:-1000}"
INSTR="${INSTR:-20000000}"
echo "# instructions per call: (count(N1+D) - count(N1)) / D, N1=$N1"
echo "$quick" | while read -r c ns; do
	d=$(awk -v ns="$ns" -v t="$INSTR" 'BEGIN { d = int(t / (ns * 4)); if (d < 2000) d = 2000; if (d > 100000) d = 100000; print d }')
	i1=$(count "$c" "$N1") || exit 1
	i2=$(count "$c" "$((N1 + d))") || exit 1
	awk -v c="$c" -v i1="$i1" -v i2="$i2" -v d="$d" \
		'BEGIN { printf "%s\t%d\t%.1f instr/op\n", c, d, (i2 - i1) / d }'
done
