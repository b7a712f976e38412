package f64

import "math"

// AdamCoef holds the constants of one Adam update (see AdamUpdate). The
// complements are passed in, not derived, so that the caller's own
// rounding of 1 − β is used.
type AdamCoef struct {
	B1, OneMinusB1 float64 // β₁ and 1 − β₁
	B2, OneMinusB2 float64 // β₂ and 1 − β₂
	Step           float64 // η / (1 − β₁ᵗ)
	C2             float64 // 1 − β₂ᵗ
	Eps            float64 // ε
}

// AdamUpdate applies one Adam step to the parameters x from their gradients
// g with the moments m and v, and zeroes g. For every j, in this order and
// with every operation rounded on its own (no fused multiply-adds):
//
//	m[j] = β₁·m[j] + (1−β₁)·g[j]
//	v[j] = β₂·v[j] + ((1−β₂)·g[j])·g[j]
//	x[j] = x[j] − (step·m[j]) / (√(v[j]/c₂) + ε)
//	g[j] = 0
//
// Each operation is an IEEE-754 one (square root and division correctly
// rounded), so both paths give the bits of the scalar loop written out in
// Go; the assembly path does four entries per instruction. It panics if g,
// m or v is shorter than x.
func AdamUpdate(c *AdamCoef, x, g, m, v []float64) {
	n := len(x)
	if len(g) < n || len(m) < n || len(v) < n {
		panic("f64: AdamUpdate: g, m or v shorter than x")
	}
	if n == 0 {
		return
	}
	g, m, v = g[:n], m[:n], v[:n]
	if useAsm {
		adamAsm(n, c, &x[0], &g[0], &m[0], &v[0])
		return
	}
	adamGo(c, x, g, m, v)
}

// adamGo is AdamUpdate's scalar loop. The explicit float64 conversions
// forbid the compiler from fusing a multiply and an add (which it may do
// on targets with FMA), so the bits are those of separately rounded
// operations on every architecture.
func adamGo(c *AdamCoef, x, g, m, v []float64) {
	b1, ob1, b2, ob2, step, c2, eps := c.B1, c.OneMinusB1, c.B2, c.OneMinusB2, c.Step, c.C2, c.Eps
	for j := range x {
		gj := g[j]
		mj := float64(b1*m[j]) + float64(ob1*gj)
		vj := float64(b2*v[j]) + float64(float64(ob2*gj)*gj)
		m[j], v[j] = mj, vj
		x[j] -= float64(step*mj) / (math.Sqrt(vj/c2) + eps)
		g[j] = 0
	}
}
