//go:build !amd64 || amd64.v3

package f64

// log1pVec: at GOAMD64=v3 and above the compiler may fuse math.Log1p's
// multiply-adds, which the assembly does not reproduce.
const log1pVec = false
