//go:build !race

package celegans

const raceEnabled = false
