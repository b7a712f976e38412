package vi

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// This file tests the parts of the models contract that vi enforces: the
// shape of LogLik's value, the independence of the samples (FitModel's
// preflight check) and ModelOptions.Init.

// How a test model's LogLik (mis)handles the sample axis.
const (
	llRight   = iota // one value per sample, computed from that sample alone
	llAxis           // a (K) site multiplied into a (K, n) tensor as it is
	llScalar         // the log-likelihood summed over the samples too
	llColumn         // shape (K, 1) instead of (K)
	llPerK           // divided by K: independent samples, but K-dependent
	llAxisSum        // summed over axis 0 (the samples) instead of axis 1
)

// locModel is y_i ~ N(β, 1), i < n, with β ~ N(0, 2²): one scalar real site
// "beta", of shape (K) in a Sample.
type locModel struct {
	y    []float64
	mode int
}

func (m *locModel) Sites() []models.Site {
	return []models.Site{&models.RealSite{Name: "beta", Prior: models.Normal{Sigma: 2}}}
}

func (m *locModel) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	k, n := z.K(), len(m.y)
	beta := z.Real("beta") // (K)
	ones := ad.Zeros(k, n)
	for i := range ones.Data {
		ones.Data[i] = 1
	}
	var mean *ad.Var // (K, n): β of sample k in row k
	if m.mode == llAxis {
		mean = ad.Mul(t.Const(ones), beta) // aligns β with the last axis
	} else {
		mean = ad.Mul(t.Const(ones), ad.Reshape(beta, k, 1))
	}
	sq := ad.Square(ad.Sub(mean, t.Const(&ad.Tensor{Shape: []int{n}, Data: m.y})))
	switch m.mode {
	case llAxisSum:
		return ad.Scale(ad.SumAxis(sq, 0), -0.5)
	case llScalar:
		return ad.Scale(ad.Sum(sq), -0.5)
	case llColumn:
		return ad.Reshape(ad.Scale(ad.SumAxis(sq, 1), -0.5), k, 1)
	case llPerK:
		return ad.Scale(ad.SumAxis(sq, 1), -0.5/float64(k))
	}
	return ad.Scale(ad.SumAxis(sq, 1), -0.5)
}

// scaledMatch is the permutation regression y_i = β·x_σ(i) + ε_i,
// ε_i ~ N(0, s²), with a scalar real site "beta" and a permutation site
// "P" of size n.
type scaledMatch struct {
	x, y []float64
	s    float64
	mode int
}

func newScaledMatch(n int, seed uint64, mode int) *scaledMatch {
	rng := rand.New(rand.NewPCG(seed, 3))
	m := &scaledMatch{x: make([]float64, n), y: make([]float64, n), s: 0.1, mode: mode}
	sigma := rng.Perm(n)
	for i := range m.x {
		m.x[i] = 2*rng.Float64() - 1
	}
	for i, j := range sigma {
		m.y[i] = 1.5*m.x[j] + m.s*rng.NormFloat64()
	}
	return m
}

func (m *scaledMatch) Sites() []models.Site {
	return []models.Site{
		&models.PermSite{Name: "P", N: len(m.x)},
		&models.RealSite{Name: "beta", Prior: models.Normal{Sigma: 2}},
	}
}

func (m *scaledMatch) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	k, n := z.K(), len(m.x)
	xs := ad.MatMul(ad.Reshape(z.Perm("P"), k, n, n), t.Const(&ad.Tensor{Shape: []int{n, 1}, Data: m.x}))
	xs = ad.Reshape(xs, k, n) // row k: x_σ(i) for sample k
	var pred *ad.Var
	if m.mode == llAxis {
		pred = ad.Mul(xs, z.Real("beta"))
	} else {
		pred = ad.Mul(xs, ad.Reshape(z.Real("beta"), k, 1))
	}
	r := ad.Sub(pred, t.Const(&ad.Tensor{Shape: []int{n}, Data: m.y}))
	return ad.Scale(ad.SumAxis(ad.Square(r), 1), -0.5/(m.s*m.s))
}

// rawGauss is a Model of this package (for ELBO and Fit) with one guide
// "z" of shape (K, D), whose LogLik returns the shape mode asks for.
type rawGauss struct{ mode int }

func (m rawGauss) LogLik(t *ad.Tape, z Sample) *ad.Var {
	x := z["z"]
	per := ad.Scale(ad.SumAxis(ad.Square(x), 1), -0.5) // (K)
	switch m.mode {
	case llScalar:
		return ad.Sum(per)
	case llColumn:
		return ad.Reshape(per, x.Shape()[0], 1)
	}
	return per
}

