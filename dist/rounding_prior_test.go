package dist

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
)

// rpNaive evaluates the mixture density of one entry directly.
func rpNaive(x, s float64, n int) float64 {
	phi := func(z float64) float64 { return math.Exp(-0.5*z*z) / math.Sqrt(2*math.Pi) }
	fn := float64(n)
	return (fn-1)/fn*phi(x/s)/s + 1/fn*phi((x-1)/s)/s
}

func TestRoundingPriorLogProb(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 1))
	for _, n := range []int{1, 2, 3, 7} {
		for _, s := range []float64{0.1, 0.3, 1} {
			x := mat.NewDense(n, n, nil)
			var want float64
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					v := -0.3 + 1.6*rng.Float64()
					x.Set(i, j, v)
					want += math.Log(rpNaive(v, s, n))
				}
			}
			got, err := RoundingPrior{Std: s}.LogProb(x)
			require.NoError(t, err)
			// Both sum n² logs of O(1..100) numbers.
			assert.InDelta(t, want, got, 1e-12*float64(n*n)*(1+math.Abs(want)), "n=%d s=%g", n, s)
		}
	}
	// Far from both centres the naive form underflows; the log-sum-exp
	// form stays finite.
	lp, err := RoundingPrior{Std: 0.1}.LogProb(mat.NewDense(1, 1, []float64{50}))
	require.NoError(t, err)
	assert.InDelta(t, -0.5*(49/0.1)*(49/0.1)-math.Log(0.1)-0.5*math.Log(2*math.Pi), lp, 1e-9)
}

// Each entry's density integrates to one (trapezoid rule on a wide grid).
func TestRoundingPriorNormalized(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		for _, s := range []float64{0.1, 0.3} {
			lw0, lw1 := roundingPriorWeights(n)
			const lo, hi, K = -3.0, 4.0, 70000
			h := (hi - lo) / K
			var sum float64
			for k := 0; k <= K; k++ {
				lp, _ := roundingPriorEntry(lo+float64(k)*h, s, lw0, lw1)
				w := 1.0
				if k == 0 || k == K {
					w = 0.5
				}
				sum += w * math.Exp(lp) * h
			}
			// The grid ends are 10 std (of 0.3) from the centres: tails < 1e-22;
			// the trapezoid error for h = 1e-4 is ~h²·max|p''|/12 < 1e-6.
			assert.InDelta(t, 1, sum, 1e-6, "n=%d s=%g", n, s)
		}
	}
}

func TestRoundingPriorVar(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	p := RoundingPrior{Std: 0.2}
	tape := ad.NewTape()
	for _, n := range []int{1, 3, 5} {
		data := make([]float64, 2*n*n)
		for i := range data {
			data[i] = -0.2 + 1.4*rng.Float64()
		}
		tape.Reset()
		v := p.LogProbVar(tape.Const(&ad.Tensor{Shape: []int{2, n, n}, Data: data}))
		require.NoError(t, tape.Err())
		require.Equal(t, []int{2}, v.Shape())
		for b := 0; b < 2; b++ {
			want, err := p.LogProb(mat.NewDense(n, n, data[b*n*n:(b+1)*n*n]))
			require.NoError(t, err)
			assert.InDelta(t, want, v.Value()[b], 1e-12*(1+math.Abs(want)))
		}
		single := p.LogProbVar(tape.Const(&ad.Tensor{Shape: []int{n, n}, Data: data[:n*n]}))
		require.Empty(t, single.Shape())
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, vs []*ad.Var) *ad.Var {
			return p.LogProbVar(vs[0])
		}, &ad.Tensor{Shape: []int{2, n, n}, Data: data}), "n=%d", n)
	}
}

func TestRoundingPriorRand(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 1))
	const n, s = 5, 0.1
	var ones, total int
	var dev2 float64
	for k := 0; k < 2000; k++ {
		x, err := RoundingPrior{Std: s}.Rand(n, rng)
		require.NoError(t, err)
		for _, v := range x.RawMatrix().Data {
			total++
			c := 0.0
			if v > 0.5 { // components are 10 std apart: no misassignment
				ones++
				c = 1
			}
			dev2 += (v - c) * (v - c)
		}
	}
	frac := float64(ones) / float64(total)
	se := math.Sqrt(0.2 * 0.8 / float64(total))
	assert.InDelta(t, 1.0/n, frac, 5*se)
	// Sample std within 2% of s (relative SE of a std from 5e4 draws is
	// 1/√(2·5e4) ≈ 0.3%).
	assert.InDelta(t, s, math.Sqrt(dev2/float64(total)), 0.02*s)
}

func TestRoundingPriorErrors(t *testing.T) {
	for _, s := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		p := RoundingPrior{Std: s}
		require.Error(t, p.Validate())
		_, err := p.LogProb(mat.NewDense(2, 2, nil))
		require.Error(t, err)
		_, err = p.Rand(2, nil)
		require.Error(t, err)
		tape := ad.NewTape()
		p.LogProbVar(tape.Const(ad.Zeros(2, 2)))
		require.Error(t, tape.Err())
	}
	p := RoundingPrior{Std: 0.2}
	_, err := p.LogProb(mat.NewDense(2, 3, nil))
	assert.Error(t, err)
	_, err = p.LogProb(nil)
	assert.Error(t, err)
	_, err = p.LogProb(mat.NewDense(1, 1, []float64{math.NaN()}))
	assert.Error(t, err)
	_, err = p.Rand(0, nil)
	assert.Error(t, err)
	for _, bad := range []*ad.Tensor{ad.Zeros(4), ad.Zeros(2, 3), ad.Zeros(0, 0), {Shape: []int{1, 1}, Data: []float64{math.Inf(1)}}} {
		tape := ad.NewTape()
		v := p.LogProbVar(tape.Const(bad))
		require.Error(t, tape.Err(), "%v", bad.Shape)
		require.NotNil(t, v)
	}
	assert.Nil(t, p.LogProbVar(nil))
}

// TestRoundingPriorSparseErrors: bad input to LogProbSparseVar fails the
// tape with a message (the values are tested in package vi against
// LogProbVar).
func TestRoundingPriorSparseErrors(t *testing.T) {
	p := RoundingPrior{Std: 0.2}
	for _, tc := range []struct {
		x        *ad.Tensor
		n, zeros int
		want     string
	}{
		{&ad.Tensor{Shape: []int{3}, Data: make([]float64, 3)}, 2, 0, "want (K, E)"},
		{&ad.Tensor{Shape: []int{1, 2}, Data: make([]float64, 2)}, 0, 0, "N >= 1"},
		{&ad.Tensor{Shape: []int{1, 2}, Data: make([]float64, 2)}, 2, -1, "zeros >= 0"},
		{&ad.Tensor{Shape: []int{1, 2}, Data: []float64{0, math.NaN()}}, 2, 0, "element 1"},
	} {
		tp := ad.NewTape()
		p.LogProbSparseVar(tp.Const(tc.x), tc.n, tc.zeros)
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, n %d, zeros %d: error %v, want %q", tc.x.Shape, tc.n, tc.zeros, err, tc.want)
		}
	}
	tp := ad.NewTape()
	if v := (RoundingPrior{}).LogProbSparseVar(tp.Const(&ad.Tensor{Shape: []int{1, 1}, Data: []float64{0}}), 1, 0); tp.Err() == nil || v == nil {
		t.Errorf("a zero Std: error %v", tp.Err())
	}
}
