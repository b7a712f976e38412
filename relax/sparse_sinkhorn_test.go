package relax

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
)

// spsRandValues returns batch·NNZ values uniform in [−scale, scale].
func spsRandValues(rng *rand.Rand, p *SparsePattern, batch int, scale float64) []float64 {
	v := make([]float64, batch*p.NNZ())
	for k := range v {
		v[k] = scale * (2*rng.Float64() - 1)
	}
	return v
}

// spsSegments returns the number of kernel segments the sparse engine
// uses on one matrix.
func spsSegments(p *SparsePattern, x []float64, tau float64, iters int) int {
	w := newSpsWork(func(k int) []float64 { return make([]float64, k) }, p, x, tau, iters, true)
	w.iterate(iters, 0)
	return len(w.seg)
}

// spsCase is a test input: a pattern, a batch of values, τ and L, and the
// number of kernel segments the first matrix needs at least.
type spsCase struct {
	name    string
	p       *SparsePattern
	x       []float64
	batch   int
	tau     float64
	iters   int
	minSegs int
}

// spsCases returns inputs over patterns (random, band, full, 1×1), τ from
// 1e-3 to 5, L from 1 to 40, batches, and shifts that force kernel
// rebuilds.
func spsCases(t testing.TB, rng *rand.Rand) []spsCase {
	var cs []spsCase
	add := func(name string, rows [][]int, batch int, scale, tau float64, iters int, shift float64, minSegs int) {
		p := mustPattern(t, rows)
		x := spsRandValues(rng, p, batch, scale)
		// Lowering column 0 by far more than 485τ empties it in the
		// kernel, which forces rebuilds.
		for k := 0; k < batch; k++ {
			for i := 0; i < p.N(); i++ {
				if e := p.Index(i, 0); e >= 0 {
					x[k*p.NNZ()+e] -= shift
				}
			}
		}
		cs = append(cs, spsCase{fmt.Sprintf("%s n=%d B=%d tau=%g L=%d", name, p.N(), batch, tau, iters), p, x, batch, tau, iters, minSegs})
	}
	full := func(n int) [][]int {
		rows := make([][]int, n)
		for i := range rows {
			for j := 0; j < n; j++ {
				rows[i] = append(rows[i], j)
			}
		}
		return rows
	}
	add("one", [][]int{{0}}, 2, 1, 1, 3, 0, 1)
	add("full", full(5), 1, 1, 1, 20, 0, 1)
	add("random", spsRandRows(rng, 7, 0.4), 3, 2, 0.5, 10, 0, 1)
	add("random", spsRandRows(rng, 9, 0.3), 1, 1, 0.3, 1, 0, 1)
	add("random", spsRandRows(rng, 12, 0.25), 2, 1, 5, 7, 0, 1)
	add("band", spsBandRows(rng, 40, 6, 5), 2, 1, 0.2, 40, 0, 1)
	add("full", full(5), 1, 1, 0.01, 12, 8, 2)
	add("random", spsRandRows(rng, 6, 0.5), 3, 1, 1e-3, 30, 2, 2)
	add("band", spsBandRows(rng, 8, 4, 3), 1, 30, 0.05, 40, 100, 2)
	return cs
}

// spsDenseOf returns matrix k of the batch as a dense matrix with −Inf
// outside the pattern.
func spsDenseOf(t testing.TB, p *SparsePattern, x []float64, k int) *mat.Dense {
	d, err := p.Dense(x[k*p.NNZ():(k+1)*p.NNZ()], math.Inf(-1))
	require.NoError(t, err)
	return d
}