func TestELBORequiresOneValuePerSample(t *testing.T) {
	g, err := NewNormal("z", 2, nil, 1, 1)
	require.NoError(t, err)
	tp := ad.NewTape()
	elbo := func(m Model, k int) error {
		tp.Reset()
		_, _, _, err := ELBO(tp, m, []Guide{g}, Step{K: k, Rng: StepRand(1, 0)})
		return err
	}
	require.NoError(t, elbo(rawGauss{llRight}, 4))
	require.NoError(t, elbo(rawGauss{llRight}, 1))
	// K = 1 may return a scalar; K > 1 may not, since a scalar broadcast to
	// every sample counts the data K times over.
	require.NoError(t, elbo(rawGauss{llScalar}, 1))
	err = elbo(rawGauss{llScalar}, 4)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "LogLik returned a scalar for K = 4 samples")
	assert.Contains(t, err.Error(), "it must return shape (K) = (4), one value per sample")
	err = elbo(rawGauss{llColumn}, 4)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "LogLik returned shape (4, 1) for K = 4 samples")
	assert.Contains(t, err.Error(), "shape (K) = (4)")

	// Fit reports it at the first step.
	res, err := Fit(context.Background(), rawGauss{llScalar}, []Guide{g}, Options{Steps: 5, K: 3})
	require.ErrorContains(t, err, "step 0: vi: LogLik returned a scalar for K = 3 samples")
	assert.Empty(t, res.ELBO)

	// So does a models.Model behind ModelOf, whose adapter checks too.
	mm, err := ModelOf(&locModel{y: []float64{1, 2, 3, 4}, mode: llScalar})
	require.NoError(t, err)
	b, err := NewNormal("beta", 1, nil, 1, 2)
	require.NoError(t, err)
	ab := &reshapeGuide{Normal: b}
	tp.Reset()
	_, _, _, err = ELBO(tp, mm, []Guide{ab}, Step{K: 8, Rng: StepRand(1, 0)})
	require.ErrorContains(t, err, "LogLik returned a scalar for K = 8 samples; it must return shape (K) = (8), one value per sample")
	tp.Reset()
	_, _, _, err = ELBO(tp, mm, []Guide{ab}, Step{K: 1, Rng: StepRand(1, 0)})
	require.NoError(t, err)
}

// reshapeGuide is a Normal guide over one coordinate whose samples have the
// shape (K) of a scalar real site.
type reshapeGuide struct{ *Normal }

func (g *reshapeGuide) Rsample(t *ad.Tape, s Step) (*ad.Var, Divergence, error) {
	z, d, err := g.Normal.Rsample(t, s)
	return ad.Reshape(z, s.K), d, err
}

// fastOptions returns options for a short fit.
func fastOptions(k int) ModelOptions {
	return ModelOptions{Seed: 1, K: k, Steps: 20, ELBOSamples: 20, PosteriorDraws: 10}
}

// noSteps returns o with a Progress that fails the test if a step runs.
func noSteps(t *testing.T, o ModelOptions) ModelOptions {
	o.ProgressEvery = 1
	o.Progress = func(p ModelProgress) { t.Errorf("step %d of fit %d ran", p.Step, p.Fit) }
	return o
}

