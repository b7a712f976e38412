package ad

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func randTensor(rng *rand.Rand, lo, hi float64, shape ...int) *Tensor {
	t := Zeros(shape...)
	for i := range t.Data {
		t.Data[i] = lo + (hi-lo)*rng.Float64()
	}
	return t
}

type unaryCase struct {
	name   string
	f      func(*Var) *Var
	lo, hi float64
}

// Every differentiable op is checked against central differences. Inputs
// avoid kinks (ReLU, Abs at 0) and domain edges (Log, Sqrt at 0); with
// h = 1e-6 the truncation and rounding errors are about 1e-9 relative, so
// the default tolerance 1e-6 leaves a wide margin without hiding wrong
// adjoints, which are off by O(1).
func TestUnaryGradients(t *testing.T) {
	cases := []unaryCase{
		{"Neg", Neg, -2, 2},
		{"Exp", Exp, -2, 2},
		{"Log", Log, 0.5, 3},
		{"Log1p", Log1p, -0.5, 3},
		{"Sigmoid", Sigmoid, -4, 4},
		{"Softplus", Softplus, -4, 4},
		{"ReLU", ReLU, 0.1, 2},
		{"ReLUneg", ReLU, -2, -0.1},
		{"Tanh", Tanh, -2, 2},
		{"Square", Square, -2, 2},
		{"Sqrt", Sqrt, 0.5, 3},
		{"Abs", Abs, 0.1, 2},
		{"Pow", func(x *Var) *Var { return Pow(x, 2.5) }, 0.5, 2},
		{"Scale", func(x *Var) *Var { return Scale(x, -1.7) }, -2, 2},
		{"AddConst", func(x *Var) *Var { return AddConst(x, 3) }, -2, 2},
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := randTensor(rng, c.lo, c.hi, 3, 4)
			require.NoError(t, CheckGradient(func(_ *Tape, xs []*Var) *Var { return c.f(xs[0]) }, x))
		})
	}
}

func TestUnaryValues(t *testing.T) {
	tp := NewTape()
	x := tp.Const(&Tensor{Shape: []int{4}, Data: []float64{-800, -1, 0, 800}})
	assert.InDeltaSlice(t, []float64{0, 1 / (1 + math.E), 0.5, 1}, Sigmoid(x).Value(), 1e-15)
	sp := Softplus(x).Value()
	assert.InDelta(t, 0, sp[0], 1e-300)
	assert.InDelta(t, 800, sp[3], 1e-12)
	assert.False(t, math.IsInf(sp[3], 0))
	require.NoError(t, tp.Err())
}

func TestBinaryGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	shapes := []struct {
		name string
		a, b []int
	}{
		{"same", []int{2, 3}, []int{2, 3}},
		{"scalarB", []int{2, 3}, []int{}},
		{"scalarA", []int{1}, []int{2, 3}},
		{"row", []int{2, 3, 4}, []int{4}},
		{"matrix", []int{2, 3, 4}, []int{3, 4}},
		{"rowA", []int{4}, []int{2, 4}},
		{"col", []int{2, 3, 4}, []int{2, 3, 1}},
		{"colA", []int{3, 1}, []int{3, 5}},
	}
	ops := []struct {
		name string
		f    func(a, b *Var) *Var
	}{{"Add", Add}, {"Sub", Sub}, {"Mul", Mul}, {"Div", Div}}
	for _, s := range shapes {
		for _, op := range ops {
			t.Run(op.name+"/"+s.name, func(t *testing.T) {
				a := randTensor(rng, 0.5, 2, s.a...)
				b := randTensor(rng, 0.5, 2, s.b...)
				require.NoError(t, CheckGradient(func(_ *Tape, xs []*Var) *Var { return op.f(xs[0], xs[1]) }, a, b))
			})
		}
	}
}

func TestBroadcastValues(t *testing.T) {
	tp := NewTape()
	a := tp.Const(&Tensor{Shape: []int{2, 2}, Data: []float64{1, 2, 3, 4}})
	row := tp.Const(&Tensor{Shape: []int{2}, Data: []float64{10, 20}})
	col := tp.Const(&Tensor{Shape: []int{2, 1}, Data: []float64{100, 200}})
	assert.Equal(t, []float64{11, 22, 13, 24}, Add(a, row).Value())
	assert.Equal(t, []float64{101, 102, 203, 204}, Add(a, col).Value())
	assert.Equal(t, []float64{-99, -98, -197, -196}, Sub(a, col).Value())
	require.NoError(t, tp.Err())
	Add(a, tp.Const(Zeros(3)))
	require.Error(t, tp.Err())
}

func TestMatMulGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	cases := []struct {
		name string
		a, b []int
	}{
		{"2x2", []int{3, 4}, []int{4, 2}},
		{"3x3", []int{2, 3, 4}, []int{2, 4, 5}},
		{"3x2", []int{2, 3, 4}, []int{4, 5}},
		{"2x3", []int{3, 4}, []int{2, 4, 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := randTensor(rng, -1, 1, c.a...)
			b := randTensor(rng, -1, 1, c.b...)
			require.NoError(t, CheckGradient(func(_ *Tape, xs []*Var) *Var { return MatMul(xs[0], xs[1]) }, a, b))
		})
	}
}

