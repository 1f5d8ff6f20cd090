# The test command of README.md: every module of this repository, with the
# race detector, as CI runs it. The core and each integration are modules
# of their own, so that the core keeps its two dependencies; bench/ (the
# peer benchmarks) is vetted and built by .ci/run.
MODULES := . awsretry grpcretry otelretry redisretry

.PHONY: test demo modules

# The storm simulations take minutes under the race detector on a
# two-core machine: past go test's default 10-minute limit per package
# on a slow one.
test:
	@set -e; for m in $(MODULES); do echo "-- $$m"; (cd $$m && go test -race -timeout 30m ./...); done

demo:
	go run ./examples/storm

modules:
	@echo $(MODULES)
