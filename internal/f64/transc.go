package f64

import "math"

// Exp sets dst[i] = math.Exp(x[i]) for i < len(x), with exactly the bits
// math.Exp returns on this machine. dst may be x itself; otherwise the two
// must not overlap. It panics if dst is shorter than x.
//
// On amd64 with AVX2 and FMA, where math.Exp runs its fused-multiply-add
// assembly, the assembly here runs the same operations on four entries at
// a time: the reduction x = k·ln 2 + r with ln 2 in two parts, the Taylor
// polynomial of e^(r/16) squared four times, and the scaling by 2^k.
// Entries outside [−708, 708], where math.Exp branches (overflow,
// subnormal results, infinities, NaN), go through math.Exp itself, four at
// a time.
func Exp(dst, x []float64) { apply("Exp", dst, x, useAsm, expAsm, math.Exp) }

// Log sets dst[i] = math.Log(x[i]) for i < len(x), with exactly the bits
// math.Log returns. dst may be x itself; otherwise the two must not
// overlap. It panics if dst is shorter than x.
//
// On amd64 with AVX2 and FMA the assembly runs the operations of
// math.Log's amd64 assembly (the reduction to f in [√2/2 − 1, √2 − 1] and
// its polynomial in s = f/(2+f), no fused multiply-adds) on four positive
// normal entries at a time; other entries (zero, subnormal, negative,
// infinite, NaN) go through math.Log, four at a time.
func Log(dst, x []float64) { apply("Log", dst, x, useAsm, logAsm, math.Log) }

// Log1p sets dst[i] = math.Log1p(x[i]) for i < len(x), with exactly the
// bits math.Log1p returns. dst may be x itself; otherwise the two must not
// overlap. It panics if dst is shorter than x.
//
// The assembly path covers 0 ≤ x < 1 − 2⁻²⁰, the range of e^(−|v|) in a
// softplus or a log-sigmoid: four entries at a time it runs the operations
// of math.Log1p's branches for that range (x − x²/2 below 2⁻²⁹, the
// polynomial in s = f/(2+f) with f = x below √2 − 1, and with f from 1 + x
// reduced to [√2/2, √2) and its correction term above), each rounded on its
// own, and picks each entry's branch by mask. Other entries go through
// math.Log1p, four at a time. It runs on amd64 with AVX2 and FMA unless the
// build targets GOAMD64=v3 or above, where the compiler may fuse the
// multiply-adds of math.Log1p's Go code and the bits would differ.
func Log1p(dst, x []float64) { apply("Log1p", dst, x, useAsm && log1pVec, log1pAsm, math.Log1p) }

// apply sets dst[i] = f(x[i]) for i < len(x). With vec, kern does the
// first n − n mod 4 entries four at a time: kern(n, dst, x) processes
// groups from the start and returns how many entries it did, stopping
// before the first group it cannot take, which f then does entry by
// entry before kern goes on after it. f does the tail.
func apply(name string, dst, x []float64, vec bool, kern func(n int, dst, x *float64) int, f func(float64) float64) {
	n := len(x)
	if len(dst) < n {
		panic("f64: " + name + ": dst shorter than x")
	}
	i := 0
	for vec && i+4 <= n {
		i += kern(n-i, &dst[i], &x[i])
		if i+4 <= n {
			for j := i; j < i+4; j++ {
				dst[j] = f(x[j])
			}
			i += 4
		}
	}
	for ; i < n; i++ {
		dst[i] = f(x[i])
	}
}

// AddLogisticGrad adds g·(σ(x[i]) − y[i]) to dst[i] for i < len(dst), the
// adjoint of the Bernoulli log-loss with logits x and targets y, where
// e[i] = exp(−|x[i]|) gives the logistic function without overflow:
// σ = 1/(1+e) for x ≥ 0 and e/(1+e) for x < 0. Every operation is rounded
// on its own, so both paths give the bits of
//
//	s := 1 / (1 + e[i])
//	if x[i] < 0 {
//		s = e[i] / (1 + e[i])
//	}
//	dst[i] += g * (s - y[i])
//
// It panics if x, e or y is shorter than dst.
func AddLogisticGrad(dst []float64, g float64, x, e, y []float64) {
	n := len(dst)
	if len(x) < n || len(e) < n || len(y) < n {
		panic("f64: AddLogisticGrad: x, e or y shorter than dst")
	}
	i := 0
	if useAsm && n >= 4 {
		logisticGradAsm(n, g, &dst[0], &x[0], &e[0], &y[0])
		i = n &^ 3
	}
	for ; i < n; i++ {
		s := 1 / (1 + e[i])
		if x[i] < 0 {
			s = e[i] / (1 + e[i])
		}
		dst[i] += float64(g * (s - y[i]))
	}
}
