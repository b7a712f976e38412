package models

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// sparseSpec returns the spec of a model with a banded permutation site of
// b permutations of size n (row i may go to columns i−1…i+1, wrapped) and
// row 0 of the last permutation fixed, and a real site.
func sparseSpec(t *testing.T, n, b int) *Spec {
	t.Helper()
	mask, err := perm.NewMask(n)
	require.NoError(t, err)
	for i := range n {
		for d := -1; d <= 1; d++ {
			require.NoError(t, mask.Set(i, (i+d+n)%n, true))
		}
	}
	fixed := make([][]int, b)
	for q := range fixed {
		fixed[q] = make([]int, n)
		for i := range fixed[q] {
			fixed[q][i] = -1
		}
	}
	fixed[b-1][0] = 1
	m := &funcModel{
		sites: []Site{
			&PermSite{Name: "P", N: n, Batch: b, Masks: []*perm.Mask{mask}, Fixed: fixed},
			&RealSite{Name: "w", Shape: []int{2}, Prior: Normal{Mu: 0, Sigma: 1}},
		},
		// The tests below read Samples directly and never call LogLik.
		ll: func(t *ad.Tape, z *Sample) *ad.Var { return nil },
	}
	spec, err := Check(m)
	require.NoError(t, err)
	return spec
}

// funcModel is a Model from its sites and a LogLik function.
type funcModel struct {
	sites []Site
	ll    func(t *ad.Tape, z *Sample) *ad.Var
}

func (m *funcModel) Sites() []Site                        { return m.sites }
func (m *funcModel) LogLik(t *ad.Tape, z *Sample) *ad.Var { return m.ll(t, z) }

func TestPermSpecPatterns(t *testing.T) {
	const n, b = 7, 2
	spec := sparseSpec(t, n, b)
	ps := spec.Perms[0]
	pats, err := ps.Patterns()
	require.NoError(t, err)
	require.Len(t, pats, b)
	require.Equal(t, 3*n, pats[0].NNZ())
	// The fixed row keeps one column, which leaves the rows that had it.
	require.Equal(t, []int{1}, pats[1].Row(0))
	require.Equal(t, ps.Masks[1].Count(), pats[1].NNZ())
	require.Equal(t, pats[0].NNZ()+pats[1].NNZ(), ps.NNZ())
	require.InDelta(t, float64(ps.NNZ())/float64(b*n*n), ps.Density(), 1e-15)
	again, err := ps.Patterns()
	require.NoError(t, err)
	require.Same(t, pats[0], again[0])
}

// TestSampleSparseToDense checks Perm on a sparse-layout value against the
// pattern's own scatter, and its gradient by finite differences.
func TestSampleSparseToDense(t *testing.T) {
	const n, b, k = 6, 2, 3
	spec := sparseSpec(t, n, b)
	ps := spec.Perms[0]
	pats, err := ps.Patterns()
	require.NoError(t, err)
	width := ps.NNZ()
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([]float64, k*width)
	for i := range vals {
		vals[i] = rng.Float64()
	}
	tp := ad.NewTape()
	z := NewSample(tp, spec, k, false)
	z.SetSparse("P", tp.Const(&ad.Tensor{Shape: []int{k, width}, Data: vals}))
	require.True(t, z.IsSparse("P"))
	dense := z.Perm("P")
	require.NoError(t, tp.Err())
	require.Equal(t, []int{k, b, n, n}, dense.Shape())
	for q := range k {
		off := 0
		for p := range b {
			want, err := pats[p].Dense(vals[q*width+off:q*width+off+pats[p].NNZ()], 0)
			require.NoError(t, err)
			got := dense.Value()[(q*b+p)*n*n : (q*b+p+1)*n*n]
			require.Equal(t, want.RawMatrix().Data, got, "sample %d permutation %d", q, p)
			off += pats[p].NNZ()
		}
	}
	require.Same(t, dense, z.Perm("P"), "the dense value is built once")

	weights := make([]float64, k*b*n*n)
	for i := range weights {
		weights[i] = rng.NormFloat64()
	}
	err = ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
		z := NewSample(tp, spec, k, false)
		z.SetSparse("P", xs[0])
		w := tp.Const(&ad.Tensor{Shape: []int{k, b, n, n}, Data: weights})
		return ad.Sum(ad.Square(ad.Mul(z.Perm("P"), w)))
	}, &ad.Tensor{Shape: []int{k, width}, Data: vals})
	require.NoError(t, err)
}

