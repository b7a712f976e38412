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

// spsConnectedRows is spsRandRows retried until the pattern is one block,
// so that the iteration converges linearly.
func spsConnectedRows(t testing.TB, rng *rand.Rand, n int, density float64) [][]int {
	for {
		rows := spsRandRows(rng, n, density)
		if mustPattern(t, rows).Blocks() == 1 {
			return rows
		}
	}
}

func TestSparseSinkhornImplicitMatchesUnrolled(t *testing.T) {
	// Once converged, the implicit gradient and the unrolled one agree
	// (see TestSinkhornImplicitMatchesUnrolled), and so does the dense
	// implicit gradient on the matrix with −Inf outside the pattern.
	rng := rand.New(rand.NewPCG(90, 90))
	for _, c := range []struct {
		rows  [][]int
		batch int
		tau   float64
		iters int
	}{
		{spsConnectedRows(t, rng, 5, 0.5), 1, 1, 300},
		{spsConnectedRows(t, rng, 8, 0.4), 3, 0.5, 600},
		{spsBandRows(rng, 12, 5, 3), 2, 0.3, 4000},
	} {
		p := mustPattern(t, c.rows)
		require.Equal(t, 1, p.Blocks())
		n, nnz := p.N(), p.NNZ()
		x := spsRandValues(rng, p, c.batch, 1)
		r := spsRandValues(rng, p, c.batch, 1)
		shape := []int{c.batch, nnz}
		for _, logOut := range []bool{false, true} {
			name := fmt.Sprintf("n=%d tau=%g log=%v", n, c.tau, logOut)
			xt, rt := &ad.Tensor{Shape: shape, Data: x}, &ad.Tensor{Shape: shape, Data: r}
			val, grad := spsRunBoth(t, xt, rt, func(v *ad.Var) *ad.Var {
				return sparseSinkhornImplicitVar("test", v, p, c.tau, 1e-14, c.iters, logOut)
			})
			wantVal, wantGrad := spsRunBoth(t, xt, rt, func(v *ad.Var) *ad.Var {
				return sparseSinkhornVar("test", v, p, c.tau, c.iters, logOut)
			})
			gmax := 0.0
			for _, g := range wantGrad {
				gmax = math.Max(gmax, math.Abs(g))
			}
			for e := range val {
				require.InDelta(t, wantVal[e], val[e], 1e-12, "%s value %d", name, e)
				require.InDelta(t, wantGrad[e], grad[e], 1e-9*gmax, "%s grad %d", name, e)
			}
			// The dense implicit operator.
			dx := make([]float64, 0, c.batch*n*n)
			dr := make([]float64, 0, c.batch*n*n)
			for k := 0; k < c.batch; k++ {
				dx = append(dx, spsDenseOf(t, p, x, k).RawMatrix().Data...)
				d, _ := p.Dense(r[k*nnz:(k+1)*nnz], 0)
				dr = append(dr, d.RawMatrix().Data...)
			}
			dshape := []int{c.batch, n, n}
			_, dgrad := spsRunBoth(t, &ad.Tensor{Shape: dshape, Data: dx}, &ad.Tensor{Shape: dshape, Data: dr},
				func(v *ad.Var) *ad.Var { return sinkhornImplicitVar("test", v, c.tau, 1e-14, c.iters, logOut) })
			for k := 0; k < c.batch; k++ {
				for i := 0; i < n; i++ {
					for e := p.RowPtr()[i]; e < p.RowPtr()[i+1]; e++ {
						d := k*n*n + i*n + p.Cols()[e]
						require.InDelta(t, dgrad[d], grad[k*nnz+e], 1e-9*gmax, "%s dense grad %d", name, e)
					}
				}
			}
		}
	}
}

func TestSparseSinkhornImplicitGradCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 91))
	for _, rows := range [][][]int{spsConnectedRows(t, rng, 4, 0.5), spsConnectedRows(t, rng, 7, 0.3)} {
		p := mustPattern(t, rows)
		for _, batch := range []int{1, 2} {
			for _, tau := range []float64{0.5, 2} {
				x := &ad.Tensor{Shape: []int{batch, p.NNZ()}, Data: spsRandValues(rng, p, batch, 1)}
				for _, op := range []func(*ad.Var, *SparsePattern, float64, float64, int) *ad.Var{SparseSinkhornImplicitVar, SparseLogSinkhornImplicitVar} {
					err := ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
						return op(v[0], p, tau, 1e-14, 100000)
					}, x)
					require.NoError(t, err, "n=%d batch=%d tau=%g", p.N(), batch, tau)
				}
			}
		}
	}
}

func TestSparseSinkhornImplicitErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(92, 92))
	p := mustPattern(t, spsRandRows(rng, 6, 0.5))
	tp := ad.NewTape()
	y := SparseSinkhornImplicitVar(tp.Variable(&ad.Tensor{Shape: []int{2, p.NNZ()}, Data: spsRandValues(rng, p, 2, 3)}), p, 0.05, 1e-12, 3)
	require.NotNil(t, y)
	require.Error(t, tp.Err())
	assert.True(t, errors.Is(tp.Err(), ErrNotConverged), tp.Err().Error())
	assert.Contains(t, tp.Err().Error(), "relax: SparseSinkhornImplicitVar: matrix 0:")
	for _, c := range []struct {
		tol   float64
		iters int
		msg   string
	}{
		{0, 10, "tol must be > 0"},
		{math.NaN(), 10, "tol must be > 0"},
		{1e-6, 0, "iters must be >= 1"},
	} {
		tp := ad.NewTape()
		y := SparseLogSinkhornImplicitVar(tp.Variable(&ad.Tensor{Shape: []int{p.NNZ()}, Data: make([]float64, p.NNZ())}), p, 1, c.tol, c.iters)
		require.NotNil(t, y)
		assert.ErrorContains(t, tp.Err(), "relax: SparseLogSinkhornImplicitVar: "+c.msg)
	}
}

func TestSparseSinkhornImplicitBlocks(t *testing.T) {
	// A block-diagonal pattern makes the implicit system singular, but the
	// right-hand side lies in its range (each block's row and column
	// adjoints balance), so conjugate gradients still solve it and the
	// gradient is each block's own. The dense operator refuses the same
	// input (TestSinkhornImplicitSingular).
	rows := [][]int{{0, 1}, {0, 1}, {2, 3}, {2, 3}}
	p := mustPattern(t, rows)
	require.Equal(t, 2, p.Blocks())
	x := &ad.Tensor{Shape: []int{p.NNZ()}, Data: []float64{0, 1, 1, 0, 0, 2, 2, 0}}
	err := ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
		return SparseSinkhornImplicitVar(v[0], p, 1, 1e-14, 1000)
	}, x)
	require.NoError(t, err)
}

func TestSparseImplicitBackwardFailures(t *testing.T) {
	// The solver reports a system that is not positive definite (here P
	// with entries far from doubly stochastic) and one it cannot solve in
	// its step budget (here an ill-conditioned one with a budget cut by
	// hand).
	p := mustPattern(t, [][]int{{0, 1}, {0, 1}})
	n, nnz := p.N(), p.NNZ()
	gOut := []float64{1, -2, 0.5, 3}
	gx := make([]float64, nnz)
	s := spsImplicit{p: p, run: 1, buf: make([]float64, 2*nnz+8*n)}
	err := s.backward([]float64{2, 2, 2, 2}, gOut, gx, 1, false)
	assert.ErrorContains(t, err, "not positive definite")

	rng := rand.New(rand.NewPCG(93, 93))
	q := mustPattern(t, spsBandRows(rng, 200, 3, 1))
	require.Equal(t, 1, q.Blocks())
	x := spsRandValues(rng, q, 1, 1)
	ps, err := SparseSinkhorn(&SparseLogits{Pattern: q, Values: x}, 1, 20000)
	require.NoError(t, err)
	g := spsRandValues(rng, q, 1, 1)
	s = spsImplicit{p: q, run: 1, buf: make([]float64, 2*q.NNZ()+8*q.N())}
	err = s.backwardMax(ps.Values, g, make([]float64, q.NNZ()), 1, true, 5)
	assert.ErrorIs(t, err, ErrNotConverged)
	assert.ErrorContains(t, err, "after 5 steps")
}