func TestSparseSinkhornMatchesDense(t *testing.T) {
	// The sparse and dense operators compute the same function with sums
	// in different orders: they agree to rounding amplified by |X|/τ, the
	// size of the log values: observed within 4e-16·(1 + max|X/τ|), for
	// values, log values (relative) and gradients (relative to the
	// largest); we allow 4e-15.
	rng := rand.New(rand.NewPCG(70, 70))
	for _, c := range spsCases(t, rng) {
		require.GreaterOrEqual(t, spsSegments(c.p, c.x[:c.p.NNZ()], c.tau, c.iters), c.minSegs, c.name)
		x := &SparseLogits{Pattern: c.p, Values: c.x}
		s, err := SparseSinkhorn(x, c.tau, c.iters)
		require.NoError(t, err, c.name)
		ls, err := SparseLogSinkhorn(x, c.tau, c.iters)
		require.NoError(t, err, c.name)
		require.Equal(t, c.batch, s.Batch())
		big := 0.0
		for _, v := range c.x {
			big = math.Max(big, math.Abs(v/c.tau))
		}
		tol := 4e-15 * (1 + big)
		for k := 0; k < c.batch; k++ {
			d := spsDenseOf(t, c.p, c.x, k)
			want, err := Sinkhorn(d, c.tau, c.iters)
			require.NoError(t, err)
			lwant, err := LogSinkhorn(d, c.tau, c.iters)
			require.NoError(t, err)
			wantS, _ := c.p.Values(want)
			wantL, _ := c.p.Values(lwant)
			got, gotL := s.Matrix(k), ls.Matrix(k)
			for e := range got {
				require.InDelta(t, wantS[e], got[e], tol, "%s matrix %d entry %d", c.name, k, e)
				require.InDelta(t, wantL[e], gotL[e], tol*math.Max(1, math.Abs(wantL[e])), "%s matrix %d log entry %d", c.name, k, e)
			}
			// The dense result has nothing outside the pattern.
			sum := 0.0
			for _, v := range want.RawMatrix().Data {
				sum += v
			}
			assert.InDelta(t, spsSumOf(got), sum, 1e-12, c.name)
		}
	}
}