func TestFitModelChecksSampleAxis(t *testing.T) {
	ctx := context.Background()

	// The motivating mistake: a scalar site, of shape (K) in a Sample,
	// multiplied into a (K, n) tensor. With n = K = 4 it runs, and the
	// samples contaminate each other; FitModel's check, at K = 5 (the
	// smallest prime above every dimension), fails before any step and
	// says what the sites' shapes are.
	m := newScaledMatch(4, 1, llAxis)
	_, err := FitModel(ctx, m, noSteps(t, fastOptions(4)))
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), "LogLik fails with K = 5 samples but not with K = 1")
	assert.Contains(t, err.Error(), `site "beta" has shape (K) = (5)`)
	assert.Contains(t, err.Error(), `site "P" has shape (K, 1, 4, 4) = (5, 1, 4, 4)`)
	assert.Contains(t, err.Error(), "ad: Mul") // the tape's own error, as it is

	// When a data dimension equals the check's K the product runs, and
	// the check sees the samples mix: with n = 3 observations (K = 3),
	// changing sample 1 of beta changes every sample's log-likelihood.
	loc := &locModel{y: []float64{0.5, 1.5, 1}, mode: llAxis}
	_, err = FitModel(ctx, loc, noSteps(t, fastOptions(3)))
	require.Error(t, err)
	t.Log(err)
	assert.Contains(t, err.Error(), `LogLik mixes samples: changing sample 1 of site "beta" (shape (K) = (3)) changed the log-likelihood of other samples`)
	assert.Contains(t, err.Error(), "leading axis is the sample axis K")

	// Summing over the sample axis instead of the data axis returns shape
	// (n), which is (K) when n = K, and mixes the samples.
	loc.mode = llAxisSum
	_, err = FitModel(ctx, loc, noSteps(t, fastOptions(8)))
	require.ErrorContains(t, err, `LogLik mixes samples: changing sample 1 of site "beta"`)
	// With n = 4 the same mistake returns the wrong shape.
	_, err = FitModel(ctx, &locModel{y: []float64{0.5, 1.5, 1, 2}, mode: llAxisSum}, noSteps(t, fastOptions(8)))
	require.ErrorContains(t, err, "LogLik returned shape (4) for K = 3 samples; it must return shape (K) = (3), one value per sample")

	// One value for all samples, or a column, is an error whatever K is.
	loc.mode = llScalar
	_, err = FitModel(ctx, loc, noSteps(t, fastOptions(1)))
	require.ErrorContains(t, err, "LogLik returned a scalar for K = 3 samples; it must return shape (K) = (3), one value per sample")
	loc.mode = llColumn
	_, err = FitModel(ctx, loc, noSteps(t, fastOptions(8)))
	require.ErrorContains(t, err, "LogLik returned shape (3, 1) for K = 3 samples")

	// Independent samples whose values depend on K.
	loc.mode = llPerK
	_, err = FitModel(ctx, loc, noSteps(t, fastOptions(8)))
	require.ErrorContains(t, err, "LogLik depends on the number of samples: sample 1 gives")

	// The right models pass the check and fit.
	for _, mm := range []models.Model{newScaledMatch(4, 1, llRight), &locModel{y: loc.y, mode: llRight}} {
		res, err := FitModel(ctx, mm, fastOptions(4))
		require.NoError(t, err, "%T", mm)
		assert.Len(t, res.ELBO, 20)
	}
}

// failingModel records its own error on the tape.
type failingModel struct {
	*locModel
	err error
}

func (m failingModel) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	t.Fail(m.err)
	return m.locModel.LogLik(t, z)
}

func TestFitModelCheckKeepsTapeErrors(t *testing.T) {
	// An error the model records on its tape, at every K, is returned as
	// it is, not as a complaint about the sample axis.
	errBad := errors.New("bad data")
	m := failingModel{locModel: &locModel{y: []float64{1, 2, 3, 4}}, err: errBad}
	_, err := FitModel(context.Background(), m, noSteps(t, fastOptions(8)))
	require.ErrorIs(t, err, errBad)
	assert.Equal(t, "vi: FitModel: bad data", err.Error())

	// So is an unknown site name (models' error).
	bad := newPointMatch(4, 0.2, 1)
	bad.site = "Q"
	_, err = FitModel(context.Background(), bad, noSteps(t, fastOptions(8)))
	require.ErrorContains(t, err, `models: unknown site "Q"`)
	assert.NotContains(t, err.Error(), "K = 1")
}

func TestCheckSamples(t *testing.T) {
	spec := func(sites ...models.Site) *models.Spec {
		s, err := models.Check(&siteList{sites})
		require.NoError(t, err)
		return s
	}
	normal := models.Normal{Sigma: 1}
	assert.Equal(t, 3, checkSamples(spec(&models.RealSite{Name: "a", Prior: normal}), 8, nil))
	assert.Equal(t, 5, checkSamples(spec(&models.PermSite{Name: "P", N: 4}, &models.RealSite{Name: "b", Prior: normal}), 8, nil))
	assert.Equal(t, 7, checkSamples(spec(&models.PermSite{Name: "P", N: 5, Batch: 2}, &models.RealSite{Name: "b", Shape: []int{3, 2}, Prior: normal}), 8, nil))
	assert.Equal(t, 11, checkSamples(spec(&models.RealSite{Name: "a", Shape: []int{7}, Prior: normal}), 8, nil))
	// A site so large that K = 211 would cost far more than a step: the
	// smallest prime above 2 that is no site dimension.
	big := spec(&models.PermSite{Name: "P", N: 200, Batch: 3}, &models.RealSite{Name: "w", Shape: []int{5}, Prior: normal})
	assert.Equal(t, 7, checkSamples(big, 8, nil))
	assert.Equal(t, []int{3, 5, 7, 11, 13}, []int{nextPrime(2), nextPrime(3), nextPrime(5), nextPrime(8), nextPrime(12)})
}

