# The test command of README.md: every module of this repository, with the
# race detector, as CI runs it. The core and each integration are modules
# of their own, so that the core keeps its two dependencies; bench/ (the
# peer benchmarks) is vetted and built by .ci/run.
MODULES := . awsretry grpcretry otelretry redisretry

.PHONY: test demo modules

test:
	@set -e; for m in $(MODULES); do echo "-- $$m"; (cd $$m && go test -race ./...); done

demo:
	go run ./examples/storm

modules:
	@echo $(MODULES)