func spsSumOf(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

func TestSparseSinkhornForbiddenValues(t *testing.T) {
	// −Inf values inside the pattern behave as entries outside it.
	rng := rand.New(rand.NewPCG(71, 71))
	p := mustPattern(t, spsRandRows(rng, 8, 0.5))
	x := spsRandValues(rng, p, 1, 1)
	q, keep := spsDropEntries(t, p, rng)
	inf := math.Inf(-1)
	xq := make([]float64, len(keep))
	kept := make([]bool, p.NNZ())
	for k, e := range keep {
		xq[k] = x[e]
		kept[e] = true
	}
	for e := range x {
		if !kept[e] {
			x[e] = inf
		}
	}
	got, err := SparseLogSinkhorn(&SparseLogits{Pattern: p, Values: x}, 0.4, 9)
	require.NoError(t, err)
	want, err := SparseLogSinkhorn(&SparseLogits{Pattern: q, Values: xq}, 0.4, 9)
	require.NoError(t, err)
	for k, e := range keep {
		assert.InDelta(t, want.Values[k], got.Values[e], 1e-13)
	}
	for e, ok := range kept {
		if !ok {
			assert.True(t, math.IsInf(got.Values[e], -1))
		}
	}
}

// spsDropEntries returns a sub-pattern of p that still has a perfect
// matching (p's own) and misses some entries, with the entries it keeps.
func spsDropEntries(t *testing.T, p *SparsePattern, rng *rand.Rand) (*SparsePattern, []int) {
	match := p.Matching()
	rows := make([][]int, p.N())
	var keep []int
	for i := range rows {
		for e := p.RowPtr()[i]; e < p.RowPtr()[i+1]; e++ {
			if j := p.Cols()[e]; j == match[i] || rng.Float64() < 0.6 {
				rows[i] = append(rows[i], j)
				keep = append(keep, e)
			}
		}
	}
	require.Less(t, len(keep), p.NNZ())
	return mustPattern(t, rows), keep
}

func TestSparseSinkhornErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(72, 72))
	p := mustPattern(t, spsRandRows(rng, 4, 0.5))
	nnz := p.NNZ()
	good := spsRandValues(rng, p, 2, 1)
	inf := math.Inf(-1)
	withAt := func(e int, v float64) []float64 {
		x := append([]float64(nil), good...)
		x[e] = v
		return x
	}
	row0 := append([]float64(nil), good...)
	for e := p.RowPtr()[0]; e < p.RowPtr()[1]; e++ {
		row0[nnz+e] = inf
	}
	col := append([]float64(nil), good...)
	for e, j := range p.Cols() {
		if j == 2 {
			col[e] = inf
		}
	}
	cases := []struct {
		name  string
		x     *SparseLogits
		tau   float64
		iters int
		msg   string
	}{
		{"nil", nil, 1, 3, "nil logits"},
		{"nil pattern", &SparseLogits{Values: good}, 1, 3, "nil pattern"},
		{"length", &SparseLogits{Pattern: p, Values: good[1:]}, 1, 3, "not a whole number of matrices"},
		{"tau", &SparseLogits{Pattern: p, Values: good}, 0, 3, "tau must be > 0"},
		{"tau inf", &SparseLogits{Pattern: p, Values: good}, math.Inf(1), 3, "tau must be > 0"},
		{"tau tiny", &SparseLogits{Pattern: p, Values: good}, 1e-320, 3, "1/tau overflows"},
		{"iters", &SparseLogits{Pattern: p, Values: good}, 1, 0, "iters must be >= 1"},
		{"NaN", &SparseLogits{Pattern: p, Values: withAt(nnz+1, math.NaN())}, 1, 3, "matrix 1: entry 1 "},
		{"+Inf", &SparseLogits{Pattern: p, Values: withAt(2, math.Inf(1))}, 1, 3, "matrix 0: entry 2 "},
		{"overflow", &SparseLogits{Pattern: p, Values: withAt(0, 1e300)}, 1e-10, 3, "overflows when divided by tau"},
		{"row", &SparseLogits{Pattern: p, Values: row0}, 1, 3, "matrix 1: row 0 has no finite entry"},
		{"column", &SparseLogits{Pattern: p, Values: col}, 1, 3, "matrix 0: column 2 has no finite entry"},
	}
	for _, c := range cases {
		_, err := SparseSinkhorn(c.x, c.tau, c.iters)
		assert.ErrorContains(t, err, "relax: SparseSinkhorn: ", c.name)
		assert.ErrorContains(t, err, c.msg, c.name)
		_, err = SparseLogSinkhorn(c.x, c.tau, c.iters)
		assert.ErrorContains(t, err, "relax: SparseLogSinkhorn: ", c.name)
		assert.ErrorContains(t, err, c.msg, c.name)
	}
	// An empty batch is no error.
	s, err := SparseSinkhorn(&SparseLogits{Pattern: p}, 1, 3)
	require.NoError(t, err)
	assert.Equal(t, 0, s.Batch())
}

func TestSparseSinkhornLargeTauRange(t *testing.T) {
	// Extreme τ and |X| neither overflow nor give NaN, and columns sum to
	// one.
	rng := rand.New(rand.NewPCG(73, 73))
	p := mustPattern(t, spsBandRows(rng, 50, 8, 6))
	for _, c := range []struct{ scale, tau float64 }{{1e6, 1e-4}, {1, 1e3}, {1e3, 1e-2}} {
		x := spsRandValues(rng, p, 1, c.scale)
		s, err := SparseSinkhorn(&SparseLogits{Pattern: p, Values: x}, c.tau, 30)
		require.NoError(t, err)
		colSum := make([]float64, p.N())
		for e, v := range s.Values {
			require.False(t, math.IsNaN(v) || math.IsInf(v, 0))
			colSum[p.Cols()[e]] += v
		}
		for _, v := range colSum {
			assert.InDelta(t, 1, v, 1e-12, "scale=%g tau=%g", c.scale, c.tau)
		}
	}
}

// spsRunBoth returns the value and the gradient of sum(R ⊙ op(x)).
func spsRunBoth(t testing.TB, x *ad.Tensor, r *ad.Tensor, op func(*ad.Var) *ad.Var) ([]float64, []float64) {
	tp := ad.NewTape()
	xv := tp.Variable(x)
	y := op(xv)
	require.NoError(t, tp.Backward(ad.Sum(ad.Mul(y, tp.Const(r)))))
	return append([]float64(nil), y.Value()...), append([]float64(nil), xv.Grad()...)
}

