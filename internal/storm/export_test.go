package storm

// RaceDetector is raceDetector, for the tests of package storm_test.
const RaceDetector = raceDetector