// TestSamplePermSparse checks PermSparse on both layouts: the columns of a
// sparse value and the gathered entries of a dense one agree, and both
// gradients pass finite differences.
func TestSamplePermSparse(t *testing.T) {
	const n, b, k = 5, 3, 2
	spec := sparseSpec(t, n, b)
	ps := spec.Perms[0]
	pats, err := ps.Patterns()
	require.NoError(t, err)
	width := ps.NNZ()
	rng := rand.New(rand.NewPCG(3, 4))
	vals := make([]float64, k*width)
	for i := range vals {
		vals[i] = rng.Float64()
	}
	// The dense value with the same entries.
	denseVals := make([]float64, k*b*n*n)
	for q := range k {
		off := 0
		for p, pat := range pats {
			d, err := pat.Dense(vals[q*width+off:q*width+off+pat.NNZ()], 0)
			require.NoError(t, err)
			copy(denseVals[(q*b+p)*n*n:], d.RawMatrix().Data)
			off += pat.NNZ()
		}
	}
	tp := ad.NewTape()
	zs := NewSample(tp, spec, k, false)
	zs.SetSparse("P", tp.Const(&ad.Tensor{Shape: []int{k, width}, Data: vals}))
	zd := NewSample(tp, spec, k, true)
	zd.Set("P", tp.Const(&ad.Tensor{Shape: []int{k, b, n, n}, Data: denseVals}))
	require.False(t, zd.IsSparse("P"))
	for p := range b {
		a, d := zs.PermSparse("P", p), zd.PermSparse("P", p)
		require.NoError(t, tp.Err())
		require.Equal(t, []int{k, pats[p].NNZ()}, a.Shape())
		require.Equal(t, a.Value(), d.Value(), "permutation %d", p)
		require.Same(t, pats[p], zs.PermPattern("P", p))
		require.Same(t, a, zs.PermSparse("P", p))
	}

	for p := range b {
		coef := make([]float64, k*pats[p].NNZ())
		for i := range coef {
			coef[i] = rng.NormFloat64()
		}
		loss := func(tp *ad.Tape, v *ad.Var) *ad.Var {
			return ad.Sum(ad.Square(ad.Mul(v, tp.Const(&ad.Tensor{Shape: []int{k, len(coef) / k}, Data: coef}))))
		}
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
			z := NewSample(tp, spec, k, false)
			z.SetSparse("P", xs[0])
			return loss(tp, z.PermSparse("P", p))
		}, &ad.Tensor{Shape: []int{k, width}, Data: vals}), "sparse layout, permutation %d", p)
		require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
			z := NewSample(tp, spec, k, false)
			z.Set("P", xs[0])
			return loss(tp, z.PermSparse("P", p))
		}, &ad.Tensor{Shape: []int{k, b, n, n}, Data: denseVals}), "dense layout, permutation %d", p)
	}
}

