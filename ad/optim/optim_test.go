package optim

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quadratic returns the loss ½ Σ a_i (θ_i − c_i)² on a tape.
func quadratic(tp *ad.Tape, p *ad.Param, a, c []float64) *ad.Var {
	d := ad.Sub(tp.Param(p), tp.Const(&ad.Tensor{Shape: []int{len(c)}, Data: c}))
	return ad.Scale(ad.Sum(ad.Mul(tp.Const(&ad.Tensor{Shape: []int{len(a)}, Data: a}), ad.Square(d))), 0.5)
}

func TestOptimizersConverge(t *testing.T) {
	a := []float64{1, 10, 0.5}
	c := []float64{3, -2, 1}
	for _, tc := range []struct {
		name string
		make func(ps []*ad.Param) (Optimizer, error)
		lr   float64
	}{
		{"SGD", func(ps []*ad.Param) (Optimizer, error) { return NewSGD(ps, 0) }, 0.09},
		{"Momentum", func(ps []*ad.Param) (Optimizer, error) { return NewSGD(ps, 0.9) }, 0.02},
		{"Adam", func(ps []*ad.Param) (Optimizer, error) { return NewAdam(ps) }, 0.05},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := ad.NewParam("theta", ad.Zeros(3))
			opt, err := tc.make([]*ad.Param{p})
			require.NoError(t, err)
			tp := ad.NewTape()
			for i := 0; i < 2000; i++ {
				tp.Reset()
				require.NoError(t, tp.Backward(quadratic(tp, p, a, c)))
				require.NoError(t, opt.Step(tc.lr))
			}
			assert.InDeltaSlice(t, c, p.Value.Data, 1e-3)
			assert.Equal(t, []float64{0, 0, 0}, p.Grad.Data, "Step zeroes gradients")
		})
	}
}

func TestAdamFirstStep(t *testing.T) {
	// With bias correction the first step moves each coordinate by lr·sign(g).
	p := ad.NewParam("theta", &ad.Tensor{Shape: []int{2}, Data: []float64{1, 1}})
	p.Grad.Data = []float64{3, -0.001}
	opt, err := NewAdam([]*ad.Param{p})
	require.NoError(t, err)
	require.NoError(t, opt.Step(0.1))
	assert.InDeltaSlice(t, []float64{0.9, 1.1}, p.Value.Data, 1e-6)
}

func TestStateRoundTrip(t *testing.T) {
	run := func(split bool) []float64 {
		p := ad.NewParam("theta", ad.Zeros(3))
		opt, _ := NewAdam([]*ad.Param{p})
		tp := ad.NewTape()
		for i := 0; i < 50; i++ {
			if split && i == 20 {
				// Rebuild the optimizer from its state, as a resumed run does.
				st := opt.State()
				val := append([]float64(nil), p.Value.Data...)
				p = ad.NewParam("theta", &ad.Tensor{Shape: []int{3}, Data: val})
				opt, _ = NewAdam([]*ad.Param{p})
				require.NoError(t, opt.SetState(st))
			}
			tp.Reset()
			require.NoError(t, tp.Backward(quadratic(tp, p, []float64{1, 2, 3}, []float64{1, 1, 1})))
			require.NoError(t, opt.Step(0.05))
		}
		return p.Value.Data
	}
	assert.Equal(t, run(false), run(true))
	opt, _ := NewAdam([]*ad.Param{ad.NewParam("x", ad.Zeros(2))})
	require.Error(t, opt.SetState(State{Moments: [][][]float64{{{1}}}}))
}

func TestClipGradNorm(t *testing.T) {
	p := ad.NewParam("x", ad.Zeros(2))
	p.Grad.Data = []float64{3, 4}
	n, err := ClipGradNorm([]*ad.Param{p}, 1)
	require.NoError(t, err)
	assert.Equal(t, 5.0, n)
	assert.InDeltaSlice(t, []float64{0.6, 0.8}, p.Grad.Data, 1e-15)
	p.Grad.Data = []float64{math.NaN(), 0}
	_, err = ClipGradNorm([]*ad.Param{p}, 1)
	require.Error(t, err)
}

func TestBadInput(t *testing.T) {
	_, err := NewSGD(nil, 0)
	require.Error(t, err)
	_, err = NewSGD([]*ad.Param{ad.NewParam("x", ad.Zeros(1))}, 1)
	require.Error(t, err)
	_, err = NewAdam([]*ad.Param{nil})
	require.Error(t, err)
	opt, _ := NewAdam([]*ad.Param{ad.NewParam("x", ad.Zeros(1))})
	require.Error(t, opt.Step(math.NaN()))
	require.Error(t, Validate(Linear{Start: 1, End: 0, Steps: 10}, 20))
	require.NoError(t, Validate(Exponential{Start: 1, Rate: 0.99, Floor: 0.5}, 1000))
}

