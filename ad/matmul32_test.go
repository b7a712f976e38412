package ad

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/longtest"
)

// product returns y = op(a, b) and the adjoints of a and b for the loss
// Σ w ⊙ y.
func product(t *testing.T, op func(a, b *Var) *Var, a, b, w *Tensor) (y, ga, gb []float64) {
	t.Helper()
	tp := NewTape()
	va, vb := tp.Variable(a), tp.Variable(b)
	yv := op(va, vb)
	require.NoError(t, tp.Backward(Sum(Mul(yv, tp.Const(w)))))
	return append([]float64(nil), yv.Value()...), append([]float64(nil), va.Grad()...), append([]float64(nil), vb.Grad()...)
}

func absTensor(x *Tensor) *Tensor {
	y := x.Clone()
	for i, v := range y.Data {
		y.Data[i] = math.Abs(v)
	}
	return y
}

// TestMatMul32Error checks MatMul32's value and adjoints against MatMul's
// entry by entry: each is a float32 sum of at most L products, so it is
// within (L+2)·2⁻²⁴ of the same sum of absolute values, which MatMul
// computes on |a|, |b| and |w|. The value must also be made of float32
// numbers, which a float64 product would not give.
func TestMatMul32Error(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	for _, c := range append(matmulShapes, struct {
		name string
		a, b []int
	}{"2x2/layer", []int{100, 300}, []int{300, 70}}) {
		a := randTensor(rng, -1, 1, c.a...)
		b := randTensor(rng, -1, 1, c.b...)
		w := randTensor(rng, -1, 1, naiveShape(c.a, c.b)...)
		y64, ga64, gb64 := product(t, MatMul, a, b, w)
		y32, ga32, gb32 := product(t, MatMul32, a, b, w)
		ya, gaa, gba := product(t, MatMul, absTensor(a), absTensor(b), absTensor(w))
		// The longest sum: k for the value; n, or batch·n for a shared
		// a, for its adjoint; m, or batch·m for a shared b, for b's.
		m, k, n := c.a[len(c.a)-2], c.a[len(c.a)-1], c.b[len(c.b)-1]
		batch := len(y64) / (m * n)
		l := max(k, batch*n, batch*m)
		inexact := 0
		for _, s := range []struct {
			name           string
			got, want, abs []float64
		}{{"value", y32, y64, ya}, {"grad a", ga32, ga64, gaa}, {"grad b", gb32, gb64, gba}} {
			for i := range s.want {
				bound := float64(l+2) * 0x1p-24 * s.abs[i]
				require.LessOrEqual(t, math.Abs(s.got[i]-s.want[i]), bound, "%s %s entry %d", c.name, s.name, i)
				if s.got[i] != s.want[i] {
					inexact++
				}
			}
		}
		for i, v := range y32 {
			require.Equal(t, v, float64(float32(v)), "%s: value %d is not a float32", c.name, i)
		}
		require.Positive(t, inexact, "%s: MatMul32 gave MatMul's bits everywhere", c.name)
	}
}

// TestMatMul32Gradients checks MatMul32's adjoints by central differences.
// The product is linear in each factor, so a difference with a large step
// is exact but for rounding, which at float32 is far above 1e-6: the step
// is 0.5 and the tolerance 1e-4, still far below the error of a wrong
// adjoint.
func TestMatMul32Gradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 2))
	// The four operand forms at small sizes; without the build tag long only these (the
	// large shapes take a minute under the race detector).
	shapes := []struct {
		name string
		a, b []int
	}{
		{"2x2/small", []int{7, 5}, []int{5, 11}},
		{"3x3/small", []int{2, 4, 6}, []int{2, 6, 5}},
		{"3x2/small", []int{3, 7, 6}, []int{6, 5}},
		{"2x3/small", []int{4, 6}, []int{3, 6, 7}},
	}
	if longtest.Enabled {
		shapes = append(shapes, matmulShapes...)
	}
	for _, c := range shapes {
		a := randTensor(rng, -1, 1, c.a...)
		b := randTensor(rng, -1, 1, c.b...)
		err := GradCheck{Step: 0.5, Tol: 1e-4}.Check(func(_ *Tape, xs []*Var) *Var { return MatMul32(xs[0], xs[1]) }, a, b)
		require.NoError(t, err, c.name)
	}
}

func TestMatMul32Errors(t *testing.T) {
	tp := NewTape()
	a, b := tp.Variable(Zeros(2, 3)), tp.Variable(Zeros(4, 5))
	MatMul32(a, b)
	require.ErrorContains(t, tp.Err(), "MatMul32: inner dimensions differ")
}
