//go:build !long

package longtest

// Enabled reports whether the long tests run (the build tag long).
const Enabled = false
