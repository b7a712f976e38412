//go:build race

package main

// raceEnabled reports that the tests run under the race detector, which
// slows code 5-20 times: the tests of wall-clock budgets skip themselves.
const raceEnabled = true
