package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/stretchr/testify/require"
)

// naiveConv evaluates the defining sum of Conv2D directly.
func naiveConv(x, w, b *ad.Tensor, g convGeom) []float64 {
	y := make([]float64, g.n*g.f*g.ho*g.wo)
	for n := range g.n {
		for f := range g.f {
			for i := range g.ho {
				for j := range g.wo {
					s := 0.0
					if b != nil {
						s = b.Data[f]
					}
					for c := range g.c {
						for u := range g.k {
							for v := range g.k {
								ii, jj := i*g.stride+u-g.pad, j*g.stride+v-g.pad
								if ii < 0 || ii >= g.h || jj < 0 || jj >= g.w {
									continue
								}
								s += w.Data[f*g.c*g.k*g.k+(c*g.k+u)*g.k+v] * x.Data[((n*g.c+c)*g.h+ii)*g.w+jj]
							}
						}
					}
					y[((n*g.f+f)*g.ho+i)*g.wo+j] = s
				}
			}
		}
	}
	return y
}

var convCases = []struct {
	n, c, h, w, f, k, s, p int
}{
	{1, 1, 5, 5, 1, 3, 1, 0},
	{2, 3, 7, 6, 4, 3, 1, 1},
	{3, 2, 9, 9, 5, 5, 1, 2},  // the jigsaw shape, "same" padding
	{2, 2, 8, 7, 3, 3, 2, 1},  // stride 2 with padding
	{2, 1, 6, 6, 9, 2, 2, 0},  // F > 8: two kernel panels
	{1, 2, 4, 4, 3, 5, 3, 2},  // kernel larger than the input
	{17, 1, 6, 5, 2, 3, 1, 1}, // more samples than gradient chunks
}

func TestConv2DMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 1))
	for _, c := range convCases {
		name := fmt.Sprintf("%+v", c)
		conv, err := NewConv2D(rng, "conv", c.c, c.f, c.k, c.s, c.p, GlorotUniform)
		require.NoError(t, err)
		copy(conv.B.Value.Data, randTensor(rng, c.f).Data)
		x := randTensor(rng, c.n, c.c, c.h, c.w)
		tp := ad.NewTape()
		y := conv.Forward(tp, tp.Const(x))
		require.NoError(t, tp.Err(), name)
		ho, wo, err := conv.OutSize(c.h, c.w)
		require.NoError(t, err)
		require.Equal(t, []int{c.n, c.f, ho, wo}, y.Shape(), name)
		want := naiveConv(x, conv.W.Value, conv.B.Value, convGeom{n: c.n, c: c.c, h: c.h, w: c.w, f: c.f, ho: ho, wo: wo, k: c.k, stride: c.s, pad: c.p})
		for i := range want {
			// At most 50 products of O(1) terms, summed in two orders.
			require.InDelta(t, want[i], y.Value()[i], 1e-12, "%s: element %d", name, i)
		}
	}
}

func TestConv2DGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, c := range convCases {
		if !longtest.Enabled && c.n > 3 {
			continue
		}
		ho, wo := (c.h+2*c.p-c.k)/c.s+1, (c.w+2*c.p-c.k)/c.s+1
		g := convGeom{n: c.n, c: c.c, h: c.h, w: c.w, f: c.f, ho: ho, wo: wo, k: c.k, stride: c.s, pad: c.p}
		x := randTensor(rng, c.n, c.c, c.h, c.w)
		w := randTensor(rng, c.f, c.c*c.k*c.k)
		b := randTensor(rng, c.f)
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, v []*ad.Var) *ad.Var {
			return conv2d(tp, &g, v[0], v[1], v[2])
		}, x, w, b), "%+v", c)
	}
	// Without a bias.
	conv, err := NewConv2D(rng, "c", 2, 3, 3, 2, 1, HeNormal, NoBias())
	require.NoError(t, err)
	require.Len(t, conv.Params(), 1)
	require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, v []*ad.Var) *ad.Var {
		return conv.Forward(tp, v[0])
	}, randTensor(rng, 2, 2, 5, 5)))
}

// convBits runs a convolution forward and backward and returns the bits of
// the output and of every adjoint.
func convBits(conv *Conv2D, x, w *ad.Tensor) []uint64 {
	conv.W.ZeroGrad()
	conv.B.ZeroGrad()
	tp := ad.NewTape()
	xv := tp.Variable(x)
	y := conv.Forward(tp, xv)
	if err := tp.Backward(ad.Sum(ad.Mul(y, tp.Const(w)))); err != nil {
		panic(err)
	}
	var bits []uint64
	for _, s := range [][]float64{y.Value(), xv.Grad(), conv.W.Grad.Data, conv.B.Grad.Data} {
		for _, v := range s {
			bits = append(bits, math.Float64bits(v))
		}
	}
	return bits
}

