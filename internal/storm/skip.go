package storm

// SkipUnderRace skips t under the race detector. A test that simulates for
// more than a few seconds calls it: a simulation runs each scenario on one
// goroutine, on a clock of its own, and shares nothing between runs, so
// the detector finds nothing in a long one that the short ones it still
// runs (RunAll's concurrent runs in TestReports, the targets on seed 1)
// do not show, and it makes a simulation about fifteen times slower. The test
// command, make test, runs the core's packages once more without the
// detector, and with it these tests.
func SkipUnderRace(t interface {
	Helper()
	Skip(args ...any)
}) {
	t.Helper()
	if RaceDetector {
		t.Skip("a long single-goroutine simulation: make test runs it without the race detector")
	}
}
