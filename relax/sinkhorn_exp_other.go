//go:build !amd64

package relax

// useSinkAsm is false: there are no vector kernels on this architecture.
var useSinkAsm = false

func expShiftAsm(x []float64, s float64, c *[expVecLen]float64) float64 {
	panic("relax: expShiftAsm without assembly")
}

func scaleRowAsm(dst, k, b []float64, a float64) bool {
	panic("relax: scaleRowAsm without assembly")
}

func allAbsLEAsm(x []float64, lim float64) bool {
	panic("relax: allAbsLEAsm without assembly")
}
