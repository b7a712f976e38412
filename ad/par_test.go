package ad

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/par"
)

// TestElementwiseThreads: the ops that split long slices over goroutines
// (unary ops, full-shape binary ops, Reshape, the identity and scale
// adjoints, zeroed buffers) give the same bits on one thread and on
// several, for a tensor longer than par.Grain.
func TestElementwiseThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	const n = 3 * (par.Grain + 17)
	rng := rand.New(rand.NewPCG(3, 5))
	x := randTensor(rng, -2, 2, n)
	y := randTensor(rng, 0.5, 2, n)
	run := func() (val, gx, gy []float64) {
		px, py := NewParam("x", x), NewParam("y", y)
		tp := NewTape()
		a, b := tp.Param(px), tp.Param(py)
		z := Add(Scale(Exp(a), 0.3), Div(Mul(a, b), Sub(b, AddConst(Neg(b), -3))))
		z = Reshape(Log1p(Square(Sigmoid(z))), 3, -1)
		loss := Sum(Mul(z, Reshape(Tanh(a), 3, -1)))
		require.NoError(t, tp.Backward(loss))
		return append([]float64(nil), z.Value()...), append([]float64(nil), px.Grad.Data...), append([]float64(nil), py.Grad.Data...)
	}
	runtime.GOMAXPROCS(1)
	v1, gx1, gy1 := run()
	runtime.GOMAXPROCS(4)
	v4, gx4, gy4 := run()
	for name, pair := range map[string][2][]float64{"value": {v1, v4}, "x gradient": {gx1, gx4}, "y gradient": {gy1, gy4}} {
		for i := range pair[0] {
			if math.Float64bits(pair[0][i]) != math.Float64bits(pair[1][i]) {
				t.Fatalf("%s %d: %v on one thread, %v on four", name, i, pair[0][i], pair[1][i])
			}
		}
	}
}
