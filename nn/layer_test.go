package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func randTensor(rng *rand.Rand, shape ...int) *ad.Tensor {
	x := ad.Zeros(shape...)
	for i := range x.Data {
		x.Data[i] = rng.NormFloat64()
	}
	return x
}

// awayFromZero returns a tensor whose entries have magnitude in [0.1, 2],
// so that finite differences with step 1e-6 never cross the kink of a
// rectifier.
func awayFromZero(rng *rand.Rand, shape ...int) *ad.Tensor {
	x := ad.Zeros(shape...)
	for i := range x.Data {
		v := 0.1 + 1.9*rng.Float64()
		if rng.IntN(2) == 0 {
			v = -v
		}
		x.Data[i] = v
	}
	return x
}

func TestDenseGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, shape := range [][]int{{4}, {5, 4}, {2, 3, 4}, {2, 2, 3, 4}} {
		x := randTensor(rng, shape...)
		w, b := randTensor(rng, 4, 6), randTensor(rng, 6)
		require.NoError(t, ad.CheckGradient(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
			return dense(v[0], v[1], v[2], Float64)
		}, x, w, b), "input shape %v", shape)
	}
}

func TestDenseForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d, err := NewDense(rng, "fc", 3, 2, GlorotUniform)
	require.NoError(t, err)
	copy(d.W.Value.Data, []float64{1, 2, 3, 4, 5, 6})
	copy(d.B.Value.Data, []float64{10, 20})
	tp := ad.NewTape()
	x := tp.Const(&ad.Tensor{Shape: []int{2, 1, 3}, Data: []float64{1, 0, 0, 1, 1, 1}})
	y := d.Forward(tp, x)
	require.NoError(t, tp.Err())
	assert.Equal(t, []int{2, 1, 2}, y.Shape())
	assert.Equal(t, []float64{11, 22, 19, 32}, y.Value())

	loss := ad.Sum(y)
	require.NoError(t, tp.Backward(loss))
	assert.Equal(t, []float64{2, 2, 1, 1, 1, 1}, d.W.Grad.Data)
	assert.Equal(t, []float64{2, 2}, d.B.Grad.Data)

	nb, err := NewDense(rng, "nb", 3, 2, HeNormal, NoBias())
	require.NoError(t, err)
	assert.Nil(t, nb.B)
	assert.Len(t, nb.Params(), 1)
	assert.Equal(t, "nb.W", nb.Params()[0].Name)
}

func TestLayerErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 3))
	_, err := NewDense(rng, "fc", 0, 2, GlorotUniform)
	assert.ErrorContains(t, err, "nn: NewDense \"fc\": sizes 0→2 must be >= 1")
	_, err = NewDense(nil, "fc", 2, 2, GlorotUniform)
	assert.ErrorContains(t, err, "random source")
	_, err = NewDense(rng, "fc", 2, 2, Init(42))
	assert.ErrorContains(t, err, "unknown scheme 42")
	for _, c := range []struct {
		in, out, k, s, p int
		msg              string
	}{
		{0, 1, 1, 1, 0, "input channels 0"},
		{1, 0, 1, 1, 0, "output channels 0"},
		{1, 1, 0, 1, 0, "kernel 0 must be >= 1"},
		{1, 1, 1, 0, 0, "stride 0"},
		{1, 1, 1, 1, -1, "padding -1"},
	} {
		_, err := NewConv2D(rng, "c", c.in, c.out, c.k, c.s, c.p, HeUniform)
		assert.ErrorContains(t, err, c.msg)
	}

	d, _ := NewDense(rng, "fc", 3, 2, GlorotUniform)
	conv, _ := NewConv2D(rng, "conv", 2, 3, 5, 1, 0, GlorotUniform)
	for name, f := range map[string]func(tp *ad.Tape) *ad.Var{
		"dense width":  func(tp *ad.Tape) *ad.Var { return d.Forward(tp, tp.Const(ad.Zeros(2, 4))) },
		"dense scalar": func(tp *ad.Tape) *ad.Var { return d.Forward(tp, tp.ConstScalar(1)) },
		"conv rank":    func(tp *ad.Tape) *ad.Var { return conv.Forward(tp, tp.Const(ad.Zeros(2, 8, 8))) },
		"conv chans":   func(tp *ad.Tape) *ad.Var { return conv.Forward(tp, tp.Const(ad.Zeros(1, 3, 8, 8))) },
		"conv small":   func(tp *ad.Tape) *ad.Var { return conv.Forward(tp, tp.Const(ad.Zeros(1, 2, 4, 8))) },
		"pool rank":    func(tp *ad.Tape) *ad.Var { return MaxPool2D{Size: 2}.Forward(tp, tp.Const(ad.Zeros(4, 4))) },
		"pool size":    func(tp *ad.Tape) *ad.Var { return MaxPool2D{Size: 5}.Forward(tp, tp.Const(ad.Zeros(1, 1, 4, 4))) },
		"pool zero":    func(tp *ad.Tape) *ad.Var { return MaxPool2D{}.Forward(tp, tp.Const(ad.Zeros(1, 1, 4, 4))) },
		"flatten":      func(tp *ad.Tape) *ad.Var { return Flatten{}.Forward(tp, tp.ConstScalar(1)) },
		"nil input":    func(tp *ad.Tape) *ad.Var { return ReLU{}.Forward(tp, nil) },
		"other tape":   func(tp *ad.Tape) *ad.Var { return Tanh{}.Forward(tp, ad.NewTape().ConstScalar(1)) },
		"sequential": func(tp *ad.Tape) *ad.Var {
			return Sequential{d, ReLU{}, d}.Forward(tp, tp.Const(ad.Zeros(2, 3)))
		},
	} {
		tp := ad.NewTape()
		var y *ad.Var
		require.NotPanics(t, func() { y = f(tp) }, name)
		assert.Error(t, tp.Err(), name)
		assert.NotNil(t, y, name)
		// Later ops are no-ops and Backward reports the error.
		assert.Error(t, tp.Backward(ad.Sum(ad.Exp(y))), name)
	}
}