func TestSampleSparseErrors(t *testing.T) {
	const n, b, k = 5, 2, 2
	spec := sparseSpec(t, n, b)
	width := spec.Perms[0].NNZ()
	cases := []struct {
		name string
		do   func(tp *ad.Tape, z *Sample)
		want string
	}{
		{"unknown site", func(tp *ad.Tape, z *Sample) { z.SetSparse("Q", tp.Const(ad.Zeros(k, width))) }, `"Q" is not a permutation site`},
		{"real site", func(tp *ad.Tape, z *Sample) { z.SetSparse("w", tp.Const(ad.Zeros(k, 2))) }, `"w" is not a permutation site`},
		{"nil value", func(tp *ad.Tape, z *Sample) { z.SetSparse("P", nil) }, "nil value"},
		{"wrong width", func(tp *ad.Tape, z *Sample) { z.SetSparse("P", tp.Const(ad.Zeros(k, width+1))) }, "want (K, NNZ)"},
		{"wrong K", func(tp *ad.Tape, z *Sample) { z.SetSparse("P", tp.Const(ad.Zeros(k+1, width))) }, "want (K, NNZ)"},
		{"permutation out of range", func(tp *ad.Tape, z *Sample) {
			z.SetSparse("P", tp.Const(ad.Zeros(k, width)))
			z.PermSparse("P", b)
		}, "has 2 permutations, asked for 2"},
		{"pattern out of range", func(tp *ad.Tape, z *Sample) { z.PermPattern("P", -1) }, "asked for -1"},
		{"no value", func(tp *ad.Tape, z *Sample) { z.PermSparse("P", 0) }, "has no value"},
		{"PermSparse of a real site", func(tp *ad.Tape, z *Sample) { z.PermSparse("w", 0) }, "is a real site"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tp := ad.NewTape()
			z := NewSample(tp, spec, k, false)
			c.do(tp, z)
			require.Error(t, tp.Err())
			require.True(t, strings.Contains(tp.Err().Error(), c.want), "%v", tp.Err())
		})
	}
}

// TestSampleSetReplacesSparse checks that Set after SetSparse (and the
// reverse) leaves one value.
func TestSampleSetReplacesSparse(t *testing.T) {
	const n, b, k = 5, 1, 1
	spec := sparseSpec(t, n, b)
	width := spec.Perms[0].NNZ()
	tp := ad.NewTape()
	z := NewSample(tp, spec, k, false)
	z.SetSparse("P", tp.Const(ad.Zeros(k, width)))
	one := make([]float64, n*n)
	for i := range n {
		one[i*n+(i+1)%n] = 1
	}
	z.Set("P", tp.Const(&ad.Tensor{Shape: []int{k, b, n, n}, Data: one}))
	require.False(t, z.IsSparse("P"))
	got := z.PermSparse("P", 0).Value()
	require.InDelta(t, float64(n), sum(got), 0, "the dense value set last is the one read")
	z.SetSparse("P", tp.Const(ad.Zeros(k, width)))
	require.True(t, z.IsSparse("P"))
	require.InDelta(t, 0, sum(z.Perm("P").Value()), 0)
	require.NoError(t, tp.Err())
}

func sum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// TestSetModeSparseMask: a large sparse mask is solved on its candidates,
// with the dense solver's optimum.
func TestSetModeSparseMask(t *testing.T) {
	const n = 90
	mask, err := perm.NewMask(n)
	require.NoError(t, err)
	for i := range n {
		for d := -3; d <= 3; d++ {
			require.NoError(t, mask.Set(i, (i+d+n)%n, true))
		}
	}
	require.True(t, sparseMask(mask))
	rng := rand.New(rand.NewPCG(8, 9))
	var draws [][]perm.Perm
	for range 40 {
		p, err := RandomAdmitted(mask, rng)
		require.NoError(t, err)
		draws = append(draws, []perm.Perm{p})
	}
	pp, err := PermPosteriorFromDraws(draws, []*perm.Mask{mask})
	require.NoError(t, err)
	dense, err := relax.MatchingMasked(pp.Marginals[0], mask)
	require.NoError(t, err)
	value := func(p perm.Perm) float64 {
		s := 0.0
		for i, j := range p {
			s += pp.Marginals[0].At(i, j)
		}
		return s
	}
	require.True(t, mask.Admits(pp.Mode[0]))
	require.InDelta(t, value(dense), value(pp.Mode[0]), 1e-12)
}
