package nn

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCrossEntropy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 1))
	z := randTensor(rng, 4, 5)
	labels := []int{0, 4, 2, 2}
	tp := ad.NewTape()
	got := CrossEntropy(tp.Const(z), labels)
	require.NoError(t, tp.Err())
	want := 0.0
	for i, y := range labels {
		s := 0.0
		for j := range 5 {
			s += math.Exp(z.Data[i*5+j])
		}
		want -= math.Log(math.Exp(z.Data[i*5+y]) / s)
	}
	assert.InDelta(t, want/4, got.Item(), 1e-14)
	require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
		return CrossEntropy(v[0], labels)
	}, z))

	// Stable for huge logits: log-softmax, not log(softmax).
	big := &ad.Tensor{Shape: []int{1, 3}, Data: []float64{1000, 0, -1000}}
	assert.InDelta(t, 1000+math.Log1p(math.Exp(-1000)), CrossEntropy(tp.Const(big), []int{1}).Item(), 1e-9)
	require.NoError(t, tp.Err())

	for name, f := range map[string]func(tp *ad.Tape) *ad.Var{
		"rank":   func(tp *ad.Tape) *ad.Var { return CrossEntropy(tp.Const(ad.Zeros(4)), []int{0}) },
		"count":  func(tp *ad.Tape) *ad.Var { return CrossEntropy(tp.Const(ad.Zeros(2, 3)), []int{0}) },
		"range":  func(tp *ad.Tape) *ad.Var { return CrossEntropy(tp.Const(ad.Zeros(2, 3)), []int{0, 3}) },
		"negate": func(tp *ad.Tape) *ad.Var { return CrossEntropy(tp.Const(ad.Zeros(1, 3)), []int{-1}) },
	} {
		tp := ad.NewTape()
		f(tp)
		assert.Error(t, tp.Err(), name)
	}
}

func TestBinaryCrossEntropyWithLogits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 2))
	x := randTensor(rng, 3, 4)
	y := ad.Zeros(3, 4)
	for i := range y.Data {
		y.Data[i] = rng.Float64()
	}
	tp := ad.NewTape()
	got := BinaryCrossEntropyWithLogits(tp.Const(x), tp.Const(y))
	require.NoError(t, tp.Err())
	require.Equal(t, []int{3}, got.Shape())
	for r := range 3 {
		want := 0.0
		for d := range 4 {
			p := 1 / (1 + math.Exp(-x.Data[r*4+d]))
			want -= y.Data[r*4+d]*math.Log(p) + (1-y.Data[r*4+d])*math.Log(1-p)
		}
		assert.InDelta(t, want, got.Value()[r], 1e-13, "row %d", r)
	}
	require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
		return BinaryCrossEntropyWithLogits(v[0], v[1])
	}, x, y))
	// Rank 3 gives one value per (…) row.
	x3 := randTensor(rng, 2, 3, 4)
	assert.Equal(t, []int{2, 3}, BinaryCrossEntropyWithLogits(tp.Const(x3), tp.Const(x3)).Shape())
	// Stable where σ(x) rounds to 1: the loss of target 0 is x itself.
	huge := &ad.Tensor{Shape: []int{1, 1}, Data: []float64{800}}
	assert.InDelta(t, 800, BinaryCrossEntropyWithLogits(tp.Const(huge), tp.Const(ad.Zeros(1, 1))).Item(), 1e-12)
	require.NoError(t, tp.Err())

	BinaryCrossEntropyWithLogits(tp.Const(ad.Zeros(2, 3)), tp.Const(ad.Zeros(3, 2)))
	assert.Error(t, tp.Err())
	tp2 := ad.NewTape()
	BinaryCrossEntropyWithLogits(tp2.Const(ad.Zeros(2, 3)), nil)
	assert.Error(t, tp2.Err())
}