func TestActivations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 4))
	x := awayFromZero(rng, 3, 4)
	for _, c := range []struct {
		name string
		l    Layer
		f    func(float64) float64
	}{
		{"ReLU", ReLU{}, func(v float64) float64 { return max(v, 0) }},
		{"LeakyReLU", LeakyReLU{Slope: 0.2}, func(v float64) float64 { return max(v, 0.2*v) }},
		{"Sigmoid", Sigmoid{}, func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }},
		{"Tanh", Tanh{}, math.Tanh},
		{"Softplus", Softplus{}, func(v float64) float64 { return math.Log(1 + math.Exp(v)) }},
		{"ELU", ELU{}, func(v float64) float64 {
			if v > 0 {
				return v
			}
			return math.Exp(v) - 1
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Nil(t, c.l.Params())
			tp := ad.NewTape()
			y := c.l.Forward(tp, tp.Const(x))
			require.NoError(t, tp.Err())
			for i, v := range x.Data {
				assert.InDelta(t, c.f(v), y.Value()[i], 1e-15, "x = %v", v)
			}
			require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, v []*ad.Var) *ad.Var {
				return c.l.Forward(tp, v[0])
			}, x))
		})
	}
}

func TestSequentialAndCollect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 5))
	d1, _ := NewDense(rng, "l1", 4, 3, GlorotUniform)
	d2, _ := NewDense(rng, "l2", 3, 2, GlorotUniform, NoBias())
	net := Sequential{Flatten{}, d1, Tanh{}, d2}
	names := []string{}
	for _, p := range net.Params() {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"l1.W", "l1.b", "l2.W"}, names)
	assert.Equal(t, net.Params(), Collect(d1, Tanh{}, nil, d2))

	x := randTensor(rng, 5, 2, 2)
	tp := ad.NewTape()
	y := net.Forward(tp, tp.Const(x))
	require.NoError(t, tp.Err())
	assert.Equal(t, []int{5, 2}, y.Shape())
	// The same map by hand.
	tp2 := ad.NewTape()
	h := ad.Tanh(dense(tp2.Const(&ad.Tensor{Shape: []int{5, 4}, Data: x.Data}), tp2.Param(d1.W), tp2.Param(d1.B), Float64))
	want := dense(h, tp2.Param(d2.W), nil, Float64)
	assert.Equal(t, want.Value(), y.Value())
}