func TestSparseSinkhornVarMatchesDense(t *testing.T) {
	// Values and gradients agree with SinkhornVar on the dense matrix
	// with −Inf outside the pattern (the gradient there is zero for S; the
	// sparse op has no entry for it). Tolerance as in
	// TestSparseSinkhornMatchesDense.
	rng := rand.New(rand.NewPCG(74, 74))
	for _, c := range spsCases(t, rng) {
		for _, logOut := range []bool{false, true} {
			name := fmt.Sprintf("%s log=%v", c.name, logOut)
			p, n, nnz := c.p, c.p.N(), c.p.NNZ()
			rs := spsRandValues(rng, p, c.batch, 1)
			shape := []int{c.batch, nnz}
			val, grad := spsRunBoth(t, &ad.Tensor{Shape: shape, Data: c.x}, &ad.Tensor{Shape: shape, Data: rs},
				func(v *ad.Var) *ad.Var { return sparseSinkhornVar("test", v, p, c.tau, c.iters, logOut) })
			// The dense batch, with R zero outside the pattern.
			dx := make([]float64, 0, c.batch*n*n)
			dr := make([]float64, 0, c.batch*n*n)
			for k := 0; k < c.batch; k++ {
				dx = append(dx, spsDenseOf(t, p, c.x, k).RawMatrix().Data...)
				d, _ := p.Dense(rs[k*nnz:(k+1)*nnz], 0)
				dr = append(dr, d.RawMatrix().Data...)
			}
			dshape := []int{c.batch, n, n}
			dval, dgrad := spsRunBoth(t, &ad.Tensor{Shape: dshape, Data: dx}, &ad.Tensor{Shape: dshape, Data: dr},
				func(v *ad.Var) *ad.Var { return sinkhornVar("test", v, c.tau, c.iters, logOut) })
			big, gmax := 0.0, 0.0
			for _, v := range c.x {
				big = math.Max(big, math.Abs(v/c.tau))
			}
			for _, g := range dgrad {
				gmax = math.Max(gmax, math.Abs(g))
			}
			tol := 4e-15 * (1 + big)
			for k := 0; k < c.batch; k++ {
				for i := 0; i < n; i++ {
					for j := 0; j < n; j++ {
						e := p.Index(i, j)
						d := k*n*n + i*n + j
						if e < 0 {
							if !logOut {
								require.Zero(t, dgrad[d], "%s: dense gradient outside the pattern", name)
							}
							continue
						}
						e += k * nnz
						require.InDelta(t, dval[d], val[e], tol*math.Max(1, math.Abs(dval[d])), "%s value %d", name, e)
						require.InDelta(t, dgrad[d], grad[e], tol*math.Max(1, gmax), "%s grad %d", name, e)
					}
				}
			}
		}
	}
}

func TestSparseSinkhornVarGradCheck(t *testing.T) {
	// Central differences against the exact gradient, as in
	// TestSinkhornVarGradCheck.
	rng := rand.New(rand.NewPCG(75, 75))
	p := mustPattern(t, spsRandRows(rng, 5, 0.4))
	nnz := p.NNZ()
	for _, logOut := range []bool{false, true} {
		op := SparseSinkhornVar
		if logOut {
			op = SparseLogSinkhornVar
		}
		for _, shape := range [][]int{{nnz}, {3, nnz}} {
			for _, tau := range []float64{0.3, 1, 5} {
				for _, iters := range []int{1, 5, 20} {
					x := &ad.Tensor{Shape: shape, Data: spsRandValues(rng, p, len(shape)*2-1, 1)}
					err := ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
						return op(v[0], p, tau, iters)
					}, x)
					require.NoError(t, err, "log=%v shape=%v tau=%g iters=%d", logOut, shape, tau, iters)
				}
			}
		}
	}
	// A 1×1 pattern, a band pattern, and −Inf values inside the pattern
	// (their gradient is zero).
	one := mustPattern(t, [][]int{{0}})
	err := ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
		return SparseLogSinkhornVar(v[0], one, 0.7, 3)
	}, &ad.Tensor{Shape: []int{2, 1}, Data: []float64{0.3, -2}})
	require.NoError(t, err)
	band := mustPattern(t, spsBandRows(rng, 12, 4, 3))
	x := &ad.Tensor{Shape: []int{2, band.NNZ()}, Data: spsRandValues(rng, band, 2, 1)}
	inf := math.Inf(-1)
	match := band.Matching()
	forbidden := 0
	for i := 0; i < band.N() && forbidden < 3; i++ {
		for e := band.RowPtr()[i]; e < band.RowPtr()[i+1]; e++ {
			if band.Cols()[e] != match[i] {
				x.Data[band.NNZ()+e] = inf
				forbidden++
				break
			}
		}
	}
	for _, iters := range []int{1, 7} {
		err := ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
			return SparseSinkhornVar(v[0], band, 0.7, iters)
		}, x)
		require.NoError(t, err, "iters=%d", iters)
	}
}

