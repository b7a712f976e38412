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

func randTensor(rng *rand.Rand, scale float64, shape ...int) *ad.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = scale * (2*rng.Float64() - 1)
	}
	return &ad.Tensor{Shape: shape, Data: d}
}

// compositeSinkhorn builds the truncated log-domain operator from generic
// ad ops (4L of them), the computation SinkhornVar fuses.
func compositeSinkhorn(x *ad.Var, tau float64, iters int, logOut bool) *ad.Var {
	shape := x.Shape()
	col := append(append([]int(nil), shape[:len(shape)-1]...), 1)
	rowNorm := func(z *ad.Var) *ad.Var {
		return ad.Sub(z, ad.Reshape(ad.LogSumExp(z, -1), col...))
	}
	z := ad.Scale(x, 1/tau)
	for l := 0; l < iters; l++ {
		z = rowNorm(z)
		z = ad.Transpose(rowNorm(ad.Transpose(z)))
	}
	if logOut {
		return z
	}
	return ad.Exp(z)
}

func TestSinkhornVarGradCheck(t *testing.T) {
	// Central differences with h = 1e-6 agree with an exact gradient to
	// about 1e-9 here; ad's default tolerance 1e-6 leaves room while still
	// catching any wrong term of the adjoint (those are O(1)).
	rng := rand.New(rand.NewPCG(20, 20))
	for _, logOut := range []bool{false, true} {
		op := SinkhornVar
		if logOut {
			op = LogSinkhornVar
		}
		for _, shape := range [][]int{{4, 4}, {3, 4, 4}, {1, 1}} {
			for _, tau := range []float64{0.3, 1, 5} {
				for _, iters := range []int{1, 5, 20} {
					x := randTensor(rng, 1, shape...)
					err := ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
						return op(v[0], tau, iters)
					}, x)
					require.NoError(t, err, "log=%v shape=%v tau=%g iters=%d", logOut, shape, tau, iters)
				}
			}
		}
	}
}

func TestSinkhornVarGradCheckForbidden(t *testing.T) {
	// −Inf entries have probability zero for every nearby X, so their
	// gradient is zero and the others' gradient is that of the smaller
	// support.
	rng := rand.New(rand.NewPCG(21, 21))
	x := randTensor(rng, 1, 2, 4, 4)
	inf := math.Inf(-1)
	x.Data[1], x.Data[6], x.Data[16+12] = inf, inf, inf
	for _, iters := range []int{1, 7} {
		err := ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
			return SinkhornVar(v[0], 0.7, iters)
		}, x)
		require.NoError(t, err, "iters=%d", iters)
	}
}

// segmentsOf returns the number of kernel segments the engine uses.
func segmentsOf(x []float64, n int, tau float64, iters int) int {
	w := newSinkWork(func(k int) []float64 { return make([]float64, k) }, x, n, tau, iters)
	w.run(iters, 0)
	return len(w.seg)
}