func TestInitDistributions(t *testing.T) {
	const n = 20000
	fanIn, fanOut := 30, 10
	for _, c := range []struct {
		init  Init
		bound float64 // 0 for normal
		sd    float64
	}{
		{GlorotUniform, math.Sqrt(6.0 / 40), math.Sqrt(6.0/40) / math.Sqrt(3)},
		{HeUniform, math.Sqrt(6.0 / 30), math.Sqrt(6.0/30) / math.Sqrt(3)},
		{GlorotNormal, 0, math.Sqrt(2.0 / 40)},
		{HeNormal, 0, math.Sqrt(2.0 / 30)},
	} {
		t.Run(c.init.String(), func(t *testing.T) {
			x := make([]float64, n)
			require.NoError(t, c.init.Fill(rand.New(rand.NewPCG(7, 7)), x, fanIn, fanOut))
			var s, ss float64
			for _, v := range x {
				s += v
				ss += v * v
				if c.bound > 0 {
					require.LessOrEqual(t, math.Abs(v), c.bound)
				}
			}
			mean, sd := s/n, math.Sqrt(ss/n-(s/n)*(s/n))
			// Standard errors at n = 20000: mean sd/√n ≈ 0.007·sd, sd
			// ≈ 0.005·sd (normal); 5 standard errors.
			assert.InDelta(t, 0, mean, 5*c.sd/math.Sqrt(n))
			assert.InDelta(t, c.sd, sd, 0.04*c.sd)
			// Reproducible from the seed.
			y := make([]float64, n)
			require.NoError(t, c.init.Fill(rand.New(rand.NewPCG(7, 7)), y, fanIn, fanOut))
			assert.Equal(t, x, y)
		})
	}
	z := []float64{1, 2}
	require.NoError(t, Zero.Fill(nil, z, 0, 0))
	assert.Equal(t, []float64{0, 0}, z)
	assert.Equal(t, "Init(9)", Init(9).String())
}

// TestDenseFloat32 checks a Float32 layer: its gradients by central
// differences (the layer is affine in each input, so a large step is exact
// but for float32 rounding), its output against the Float64 layer's, and
// the option and field that select it.
func TestDenseFloat32(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	for _, shape := range [][]int{{4}, {5, 4}, {2, 3, 4}, {2, 2, 3, 4}} {
		x := randTensor(rng, shape...)
		w, b := randTensor(rng, 4, 6), randTensor(rng, 6)
		require.NoError(t, ad.GradCheck{Step: 0.5, Tol: 1e-4}.Check(func(_ *ad.Tape, v []*ad.Var) *ad.Var {
			return dense(v[0], v[1], v[2], Float32)
		}, x, w, b), "input shape %v", shape)
	}
	d, err := NewDense(rand.New(rand.NewPCG(2, 2)), "fc", 300, 40, HeUniform, WithPrecision(Float32))
	require.NoError(t, err)
	require.Equal(t, Float32, d.Precision)
	x := randTensor(rng, 50, 300)
	forward := func() []float64 {
		tp := ad.NewTape()
		y := d.Forward(tp, tp.Const(x))
		require.NoError(t, tp.Err())
		return append([]float64(nil), y.Value()...)
	}
	y32 := forward()
	d.Precision = Float64
	y64 := forward()
	differ := 0
	for i := range y64 {
		// |x| < 2 and |W| ≤ √(6/300): Σ|x||W| < 300·2·0.15 = 90.
		require.InDelta(t, y64[i], y32[i], 302*0x1p-24*90, "entry %d", i)
		if y32[i] != y64[i] {
			differ++
		}
	}
	require.Positive(t, differ, "the Float32 layer gave the Float64 layer's bits")

	d.Precision = Precision(7)
	tp := ad.NewTape()
	d.Forward(tp, tp.Const(x))
	require.ErrorContains(t, tp.Err(), "unknown Precision(7)")
	_, err = NewDense(rng, "fc", 3, 2, HeUniform, WithPrecision(Precision(-1)))
	require.ErrorContains(t, err, "unknown Precision(-1)")

	for _, p := range []Precision{Float64, Float32} {
		b, err := p.MarshalText()
		require.NoError(t, err)
		var q Precision
		require.NoError(t, q.UnmarshalText(b))
		require.Equal(t, p, q)
	}
	_, err = ParsePrecision("float16")
	require.ErrorContains(t, err, `unknown precision "float16"`)
}