func TestSparseSinkhornVarGradCheckSegments(t *testing.T) {
	// Kernel rebuilds split the backward pass into segments whose kernels
	// are recomputed; central differences still agree. The shift is far
	// beyond 485τ, so column 0's entries leave the kernel.
	rng := rand.New(rand.NewPCG(76, 76))
	p := mustPattern(t, spsRandRows(rng, 5, 0.5))
	x := spsRandValues(rng, p, 1, 1)
	for i := 0; i < p.N(); i++ {
		if e := p.Index(i, 0); e >= 0 {
			x[e] -= 8
		}
	}
	const tau = 0.01
	require.GreaterOrEqual(t, spsSegments(p, x, tau, 12), 2)
	for _, op := range []func(*ad.Var, *SparsePattern, float64, int) *ad.Var{SparseSinkhornVar, SparseLogSinkhornVar} {
		err := ad.GradCheck{Step: 1e-7}.Check(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
			return op(v[0], p, tau, 12)
		}, &ad.Tensor{Shape: []int{p.NNZ()}, Data: x})
		require.NoError(t, err)
	}
}

func TestSparseSinkhornVarValueMatchesNumeric(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 77))
	p := mustPattern(t, spsBandRows(rng, 30, 5, 4))
	x := spsRandValues(rng, p, 3, 2)
	xt := &ad.Tensor{Shape: []int{3, p.NNZ()}, Data: x}
	tp := ad.NewTape()
	s := SparseSinkhornVar(tp.Const(xt), p, 0.4, 9)
	ls := SparseLogSinkhornVar(tp.Const(xt), p, 0.4, 9)
	require.NoError(t, tp.Err())
	assert.False(t, s.RequiresGrad())
	assert.Equal(t, []int{3, p.NNZ()}, s.Shape())
	want, err := SparseSinkhorn(&SparseLogits{Pattern: p, Values: x}, 0.4, 9)
	require.NoError(t, err)
	lwant, err := SparseLogSinkhorn(&SparseLogits{Pattern: p, Values: x}, 0.4, 9)
	require.NoError(t, err)
	assert.Equal(t, want.Values, s.Value())
	assert.Equal(t, lwant.Values, ls.Value())
}

