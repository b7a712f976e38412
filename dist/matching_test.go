package dist

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// With a dominant X = 8·P₀ + U(-0.5, 0.5) the Gumbel noise rarely changes
// the matching: the most frequent of 2000 samples is M(X) = P₀ and it takes
// most of the mass. (The probability of another matching needs two Gumbel
// differences to overcome a gap of about 16; it is well below 5%.)
func TestGumbelMatchingDominantMode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	p0 := perm.Perm{2, 0, 3, 1}
	x := mat.NewDense(4, 4, nil)
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			x.Set(i, j, rng.Float64()-0.5)
		}
		x.Set(i, p0[i], x.At(i, p0[i])+8)
	}
	mx, err := relax.Matching(x)
	require.NoError(t, err)
	require.Equal(t, p0, mx)
	ps, err := GumbelMatching{X: x}.RandBatch(2000, rng)
	require.NoError(t, err)
	counts := map[string]int{}
	best, bestKey := 0, ""
	for _, p := range ps {
		k := fmt.Sprint(p)
		counts[k]++
		if counts[k] > best {
			best, bestKey = counts[k], k
		}
	}
	assert.Equal(t, fmt.Sprint(p0), bestKey)
	assert.Greater(t, best, 1900)
}

// At X = 0 the noise is exchangeable, so GM(0) is uniform over the 3! = 6
// permutations: 60000 samples, Pearson statistic below the 0.999 quantile
// of χ²(5) (fixed seed).
func TestGumbelMatchingUniformAtZero(t *testing.T) {
	const n = 60000
	ps, err := GumbelMatching{X: mat.NewDense(3, 3, nil)}.RandBatch(n, rand.New(rand.NewPCG(77, 1)))
	require.NoError(t, err)
	index := map[string]int{}
	counts := make([]int, 6)
	for _, p := range ps {
		require.NoError(t, p.Validate())
		k := fmt.Sprint(p)
		if _, ok := index[k]; !ok {
			index[k] = len(index)
		}
		counts[index[k]]++
	}
	require.Len(t, index, 6)
	probs := []float64{1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6, 1.0 / 6}
	assert.Less(t, chiSquare(counts, probs, n), distuv.ChiSquared{K: 5}.Quantile(0.999), "counts %v", counts)
}

// RandBatch draws the noise sample after sample from rng, so it equals k
// calls of Rand; the parallel solve does not change that.
func TestGumbelMatchingBatchEqualsSequential(t *testing.T) {
	x := mat.NewDense(5, 5, nil)
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 5 {
		for j := range 5 {
			x.Set(i, j, rng.NormFloat64())
		}
	}
	g := GumbelMatching{X: x}
	batch, err := g.RandBatch(20, rand.New(rand.NewPCG(9, 9)))
	require.NoError(t, err)
	seq := rand.New(rand.NewPCG(9, 9))
	for i := range batch {
		p, err := g.Rand(seq)
		require.NoError(t, err)
		assert.Equal(t, p, batch[i], "sample %d", i)
	}
}

func TestGumbelMatchingMask(t *testing.T) {
	inf := math.Inf(-1)
	x := mat.NewDense(3, 3, []float64{
		0, inf, 0,
		0, 0, inf,
		inf, 0, 0,
	})
	ps, err := GumbelMatching{X: x}.RandBatch(200, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	for _, p := range ps {
		for i, j := range p {
			assert.False(t, math.IsInf(x.At(i, j), -1), "sample %v uses a forbidden pair", p)
		}
	}
	infeasible := mat.NewDense(2, 2, []float64{0, 0, inf, inf})
	_, err = GumbelMatching{X: infeasible}.Rand(nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, relax.ErrInfeasible))
}

func TestGumbelMatchingErrors(t *testing.T) {
	for name, x := range map[string]mat.Matrix{
		"nil":       nil,
		"nonsquare": mat.NewDense(2, 3, nil),
		"NaN":       mat.NewDense(2, 2, []float64{0, math.NaN(), 0, 0}),
		"+Inf":      mat.NewDense(2, 2, []float64{0, math.Inf(1), 0, 0}),
	} {
		_, err := GumbelMatching{X: x}.Rand(nil)
		assert.Error(t, err, name)
		_, err = GumbelMatching{X: x}.RandBatch(3, nil)
		assert.Error(t, err, name)
	}
	_, err := GumbelMatching{X: mat.NewDense(2, 2, nil)}.RandBatch(-1, nil)
	assert.Error(t, err)
	ps, err := GumbelMatching{X: &mat.Dense{}}.RandBatch(2, nil)
	require.NoError(t, err)
	assert.Equal(t, []perm.Perm{{}, {}}, ps)
}
