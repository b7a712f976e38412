package dist

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/stat/distuv"
)

// chiSquare returns Σ (O - E)²/E for observed counts and probabilities.
func chiSquare(counts []int, probs []float64, n int) float64 {
	var s float64
	for i, c := range counts {
		e := probs[i] * float64(n)
		s += (float64(c) - e) * (float64(c) - e) / e
	}
	return s
}

func TestCategoricalProbs(t *testing.T) {
	c := Categorical{Logits: []float64{1, 2, math.Inf(-1), 0.5}}
	p, err := c.Probs()
	require.NoError(t, err)
	z := math.E + math.Exp(2) + math.Exp(0.5)
	want := []float64{math.E / z, math.Exp(2) / z, 0, math.Exp(0.5) / z}
	for i := range p {
		assert.InDelta(t, want[i], p[i], 1e-15)
		lp, err := c.LogProb(i)
		require.NoError(t, err)
		assert.InDelta(t, math.Log(want[i]), lp, 1e-14)
	}
	lp, err := c.LogProb(7)
	require.NoError(t, err)
	assert.True(t, math.IsInf(lp, -1))
	// Shift invariance.
	q, err := Categorical{Logits: []float64{1001, 1002, math.Inf(-1), 1000.5}}.Probs()
	require.NoError(t, err)
	assert.InDeltaSlice(t, p, q, 1e-14)
}

// Both samplers, 200000 draws over k = 5 categories: the Pearson statistic
// must stay below the 0.999 quantile of χ²(4) (a correct sampler exceeds it
// with probability 1e-3; the seed is fixed, so the test is deterministic).
// A wrong sampler, e.g. softmax(l/2), gives a statistic in the thousands.
func TestCategoricalSamplersChiSquare(t *testing.T) {
	const n = 200000
	c := Categorical{Logits: []float64{0.2, -1, 1.5, 0, 0.7}}
	probs, err := c.Probs()
	require.NoError(t, err)
	limit := distuv.ChiSquared{K: 4}.Quantile(0.999)
	samplers := map[string]func(*rand.Rand) (int, error){
		"GumbelMax":  c.Rand,
		"InverseCDF": c.RandInverseCDF,
	}
	for name, draw := range samplers {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2024, 5))
			counts := make([]int, 5)
			for i := 0; i < n; i++ {
				k, err := draw(rng)
				require.NoError(t, err)
				counts[k]++
			}
			stat := chiSquare(counts, probs, n)
			assert.Less(t, stat, limit, "counts %v", counts)
		})
	}
}

func TestCategoricalNeverDrawsZeroProbability(t *testing.T) {
	c := Categorical{Logits: []float64{math.Inf(-1), 0, math.Inf(-1), -30}}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		a, err := c.Rand(rng)
		require.NoError(t, err)
		b, err := c.RandInverseCDF(rng)
		require.NoError(t, err)
		assert.NotContains(t, []int{0, 2}, a)
		assert.NotContains(t, []int{0, 2}, b)
	}
}

func TestCategoricalInvalid(t *testing.T) {
	bad := [][]float64{nil, {}, {1, math.NaN()}, {math.Inf(1), 0}, {math.Inf(-1), math.Inf(-1)}}
	for _, l := range bad {
		c := Categorical{Logits: l}
		assert.Error(t, c.Validate(), "%v", l)
		_, err := c.Probs()
		assert.Error(t, err)
		_, err = c.LogProb(0)
		assert.Error(t, err)
		_, err = c.Rand(nil)
		assert.Error(t, err)
		_, err = c.RandInverseCDF(nil)
		assert.Error(t, err)
	}
}
