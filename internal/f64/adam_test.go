package f64

import (
	"math"
	"math/rand/v2"
	"testing"
)

// adamRef is one Adam update of one entry, every operation rounded on its
// own, as package optim wrote it before AdamUpdate existed.
func adamRef(c *AdamCoef, x, g, m, v float64) (float64, float64, float64) {
	m = float64(c.B1*m) + float64(c.OneMinusB1*g)
	v = float64(c.B2*v) + float64(float64(c.OneMinusB2*g)*g)
	x -= float64(c.Step*m) / (math.Sqrt(v/c.C2) + c.Eps)
	return x, m, v
}

// TestAdamUpdateBits checks both paths entry by entry against the scalar
// update, bit for bit, over every tail length and special values (signed
// zeros, subnormals, huge and tiny gradients, infinities, NaN), and that
// the gradients are zeroed.
func TestAdamUpdateBits(t *testing.T) {
	special := []float64{0, math.Copysign(0, -1), 5e-324, -1e-310, 1e300, -1e-300, math.Inf(1), math.Inf(-1), math.NaN(), 1, -1}
	paths(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(4, 9))
		for _, c := range []AdamCoef{
			{B1: 0.9, OneMinusB1: 1 - 0.9, B2: 0.999, OneMinusB2: 1 - 0.999, Step: 1e-3 / (1 - 0.9), C2: 1 - 0.999, Eps: 1e-8},
			{B1: 0.5, OneMinusB1: 0.5, B2: 0.75, OneMinusB2: 0.25, Step: 0.3, C2: 0.0625, Eps: 1e-3},
		} {
			for n := 0; n <= 41; n++ {
				x, g, m, v := randVec(rng, n), randVec(rng, n), randVec(rng, n), randVec(rng, n)
				for i := range v {
					v[i] = math.Abs(v[i])
					if rng.IntN(4) == 0 {
						g[i] = special[rng.IntN(len(special))]
					}
					if rng.IntN(8) == 0 {
						m[i] = special[rng.IntN(len(special))]
					}
					if rng.IntN(8) == 0 {
						x[i] = special[rng.IntN(len(special))]
					}
				}
				wx, wm, wv := make([]float64, n), make([]float64, n), make([]float64, n)
				for i := range x {
					wx[i], wm[i], wv[i] = adamRef(&c, x[i], g[i], m[i], v[i])
				}
				AdamUpdate(&c, x, g, m, v)
				for i := range x {
					for _, p := range [][2]float64{{x[i], wx[i]}, {m[i], wm[i]}, {v[i], wv[i]}} {
						same := math.Float64bits(p[0]) == math.Float64bits(p[1]) || (math.IsNaN(p[0]) && math.IsNaN(p[1]))
						if !same {
							t.Fatalf("n=%d entry %d: got %v, want %v", n, i, p[0], p[1])
						}
					}
					if math.Float64bits(g[i]) != 0 {
						t.Fatalf("n=%d: g[%d] = %v, want +0", n, i, g[i])
					}
				}
			}
		}
	})
}

func TestAdamUpdatePanics(t *testing.T) {
	var c AdamCoef
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a short moment slice")
		}
	}()
	AdamUpdate(&c, make([]float64, 3), make([]float64, 3), make([]float64, 2), make([]float64, 3))
}

func BenchmarkAdamUpdate(b *testing.B) {
	const n = 1 << 20
	rng := rand.New(rand.NewPCG(1, 1))
	x, m, v := randVec(rng, n), randVec(rng, n), randVec(rng, n)
	for i := range v {
		v[i] = math.Abs(v[i])
	}
	g := make([]float64, n)
	c := AdamCoef{B1: 0.9, OneMinusB1: 1 - 0.9, B2: 0.999, OneMinusB2: 1 - 0.999, Step: 1e-3, C2: 1e-3, Eps: 1e-8}
	saved := useAsm
	defer func() { useAsm = saved }()
	for _, asm := range []bool{false, true} {
		if asm && !hasAsm {
			continue
		}
		useAsm = asm
		b.Run(map[bool]string{false: "fallback", true: "asm"}[asm], func(b *testing.B) {
			b.SetBytes(8 * 8 * n)
			for b.Loop() {
				AdamUpdate(&c, x, g, m, v)
			}
		})
	}
}
