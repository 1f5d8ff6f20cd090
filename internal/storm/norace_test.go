//go:build !race

package storm

// raceDetector reports whether the tests run under the race detector.
const raceDetector = false
