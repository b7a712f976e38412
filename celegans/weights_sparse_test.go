package celegans

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSampleSparseWeights: the sparse draw is the dense one (same values
// in the same places, the norm by power iteration equal to the SVD's), and
// a simulation with it follows the same trajectory.
func TestSampleSparseWeights(t *testing.T) {
	c, err := Synthetic(120, 3)
	require.NoError(t, err)
	dense, err := SampleWeights(c, 1.1, 9)
	require.NoError(t, err)
	sparse, err := SampleSparseWeights(c, 1.1, 9)
	require.NoError(t, err)
	require.Equal(t, 2*c.Edges(), sparse.NNZ())
	n := c.N()
	for i := range n {
		for j := range n {
			want := dense.At(i, j)
			assert.InDelta(t, want, sparse.At(i, j), 1e-9*math.Abs(want), "W[%d][%d]", i, j)
		}
	}
	cfg := SimConfig{Worms: 1, T: 50, KnownCount: 3}
	sd, err := SimulateWith(c, dense, cfg, 4)
	require.NoError(t, err)
	ss, err := SimulateWith(c, sparse, cfg, 4)
	require.NoError(t, err)
	assert.Equal(t, sd.Worms[0].Perm, ss.Worms[0].Perm)
	yd, ys := sd.Worms[0].Y.RawMatrix().Data, ss.Worms[0].Y.RawMatrix().Data
	for i := range yd {
		require.InDelta(t, yd[i], ys[i], 1e-8*(1+math.Abs(yd[i])))
	}
	_, err = SampleSparseWeights(nil, 1, 1)
	assert.Error(t, err)
	_, err = SampleSparseWeights(c, 0, 1)
	assert.ErrorContains(t, err, "factor")
	assert.Panics(t, func() { sparse.At(n, 0) })
}
