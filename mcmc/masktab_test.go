package mcmc

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/internal/masktab"
	"github.com/permlab/permlab/perm"
)

// TestMaskTableForms checks that the byte and bit tables of a mask agree
// with it on every pair, at a size off the word boundary, and that the swap
// and block kernels run the same chains with either.
func TestMaskTableForms(t *testing.T) {
	const n = 70
	rng := rand.New(rand.NewPCG(5, 6))
	mask, err := perm.NewMask(n)
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, mask.Set(i, i, true)) // the identity is admitted
		for range 6 {
			require.NoError(t, mask.Set(i, rng.IntN(n), true))
		}
	}
	bytes, bits := masktab.NewForm(n, mask.Row, true), masktab.NewForm(n, mask.Row, false)
	require.NotNil(t, bytes.Bytes)
	require.NotNil(t, bits.Bits)
	for i := range n {
		for c := range n {
			require.Equal(t, mask.Allowed(i, c), bytes.Has(i, c), "(%d, %d)", i, c)
			require.Equal(t, mask.Allowed(i, c), bits.Has(i, c), "(%d, %d)", i, c)
		}
	}

	target := PermTargetFunc(func(p perm.Perm) float64 {
		s := 0.0
		for i, c := range p {
			s -= float64((i*7+c*3)%11) * 0.3
		}
		return s
	})
	chain := func(form *masktab.Table) (perm.Perm, int) {
		sk, err := NewSwapMH(n, target, mask, nil)
		require.NoError(t, err)
		bk, err := NewBlockMH(n, target, mask, nil, 4)
		require.NoError(t, err)
		sk.allowed, bk.allowed = form, form
		r := rand.New(rand.NewPCG(7, 8))
		p := perm.Identity(n)
		accepted := 0
		for range 3000 {
			for _, k := range []Kernel[perm.Perm]{sk, bk} {
				ok, err := k.Step(r, p)
				require.NoError(t, err)
				if ok {
					accepted++
				}
			}
			require.True(t, mask.Admits(p))
		}
		return p, accepted
	}
	pb, ab := chain(bytes)
	pi, ai := chain(bits)
	require.Equal(t, pb, pi)
	require.Equal(t, ab, ai)
	require.Positive(t, ab)
}
