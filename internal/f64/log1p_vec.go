//go:build amd64 && !amd64.v3

package f64

// log1pVec: math.Log1p's Go code is compiled without fused multiply-adds
// below GOAMD64=v3, so the assembly's separately rounded operations give
// its bits.
const log1pVec = true
