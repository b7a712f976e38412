package models

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// bandMask allows row i the columns i−w … i+w (wrapped).
func bandMask(t *testing.T, n, w int) *perm.Mask {
	t.Helper()
	m, err := perm.NewMask(n)
	require.NoError(t, err)
	for i := range n {
		for d := -w; d <= w; d++ {
			require.NoError(t, m.Set(i, (i+d+n)%n, true))
		}
	}
	return m
}

// TestPermPosteriorFromDrawsSparse: on large sparse masks the marginals are
// kept on the patterns, with the frequencies and the mode of the dense
// summary bit for bit (ties included: few draws make many); on a dense mask
// the summary is the dense one; a draw off the candidates is an error.
func TestPermPosteriorFromDrawsSparse(t *testing.T) {
	const n, b = 80, 2
	masks := []*perm.Mask{bandMask(t, n, 3), bandMask(t, n, 5)}
	pats := make([]*relax.SparsePattern, b)
	for k, m := range masks {
		var err error
		pats[k], err = relax.SparsePatternFromMask(m)
		require.NoError(t, err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	var draws [][]perm.Perm
	for range 7 {
		d := make([]perm.Perm, b)
		for k := range d {
			// A random matching on the band: shifts of the identity by
			// rotating blocks of the cycle within the band.
			p := perm.Identity(n)
			for range n {
				i := rng.IntN(n)
				k2 := (i + 1) % n
				if masks[k].Allowed(i, p[k2]) && masks[k].Allowed(k2, p[i]) {
					p[i], p[k2] = p[k2], p[i]
				}
			}
			d[k] = p
		}
		draws = append(draws, d)
	}
	dense, err := PermPosteriorFromDraws(draws, masks)
	require.NoError(t, err)
	sparse, err := PermPosteriorFromDrawsSparse(draws, pats, masks)
	require.NoError(t, err)
	require.Nil(t, sparse.Marginals)
	require.Len(t, sparse.SparseMarginals, b)
	require.Equal(t, dense.Mode, sparse.Mode)
	require.Equal(t, b, sparse.Len())
	for k := range b {
		for i := range n {
			for j := range n {
				require.Equal(t, dense.Marginals[k].At(i, j), sparse.Marginal(k).At(i, j), "permutation %d (%d, %d)", k, i, j)
			}
		}
	}
	tv, err := sparse.MaxRowTV(dense)
	require.NoError(t, err)
	require.Zero(t, tv)
	post := &Posterior{Method: "test", Perms: map[string]*PermPosterior{"P": sparse}}
	require.Contains(t, post.Summary(), "mean marginal on the mode")

	// A dense mask: the dense summary.
	full, err := perm.NewMask(n)
	require.NoError(t, err)
	for i := range n {
		for j := range n {
			require.NoError(t, full.Set(i, j, true))
		}
	}
	fp, err := relax.SparsePatternFromMask(full)
	require.NoError(t, err)
	one := [][]perm.Perm{{perm.Identity(n)}}
	d, err := PermPosteriorFromDrawsSparse(one, []*relax.SparsePattern{fp}, []*perm.Mask{full})
	require.NoError(t, err)
	require.NotNil(t, d.Marginals)
	require.Nil(t, d.SparseMarginals)

	// A draw off the candidates.
	off := perm.Identity(n)
	off[0], off[40] = off[40], off[0]
	_, err = PermPosteriorFromDrawsSparse([][]perm.Perm{{off, perm.Identity(n)}}, pats, masks)
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "outside its candidates"), err.Error())
}