func TestSparseSinkhornDeterministic(t *testing.T) {
	// Values and gradients are bit-identical whatever GOMAXPROCS, whether
	// the batch runs in parallel or one matrix's rows and columns are split
	// over goroutines (forced here on a small pattern by lowering
	// spsParMin), one matrix at a time or batched, and on a reused tape.
	rng := rand.New(rand.NewPCG(78, 78))
	p := mustPattern(t, spsBandRows(rng, 300, 12, 15))
	const batch = 3
	nnz := p.NNZ()
	x := spsRandValues(rng, p, batch, 3)
	// Column 0 lowered: the small τ case needs kernel rebuilds.
	for k := 0; k < batch; k++ {
		for i := 0; i < p.N(); i++ {
			if e := p.Index(i, 0); e >= 0 {
				x[k*nnz+e] -= 4
			}
		}
	}
	r := spsRandValues(rng, p, batch, 1)
	type result struct{ val, grad, imp []float64 }
	run := func(x, r []float64, b int, tau float64) result {
		shape := []int{b, nnz}
		var res result
		res.val, res.grad = spsRunBoth(t, &ad.Tensor{Shape: shape, Data: x}, &ad.Tensor{Shape: shape, Data: r},
			func(v *ad.Var) *ad.Var { return SparseLogSinkhornVar(v, p, tau, 25) })
		if tau == 0.5 {
			_, res.imp = spsRunBoth(t, &ad.Tensor{Shape: shape, Data: x}, &ad.Tensor{Shape: shape, Data: r},
				func(v *ad.Var) *ad.Var { return SparseSinkhornImplicitVar(v, p, 1, 1e-7, 5000) })
		}
		return res
	}
	for _, tau := range []float64{0.5, 0.02} {
		require.GreaterOrEqual(t, spsSegments(p, x[:nnz], 0.02, 25), 2)
		old := runtime.GOMAXPROCS(1)
		oldMin := spsParMin
		var want result
		for k := 0; k < batch; k++ {
			one := run(x[k*nnz:(k+1)*nnz], r[k*nnz:(k+1)*nnz], 1, tau)
			want.val = append(want.val, one.val...)
			want.grad = append(want.grad, one.grad...)
			want.imp = append(want.imp, one.imp...)
		}
		for _, procs := range []int{1, 2, 8} {
			for _, parMin := range []int{0, oldMin} {
				runtime.GOMAXPROCS(procs)
				spsParMin = parMin
				got := run(x, r, batch, tau)
				assert.Equal(t, want, got, "tau=%g procs=%d parMin=%d", tau, procs, parMin)
				if procs > 1 && parMin == 0 {
					require.Greater(t, int(spsPlan(1, nnz)), 1)
				}
				// The numeric form.
				s, err := SparseLogSinkhorn(&SparseLogits{Pattern: p, Values: x}, tau, 25)
				require.NoError(t, err)
				assert.Equal(t, want.val, s.Values)
			}
		}
		spsParMin = oldMin
		runtime.GOMAXPROCS(old)
	}
	// A reused tape gives the same bits.
	tp := ad.NewTape()
	for rep := 0; rep < 2; rep++ {
		tp.Reset()
		xv := tp.Variable(&ad.Tensor{Shape: []int{batch, nnz}, Data: x})
		y := SparseSinkhornVar(xv, p, 0.3, 10)
		require.NoError(t, tp.Backward(ad.Sum(ad.Mul(y, tp.Const(&ad.Tensor{Shape: []int{batch, nnz}, Data: r})))))
		v, g := spsRunBoth(t, &ad.Tensor{Shape: []int{batch, nnz}, Data: x}, &ad.Tensor{Shape: []int{batch, nnz}, Data: r},
			func(v *ad.Var) *ad.Var { return SparseSinkhornVar(v, p, 0.3, 10) })
		assert.Equal(t, v, y.Value())
		assert.Equal(t, g, xv.Grad())
	}
}

func TestSparseSinkhornVarErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(79, 79))
	p := mustPattern(t, spsRandRows(rng, 4, 0.5))
	nnz := p.NNZ()
	nanBatch := &ad.Tensor{Shape: []int{2, nnz}, Data: spsRandValues(rng, p, 2, 1)}
	nanBatch.Data[nnz+3] = math.NaN()
	inf := math.Inf(-1)
	row := &ad.Tensor{Shape: []int{nnz}, Data: spsRandValues(rng, p, 1, 1)}
	for e := p.RowPtr()[1]; e < p.RowPtr()[2]; e++ {
		row.Data[e] = inf
	}
	good := func(shape ...int) *ad.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return &ad.Tensor{Shape: shape, Data: make([]float64, n)}
	}
	cases := []struct {
		name  string
		x     *ad.Tensor
		p     *SparsePattern
		tau   float64
		iters int
		msg   string
	}{
		{"nil pattern", good(nnz), nil, 1, 3, "nil pattern"},
		{"length", good(nnz + 1), p, 1, 3, fmt.Sprintf("shape must be (NNZ) or (B, NNZ) with NNZ = %d, got [%d]", nnz, nnz+1)},
		{"matrix", good(4, 4), p, 1, 3, "shape must be"},
		{"rank 3", good(1, 1, nnz), p, 1, 3, "shape must be"},
		{"scalar", good(), p, 1, 3, "shape must be"},
		{"tau", good(nnz), p, -1, 3, "tau must be > 0"},
		{"iters", good(nnz), p, 1, 0, "iters must be >= 1"},
		{"NaN in batch", nanBatch, p, 1, 3, "matrix 1: entry 3 "},
		{"forbidden row", row, p, 1, 3, "row 1 has no finite entry"},
	}
	ops := map[string]func(*ad.Var, *SparsePattern, float64, int) *ad.Var{
		"SparseSinkhornVar":    SparseSinkhornVar,
		"SparseLogSinkhornVar": SparseLogSinkhornVar,
		// Enough iterations for matrix 0 to converge, so that the
		// errors are those of the input.
		"SparseSinkhornImplicitVar": func(x *ad.Var, p *SparsePattern, tau float64, iters int) *ad.Var {
			return SparseSinkhornImplicitVar(x, p, tau, 1e-3, 10000*iters)
		},
		"SparseLogSinkhornImplicitVar": func(x *ad.Var, p *SparsePattern, tau float64, iters int) *ad.Var {
			return SparseLogSinkhornImplicitVar(x, p, tau, 1e-3, 10000*iters)
		},
	}
	for _, c := range cases {
		for name, op := range ops {
			tp := ad.NewTape()
			y := op(tp.Variable(c.x), c.p, c.tau, c.iters)
			require.NotNil(t, y, c.name)
			require.Error(t, tp.Err(), "%s %s", name, c.name)
			assert.Contains(t, tp.Err().Error(), "relax: "+name+": "+c.msg, c.name)
			assert.Error(t, tp.Backward(ad.Sum(y)), c.name)
		}
	}
	// An earlier error propagates without a new one; nil gives nil.
	for name, op := range ops {
		tp := ad.NewTape()
		tp.Fail(fmt.Errorf("earlier"))
		y := op(tp.Variable(good(nnz)), p, 1, 2)
		require.NotNil(t, y, name)
		assert.EqualError(t, tp.Err(), "earlier")
		assert.Nil(t, op(nil, p, 1, 1), name)
	}
	// An empty batch.
	tp := ad.NewTape()
	y := SparseSinkhornVar(tp.Variable(good(0, nnz)), p, 1, 4)
	require.NoError(t, tp.Err())
	assert.Equal(t, []int{0, nnz}, y.Shape())
	assert.Equal(t, 0, y.Size())
}

func TestSparseSinkhornLargeRowSums(t *testing.T) {
	// The operator's purpose: N = 2000 with 30 candidates a row. Columns
	// sum to one, rows nearly (a band pattern mixes slowly: the row error
	// after 100 iterations is about 2e-4), and the values match the log
	// values.
	rng := rand.New(rand.NewPCG(80, 80))
	p := mustPattern(t, spsBandRows(rng, 2000, 30, 40))
	x := spsRandValues(rng, p, 1, 1)
	s, err := SparseSinkhorn(&SparseLogits{Pattern: p, Values: x}, 0.5, 100)
	require.NoError(t, err)
	ls, err := SparseLogSinkhorn(&SparseLogits{Pattern: p, Values: x}, 0.5, 100)
	require.NoError(t, err)
	rowSum := make([]float64, p.N())
	colSum := make([]float64, p.N())
	for i := 0; i < p.N(); i++ {
		for e := p.RowPtr()[i]; e < p.RowPtr()[i+1]; e++ {
			rowSum[i] += s.Values[e]
			colSum[p.Cols()[e]] += s.Values[e]
			require.InDelta(t, math.Log(s.Values[e]), ls.Values[e], 1e-12)
		}
	}
	for i := range rowSum {
		require.InDelta(t, 1, colSum[i], 1e-12)
		require.InDelta(t, 1, rowSum[i], 1e-3)
	}
}

