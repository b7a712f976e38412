package relax

import "golang.org/x/sys/cpu"

// useSinkAsm reports whether the AVX2/FMA kernels of this file run (the
// exponentials of expShift, the products of expOut, the finiteness check
// of sinkCheck). Tests switch it off to check the portable paths.
var useSinkAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func expShiftAsm(x []float64, s float64, c *[expVecLen]float64) float64

//go:noescape
func scaleRowAsm(dst, k, b []float64, a float64) bool

//go:noescape
func allAbsLEAsm(x []float64, lim float64) bool