// siteList is a model with the given sites and a zero likelihood.
type siteList struct{ sites []models.Site }

func (m *siteList) Sites() []models.Site { return m.sites }
func (m *siteList) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	return t.Const(ad.Zeros(z.K()))
}

// initPlan returns the plan FitModel makes for m with options o.
func initPlan(t *testing.T, m models.Model, o ModelOptions) *modelPlan {
	t.Helper()
	require.NoError(t, o.setDefaults())
	spec, err := models.Check(m)
	require.NoError(t, err)
	p, err := newModelPlan(spec, o)
	require.NoError(t, err)
	return p
}

func TestFitModelInit(t *testing.T) {
	m := newScaledMatch(5, 2, llRight)
	q := perm.Perm{3, 0, 4, 1, 2}
	o := ModelOptions{Seed: 3, PosteriorDraws: 2000}
	free := initPlan(t, m, o)
	o.Init = &models.State{Perms: map[string][]perm.Perm{"P": {q}}, Reals: map[string][]float64{"beta": {-0.7}}}
	p := initPlan(t, m, o)
	for fit := range uint64(3) {
		seed := deriveSeed(o.Seed, seedInit, fit)
		before, err := free.newGuides(seed)
		require.NoError(t, err)
		after, err := p.newGuides(seed)
		require.NoError(t, err)

		// The given entry of each row leads it by 3 + log 5; the other
		// logits are the draws a fit without Init starts from.
		x0, x := before[0].(*GumbelSinkhorn).X.Value.Data, after[0].(*GumbelSinkhorn).X.Value.Data
		for i := range 5 {
			row0, row := x0[i*5:(i+1)*5], x[i*5:(i+1)*5]
			assert.InDelta(t, slices.Max(row0)+3+math.Log(5), row[q[i]], 1e-12, "fit %d row %d", fit, i)
			for j := range 5 {
				if j != q[i] {
					assert.Equal(t, row0[j], row[j], "fit %d (%d, %d)", fit, i, j)
				}
			}
		}
		// The real site's mean is the given value, its spread unchanged.
		assert.Equal(t, []float64{-0.7}, after[1].(*realNormal).Mu.Value.Data)
		assert.Equal(t, before[1].(*realNormal).LogSigma.Value.Data, after[1].(*realNormal).LogSigma.Value.Data)

		// Most hard draws of the guide are q (measured 0.998 to 1), and q
		// is their mode.
		post, err := p.posterior(after)
		require.NoError(t, err)
		hits := 0
		for _, d := range post.Perms["P"].Draws {
			if slices.Equal(d[0], q) {
				hits++
			}
		}
		share := float64(hits) / float64(len(post.Perms["P"].Draws))
		t.Logf("fit %d: share of draws equal to Init %.3f", fit, share)
		assert.Greater(t, share, 0.9, "fit %d", fit)
		assert.Equal(t, q, post.Perms["P"].Mode[0])
	}

	// A non-nil Init that names no site starts where a nil Init does.
	o.Init = &models.State{}
	empty := initPlan(t, m, o)
	a, err := free.newGuides(11)
	require.NoError(t, err)
	b, err := empty.newGuides(11)
	require.NoError(t, err)
	for k := range a {
		for i, prm := range a[k].Params() {
			assert.Equal(t, prm.Value.Data, b[k].Params()[i].Value.Data, prm.Name)
		}
	}

	// FitModel starts from Init: with a learning rate too small to move,
	// the fitted posterior is the initial guides'.
	o.Init = &models.State{Perms: map[string][]perm.Perm{"P": {q}}, Reals: map[string][]float64{"beta": {-0.7}}}
	o.Steps, o.ELBOSamples, o.PosteriorDraws = 5, 20, 500
	o.LR = optim.Constant(1e-9)
	res, err := FitModel(context.Background(), m, o)
	require.NoError(t, err)
	x := res.Guides[0].(*GumbelSinkhorn).X.Value.Data
	for i := range 5 {
		row := x[i*5 : (i+1)*5]
		assert.Equal(t, q[i], slices.Index(row, slices.Max(row)), "row %d", i)
	}
	assert.InDelta(t, -0.7, res.Guides[1].(*realNormal).Mu.Value.Data[0], 1e-6)
	assert.Contains(t, res.Posterior.Notes, "every fit started from Init for sites [P beta]: logits that put most mass on the given permutations, Normal means at the given values")
}

