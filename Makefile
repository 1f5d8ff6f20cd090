# The test command of README.md: every module of this repository, with the
# race detector, as CI runs it. The core and each integration are modules
# of their own, so that the core keeps its two dependencies; bench/ (the
# peer benchmarks) is vetted and built by .ci/run.
MODULES := . awsretry grpcretry otelretry redisretry

.PHONY: test demo modules

# Every module's tests with the race detector, then the core module's
# again without it: the simulations that run for more than a few seconds
# skip themselves under the detector, which finds nothing in a simulation
# on one goroutine and makes it about fifteen times slower (SkipUnderRace
# in internal/storm). The 30-minute limit is for a slow machine.
test:
	@set -e; for m in $(MODULES); do echo "-- $$m, race detector"; (cd $$m && go test -race -timeout 30m ./...); done
	@echo "-- ., without the race detector (the long simulations)"; go test -timeout 30m ./...

demo:
	go run ./examples/storm

modules:
	@echo $(MODULES)
