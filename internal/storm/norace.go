//go:build !race

package storm

// RaceDetector reports whether the program was built with the race
// detector (go test -race): see SkipUnderRace.
const RaceDetector = false
