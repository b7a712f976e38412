package relax

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
)

func TestSinkhornImplicitMatchesUnrolled(t *testing.T) {
	// Once the iteration has converged (row sums within 1e-14), the
	// gradient of the truncated operator equals the gradient of the limit
	// up to the remaining convergence error, so the implicit and the
	// unrolled gradients agree; 1e-9 relative to the largest entry leaves
	// room for the conditioning of the implicit system (1/(1 − σ₂²)).
	rng := rand.New(rand.NewPCG(40, 40))
	for _, c := range []struct {
		shape []int
		tau   float64
		iters int
	}{
		{[]int{5, 5}, 1, 200},
		{[]int{3, 6, 6}, 0.5, 400},
		{[]int{8, 8}, 0.3, 2000},
	} {
		for _, logOut := range []bool{false, true} {
			name := fmt.Sprintf("shape=%v tau=%g log=%v", c.shape, c.tau, logOut)
			x := randTensor(rng, 1, c.shape...)
			r := randTensor(rng, 1, c.shape...)
			run := func(f func(*ad.Var) *ad.Var) ([]float64, []float64) {
				tp := ad.NewTape()
				xv := tp.Variable(x)
				y := f(xv)
				require.NoError(t, tp.Backward(ad.Sum(ad.Mul(y, tp.Const(r)))), name)
				return append([]float64(nil), y.Value()...), append([]float64(nil), xv.Grad()...)
			}
			val, grad := run(func(v *ad.Var) *ad.Var {
				return sinkhornImplicitVar("test", v, c.tau, 1e-14, c.iters, logOut)
			})
			wantVal, wantGrad := run(func(v *ad.Var) *ad.Var { return sinkhornVar("test", v, c.tau, c.iters, logOut) })
			gmax := 0.0
			for _, g := range wantGrad {
				gmax = math.Max(gmax, math.Abs(g))
			}
			for k := range val {
				require.InDelta(t, wantVal[k], val[k], 1e-12, "%s value %d", name, k)
				require.InDelta(t, wantGrad[k], grad[k], 1e-9*gmax, "%s grad %d", name, k)
			}
		}
	}
}

func TestSinkhornImplicitGradCheck(t *testing.T) {
	// The forward pass converges to 1e-14, so finite differences of it are
	// finite differences of the limit S(X/τ) to ~1e-8.
	rng := rand.New(rand.NewPCG(41, 41))
	for _, shape := range [][]int{{4, 4}, {2, 3, 3}} {
		for _, tau := range []float64{0.5, 2} {
			x := randTensor(rng, 1, shape...)
			for _, op := range []func(*ad.Var, float64, float64, int) *ad.Var{SinkhornImplicitVar, LogSinkhornImplicitVar} {
				err := ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
					return op(v[0], tau, 1e-14, 100000)
				}, x)
				require.NoError(t, err, "shape=%v tau=%g", shape, tau)
			}
		}
	}
}

func TestSinkhornImplicitErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 42))
	tp := ad.NewTape()
	y := SinkhornImplicitVar(tp.Variable(randTensor(rng, 3, 2, 5, 5)), 0.05, 1e-12, 3)
	require.NotNil(t, y)
	require.Error(t, tp.Err())
	assert.True(t, errors.Is(tp.Err(), ErrNotConverged), tp.Err().Error())
	assert.Contains(t, tp.Err().Error(), "relax: SinkhornImplicitVar: matrix 0:")

	for _, c := range []struct {
		x     *ad.Tensor
		tol   float64
		iters int
		msg   string
	}{
		{randTensor(rng, 1, 3, 3), 0, 10, "tol must be > 0"},
		{randTensor(rng, 1, 3, 3), 1e-6, 0, "iters must be >= 1"},
		{randTensor(rng, 1, 3, 4), 1e-6, 10, "shape must be"},
	} {
		tp := ad.NewTape()
		y := LogSinkhornImplicitVar(tp.Variable(c.x), 1, c.tol, c.iters)
		require.NotNil(t, y)
		assert.ErrorContains(t, tp.Err(), "relax: LogSinkhornImplicitVar: "+c.msg)
	}
	assert.Nil(t, SinkhornImplicitVar(nil, 1, 1e-6, 10))
}

func TestSinkhornImplicitSingular(t *testing.T) {
	// A block-diagonal support splits the bipartite graph in two, so the
	// implicit system is singular; the backward pass must report it.
	inf := math.Inf(-1)
	x := &ad.Tensor{Shape: []int{4, 4}, Data: []float64{
		0, 1, inf, inf,
		1, 0, inf, inf,
		inf, inf, 0, 2,
		inf, inf, 2, 0,
	}}
	tp := ad.NewTape()
	xv := tp.Variable(x)
	y := SinkhornImplicitVar(xv, 1, 1e-12, 1000)
	require.NoError(t, tp.Err())
	err := tp.Backward(ad.Sum(ad.Mul(y, y)))
	assert.ErrorContains(t, err, "not positive definite")
}
