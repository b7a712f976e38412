//go:build race

// Package racedetect reports whether the program was built with the race
// detector, which slows code 5-20 times: tests of wall-clock budgets skip
// themselves under it.
package racedetect

// Enabled reports that the race detector is on.
const Enabled = true