func TestMatMulValues(t *testing.T) {
	tp := NewTape()
	a := tp.Const(&Tensor{Shape: []int{2, 3}, Data: []float64{1, 2, 3, 4, 5, 6}})
	b := tp.Const(&Tensor{Shape: []int{3, 2}, Data: []float64{7, 8, 9, 10, 11, 12}})
	assert.Equal(t, []float64{58, 64, 139, 154}, MatMul(a, b).Value())
	assert.Equal(t, []float64{1, 4, 2, 5, 3, 6}, Transpose(a).Value())
	MatMul(a, a)
	require.Error(t, tp.Err())
}

func TestReductionGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	x := randTensor(rng, -2, 2, 2, 3, 4)
	fs := map[string]func(*Var) *Var{
		"Sum":          Sum,
		"Mean":         Mean,
		"SumAxis0":     func(v *Var) *Var { return SumAxis(v, 0) },
		"SumAxis1":     func(v *Var) *Var { return SumAxis(v, 1) },
		"MeanAxisLast": func(v *Var) *Var { return MeanAxis(v, -1) },
		"LSE0":         func(v *Var) *Var { return LogSumExp(v, 0) },
		"LSE1":         func(v *Var) *Var { return LogSumExp(v, 1) },
		"LSE2":         func(v *Var) *Var { return LogSumExp(v, 2) },
		"Softmax1":     func(v *Var) *Var { return Softmax(v, 1) },
		"Softmax2":     func(v *Var) *Var { return Softmax(v, -1) },
		"LogSoftmax0":  func(v *Var) *Var { return LogSoftmax(v, 0) },
		"LogSoftmax2":  func(v *Var) *Var { return LogSoftmax(v, 2) },
	}
	for name, f := range fs {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, CheckGradient(func(_ *Tape, xs []*Var) *Var { return f(xs[0]) }, x))
		})
	}
}

func TestLogSumExpStable(t *testing.T) {
	tp := NewTape()
	x := tp.Const(&Tensor{Shape: []int{2, 3}, Data: []float64{1e6, 1e6, 1e6, -1e6, math.Inf(-1), -1e6}})
	y := LogSumExp(x, 1).Value()
	assert.InDelta(t, 1e6+math.Log(3), y[0], 1e-6)
	assert.InDelta(t, -1e6+math.Log(2), y[1], 1e-6)
	s := Softmax(x, 1).Value()
	assert.InDeltaSlice(t, []float64{1. / 3, 1. / 3, 1. / 3, 0.5, 0, 0.5}, s, 1e-12)
	z := LogSumExp(tp.Const(&Tensor{Shape: []int{2}, Data: []float64{math.Inf(-1), math.Inf(-1)}}), 0)
	assert.True(t, math.IsInf(z.Item(), -1))
}

func TestShapeOpGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	x := randTensor(rng, -2, 2, 3, 2, 4)
	y := randTensor(rng, -2, 2, 2, 2, 4)
	keep := []bool{true, false, true, true, false, true, true, true}
	cases := map[string]func(t *Tape, xs []*Var) *Var{
		"Reshape":   func(_ *Tape, v []*Var) *Var { return Reshape(v[0], 6, -1) },
		"Transpose": func(_ *Tape, v []*Var) *Var { return Transpose(v[0]) },
		"Take":      func(_ *Tape, v []*Var) *Var { return Take(v[0], []int{2, 0, 2}) },
		"Index":     func(_ *Tape, v []*Var) *Var { return Index(v[0], 1) },
		"Slice":     func(_ *Tape, v []*Var) *Var { return Slice(v[0], 1, 3) },
		"Gather":    func(_ *Tape, v []*Var) *Var { return Gather(v[0], []int{0, 3, 1, 1, 2, 0}) },
		"Concat":    func(_ *Tape, v []*Var) *Var { return Concat(v[0], v[1], v[0]) },
		"Mask": func(_ *Tape, v []*Var) *Var {
			return Mask(Reshape(v[0], 3, 8), append(append(keep, keep...), keep...), -5)
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, CheckGradient(f, x, y))
		})
	}
}

func TestCompositeGradient(t *testing.T) {
	// A small two-layer network with a softmax cross-entropy.
	rng := rand.New(rand.NewPCG(6, 6))
	x := randTensor(rng, -1, 1, 5, 3)
	w1 := randTensor(rng, -1, 1, 3, 4)
	w2 := randTensor(rng, -1, 1, 4, 2)
	require.NoError(t, CheckGradient(func(_ *Tape, v []*Var) *Var {
		h := Tanh(MatMul(v[0], v[1]))
		out := LogSoftmax(MatMul(h, v[2]), -1)
		return Neg(Mean(Gather(out, []int{0, 1, 1, 0, 1})))
	}, x, w1, w2))
}