func TestConv2DIndependentOfGOMAXPROCS(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	conv, err := NewConv2D(rng, "c", 3, 12, 5, 1, 2, GlorotUniform)
	require.NoError(t, err)
	x := randTensor(rng, 37, 3, 9, 9)
	w := randTensor(rng, 37, 12, 9, 9)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(1)
	ref := convBits(conv, x, w)
	for _, procs := range []int{4, 3} {
		runtime.GOMAXPROCS(procs)
		require.Equal(t, ref, convBits(conv, x, w), "GOMAXPROCS=%d", procs)
	}
}

// naivePool returns the window maxima and, for each, the flat index of
// the first maximum.
func naivePool(x *ad.Tensor, size, stride int) ([]float64, []int) {
	n, c, h, w := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	ho, wo := (h-size)/stride+1, (w-size)/stride+1
	var y []float64
	var arg []int
	for pl := range n * c {
		for i := range ho {
			for j := range wo {
				best := -1
				for u := range size {
					for v := range size {
						k := pl*h*w + (i*stride+u)*w + j*stride + v
						if best < 0 || x.Data[k] > x.Data[best] {
							best = k
						}
					}
				}
				y = append(y, x.Data[best])
				arg = append(arg, best)
			}
		}
	}
	return y, arg
}

func TestMaxPool2D(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 4))
	for _, c := range []struct {
		pool  MaxPool2D
		shape []int
	}{
		{MaxPool2D{Size: 2}, []int{2, 3, 6, 6}},            // non-overlapping
		{MaxPool2D{Size: 2}, []int{1, 2, 7, 5}},            // ragged edge dropped
		{MaxPool2D{Size: 3, Stride: 2}, []int{2, 2, 7, 7}}, // overlapping
		{MaxPool2D{Size: 3, Stride: 1}, []int{1, 1, 5, 6}},
	} {
		name := fmt.Sprintf("%+v %v", c.pool, c.shape)
		x := randTensor(rng, c.shape...)
		stride := c.pool.Stride
		if stride == 0 {
			stride = c.pool.Size
		}
		want, arg := naivePool(x, c.pool.Size, stride)
		tp := ad.NewTape()
		xv := tp.Variable(x)
		y := c.pool.Forward(tp, xv)
		require.NoError(t, tp.Err(), name)
		require.Equal(t, want, y.Value(), name)
		require.NoError(t, tp.Backward(ad.Sum(y)), name)
		gx := make([]float64, len(x.Data))
		for _, k := range arg {
			gx[k]++
		}
		require.Equal(t, gx, xv.Grad(), name)
		// Normal draws are distinct, so no window has a tie and finite
		// differences with step 1e-6 do not move an argmax.
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, v []*ad.Var) *ad.Var {
			return c.pool.Forward(tp, v[0])
		}, x), name)
	}
	// Ties go to the first maximum in row-major order.
	tp := ad.NewTape()
	xv := tp.Variable(&ad.Tensor{Shape: []int{1, 1, 2, 2}, Data: []float64{1, 3, 3, 3}})
	require.NoError(t, tp.Backward(ad.Sum(MaxPool2D{Size: 2}.Forward(tp, xv))))
	require.Equal(t, []float64{0, 1, 0, 0}, xv.Grad())
}

func TestFlatten(t *testing.T) {
	tp := ad.NewTape()
	x := tp.Const(ad.Zeros(3, 2, 4, 5))
	require.Equal(t, []int{3, 40}, Flatten{}.Forward(tp, x).Shape())
	require.Equal(t, []int{3, 1}, Flatten{}.Forward(tp, tp.Const(ad.Zeros(3))).Shape())
	require.NoError(t, tp.Err())
}

// TestNetworkGradient checks the gradient of a whole small classifier,
// conv → ELU → pool → flatten → dense → cross-entropy, with respect to the
// input and every parameter.
func TestNetworkGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 5))
	g := convGeom{n: 3, c: 2, h: 6, w: 6, f: 3, ho: 6, wo: 6, k: 3, stride: 1, pad: 1}
	x := randTensor(rng, 3, 2, 6, 6)
	cw, cb := randTensor(rng, 3, 18), randTensor(rng, 3)
	dw, db := randTensor(rng, 3*3*3, 4), randTensor(rng, 4)
	labels := []int{1, 3, 0}
	require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, v []*ad.Var) *ad.Var {
		h := ELU{}.Forward(tp, conv2d(tp, &g, v[0], v[1], v[2]))
		h = Flatten{}.Forward(tp, MaxPool2D{Size: 2}.Forward(tp, h))
		return CrossEntropy(dense(h, v[3], v[4], Float64), labels)
	}, x, cw, cb, dw, db))
}

func TestConv2DOutSize(t *testing.T) {
	c := &Conv2D{Kernel: 5, Stride: 2, Pad: 2}
	ho, wo, err := c.OutSize(28, 9)
	require.NoError(t, err)
	require.Equal(t, [2]int{14, 5}, [2]int{ho, wo})
	_, _, err = c.OutSize(0, 9)
	require.Error(t, err)
	_, _, err = (&Conv2D{Kernel: 3}).OutSize(5, 5) // stride 0
	require.ErrorContains(t, err, "stride 0")
}
