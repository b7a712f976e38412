package f64

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/internal/longtest"
)

// transcInputs returns inputs that cover every branch of math.Exp and
// math.Log1p that the vector paths take or hand back: random values on
// a log scale of both signs, the edges of each branch and a step either
// side of them, and the special values.
func transcInputs(r *rand.Rand, n int) []float64 {
	edges := []float64{0, math.Copysign(0, -1), 1, -1, 2, 0.5, 708, -708, 709, -709, 709.78, -745.2, -746, 1e-300, 5e-324,
		0x1p-29, 0x1p-54, 0x1p-1022, 0x1p-1023, math.Sqrt2 / 2, 0.5, 0.75, math.Sqrt2 - 1, math.Sqrt2/2 - 1, 1 - 0x1p-20, 1 - 0x1p-52, 0.999, 1e-10, 1e300,
		math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, math.SmallestNonzeroFloat64, -0.5, -0.9999}
	var x []float64
	for _, e := range edges {
		x = append(x, e, math.Nextafter(e, math.Inf(1)), math.Nextafter(e, math.Inf(-1)))
	}
	for len(x) < n {
		switch r.IntN(4) {
		case 0: // a log scale over all magnitudes
			x = append(x, math.Copysign(math.Exp2(r.Float64()*2100-1075), r.Float64()-0.5))
		case 1: // the range of exp(−|v|)
			x = append(x, r.Float64())
		case 2: // logits
			x = append(x, r.NormFloat64()*30)
		default: // near the branch points of Log1p
			x = append(x, math.Sqrt2-1+(r.Float64()-0.5)*1e-6)
		}
	}
	return x
}

func TestTranscBits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 200_003
	if longtest.Enabled {
		n = 2_000_003 // about ten times as long
	}
	x := transcInputs(r, n)
	for _, asm := range []bool{false, true} {
		if asm && !hasAsm {
			continue
		}
		saved := useAsm
		useAsm = asm
		for _, tc := range []struct {
			name string
			f    func(dst, x []float64)
			want func(float64) float64
			in   func(float64) float64
		}{
			{"Exp", Exp, math.Exp, func(v float64) float64 { return v }},
			{"Log", Log, math.Log, func(v float64) float64 { return v }},
			{"Log(|v|)", Log, math.Log, math.Abs},
			{"Log1p", Log1p, math.Log1p, func(v float64) float64 { return v }},
			{"Log1p(exp(-|v|))", Log1p, math.Log1p, func(v float64) float64 { return math.Exp(-math.Abs(v)) }},
		} {
			in := make([]float64, len(x))
			for i, v := range x {
				in[i] = tc.in(v)
			}
			// Every offset, so that each entry is seen in each lane and in
			// the scalar tail, and once in place.
			for off := 0; off < 4; off++ {
				got := make([]float64, len(in)-off)
				tc.f(got, in[off:])
				for i, g := range got {
					if w := tc.want(in[off+i]); math.Float64bits(g) != math.Float64bits(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
						t.Fatalf("asm=%v %s(%v) = %v (%#x), want %v (%#x)", asm, tc.name, in[off+i], g, math.Float64bits(g), w, math.Float64bits(w))
					}
				}
			}
			inPlace := append([]float64(nil), in...)
			tc.f(inPlace, inPlace)
			for i, g := range inPlace {
				if w := tc.want(in[i]); math.Float64bits(g) != math.Float64bits(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
					t.Fatalf("asm=%v in place %s(%v) = %v, want %v", asm, tc.name, in[i], g, w)
				}
			}
		}
		useAsm = saved
	}
}

func TestTranscShortDst(t *testing.T) {
	for name, f := range map[string]func(dst, x []float64){"Exp": Exp, "Log": Log, "Log1p": Log1p} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with a short dst did not panic", name)
				}
			}()
			f(make([]float64, 3), make([]float64, 4))
		}()
	}
}

func BenchmarkTransc(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float64, 784*100)
	for i := range x {
		x[i] = -math.Abs(r.NormFloat64() * 5)
	}
	e := make([]float64, len(x))
	Exp(e, x)
	dst := make([]float64, len(x))
	for _, asm := range []bool{false, true} {
		name := "go"
		if asm {
			name = "asm"
		}
		saved := useAsm
		useAsm = asm && hasAsm
		b.Run("Exp/"+name, func(b *testing.B) {
			for b.Loop() {
				Exp(dst, x)
			}
		})
		b.Run("Log/"+name, func(b *testing.B) {
			for b.Loop() {
				Log(dst, e)
			}
		})
		b.Run("Log1p/"+name, func(b *testing.B) {
			for b.Loop() {
				Log1p(dst, e)
			}
		})
		useAsm = saved
	}
}

func TestAddLogisticGradBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	x := transcInputs(r, 100_003)
	n := len(x)
	e, y, dst0 := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, v := range x {
		e[i] = math.Exp(-math.Abs(v))
		y[i] = float64(r.IntN(2))
		dst0[i] = r.NormFloat64()
	}
	want := append([]float64(nil), dst0...)
	for i := range want {
		s := 1 / (1 + e[i])
		if x[i] < 0 {
			s = e[i] / (1 + e[i])
		}
		want[i] += float64(-0.37 * (s - y[i]))
	}
	for _, asm := range []bool{false, true} {
		if asm && !hasAsm {
			continue
		}
		saved := useAsm
		useAsm = asm
		for off := 0; off < 4; off++ {
			got := append([]float64(nil), dst0[off:]...)
			AddLogisticGrad(got, -0.37, x[off:], e[off:], y[off:])
			for i, g := range got {
				if w := want[off+i]; math.Float64bits(g) != math.Float64bits(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
					t.Fatalf("asm=%v entry %d (x=%v): %v, want %v", asm, off+i, x[off+i], g, w)
				}
			}
		}
		useAsm = saved
	}
	defer func() {
		if recover() == nil {
			t.Error("AddLogisticGrad with a short y did not panic")
		}
	}()
	AddLogisticGrad(make([]float64, 4), 1, make([]float64, 4), make([]float64, 4), make([]float64, 3))
}