func TestErrorsAreSticky(t *testing.T) {
	tp := NewTape()
	a := tp.Const(Zeros(2, 3))
	b := tp.Const(Zeros(4))
	c := Add(a, b)
	require.Error(t, tp.Err())
	d := Exp(MatMul(c, a)) // no panic on the dead value
	assert.NotNil(t, d)
	require.Error(t, tp.Backward(Sum(d)))

	other := NewTape()
	tp.Reset()
	require.NoError(t, tp.Err())
	Add(tp.Const(Zeros(2)), other.Const(Zeros(2)))
	require.ErrorContains(t, tp.Err(), "different tapes")

	tp.Reset()
	SumAxis(tp.Const(Zeros(2)), 3)
	require.ErrorContains(t, tp.Err(), "axis")
	tp.Reset()
	Reshape(tp.Const(Zeros(2, 3)), 4, -1)
	require.Error(t, tp.Err())
	tp.Reset()
	Take(tp.Const(Zeros(2, 3)), []int{2})
	require.Error(t, tp.Err())
	tp.Reset()
	require.ErrorIs(t, tp.Backward(tp.Variable(Zeros(2))), ErrNotScalar)
	assert.Nil(t, Exp(nil))
	_, err := NewTensor([]int{2, 2}, make([]float64, 3))
	require.Error(t, err)
	tp.Reset()
	tp.Const(Zeros(2, -1))
	require.Error(t, tp.Err(), "a negative dimension is an error, not a panic")
}

func TestParamAccumulatesAndReset(t *testing.T) {
	p := NewParam("w", &Tensor{Shape: []int{2}, Data: []float64{1, 2}})
	tp := NewTape()
	for step := 0; step < 3; step++ {
		tp.Reset()
		w := tp.Param(p)
		loss := Sum(Square(w)) // gradient 2w
		require.NoError(t, tp.Backward(loss))
	}
	assert.Equal(t, []float64{6, 12}, p.Grad.Data)
	p.ZeroGrad()
	assert.Equal(t, []float64{0, 0}, p.Grad.Data)
}

func TestResetReusesBuffers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	p := NewParam("w", randTensor(rng, -1, 1, 8, 8))
	x := randTensor(rng, -1, 1, 8, 8)
	tp := NewTape()
	step := func() {
		tp.Reset()
		w := tp.Param(p)
		h := Softmax(MatMul(tp.Const(x), w), -1)
		if err := tp.Backward(Sum(Mul(h, h))); err != nil {
			t.Fatal(err)
		}
	}
	step()
	allocs := testing.AllocsPerRun(20, step)
	// Buffers and nodes come from the pool; only small bookkeeping remains.
	assert.LessOrEqual(t, allocs, 4.0)
}

func TestCustomOp(t *testing.T) {
	// A custom cube op y = x³ with its adjoint 3x²·ȳ.
	cube := func(x *Var) *Var {
		tp := x.Tape()
		val := tp.Alloc(x.Size())
		for i, v := range x.Value() {
			val[i] = v * v * v
		}
		xv := x.Value()
		return tp.Custom(x.Shape(), val, []*Var{x}, func(g []float64, gIn [][]float64) {
			if gIn[0] == nil {
				return
			}
			for i, v := range xv {
				gIn[0][i] += 3 * v * v * g[i]
			}
		})
	}
	rng := rand.New(rand.NewPCG(8, 8))
	require.NoError(t, CheckGradient(func(_ *Tape, v []*Var) *Var { return cube(v[0]) }, randTensor(rng, -2, 2, 3, 3)))
	tp := NewTape()
	tp.Custom([]int{2}, make([]float64, 3), nil, nil)
	require.Error(t, tp.Err())
}

func TestGradCheckCatchesWrongAdjoint(t *testing.T) {
	wrong := func(_ *Tape, v []*Var) *Var {
		x := v[0]
		tp := x.Tape()
		val := tp.Alloc(x.Size())
		for i, xi := range x.Value() {
			val[i] = xi * xi
		}
		return tp.Custom(x.Shape(), val, []*Var{x}, func(g []float64, gIn [][]float64) {
			for i := range g {
				gIn[0][i] += g[i] // should be 2x·g
			}
		})
	}
	require.Error(t, CheckGradient(wrong, &Tensor{Shape: []int{2}, Data: []float64{1.5, -2}}))
}

func TestAllocRaw(t *testing.T) {
	tp := NewTape()
	buf := tp.Alloc(5)
	require.Equal(t, make([]float64, 5), buf)
	for i := range buf {
		buf[i] = float64(i + 1)
	}
	tp.Reset()
	// The buffer went back to the pool; AllocRaw hands it out as it is,
	// Alloc zeroed.
	raw := tp.AllocRaw(5)
	require.Len(t, raw, 5)
	require.Equal(t, []float64{1, 2, 3, 4, 5}, raw)
	tp.Reset()
	require.Equal(t, make([]float64, 5), tp.Alloc(5))
	require.Len(t, tp.AllocRaw(7), 7)
}
