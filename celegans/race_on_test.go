//go:build race

package celegans

// raceEnabled reports that the tests run under the race detector, which
// slows code 5-20 times: the tests of wall-clock budgets skip themselves.
const raceEnabled = true