func TestSinkhornVarMatchesComposite(t *testing.T) {
	// The fused op and the composite of generic ops compute the same
	// function and its exact gradient in different orders; they agree to
	// rounding amplified by |X|/τ (the size of the log values): observed
	// within 3e-16 · (1 + max|X/τ|) relative to the largest gradient entry;
	// we allow 2e-15. Lowering column 0 by far more than 485τ empties it in
	// the kernel after the first row normalisation, which forces a kernel
	// rebuild and so exercises the recomputation of earlier segments in the
	// backward pass.
	rng := rand.New(rand.NewPCG(22, 22))
	cases := []struct {
		shape   []int
		tau     float64
		iters   int
		scale   float64
		shift   float64 // subtracted from column 0
		minSegs int
	}{
		{[]int{6, 6}, 1, 20, 1, 0, 1},
		{[]int{2, 7, 7}, 0.5, 10, 2, 0, 1},
		{[]int{5, 5}, 0.01, 12, 1, 8, 2},
		{[]int{3, 6, 6}, 1e-3, 30, 1, 2, 2},
		{[]int{8, 8}, 0.05, 40, 30, 100, 2},
	}
	for _, c := range cases {
		for _, logOut := range []bool{false, true} {
			name := fmt.Sprintf("shape=%v tau=%g iters=%d log=%v", c.shape, c.tau, c.iters, logOut)
			x := randTensor(rng, c.scale, c.shape...)
			n := c.shape[len(c.shape)-1]
			for k := 0; k < len(x.Data); k += n {
				x.Data[k] -= c.shift
			}
			segs := segmentsOf(x.Data[:n*n], n, c.tau, c.iters)
			require.GreaterOrEqual(t, segs, c.minSegs, name)
			r := randTensor(rng, 1, c.shape...)
			run := func(f func(*ad.Var, float64, int, bool) *ad.Var) ([]float64, []float64) {
				tp := ad.NewTape()
				xv := tp.Variable(x)
				y := f(xv, c.tau, c.iters, logOut)
				loss := ad.Sum(ad.Mul(y, tp.Const(r)))
				require.NoError(t, tp.Backward(loss), name)
				return append([]float64(nil), y.Value()...), append([]float64(nil), xv.Grad()...)
			}
			val, grad := run(func(x *ad.Var, tau float64, iters int, logOut bool) *ad.Var {
				return sinkhornVar("test", x, tau, iters, logOut)
			})
			wantVal, wantGrad := run(compositeSinkhorn)
			big, gmax := 0.0, 0.0
			for _, v := range x.Data {
				big = math.Max(big, math.Abs(v/c.tau))
			}
			for _, g := range wantGrad {
				gmax = math.Max(gmax, math.Abs(g))
			}
			tol := 2e-15 * (1 + big)
			for k := range val {
				require.InDelta(t, wantVal[k], val[k], tol*math.Max(1, math.Abs(wantVal[k])), "%s value %d", name, k)
				require.InDelta(t, wantGrad[k], grad[k], tol*math.Max(1, gmax), "%s grad %d", name, k)
			}
		}
	}
}

func TestSinkhornVarValueMatchesNumeric(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 23))
	x := randTensor(rng, 2, 3, 5, 5)
	tp := ad.NewTape()
	s := SinkhornVar(tp.Const(x), 0.4, 9)
	ls := LogSinkhornVar(tp.Const(x), 0.4, 9)
	require.NoError(t, tp.Err())
	assert.False(t, s.RequiresGrad())
	for k := 0; k < 3; k++ {
		m := mat.NewDense(5, 5, x.Data[k*25:(k+1)*25])
		want, err := Sinkhorn(m, 0.4, 9)
		require.NoError(t, err)
		assert.Equal(t, want.RawMatrix().Data, s.Value()[k*25:(k+1)*25])
		lwant, err := LogSinkhorn(m, 0.4, 9)
		require.NoError(t, err)
		assert.Equal(t, lwant.RawMatrix().Data, ls.Value()[k*25:(k+1)*25])
	}
}

func TestSinkhornVarBatchEqualsSingle(t *testing.T) {
	// Batched values and gradients are bit-identical to one matrix at a
	// time, whatever GOMAXPROCS.
	rng := rand.New(rand.NewPCG(24, 24))
	b, n := 5, 9
	x := randTensor(rng, 3, b, n, n)
	r := randTensor(rng, 1, b, n, n)
	var wantVal, wantGrad []float64
	for k := 0; k < b; k++ {
		tp := ad.NewTape()
		xk := &ad.Tensor{Shape: []int{n, n}, Data: x.Data[k*n*n : (k+1)*n*n]}
		rk := &ad.Tensor{Shape: []int{n, n}, Data: r.Data[k*n*n : (k+1)*n*n]}
		xv := tp.Variable(xk)
		y := SinkhornVar(xv, 0.1, 15)
		require.NoError(t, tp.Backward(ad.Sum(ad.Mul(y, tp.Const(rk)))))
		wantVal = append(wantVal, y.Value()...)
		wantGrad = append(wantGrad, xv.Grad()...)
	}
	for _, procs := range []int{1, 2, 3} {
		old := runtime.GOMAXPROCS(procs)
		tp := ad.NewTape()
		for rep := 0; rep < 2; rep++ { // the second pass reuses pooled buffers
			tp.Reset()
			xv := tp.Variable(x)
			y := SinkhornVar(xv, 0.1, 15)
			require.NoError(t, tp.Backward(ad.Sum(ad.Mul(y, tp.Const(r)))))
			assert.Equal(t, wantVal, y.Value(), "procs=%d", procs)
			assert.Equal(t, wantGrad, xv.Grad(), "procs=%d", procs)
		}
		runtime.GOMAXPROCS(old)
	}
}

func TestSinkhornVarErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 25))
	nanBatch := randTensor(rng, 1, 2, 3, 3)
	nanBatch.Data[9+4] = math.NaN()
	cases := []struct {
		name  string
		x     *ad.Tensor
		tau   float64
		iters int
		msg   string
	}{
		{"rectangular", randTensor(rng, 1, 2, 3), 1, 3, "shape must be (N, N) or (B, N, N)"},
		{"vector", randTensor(rng, 1, 4), 1, 3, "shape must be"},
		{"rank 4", randTensor(rng, 1, 1, 2, 2, 2), 1, 3, "shape must be"},
		{"empty", &ad.Tensor{Shape: []int{0, 0}}, 1, 3, "N > 0"},
		{"tau", randTensor(rng, 1, 3, 3), -2, 3, "tau must be > 0"},
		{"iters", randTensor(rng, 1, 3, 3), 1, 0, "iters must be >= 1"},
		{"NaN in batch", nanBatch, 1, 3, "matrix 1: entry (1,1) is NaN"},
		{"forbidden row", &ad.Tensor{Shape: []int{2, 2}, Data: []float64{math.Inf(-1), math.Inf(-1), 1, 2}}, 1, 3, "row 0 has no finite entry"},
	}
	for _, c := range cases {
		for _, op := range []func(*ad.Var, float64, int) *ad.Var{SinkhornVar, LogSinkhornVar} {
			tp := ad.NewTape()
			xv := tp.Variable(c.x)
			y := op(xv, c.tau, c.iters)
			require.NotNil(t, y, c.name)
			require.Error(t, tp.Err(), c.name)
			assert.Contains(t, tp.Err().Error(), "relax: ", c.name)
			assert.Contains(t, tp.Err().Error(), c.msg, c.name)
			// The tape stays poisoned: later ops are no-ops and Backward
			// reports the error.
			loss := ad.Sum(y)
			assert.Error(t, tp.Backward(loss), c.name)
		}
	}
	// An earlier error propagates without a new one.
	tp := ad.NewTape()
	tp.Fail(fmt.Errorf("earlier"))
	y := SinkhornVar(tp.Variable(randTensor(rng, 1, 2, 2)), 1, 2)
	require.NotNil(t, y)
	assert.EqualError(t, tp.Err(), "earlier")
	assert.Nil(t, SinkhornVar(nil, 1, 1))
}

func TestSinkhornVarEmptyBatch(t *testing.T) {
	tp := ad.NewTape()
	y := SinkhornVar(tp.Variable(&ad.Tensor{Shape: []int{0, 3, 3}}), 1, 4)
	require.NoError(t, tp.Err())
	assert.Equal(t, []int{0, 3, 3}, y.Shape())
	assert.Equal(t, 0, y.Size())
}

func TestRowColStepRejectsOutOfRange(t *testing.T) {
	// The fused half-steps must report a scaling outside
	// [sinkScaleMin, sinkScaleMax] so that run rebuilds the kernel, and
	// otherwise give exactly the two separate matrix-vector products.
	rng := rand.New(rand.NewPCG(24, 24))
	const n = 7
	x := randTensor(rng, 1, n, n).Data
	w := newSinkWork(func(k int) []float64 { return make([]float64, k) }, x, n, 0.5, 3)
	w.run(3, 0)
	a, c := make([]float64, n), make([]float64, n)
	require.True(t, w.rowColStep(a, c))
	wantA, wantC := make([]float64, n), make([]float64, n)
	w.gemv(false, w.b, wantA)
	for i := range wantA {
		wantA[i] = 1 / wantA[i]
	}
	w.gemv(true, wantA, wantC)
	require.Equal(t, wantA, a)
	require.Equal(t, wantC, c)

	b := w.b
	for _, s := range []float64{0x1p-300, 0x1p300} {
		big := make([]float64, n)
		for j := range big {
			big[j] = b[j] * s
		}
		w.b = big
		require.False(t, w.rowColStep(a, c), "scale %g", s)
	}
	w.b = b
}
