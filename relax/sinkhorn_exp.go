package relax

import "math"

// The Sinkhorn kernel needs exp(d) for d in [sinkKernMinLog, 0], n² times
// per kernel. expKern evaluates it with a table-driven method (Tang 1989):
//
//	d = k·ln2/64 + r,  |r| ≤ ln2/128,
//	exp(d) = 2^⌊k/64⌋ · 2^((k mod 64)/64) · exp(r),
//
// with ln2/64 split in two parts so that r is exact to rounding, the 64
// values 2^(j/64) tabulated, and exp(r) − 1 a degree-5 Taylor polynomial
// (truncation below |r|⁶/720 < 4e-17). The result is within a few ulps of
// math.Exp (tested to 1e-15 relative) at about a third of its cost.

const (
	expTableBits = 6
	expTableSize = 1 << expTableBits
	// expInvLn2N = 64/ln2; expLn2NHi + expLn2NLo = ln2/64, the high part
	// with trailing zero bits so that k·expLn2NHi is exact for |k| < 2²⁰.
	expInvLn2N = expTableSize / math.Ln2
	expLn2NHi  = 0x1.62e42fefa0000p-7
	expLn2NLo  = 0x1.cf79abc9e3b3ap-46
	// expRound is 1.5·2⁵²: adding it rounds a float64 of magnitude < 2⁵¹
	// to an integer held in the low bits of the mantissa.
	expRound = 0x1.8p52
)

// expTable[j] = 2^(j/64).
var expTable = func() [expTableSize]float64 {
	var t [expTableSize]float64
	for j := range t {
		t[j] = math.Exp2(float64(j) / expTableSize)
	}
	return t
}()

// expKern returns exp(d) for d in [-700, 0]; outside that range it defers
// to math.Exp.
func expKern(d float64) float64 {
	if !(d >= -700 && d <= 0) {
		return math.Exp(d)
	}
	kf := d*expInvLn2N + expRound
	k := int64(math.Float64bits(kf)) // low bits hold round(d·64/ln2) (two's complement)
	kf -= expRound
	r := (d - kf*expLn2NHi) - kf*expLn2NLo
	p := r * (1 + r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120)))))
	j := int32(k) & (expTableSize - 1)
	m := int32(k) >> expTableBits // floor division by 64
	t := expTable[j]
	scale := math.Float64frombits(uint64(int64(m)+1023) << 52)
	return (t + t*p) * scale
}

// The vector kernel (amd64 with AVX2 and FMA) evaluates the same exp without
// a table, which would need a gather: d = k·ln2 + r with |r| ≤ ln2/2 and
// exp(r) the degree-13 Taylor polynomial (truncation below
// (ln2/2)¹⁴/14! < 5e-18 relative), computed with fused multiply-adds. It is
// also within a few ulps of math.Exp, but it rounds differently from
// expKern, so results on machines with and without the kernel agree to
// rounding, not bit for bit. On one machine every kernel entry is always
// computed by the same path, so a kernel recomputed in the backward pass
// equals the forward pass's bit for bit.

// expVecLen is the length of expVecConst: 19 constants, four copies each.
const expVecLen = 19 * 4

// expVecConst holds, four times each: sinkKernMinLog, 1/ln2, 1.5·2⁵², ln2
// split in a high and a low part, then 1/k! for k = 13 down to 0.
var expVecConst = func() [expVecLen]float64 {
	c := []float64{
		sinkKernMinLog,
		0x1.71547652b82fep+0,  // 1/ln2
		expRound,              // 1.5·2⁵²
		0x1.62e42fefa39efp-1,  // ln2 rounded to float64
		0x1.abc9e3b39803fp-56, // ln2 − the above
	}
	f := 1.0
	inv := make([]float64, 14)
	for k := range inv {
		if k > 0 {
			f *= float64(k)
		}
		inv[k] = 1 / f
	}
	for k := 13; k >= 0; k-- {
		c = append(c, inv[k])
	}
	var t [expVecLen]float64
	for i, v := range c {
		for l := range 4 {
			t[4*i+l] = v
		}
	}
	return t
}()

// expShift sets x[i] = kernExp(x[i] − s) (the vector kernel's exp where it
// runs) and returns the sum of the new values. s must not be −Inf.
func expShift(x []float64, s float64) float64 {
	if !useSinkAsm {
		sum := 0.0
		for i, v := range x {
			e := kernExp(v - s)
			x[i] = e
			sum += e
		}
		return sum
	}
	m := len(x) &^ 3
	sum := 0.0
	if m > 0 {
		sum = expShiftAsm(x[:m], s, &expVecConst)
	}
	if m < len(x) {
		// The last one to three entries, padded with −Inf (which gives 0).
		inf := math.Inf(-1)
		buf := [4]float64{inf, inf, inf, inf}
		copy(buf[:], x[m:])
		sum += expShiftAsm(buf[:], s, &expVecConst)
		copy(x[m:], buf[:])
	}
	return sum
}
