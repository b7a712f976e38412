package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fusedCases are convolution and pooling geometries for the fused op:
// input (n, c, h, w), f filters k×k with stride s and padding p, then
// pooling of size ps and stride pst (0: = size).
var fusedCases = []struct {
	n, c, h, w, f, k, s, p, ps, pst int
}{
	{3, 1, 9, 9, 5, 5, 1, 2, 2, 0},   // the jigsaw shape: 9×9 → 4×4, last row and column dropped
	{2, 3, 7, 6, 4, 3, 1, 1, 2, 0},   // several channels
	{2, 2, 8, 7, 9, 3, 2, 1, 2, 0},   // stride-2 convolution, F > 8
	{2, 2, 7, 7, 3, 3, 1, 1, 3, 2},   // overlapping windows
	{1, 1, 6, 6, 2, 3, 1, 1, 3, 1},   // overlapping, stride 1
	{17, 1, 6, 5, 2, 3, 1, 1, 2, 0},  // more samples than gradient chunks
	{2, 2, 5, 5, 3, 5, 1, 2, 5, 0},   // one window covering the whole output
	{2, 1, 4, 6, 3, 1, 1, 0, 1, 0},   // 1×1 kernel and 1×1 pooling: no pooling at all
	{1, 2, 10, 10, 6, 3, 1, 0, 2, 3}, // stride larger than the window: pixels no window sees
}

// intTensor returns entries drawn from {lo, …, hi}: sums of them are
// exact, so windows have exact ties and ReLU inputs exact zeros.
func intTensor(rng *rand.Rand, lo, hi int, shape ...int) *ad.Tensor {
	x := ad.Zeros(shape...)
	for i := range x.Data {
		x.Data[i] = float64(lo + rng.IntN(hi-lo+1))
	}
	return x
}

// trunkRun runs x through the layers, fused (as Sequential) or one by
// one, then backward from Σ w⊙y. It returns the output's shape and
// copies of the output, of the adjoints of x and of every parameter of
// conv, and the length of the tape after the forward pass.
func trunkRun(layers []Layer, conv *Conv2D, x, w *ad.Tensor, fused bool) ([][]float64, int) {
	for _, p := range conv.Params() {
		p.ZeroGrad()
	}
	tp := ad.NewTape()
	xv := tp.Variable(x)
	var y *ad.Var
	if fused {
		y = Sequential(layers).Forward(tp, xv)
	} else {
		y = xv
		for _, l := range layers {
			y = l.Forward(tp, y)
		}
	}
	n := tp.Len()
	if err := tp.Backward(ad.Sum(ad.Mul(ad.Reshape(y, w.Shape...), tp.Const(w)))); err != nil {
		panic(err)
	}
	shape := make([]float64, len(y.Shape()))
	for i, d := range y.Shape() {
		shape[i] = float64(d)
	}
	out := [][]float64{shape, slices.Clone(y.Value()), slices.Clone(xv.Grad())}
	for _, p := range conv.Params() {
		out = append(out, slices.Clone(p.Grad.Data))
	}
	return out, n
}

// bitsOf returns the bits of every value in parts, in order.
func bitsOf(parts ...[]float64) []uint64 {
	var bits []uint64
	for _, s := range parts {
		for _, v := range s {
			bits = append(bits, math.Float64bits(v))
		}
	}
	return bits
}

func TestSequentialFusesConvReLUPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 1))
	for _, c := range fusedCases {
		for _, order := range []string{"relu-pool", "pool-relu"} {
			for _, data := range []string{"normal", "integer"} {
				for _, bias := range []bool{true, false} {
					name := fmt.Sprintf("%+v %s %s bias=%v", c, order, data, bias)
					var opts []Option
					if !bias {
						opts = append(opts, NoBias())
					}
					conv, err := NewConv2D(rng, "conv", c.c, c.f, c.k, c.s, c.p, GlorotUniform, opts...)
					require.NoError(t, err)
					var x *ad.Tensor
					if data == "normal" {
						x = randTensor(rng, c.n, c.c, c.h, c.w)
						if bias {
							copy(conv.B.Value.Data, randTensor(rng, c.f).Data)
						}
					} else {
						// Ties everywhere, exact zeros before the ReLU, and
						// a sample of zeros whose outputs all equal the bias.
						x = intTensor(rng, 0, 2, c.n, c.c, c.h, c.w)
						clear(x.Data[:c.c*c.h*c.w])
						copy(conv.W.Value.Data, intTensor(rng, -1, 1, c.f, c.c*c.k*c.k).Data)
						if bias {
							copy(conv.B.Value.Data, intTensor(rng, -1, 1, c.f).Data)
						}
					}
					pool := MaxPool2D{Size: c.ps, Stride: c.pst}
					layers := []Layer{conv, ReLU{}, pool, Flatten{}}
					if order == "pool-relu" {
						// Also: pointers, and no Flatten to fuse.
						layers = []Layer{conv, &pool, &ReLU{}}
					}
					ho, wo, err := conv.OutSize(c.h, c.w)
					require.NoError(t, err)
					st := c.pst
					if st == 0 {
						st = c.ps
					}
					outs := c.f * ((ho-c.ps)/st + 1) * ((wo-c.ps)/st + 1)
					w := randTensor(rng, c.n, outs)
					got, fusedLen := trunkRun(layers, conv, x, w, true)
					want, plainLen := trunkRun(layers, conv, x, w, false)
					// Fused: x, W, (b,) and the op, which includes Flatten.
					assert.Equal(t, len(conv.Params())+2, fusedLen, name)
					assert.Equal(t, len(conv.Params())+1+len(layers), plainLen, name)
					// The shape, the output, and without overlapping
					// windows x̄, are the same sums in the same order.
					exact := 2
					if st >= c.ps {
						exact = 3
					}
					if f64.UsesFMA() {
						require.Equal(t, bitsOf(want[:exact]...), bitsOf(got[:exact]...), name)
					}
					// The rest differ by the order of their sums: sums of
					// at most a few hundred O(1) terms.
					for k := range want {
						for i := range want[k] {
							require.InDelta(t, want[k][i], got[k][i], 1e-12*math.Max(1, math.Abs(want[k][i])), "%s: part %d entry %d", name, k, i)
						}
					}
				}
			}
		}
	}
}

func TestConvReLUPoolGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 2))
	for _, c := range fusedCases {
		if !longtest.Enabled && c.n > 3 {
			continue
		}
		{
			ho, wo := (c.h+2*c.p-c.k)/c.s+1, (c.w+2*c.p-c.k)/c.s+1
			g := convGeom{n: c.n, c: c.c, h: c.h, w: c.w, f: c.f, ho: ho, wo: wo, k: c.k, stride: c.s, pad: c.p}
			st := c.pst
			if st == 0 {
				st = c.ps
			}
			pg := poolGeom{size: c.ps, stride: st, ho: (ho-c.ps)/st + 1, wo: (wo-c.ps)/st + 1}
			// Normal draws: no conv output lies within the step 1e-6 of
			// zero or of another entry of its window, so the finite
			// differences see a smooth function.
			x := randTensor(rng, c.n, c.c, c.h, c.w)
			w := randTensor(rng, c.f, c.c*c.k*c.k)
			b := randTensor(rng, c.f)
			require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, v []*ad.Var) *ad.Var {
				return convReLUPool(tp, &g, &pg, v[0], v[1], v[2], false)
			}, x, w, b), "%+v", c)
			require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, v []*ad.Var) *ad.Var {
				return convReLUPool(tp, &g, &pg, v[0], v[1], nil, true)
			}, x, w), "%+v, no bias", c)
		}
	}
}

func TestConvReLUPoolIndependentOfGOMAXPROCS(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 3))
	conv, err := NewConv2D(rng, "c", 3, 12, 5, 1, 2, GlorotUniform)
	require.NoError(t, err)
	copy(conv.B.Value.Data, randTensor(rng, 12).Data)
	layers := []Layer{conv, ReLU{}, MaxPool2D{Size: 2}, Flatten{}}
	x := randTensor(rng, 37, 3, 9, 9)
	w := randTensor(rng, 37, 12*4*4)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	ref, _ := trunkRun(layers, conv, x, w, true)
	for _, procs := range []int{4, 3} {
		runtime.GOMAXPROCS(procs)
		got, _ := trunkRun(layers, conv, x, w, true)
		require.Equal(t, bitsOf(ref...), bitsOf(got...), "GOMAXPROCS=%d", procs)
	}
}

// TestSequentialFusedErrors checks that layers that would fail are not
// fused: the unfused layers report the error they always reported.
func TestSequentialFusedErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 4))
	conv, err := NewConv2D(rng, "c", 2, 3, 3, 1, 1, GlorotUniform)
	require.NoError(t, err)
	for _, c := range []struct {
		net   Sequential
		shape []int
		msg   string
	}{
		{Sequential{conv, ReLU{}, MaxPool2D{Size: 2}}, []int{2, 2, 5}, "Conv2D: want input shape"},
		{Sequential{conv, ReLU{}, MaxPool2D{Size: 2}}, []int{2, 3, 5, 5}, "Conv2D: want input shape"},
		{Sequential{conv, ReLU{}, MaxPool2D{Size: 6}}, []int{2, 2, 5, 5}, "MaxPool2D: window 6 does not fit"},
		{Sequential{conv, MaxPool2D{Size: -1}, ReLU{}}, []int{2, 2, 5, 5}, "MaxPool2D: size -1"},
		{Sequential{&Conv2D{W: conv.W, InC: 2, OutC: 3, Kernel: 3}, ReLU{}, MaxPool2D{Size: 2}}, []int{2, 2, 5, 5}, "stride 0"},
	} {
		tp := ad.NewTape()
		c.net.Forward(tp, tp.Const(ad.Zeros(c.shape...)))
		require.ErrorContains(t, tp.Err(), c.msg, "%v", c.shape)
	}
	// An empty batch: the same shape as the layers one by one give.
	tp0 := ad.NewTape()
	y0 := Sequential{conv, ReLU{}, MaxPool2D{Size: 2}, Flatten{}}.Forward(tp0, tp0.Const(ad.Zeros(0, 2, 5, 5)))
	require.NoError(t, tp0.Err())
	require.Equal(t, []int{0, 0}, y0.Shape())
	y0 = Sequential{conv, ReLU{}, MaxPool2D{Size: 2}}.Forward(tp0, tp0.Const(ad.Zeros(0, 2, 5, 5)))
	require.NoError(t, tp0.Err())
	require.Equal(t, []int{0, 3, 2, 2}, y0.Shape())
	// Other layers between them: not fused, same result as by hand.
	x := randTensor(rng, 2, 2, 5, 5)
	tp := ad.NewTape()
	y := Sequential{conv, Tanh{}, MaxPool2D{Size: 2}}.Forward(tp, tp.Const(x))
	require.NoError(t, tp.Err())
	require.Equal(t, 6, tp.Len()) // x, W, b, conv, tanh, pool
	tp2 := ad.NewTape()
	want := MaxPool2D{Size: 2}.Forward(tp2, ad.Tanh(conv.Forward(tp2, tp2.Const(x))))
	require.Equal(t, want.Value(), y.Value())
}