func TestSchedules(t *testing.T) {
	e := Exponential{Start: 1, Rate: 0.5, Floor: 0.3, Every: 10}
	assert.Equal(t, 1.0, e.At(0))
	assert.InDelta(t, 0.5, e.At(10), 1e-15)
	assert.Equal(t, 0.3, e.At(1000))
	l := Linear{Start: 2, End: 1, Steps: 4}
	assert.Equal(t, []float64{2, 1.75, 1.5, 1.25, 1, 1}, []float64{l.At(0), l.At(1), l.At(2), l.At(3), l.At(4), l.At(9)})
	c := Cosine{Start: 1, End: 0, Steps: 2}
	assert.InDelta(t, 0.5, c.At(1), 1e-15)
	g := Geometric{Start: 1, End: 0.01, Steps: 2}
	assert.InDelta(t, 0.1, g.At(1), 1e-15)
	assert.Equal(t, 0.5, Constant(0.5).At(7))
}

func ExampleAdam() {
	// Minimise (θ − 3)² with Adam.
	p := ad.NewParam("theta", ad.Zeros(1))
	opt, _ := NewAdam([]*ad.Param{p})
	tp := ad.NewTape()
	for i := 0; i < 500; i++ {
		tp.Reset()
		loss := ad.Square(ad.AddConst(tp.Param(p), -3))
		_ = tp.Backward(ad.Sum(loss))
		_ = opt.Step(0.1)
	}
	fmt.Printf("%.3f\n", p.Value.Data[0])
	// Output: 3.000
}

// TestAdamBitsAnyGOMAXPROCS runs three Adam steps on parameters large
// enough to be split over goroutines (one smaller than a chunk, one not a
// multiple of it) and checks every value and moment, bit for bit, against
// the update written out as a scalar loop, at GOMAXPROCS 1 and 3.
func TestAdamBitsAnyGOMAXPROCS(t *testing.T) {
	sizes := []int{7, 3*chunkLen + 5, 2 * chunkLen}
	grads := func(step, i, j int) float64 {
		return math.Sin(float64(13*j+7*i+step)) * math.Exp(float64(j%11-5))
	}
	// reference: the update as optim wrote it before the vector kernel,
	// with conversions that forbid fused multiply-adds.
	ref := make([][]float64, len(sizes))
	{
		// Variables, not constants: 1 − β must be rounded as at run time.
		b1, b2, eps, lr := 0.9, 0.999, 1e-8, 1e-3
		ms, vs := make([][]float64, len(sizes)), make([][]float64, len(sizes))
		for i, n := range sizes {
			ref[i], ms[i], vs[i] = make([]float64, n), make([]float64, n), make([]float64, n)
			for j := range ref[i] {
				ref[i][j] = float64(j%17) / 16
			}
		}
		for step := 1; step <= 3; step++ {
			c1 := 1 - math.Pow(b1, float64(step))
			c2 := 1 - math.Pow(b2, float64(step))
			st := lr / c1
			for i := range sizes {
				m, v, x := ms[i], vs[i], ref[i]
				for j := range x {
					g := grads(step, i, j)
					m[j] = float64(b1*m[j]) + float64((1-b1)*g)
					v[j] = float64(b2*v[j]) + float64(float64((1-b2)*g)*g)
					x[j] -= float64(st*m[j]) / (math.Sqrt(v[j]/c2) + eps)
				}
			}
		}
	}
	for _, procs := range []int{1, 3} {
		t.Run(fmt.Sprint("GOMAXPROCS=", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			ps := make([]*ad.Param, len(sizes))
			for i, n := range sizes {
				ps[i] = ad.NewParam(fmt.Sprint("p", i), ad.Zeros(n))
				for j := range ps[i].Value.Data {
					ps[i].Value.Data[j] = float64(j%17) / 16
				}
			}
			opt, err := NewAdam(ps)
			require.NoError(t, err)
			for step := 1; step <= 3; step++ {
				for i, p := range ps {
					for j := range p.Grad.Data {
						p.Grad.Data[j] = grads(step, i, j)
					}
				}
				require.NoError(t, opt.Step(1e-3))
			}
			for i, p := range ps {
				for j, x := range p.Value.Data {
					if math.Float64bits(x) != math.Float64bits(ref[i][j]) {
						t.Fatalf("param %d entry %d: %v, want %v", i, j, x, ref[i][j])
					}
					if p.Grad.Data[j] != 0 {
						t.Fatalf("param %d: gradient %d not zeroed", i, j)
					}
				}
			}
		})
	}
}

func TestAdamRejectsMismatchedGradient(t *testing.T) {
	p := ad.NewParam("theta", ad.Zeros(3))
	opt, err := NewAdam([]*ad.Param{p})
	require.NoError(t, err)
	p.Grad.Data = p.Grad.Data[:2]
	require.Error(t, opt.Step(0.1))
	assert.Equal(t, []float64{0, 0, 0}, p.Value.Data, "a failed Step changes nothing")
}
