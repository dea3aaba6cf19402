//go:build race

package enginetest

// raceDetector: the binary runs under the race detector, which makes the CPU backend's
// reference for the long-context walks take tens of minutes.
const raceDetector = true
