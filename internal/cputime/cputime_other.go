//go:build !unix

package cputime

import "time"

// Supported reports whether Process reads a real CPU time.
const Supported = false

// Process returns 0: the CPU time is not read on this system.
func Process() time.Duration { return 0 }
