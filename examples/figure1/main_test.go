package main

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/internal/longtest"
)

func TestFigureWritesPNG(t *testing.T) {
	// Rendering takes about a second.
	longtest.Skip(t, "renders the figure")
	path := filepath.Join(t.TempDir(), "sub", "figure1.png")
	require.NoError(t, write(path, 3))
	fh, err := os.Open(path)
	require.NoError(t, err)
	defer fh.Close()
	img, err := png.Decode(fh)
	require.NoError(t, err)
	b := img.Bounds()
	assert.Greater(t, b.Dx(), 800)
	assert.Greater(t, b.Dy(), b.Dx())
}

func TestRun(t *testing.T) {
	longtest.Skip(t, "renders the figure")
	dir := filepath.Join(t.TempDir(), "new")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-out", dir, "-seed", "2"}, &stdout, &stderr), stderr.String())
	assert.FileExists(t, filepath.Join(dir, "figure1.png"))
	assert.Equal(t, "wrote "+filepath.Join(dir, "figure1.png")+"\n", stdout.String())
}

// Bad command lines exit with status 2 and a message naming the flag, and
// write nothing.
func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"foo", "-out", dir}, `unexpected argument "foo"`},
		{[]string{"-out", dir, "foo"}, `unexpected argument "foo"`},
		{[]string{"-out", ""}, "-out must not be empty"},
		{[]string{"-out", file}, "-out " + file + ": not a directory"},
		{[]string{"-out", filepath.Join(file, "sub")}, "-out " + filepath.Join(file, "sub") + ": " + file + " is not a directory"},
		{[]string{"-seed", "x"}, `invalid value "x" for flag -seed`},
		{[]string{"-size", "3"}, "flag provided but not defined: -size"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, run(tc.args, &stdout, &stderr))
			assert.Contains(t, stderr.String(), tc.want)
			assert.NotContains(t, stderr.String(), "figure1: figure1:")
			assert.Empty(t, stdout.String())
			assert.NoFileExists(t, "figure1.png", "nothing written in the current directory")
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing written beside the file")
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
