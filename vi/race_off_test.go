//go:build !race

package vi_test

const raceEnabled = false