func TestFitModelInitMasks(t *testing.T) {
	// With a mask and a fixed row, the logits still lead on the given
	// entries, forbidden entries stay forbidden (no draw uses them), and
	// the rounding guide's logits start the same way.
	pm := newPointMatch(5, 0.15, 3)
	mask, err := perm.FullMask(5)
	require.NoError(t, err)
	for i := range 5 {
		require.NoError(t, mask.Set(i, (i+1)%5, false))
	}
	m := &constrainedMatch{pointMatch: pm, mask: mask, fixed: []int{2, -1, -1, -1, -1}}
	q := perm.Perm{2, 0, 4, 1, 3}
	for _, kind := range []GuideKind{GuideGumbelSinkhorn, GuideRounding} {
		o := ModelOptions{Seed: 5, PosteriorDraws: 1000, Guides: map[string]GuideKind{"P": kind},
			Init: &models.State{Perms: map[string][]perm.Perm{"P": {q}}}}
		p := initPlan(t, m, o)
		guides, err := p.newGuides(deriveSeed(5, seedInit, 0))
		require.NoError(t, err)
		logits := guides[0].Params()[0].Value.Data
		eff := p.spec.Perms[0].Masks[0]
		for i := range 5 {
			for j := range 5 {
				if j != q[i] && eff.Allowed(i, j) {
					assert.GreaterOrEqual(t, logits[i*5+q[i]]-logits[i*5+j], 3+math.Log(5)-1e-12, "%v (%d, %d)", kind, i, j)
				}
			}
		}
		post, err := p.posterior(guides)
		require.NoError(t, err)
		for _, d := range post.Perms["P"].Draws {
			require.True(t, eff.Admits(d[0]), "%v: draw %v", kind, d[0])
		}
		assert.Equal(t, q, post.Perms["P"].Mode[0], "%v", kind)
	}
}

func TestFitModelInitErrors(t *testing.T) {
	pm := newPointMatch(4, 0.2, 1)
	mask, err := perm.FullMask(4)
	require.NoError(t, err)
	require.NoError(t, mask.Set(0, 0, false))
	constrained := &constrainedMatch{pointMatch: pm, mask: mask, fixed: []int{-1, 3, -1, -1}}
	reg := newScaledMatch(4, 1, llRight)
	perms := func(ps ...perm.Perm) *models.State {
		return &models.State{Perms: map[string][]perm.Perm{"P": ps}}
	}
	for _, c := range []struct {
		m    models.Model
		init *models.State
		want string
	}{
		{pm, &models.State{Perms: map[string][]perm.Perm{"Q": {{0, 1, 2, 3}}}}, `Init names site "Q"`},
		{reg, &models.State{Reals: map[string][]float64{"alpha": {1}}}, `Init names site "alpha"`},
		{reg, &models.State{Perms: map[string][]perm.Perm{"beta": {{0}}}}, `Init.Perms names "beta", which is a real site`},
		{reg, &models.State{Reals: map[string][]float64{"P": {1}}}, `Init.Reals names "P", which is a permutation site`},
		{pm, perms(), `site "P" has 0 permutations, want 1`},
		{pm, perms(perm.Perm{0, 1, 2, 3}, perm.Perm{0, 1, 2, 3}), `site "P" has 2 permutations, want 1`},
		{pm, perms(perm.Perm{0, 1, 2}), `site "P" permutation 0 ([0 1 2]) is not a permutation of size 4`},
		{pm, perms(perm.Perm{0, 1, 1, 3}), `site "P" permutation 0 ([0 1 1 3])`},
		{constrained, perms(perm.Perm{0, 3, 1, 2}), `site "P" permutation 0 ([0 3 1 2]) is not a permutation of size 4 that its mask and fixed rows admit`},
		{constrained, perms(perm.Perm{1, 2, 3, 0}), `site "P" permutation 0 ([1 2 3 0])`},
		{reg, &models.State{Reals: map[string][]float64{"beta": {1, 2}}}, `site "beta" needs 1 finite values, got [1 2]`},
		{reg, &models.State{Reals: map[string][]float64{"beta": {math.NaN()}}}, `site "beta" needs 1 finite values, got [NaN]`},
		{reg, &models.State{Reals: map[string][]float64{"beta": {math.Inf(1)}}}, `site "beta" needs 1 finite values`},
	} {
		o := fastOptions(4)
		o.Init = c.init
		_, err := FitModel(context.Background(), c.m, noSteps(t, o))
		require.Error(t, err, c.want)
		assert.Contains(t, err.Error(), c.want)
	}
	// An admitted permutation of the constrained site is accepted.
	o := fastOptions(4)
	o.Init = perms(perm.Perm{1, 3, 0, 2})
	_, err = FitModel(context.Background(), constrained, o)
	require.NoError(t, err)
}
