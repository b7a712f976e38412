//go:build race

package main

// raceEnabled reports whether the tests run under the race detector, which
// slows the goal test about tenfold; it is skipped there.
const raceEnabled = true
