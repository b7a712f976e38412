package main

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"
)

func TestFigureWritesPNG(t *testing.T) {
	// Rendering takes about a second.
	if testing.Short() {
		t.Skip("renders the figure")
	}
	path := filepath.Join(t.TempDir(), "sub", "figure1.png")
	require.NoError(t, run(path, 3))
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	img, err := png.Decode(fh)
	require.NoError(t, err)
	b := img.Bounds()
	assert.Greater(t, b.Dx(), 800)
	assert.Greater(t, b.Dy(), b.Dx())
}

func TestFigureContents(t *testing.T) {
	f, err := compute(1)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, f.gap, minGap)
	isPerm := func(m *mat.Dense) bool {
		n, _ := m.Dims()
		for i := 0; i < n; i++ {
			if mat.Sum(m.RowView(i)) != 1 || mat.Sum(m.ColView(i)) != 1 {
				return false
			}
		}
		return true
	}
	require.True(t, isPerm(f.m))
	for _, m := range f.gm {
		assert.True(t, isPerm(m))
	}
	// Panel (b) at the smallest τ and the most iterations is M(X) to the
	// eye. The limit S(X/τ) is within ~exp(−gap/τ) = exp(−25) of M(X), but
	// at small τ the iteration approaches its limit like O(1/L): 2e-3 at
	// L = 1000 here. We allow 5e-3.
	last := f.sink[len(taus)-1][len(iterCounts)-1]
	assert.True(t, mat.EqualApprox(last, f.m, 5e-3))
	// Every Sinkhorn matrix has unit column sums.
	for _, row := range f.sink {
		for _, s := range row {
			for j := 0; j < size; j++ {
				assert.InDelta(t, 1, mat.Sum(s.ColView(j)), 1e-12)
			}
		}
	}
	// The same seed gives the same figure.
	g, err := compute(1)
	require.NoError(t, err)
	assert.True(t, mat.Equal(f.x, g.x))
	assert.True(t, mat.Equal(f.gs[1][2], g.gs[1][2]))
	assert.False(t, math.IsNaN(mat.Sum(f.gs[1][2])))
}
