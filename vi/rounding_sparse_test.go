package vi

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/relax"
)

// TestSparseRoundingMatchesDense checks the sparse rounding guide against
// the dense one at equal parameters and seed: the same samples (after
// scattering) and divergence up to rounding, the same gradients on the
// allowed entries, and the same modes.
func TestSparseRoundingMatchesDense(t *testing.T) {
	const n, b, k = 9, 3, 4
	m := newScoreModel(t, n, b, 2, 1, 1)
	spec, err := models.Check(m)
	require.NoError(t, err)
	ps := spec.Perms[0]
	pats, err := ps.Patterns()
	require.NoError(t, err)
	dense, err := NewRounding("P", b, n, ps.Masks, 0.3, 0.4, 0.2, 15)
	require.NoError(t, err)
	sparse, err := NewSparseRounding("P", pats, 0.3, 0.4, 0.2, 15)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range dense.Theta.Value.Data {
		dense.Theta.Value.Data[i] = rng.NormFloat64()
		dense.Rho.Value.Data[i] += 0.3 * rng.NormFloat64()
	}
	for q, pat := range pats {
		x, err := pat.Values(denseOf(dense.Theta.Value.Data[q*n*n:(q+1)*n*n], n))
		require.NoError(t, err)
		copy(sparse.Theta.Value.Data[sparse.Offset(q):], x)
		r, err := pat.Values(denseOf(dense.Rho.Value.Data[q*n*n:(q+1)*n*n], n))
		require.NoError(t, err)
		copy(sparse.Rho.Value.Data[sparse.Offset(q):], r)
	}
	weights := make([]float64, k*b*n*n)
	for i := range weights {
		weights[i] = rng.NormFloat64()
	}
	run := func(g Guide) (value []float64, div float64) {
		tp := ad.NewTape()
		v, d, err := g.Rsample(tp, Step{Index: 0, K: k, Rng: rand.New(rand.NewPCG(9, 9))})
		require.NoError(t, err)
		z := models.NewSample(tp, spec, k, false)
		setSite(z, spec, "P", v)
		loss := ad.Add(ad.Sum(ad.Mul(z.Perm("P"), tp.Const(&ad.Tensor{Shape: []int{k, b, n, n}, Data: weights}))), ad.Sum(d.LogRatio))
		require.NoError(t, tp.Err())
		tp.Backward(loss)
		return append([]float64(nil), z.Perm("P").Value()...), ad.Sum(d.LogRatio).Item()
	}
	for _, g := range []Guide{dense, sparse} {
		for _, p := range g.Params() {
			p.ZeroGrad()
		}
	}
	dv, ddiv := run(dense)
	sv, sdiv := run(sparse)
	require.InDeltaSlice(t, dv, sv, 1e-12, "samples")
	require.InDelta(t, ddiv, sdiv, 1e-10*math.Abs(ddiv), "divergence")
	for q, pat := range pats {
		for _, pp := range [][2]*ad.Param{{dense.Theta, sparse.Theta}, {dense.Rho, sparse.Rho}} {
			want, err := pat.Values(denseOf(pp[0].Grad.Data[q*n*n:(q+1)*n*n], n))
			require.NoError(t, err)
			require.InDeltaSlice(t, want, pp[1].Grad.Data[sparse.Offset(q):sparse.Offset(q+1)], 1e-10, "gradient of %s, permutation %d", pp[0].Name, q)
		}
	}
	means, err := dense.Mean()
	require.NoError(t, err)
	mode, err := sparse.Mode()
	require.NoError(t, err)
	for q := range b {
		want, err := relax.RoundMasked(means[q], ps.Masks[q])
		require.NoError(t, err)
		require.Equal(t, want, mode[q])
	}
	// Draws are admitted by the masks and reproducible from the seed.
	d1, err := sparse.draws(20, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	d2, err := sparse.draws(20, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	require.Equal(t, d1, d2)
	for _, d := range d1 {
		for q, p := range d {
			require.True(t, ps.Masks[q].Admits(p))
		}
	}
}

// TestFitModelSparseRounding fits one masked model with the rounding guide
// in both layouts: the ELBO traces agree to rounding at first and the
// posteriors' modes agree.
func TestFitModelSparseRounding(t *testing.T) {
	const n, b = 8, 2
	base := ModelOptions{Seed: 3, Steps: 150, K: 4, InitScale: -1, PosteriorDraws: 200, ELBOSamples: 100, Polish: Polish{Off: true}, Workers: 1,
		Guides: map[string]GuideKind{"P": GuideRounding}}
	fit := func(layout PermLayout, sparseLL bool) *ModelResult {
		m := newScoreModel(t, n, b, 1, 2, 11)
		m.sparse = sparseLL
		o := base
		o.PermLayout = layout
		res, err := FitModel(context.Background(), m, o)
		require.NoError(t, err)
		return res
	}
	dense := fit(LayoutDense, false)
	sparse := fit(LayoutSparse, true)
	require.IsType(t, &Rounding{}, dense.Guides[0])
	require.IsType(t, &SparseRounding{}, sparse.Guides[0])
	require.True(t, hasNote(sparse.Posterior.Notes, "sparse layout"), "%q", sparse.Posterior.Notes)
	require.InDelta(t, dense.ELBO[0], sparse.ELBO[0], 1e-9*math.Abs(dense.ELBO[0]))
	require.InDelta(t, dense.ELBO[9], sparse.ELBO[9], 1e-6*math.Abs(dense.ELBO[9]))
	for q := range b {
		require.Equal(t, dense.Posterior.Perms["P"].Mode[q], sparse.Posterior.Perms["P"].Mode[q])
	}
}

// TestRoundingPriorSparse: the sparse prior of dist equals the dense one
// on matrices that are zero off the stored entries, value and gradient.
func TestRoundingPriorSparse(t *testing.T) {
	const n = 5
	m := newScoreModel(t, n, 1, 1, 1, 2)
	spec, err := models.Check(m)
	require.NoError(t, err)
	pats, err := spec.Perms[0].Patterns()
	require.NoError(t, err)
	pat := pats[0]
	rng := rand.New(rand.NewPCG(3, 3))
	vals := make([]float64, 2*pat.NNZ())
	for i := range vals {
		vals[i] = rng.Float64()
	}
	dense := make([]float64, 2*n*n)
	for q := range 2 {
		d, err := pat.Dense(vals[q*pat.NNZ():(q+1)*pat.NNZ()], 0)
		require.NoError(t, err)
		copy(dense[q*n*n:], d.RawMatrix().Data)
	}
	prior := (&Rounding{}).Prior
	prior.Std = 0.2
	tp := ad.NewTape()
	xs := ad.NewParam("xs", &ad.Tensor{Shape: []int{2, pat.NNZ()}, Data: vals})
	xd := ad.NewParam("xd", &ad.Tensor{Shape: []int{2, n, n}, Data: dense})
	ls := prior.LogProbSparseVar(tp.Param(xs), n, n*n-pat.NNZ())
	ld := prior.LogProbVar(tp.Param(xd))
	require.NoError(t, tp.Err())
	require.InDeltaSlice(t, ld.Value(), ls.Value(), 1e-10)
	tp.Backward(ad.Add(ad.Sum(ls), ad.Sum(ld)))
	for q := range 2 {
		want, err := pat.Values(denseOf(xd.Grad.Data[q*n*n:(q+1)*n*n], n))
		require.NoError(t, err)
		require.InDeltaSlice(t, want, xs.Grad.Data[q*pat.NNZ():(q+1)*pat.NNZ()], 1e-12)
	}
}

// TestSparseRoundingGradients checks the sparse rounding map and the
// sparse prior against central finite differences (at points away from
// the ties where the rounding's matching changes).
func TestSparseRoundingGradients(t *testing.T) {
	const n = 6
	m := newScoreModel(t, n, 1, 1, 1, 4)
	spec, err := models.Check(m)
	require.NoError(t, err)
	pats, err := spec.Perms[0].Patterns()
	require.NoError(t, err)
	pat := pats[0]
	rng := rand.New(rand.NewPCG(8, 8))
	psi := &ad.Tensor{Shape: []int{2, pat.NNZ()}, Data: make([]float64, 2*pat.NNZ())}
	for i := range psi.Data {
		psi.Data[i] = rng.Float64()
	}
	w := &ad.Tensor{Shape: []int{2, pat.NNZ()}, Data: make([]float64, 2*pat.NNZ())}
	for i := range w.Data {
		w.Data[i] = rng.NormFloat64()
	}
	require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
		return ad.Sum(ad.Mul(sparseRoundingVar(xs[0], pat, 0.3), tp.Const(w)))
	}, psi))
	prior := (&SparseRounding{}).Prior
	prior.Std = 0.25
	require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
		return ad.Sum(prior.LogProbSparseVar(xs[0], n, n*n-pat.NNZ()))
	}, psi))
}