func TestMSE(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	p, q := randTensor(rng, 2, 3), randTensor(rng, 2, 3)
	tp := ad.NewTape()
	got := MSE(tp.Const(p), tp.Const(q))
	want := 0.0
	for i := range p.Data {
		want += (p.Data[i] - q.Data[i]) * (p.Data[i] - q.Data[i]) / 6
	}
	assert.InDelta(t, want, got.Item(), 1e-15)
	require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var { return MSE(v[0], v[1]) }, p, q))
	MSE(tp.Const(p), tp.Const(ad.Zeros(3, 2)))
	assert.Error(t, tp.Err())

	// The fused op is ad.Mean(ad.Square(ad.Sub(·, ·))), bit for bit, in
	// value and adjoints, whichever inputs need a gradient.
	p, q = randTensor(rng, 7, 13), randTensor(rng, 7, 13)
	for _, vars := range [][2]bool{{true, true}, {true, false}, {false, true}} {
		run := func(fused bool) []uint64 {
			tp := ad.NewTape()
			leaf := func(x *ad.Tensor, v bool) *ad.Var {
				if v {
					return tp.Variable(x)
				}
				return tp.Const(x)
			}
			a, b := leaf(p, vars[0]), leaf(q, vars[1])
			// A second use of each input, so that the adjoints
			// accumulate onto something.
			base := ad.Sum(ad.Mul(ad.Add(a, b), ad.Add(a, b)))
			var l *ad.Var
			if fused {
				l = MSE(a, b)
			} else {
				l = ad.Mean(ad.Square(ad.Sub(a, b)))
			}
			require.NoError(t, tp.Backward(ad.Add(ad.Mul(l, tp.ConstScalar(3)), base)))
			out := []float64{l.Item()}
			out = append(out, a.Grad()...)
			out = append(out, b.Grad()...)
			bits := make([]uint64, len(out))
			for i, v := range out {
				bits[i] = math.Float64bits(v)
			}
			return bits
		}
		require.Equal(t, run(false), run(true), "variables %v", vars)
	}
}

func TestAccuracy(t *testing.T) {
	logits := []float64{
		0.1, 0.9, 0,
		2, 2, 1, // tie: the first maximum, class 0
		0, 0, 5,
		1, 0, 0,
	}
	assert.Equal(t, 0.75, Accuracy(logits, 4, 3, []int{1, 0, 2, 2}))
	assert.True(t, math.IsNaN(Accuracy(logits, 4, 3, []int{1})))
	assert.True(t, math.IsNaN(Accuracy(nil, 0, 3, nil)))
}

// sigmoidRef is the logistic function as BinaryCrossEntropyWithLogits
// computed it before it reused the forward pass's exponential.
func sigmoidRef(v float64) float64 {
	if v >= 0 {
		return 1 / (1 + math.Exp(-v))
	}
	e := math.Exp(v)
	return e / (1 + e)
}

// TestBinaryCrossEntropyLarge checks, on an input large enough to be split
// across goroutines, that the loss of every row and the gradient equal a
// plain loop bit for bit (each row summed in order, the gradient through
// sigmoidRef), whatever GOMAXPROCS is.
func TestBinaryCrossEntropyLarge(t *testing.T) {
	const rows, d = 64, 784
	rng := rand.New(rand.NewPCG(3, 3))
	x, y := make([]float64, rows*d), make([]float64, rows*d)
	for k := range x {
		x[k] = 30 * (rng.Float64() - 0.5)
		if rng.IntN(2) == 1 {
			y[k] = 1
		}
	}
	x[0], x[1], x[2] = 0, math.Copysign(0, -1), 800
	wantLoss := make([]float64, rows)
	wantGrad := make([]float64, rows*d)
	for r := range rows {
		for k := r * d; k < (r+1)*d; k++ {
			v := x[k]
			wantLoss[r] += max(v, 0) - v*y[k] + math.Log1p(math.Exp(-math.Abs(v)))
			wantGrad[k] = float64(r+1) * (sigmoidRef(v) - y[k])
		}
	}
	for _, procs := range []int{1, 2, 5} {
		prev := runtime.GOMAXPROCS(procs)
		tp := ad.NewTape()
		xv := tp.Variable(&ad.Tensor{Shape: []int{rows, d}, Data: x})
		l := BinaryCrossEntropyWithLogits(xv, tp.Const(&ad.Tensor{Shape: []int{rows, d}, Data: y}))
		w := make([]float64, rows)
		for r := range w {
			w[r] = float64(r + 1)
		}
		require.NoError(t, tp.Backward(ad.Sum(ad.Mul(l, tp.Const(&ad.Tensor{Shape: []int{rows}, Data: w})))))
		runtime.GOMAXPROCS(prev)
		assert.Equal(t, wantLoss, l.Value(), "GOMAXPROCS %d: loss", procs)
		assert.Equal(t, wantGrad, xv.Grad(), "GOMAXPROCS %d: gradient", procs)
	}
}