func TestSparseSinkhornForcedRebuilds(t *testing.T) {
	// Kernel rebuilds at chosen half-steps (spsRebuildEvery) reach every
	// combination of segments: row rebuilds after column rebuilds,
	// one-half-step segments, a column half-step reversed apart from its
	// row half-step. Values and gradients agree with the unforced run to
	// rounding, and gradients with central differences.
	rng := rand.New(rand.NewPCG(81, 81))
	p := mustPattern(t, spsBandRows(rng, 9, 4, 3))
	nnz := p.NNZ()
	x := spsRandValues(rng, p, 2, 2)
	r := spsRandValues(rng, p, 2, 1)
	shape := []int{2, nnz}
	xt, rt := &ad.Tensor{Shape: shape, Data: x}, &ad.Tensor{Shape: shape, Data: r}
	defer func(old int) { spsRebuildEvery = old }(spsRebuildEvery)
	for _, logOut := range []bool{false, true} {
		op := func(v *ad.Var) *ad.Var { return sparseSinkhornVar("test", v, p, 0.3, 6, logOut) }
		spsRebuildEvery = 0
		require.Equal(t, 1, spsSegments(p, x[:nnz], 0.3, 6))
		wantVal, wantGrad := spsRunBoth(t, xt, rt, op)
		for _, every := range []int{1, 2, 3, 5} {
			spsRebuildEvery = every
			require.Equal(t, 1+(12-1)/every, spsSegments(p, x[:nnz], 0.3, 6))
			val, grad := spsRunBoth(t, xt, rt, op)
			for e := range val {
				require.InDelta(t, wantVal[e], val[e], 1e-13*math.Max(1, math.Abs(wantVal[e])), "every=%d value %d", every, e)
				require.InDelta(t, wantGrad[e], grad[e], 1e-13, "every=%d grad %d", every, e)
			}
			err := ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var { return op(v[0]) }, xt)
			require.NoError(t, err, "every=%d log=%v", every, logOut)
			// The numeric form keeps two scaling buffers, not one per
			// half-step; it computes the same bits as the ad op.
			num := SparseSinkhorn
			if logOut {
				num = SparseLogSinkhorn
			}
			s, err := num(&SparseLogits{Pattern: p, Values: x}, 0.3, 6)
			require.NoError(t, err)
			require.Equal(t, val, s.Values, "every=%d", every)
		}
	}
}

func TestSparseStepsRejectOutOfRange(t *testing.T) {
	// A half-step whose sums leave [sinkScaleMin, sinkScaleMax] must
	// report it so that the engine rebuilds the kernel; within the bounds
	// it gives the scalings 1/(K b) and 1/(Kᵀa).
	rng := rand.New(rand.NewPCG(82, 82))
	p := mustPattern(t, spsBandRows(rng, 7, 3, 2))
	x := spsRandValues(rng, p, 1, 1)
	w := newSpsWork(func(k int) []float64 { return make([]float64, k) }, p, x, 0.5, 3, true)
	w.iterate(3, 0)
	a, b := make([]float64, p.N()), make([]float64, p.N())
	require.True(t, w.rowStep(a))
	require.True(t, w.colStep(b))
	for i := range a {
		e0, e1 := p.RowPtr()[i], p.RowPtr()[i+1]
		s := 0.0
		for e := e0; e < e1; e++ {
			s += w.kern[e] * w.b[p.Cols()[e]]
		}
		require.InDelta(t, 1/s, a[i], 1e-15*a[i])
	}
	for _, sc := range []float64{0x1p-300, 0x1p300} {
		big := make([]float64, p.N())
		for j := range big {
			big[j] = w.b[j] * sc
		}
		old := w.b
		w.b = big
		assert.False(t, w.rowStep(a), "scale %g", sc)
		w.b = old
		for i := range big {
			big[i] = w.a[i] * sc
		}
		old = w.a
		w.a = big
		assert.False(t, w.colStep(b), "scale %g", sc)
		w.a = old
	}
}
