package ad

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// rowOps are the row-wise ops that split large inputs over goroutines
// (forRows).
var rowOps = []struct {
	name string
	f    func(x *Var, axis int) *Var
}{
	{"LogSumExp", LogSumExp},
	{"Softmax", Softmax},
	{"LogSoftmax", LogSoftmax},
	{"SumAxis", SumAxis},
	{"MeanAxis", MeanAxis},
}

// rowOpBits returns the bits of f(x, axis) and of x̄ for the loss
// Σ w ⊙ f(x, axis), with x̄ accumulated onto a first adjoint from
// Σ x (so that the adjoint code's accumulating path is the one taken).
func rowOpBits(f func(*Var, int) *Var, x *Tensor, axis int, w *Tensor) []uint64 {
	tp := NewTape()
	vx := tp.Variable(x)
	y := f(vx, axis)
	loss := Add(Sum(Mul(y, tp.Const(w))), Sum(vx))
	if err := tp.Backward(loss); err != nil {
		panic(err)
	}
	var bits []uint64
	for _, s := range [][]float64{y.Value(), vx.Grad()} {
		for _, v := range s {
			bits = append(bits, math.Float64bits(v))
		}
	}
	return bits
}

// TestRowOpsIndependentOfGOMAXPROCS checks that the row-wise ops give the
// same bits, values and adjoints, at GOMAXPROCS 1, 2 and 3 on inputs large
// enough to be split, and the bits of the same op applied to each outer
// slice on its own (small, so never split).
func TestRowOpsIndependentOfGOMAXPROCS(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	cases := []struct {
		shape []int
		axis  int
	}{
		{[]int{2000, 10}, 1},     // the VAE's logits: rows of 10
		{[]int{100, 20, 10}, -1}, // the same as a batch of 20 latents
		{[]int{101, 33, 7}, 1},   // a middle axis (inner > 1), uneven blocks
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range cases {
		x := randTensor(rng, -30, 30, c.shape...)
		for _, op := range rowOps {
			name := fmt.Sprintf("%s%v/axis%d", op.name, c.shape, c.axis)
			w := randTensor(rng, -1, 1, shapeOf(op.f, x, c.axis)...)
			require.Greater(t, len(x.Data), parRowEntries, name)

			// Reference: each outer slice through the op by itself.
			outer, rest, wRest := c.shape[0], len(x.Data)/c.shape[0], len(w.Data)/c.shape[0]
			axis := c.axis
			if axis < 0 {
				axis += len(c.shape)
			}
			var yRef, gRef []uint64
			for o := range outer {
				xs := &Tensor{Shape: append([]int{1}, c.shape[1:]...), Data: x.Data[o*rest : (o+1)*rest]}
				ws := &Tensor{Shape: append([]int{1}, w.Shape[1:]...), Data: w.Data[o*wRest : (o+1)*wRest]}
				b := rowOpBits(op.f, xs, axis, ws)
				yRef = append(yRef, b[:wRest]...)
				gRef = append(gRef, b[wRest:]...)
			}
			ref := append(yRef, gRef...)
			for _, procs := range []int{1, 2, 3} {
				runtime.GOMAXPROCS(procs)
				require.Equal(t, ref, rowOpBits(op.f, x, axis, w), "%s: GOMAXPROCS=%d differs from the op on each slice", name, procs)
			}
		}
	}
}

// shapeOf returns the shape of f(x, axis).
func shapeOf(f func(*Var, int) *Var, x *Tensor, axis int) []int {
	tp := NewTape()
	return f(tp.Const(x), axis).Shape()
}
