package vi

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// pointMatch is the point-matching model y_i = r_{σ(i)} + ε_i,
// ε_i ~ N(0, s² I₂), with a uniform prior on σ.
type pointMatch struct {
	n        int
	ref, obs *ad.Tensor // (n, 2)
	s        float64
	site     string // the name LogLik reads; "P" unless a test breaks it
}

func (m *pointMatch) Sites() []models.Site { return []models.Site{&models.PermSite{Name: "P", N: m.n}} }

func (m *pointMatch) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	p := ad.Reshape(z.Perm(m.site), z.K(), m.n, m.n)
	r := ad.Sub(ad.MatMul(p, t.Const(m.ref)), t.Const(m.obs))
	return ad.Scale(ad.SumAxis(ad.Reshape(ad.Square(r), z.K(), -1), 1), -0.5/(m.s*m.s))
}

// newPointMatch draws n reference points uniformly in the unit square and
// observes them, permuted, with noise s.
func newPointMatch(n int, s float64, seed uint64) *pointMatch {
	rng := rand.New(rand.NewPCG(seed, 1))
	ref, obs := ad.Zeros(n, 2), ad.Zeros(n, 2)
	sigma := rng.Perm(n)
	for i := range ref.Data {
		ref.Data[i] = rng.Float64()
	}
	for i := range n {
		for d := range 2 {
			obs.Data[i*2+d] = ref.Data[sigma[i]*2+d] + s*rng.NormFloat64()
		}
	}
	return &pointMatch{n: n, ref: ref, obs: obs, s: s, site: "P"}
}

// modeMass returns the mean marginal probability pp puts on the rows of
// mode.
func modeMass(pp *models.PermPosterior, mode perm.Perm) float64 {
	m := 0.0
	for i, j := range mode {
		m += pp.Marginals[0].At(i, j)
	}
	return m / float64(len(mode))
}

func TestFitModelMatchesExact(t *testing.T) {
	// Four point-matching problems, n = 5 points with noise 0.15 in the
	// unit square: posteriors that put 0.71 to 0.86 of each row's mass on
	// the mode and spread the rest.
	//
	// Gumbel-Sinkhorn VI cannot be exact here. Its family GM(X) has N²
	// parameters for N! − 1 degrees of freedom, and its KL is taken in
	// Gumbel space, where it is looser than in permutation space: at the
	// fitted X it is 4–9 nats, above log 5! = 4.8, the most any q can
	// diverge from the uniform prior over permutations. The fitted
	// marginals are therefore close to, not equal to, the exact ones. The
	// measured max row TVs (defaults, Seed 1) are 0.37, 0.37, 0.18 and
	// 0.30; the bound 0.45 leaves room for platform-dependent rounding in
	// the optimisation, and the test also requires VI to beat, by a wide
	// margin, the two trivial answers: the uniform marginals and the point
	// mass on the exact mode.
	longtest.Skip(t, "fits four models (about 2 s)")
	for seed := uint64(1); seed <= 4; seed++ {
		m := newPointMatch(5, 0.15, seed)
		ex, err := models.Exact(m)
		require.NoError(t, err)
		res, err := FitModel(context.Background(), m, ModelOptions{Seed: 1})
		require.NoError(t, err)
		exact, got := ex.Perms["P"], res.Posterior.Perms["P"]
		tv, err := exact.MaxRowTV(got)
		require.NoError(t, err)

		uniform := &models.PermPosterior{Marginals: []*mat.Dense{mat.NewDense(5, 5, nil)}}
		point := &models.PermPosterior{Marginals: []*mat.Dense{mat.NewDense(5, 5, nil)}}
		for i, j := range exact.Mode[0] {
			point.Marginals[0].Set(i, j, 1)
			for c := range 5 {
				uniform.Marginals[0].Set(i, c, 0.2)
			}
		}
		tvUniform, _ := exact.MaxRowTV(uniform)
		tvPoint, _ := exact.MaxRowTV(point)
		t.Logf("problem %d: max row TV %.3f (uniform %.3f, point mass %.3f); mass on the mode %.3f, exact %.3f; ELBO %.3f, log p(y) %.3f",
			seed, tv, tvUniform, tvPoint, modeMass(got, exact.Mode[0]), modeMass(exact, exact.Mode[0]),
			res.FinalELBO, ex.LogEvidence-math.Log(120))

		assert.Equal(t, exact.Mode[0], got.Mode[0], "problem %d: mode", seed)
		assert.Less(t, tv, 0.45, "problem %d", seed)
		assert.Less(t, tv, 0.8*min(tvUniform, 1), "problem %d: no better than uniform", seed)
		// The ELBO is a lower bound on log p(y); the relaxed ELBO at
		// τ = 0.1 is one for the relaxed model, which differs from the hard
		// one by far less than the 3-nat margin (measured gaps 5.4–8.1).
		assert.Less(t, res.FinalELBO, ex.LogEvidence-math.Log(120)+3*res.FinalELBOStdErr, "problem %d: ELBO above log p(y)", seed)

		require.Len(t, got.Draws, 1000)
		assert.Equal(t, "vi (Gumbel-Sinkhorn)", res.Posterior.Method)
		assert.NotEmpty(t, res.Posterior.Notes)
	}
}

// permRegression is the permutation regression of the models contract:
// y_i = x_{σ(i)}ᵀβ + ε_i, ε_i ~ N(0, s²), β ~ N(0, I₂), σ uniform.
type permRegression struct {
	n    int
	x    *ad.Tensor // (n, 2)
	y    *ad.Tensor // (n)
	s    float64
	beta models.RealPrior
}

func (m *permRegression) Sites() []models.Site {
	return []models.Site{
		&models.PermSite{Name: "P", N: m.n},
		&models.RealSite{Name: "beta", Shape: []int{2}, Prior: m.beta},
	}
}

func (m *permRegression) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	k := z.K()
	xs := ad.MatMul(ad.Reshape(z.Perm("P"), k, m.n, m.n), t.Const(m.x)) // (K, n, 2): row i is x_σ(i)
	pred := ad.Reshape(ad.MatMul(xs, ad.Reshape(z.Real("beta"), k, 2, 1)), k, m.n)
	r := ad.Sub(pred, t.Const(m.y))
	return ad.Scale(ad.SumAxis(ad.Square(r), 1), -0.5/(m.s*m.s))
}

// conditional returns log p(y | σ) (β integrated out, up to the constant
// −(n/2) log 2π) and E[β | σ, y]. With A = X_σᵀX_σ/s² + I,
// β | σ, y ~ N(A⁻¹X_σᵀy/s², A⁻¹) and, by the matrix determinant lemma and
// Woodbury, log N(y; 0, s²I + X_σX_σᵀ) = −½[n log s² + log det A
// + (yᵀy − bᵀA⁻¹b)/s²] with b = X_σᵀy/s²·s² = X_σᵀy.
func (m *permRegression) conditional(sigma perm.Perm) (float64, [2]float64) {
	var a [2][2]float64
	var b [2]float64
	yy := 0.0
	for i, j := range sigma {
		x0, x1 := m.x.Data[2*j], m.x.Data[2*j+1]
		y := m.y.Data[i]
		a[0][0] += x0 * x0
		a[0][1] += x0 * x1
		a[1][1] += x1 * x1
		b[0] += x0 * y
		b[1] += x1 * y
		yy += y * y
	}
	s2 := m.s * m.s
	a00, a01, a11 := a[0][0]/s2+1, a[0][1]/s2, a[1][1]/s2+1
	det := a00*a11 - a01*a01
	// A⁻¹b/s² is the conditional mean; bᵀA⁻¹b/s⁴ enters the quadratic form.
	ib0, ib1 := (a11*b[0]-a01*b[1])/det, (a00*b[1]-a01*b[0])/det
	quad := yy/s2 - (b[0]*ib0+b[1]*ib1)/(s2*s2)
	ll := -0.5 * (float64(len(sigma))*math.Log(s2) + math.Log(det) + quad)
	return ll, [2]float64{ib0 / s2, ib1 / s2}
}

// CollapsedSites, CollapsedLogLik and SampleCollapsed implement
// models.Collapser, so that models.Exact can enumerate the model.
func (m *permRegression) CollapsedSites() []string { return []string{"beta"} }

func (m *permRegression) CollapsedLogLik(s *models.State) (float64, error) {
	ll, _ := m.conditional(s.Perms["P"][0])
	return ll, nil
}

func (m *permRegression) SampleCollapsed(*rand.Rand, *models.State) error { return nil }

func newPermRegression(seed uint64, s float64) *permRegression {
	rng := rand.New(rand.NewPCG(seed, 2))
	n := 6
	m := &permRegression{n: n, x: ad.Zeros(n, 2), y: ad.Zeros(n), s: s, beta: models.Normal{Sigma: 1}}
	beta := [2]float64{1.2, -0.7}
	sigma := rng.Perm(n)
	for i := range m.x.Data {
		m.x.Data[i] = 2*rng.Float64() - 1
	}
	for i, j := range sigma {
		m.y.Data[i] = m.x.Data[2*j]*beta[0] + m.x.Data[2*j+1]*beta[1] + m.s*rng.NormFloat64()
	}
	return m
}

// exactProb returns p(σ | y) by enumeration.
func (m *permRegression) exactProb(t *testing.T, sigma perm.Perm) float64 {
	target, _ := m.conditional(sigma)
	z := 0.0
	require.NoError(t, perm.Enumerate(m.n, nil, func(p perm.Perm) error {
		ll, _ := m.conditional(p)
		z += math.Exp(ll - target)
		return nil
	}))
	return 1 / z
}

// exactBetaMean returns E[β | y] by enumerating σ.
func (m *permRegression) exactBetaMean(t *testing.T) [2]float64 {
	var lls []float64
	var means [][2]float64
	require.NoError(t, perm.Enumerate(m.n, nil, func(p perm.Perm) error {
		ll, mu := m.conditional(p)
		lls = append(lls, ll)
		means = append(means, mu)
		return nil
	}))
	top := math.Inf(-1)
	for _, v := range lls {
		top = math.Max(top, v)
	}
	var out [2]float64
	z := 0.0
	for k, v := range lls {
		w := math.Exp(v - top)
		z += w
		out[0] += w * means[k][0]
		out[1] += w * means[k][1]
	}
	return [2]float64{out[0] / z, out[1] / z}
}

func TestFitModelRealSite(t *testing.T) {
	longtest.Skip(t, "fits a model with twelve starts (about 4 s)")
	m := newPermRegression(4, 0.1)
	ex, err := models.Exact(m)
	require.NoError(t, err)
	want := m.exactBetaMean(t)
	res, err := FitModel(context.Background(), m, ModelOptions{Seed: 2, Starts: 12})
	require.NoError(t, err)
	beta := res.Posterior.Reals["beta"]
	require.NotNil(t, beta)
	assert.Equal(t, []int{2}, beta.Shape)
	t.Logf("E[β | y]: exact %.3f, VI %.3f ± %.3f; mode %v, exact %v; fits %v",
		want, beta.Mean, beta.Std, res.Posterior.Perms["P"].Mode[0], ex.Perms["P"].Mode[0], res.FitELBO)
	// The posterior puts 0.79 on the exact mode and 0.18 on the
	// permutation that swaps rows 1 and 3. Each is a local optimum of the
	// ELBO, 1.4 nats apart (≈ log(0.79/0.18)), and single fits end in
	// either, or in worse optima: 5 of 30 single starts reached each of
	// the two (measured). From this seed fit 8 of the twelve reaches the
	// exact mode and fit 4 the other; the fresh ELBO estimate must rank
	// them correctly. (From Seed 1 none of twelve starts reaches it.)
	mode := res.Posterior.Perms["P"].Mode[0]
	assert.Equal(t, ex.Perms["P"].Mode[0], mode)
	assert.InDelta(t, 0.79, m.exactProb(t, mode), 0.01)
	// Mean-field VI fits β around one σ: the tolerance 0.1 is 1.4 posterior
	// standard deviations of β (0.07), which covers the shift of E[β] between
	// the two σ (measured 0.013 and 0.003 in the two coordinates).
	for d := range 2 {
		assert.InDelta(t, want[d], beta.Mean[d], 0.1, "coordinate %d", d)
	}
	require.Len(t, beta.Draws, 1000)
}

func TestFitModelMultiStartKeepsBest(t *testing.T) {
	// Without the check, fits are ranked by their fresh ELBO estimates (the
	// paper's plain method); TestCheckRanksStartsByTheLogJoint covers the
	// ranking by the polished log joint.
	m := newPermRegression(1, 0.3)
	o := ModelOptions{Seed: 3, Steps: 300, Starts: 4, ELBOSamples: 500, PosteriorDraws: 10, Polish: Polish{Off: true}}
	res, err := FitModel(context.Background(), m, o)
	require.NoError(t, err)
	require.Len(t, res.FitELBO, 4)
	assert.Equal(t, 4, res.Starts)
	assert.Equal(t, 1200, res.Steps)
	for i, e := range res.FitELBO {
		assert.LessOrEqual(t, e, res.FinalELBO, "fit %d", i)
	}
	assert.Equal(t, res.FitELBO[res.Best], res.FinalELBO)
	// The starts begin at different points and end at different ELBOs.
	assert.NotEqual(t, res.FitELBO[0], res.FitELBO[1])

	// Fit i of a multi-start run is the fit a run with fewer starts makes:
	// the first fit of four is the only fit of one.
	o.Starts = 1
	one, err := FitModel(context.Background(), m, o)
	require.NoError(t, err)
	assert.Equal(t, res.FitELBO[0], one.FinalELBO)

	// The kept guides are the best fit's: estimating their ELBO afresh
	// gives FinalELBO again.
	o.Starts = 4
	require.NoError(t, o.setDefaults())
	spec, err := models.Check(m)
	require.NoError(t, err)
	plan, err := newModelPlan(spec, o)
	require.NoError(t, err)
	again, _, err := plan.freshELBO(&modelAdapter{m: m, spec: spec}, res.Guides)
	require.NoError(t, err)
	assert.Equal(t, res.FinalELBO, again)
}

func TestFitModelInitialisationsDiffer(t *testing.T) {
	m := newPermRegression(1, 0.3)
	o := ModelOptions{}
	require.NoError(t, o.setDefaults())
	spec, err := models.Check(m)
	require.NoError(t, err)
	plan, err := newModelPlan(spec, o)
	require.NoError(t, err)
	a, err := plan.newGuides(deriveSeed(1, seedInit, 0))
	require.NoError(t, err)
	b, err := plan.newGuides(deriveSeed(1, seedInit, 1))
	require.NoError(t, err)
	a2, err := plan.newGuides(deriveSeed(1, seedInit, 0))
	require.NoError(t, err)
	for k := range a {
		for q, p := range a[k].Params() {
			if p.Name == "beta.logsigma" {
				continue // σ starts at a tenth of the prior's, whatever the seed
			}
			assert.NotEqual(t, p.Value.Data, b[k].Params()[q].Value.Data, "%s", p.Name)
			assert.Equal(t, p.Value.Data, a2[k].Params()[q].Value.Data, "%s: same seed", p.Name)
		}
	}
	// InitScale < 0 starts at the prior: zero logits and prior means.
	o.InitScale = -1
	plan.o = o
	z, err := plan.newGuides(7)
	require.NoError(t, err)
	for _, v := range z[0].Params()[0].Value.Data {
		require.Zero(t, v)
	}
	assert.Equal(t, []float64{0, 0}, z[1].(*realNormal).Mu.Value.Data)
}

func TestFitModelErrors(t *testing.T) {
	ctx := context.Background()
	m := newPointMatch(4, 0.2, 1)
	fast := ModelOptions{Steps: 3, ELBOSamples: 10, PosteriorDraws: 5}

	// A mistyped site name in LogLik is an error, not a panic.
	bad := *m
	bad.site = "Q"
	_, err := FitModel(ctx, &bad, fast)
	require.ErrorContains(t, err, `"Q"`)

	withGuides := func(g map[string]GuideKind) ModelOptions {
		o := fast
		o.Guides = g
		return o
	}
	_, err = FitModel(ctx, m, withGuides(map[string]GuideKind{"p": GuideRounding}))
	require.ErrorContains(t, err, `"p"`)
	_, err = FitModel(ctx, m, withGuides(map[string]GuideKind{"P": GuideNormal}))
	require.ErrorContains(t, err, "permutation site")
	_, err = FitModel(ctx, newPermRegression(1, 0.3), withGuides(map[string]GuideKind{"beta": GuideGumbelSinkhorn}))
	require.ErrorContains(t, err, "real site")

	gsPrior := &gsPriorMatch{pointMatch: m, prior: models.GumbelSinkhornPrior{Tau: 1}}
	_, err = FitModel(ctx, gsPrior, withGuides(map[string]GuideKind{"P": GuideRounding}))
	require.ErrorContains(t, err, "GumbelSinkhornPrior")

	for _, o := range []ModelOptions{
		{Steps: -1}, {K: -2}, {Iters: -1}, {Starts: -1}, {ELBOSamples: 1}, {PosteriorDraws: -1},
		{TauPrior: -1}, {InitScale: math.NaN()}, {Clip: -1}, {Restart: Restart{Window: 1}},
		{Restart: Restart{Window: 5, Z: -1}}, {LR: optim.Constant(-1)}, {Tau: optim.Constant(0)},
	} {
		_, err := FitModel(ctx, m, o)
		assert.Error(t, err, "%+v", o)
	}
	_, err = FitModel(ctx, nil, fast)
	require.Error(t, err)
}

// gsPriorMatch is pointMatch with a Gumbel-Sinkhorn prior on P.
type gsPriorMatch struct {
	*pointMatch
	prior models.GumbelSinkhornPrior
}

func (m *gsPriorMatch) Sites() []models.Site {
	return []models.Site{&models.PermSite{Name: "P", N: m.n, Prior: m.prior}}
}

func TestFitModelGumbelSinkhornPrior(t *testing.T) {
	// With no data (a constant likelihood) the exact posterior is the
	// prior GS(X₀, τ_prior), which q = GS(X, τ_prior) (the default guide
	// temperature for this prior) contains: the KL, here the whole
	// objective and free of Monte Carlo noise, is zero exactly at X = X₀.
	// The fit must get there from its random start (measured error below
	// 1e-4).
	x0 := mat.NewDense(3, 3, []float64{2, 0, -1, 0, 1, 0, -1, 0, 2})
	m := &flatModel{n: 3, prior: models.GumbelSinkhornPrior{Logits: x0, Tau: 0.7}}
	res, err := FitModel(context.Background(), m, ModelOptions{Seed: 2, Steps: 1500, ELBOSamples: 200})
	require.NoError(t, err)
	g := res.Guides[0].(*GumbelSinkhorn)
	for i := range 3 {
		for j := range 3 {
			assert.InDelta(t, x0.At(i, j), g.X.Value.Data[i*3+j], 1e-3, "(%d, %d)", i, j)
		}
	}
	assert.InDelta(t, 0, res.FinalELBO, 1e-6)
	assert.Contains(t, strings.Join(res.Posterior.Notes, "\n"), "targeted exactly")
}

// flatModel has a constant likelihood: its posterior is its prior.
type flatModel struct {
	n     int
	prior models.PermPrior
}

func (m *flatModel) Sites() []models.Site {
	return []models.Site{&models.PermSite{Name: "P", N: m.n, Prior: m.prior}}
}

func (m *flatModel) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	return ad.Scale(ad.SumAxis(ad.Reshape(z.Perm("P"), z.K(), -1), 1), 0)
}

func TestGumbelSinkhornPriorKLMonteCarlo(t *testing.T) {
	// The guide's closed-form KL((X + ε)/τ ‖ (X₀ + ε')/τ_prior) against a
	// Monte Carlo average of log q(z) − log p(z), z ~ q, entry by entry,
	// within five standard errors of the average (each below 0.02, so a
	// wrong term of the KL cannot hide in the noise).
	x := []float64{0.5, -0.4, 1.5, 0.3}
	x0 := []float64{1, 0, -0.5, 0.3}
	var kls []float64
	for _, c := range []struct{ tau, tauPrior float64 }{{1, 1}, {0.5, 0.8}, {2, 0.7}, {0.6, 0}} {
		g, err := NewGumbelSinkhorn("P", 1, 2, nil, optim.Constant(c.tau), c.tauPrior, 5)
		require.NoError(t, err)
		copy(g.X.Value.Data, x)
		g.PriorLogits = x0
		tp := ad.NewTape()
		_, d, err := g.Rsample(tp, Step{K: 1, Rng: StepRand(1, 0)})
		require.NoError(t, err)

		tauP := c.tauPrior
		if tauP == 0 {
			tauP = c.tau
		}
		rng := rand.New(rand.NewPCG(5, 6))
		const draws = 200000
		mc, variance := 0.0, 0.0
		for i := range x {
			q := dist.Gumbel{Mu: x[i] / c.tau, Beta: 1 / c.tau}
			p := dist.Gumbel{Mu: x0[i] / tauP, Beta: 1 / tauP}
			vals := make([]float64, draws)
			for k := range vals {
				z := q.Rand(rng)
				vals[k] = q.LogProb(z) - p.LogProb(z)
			}
			m, v := meanVariance(vals)
			mc += m
			variance += v / draws
		}
		se := math.Sqrt(variance)
		t.Logf("τ %v, τ_prior %v: closed form %.4f, Monte Carlo %.4f ± %.4f", c.tau, c.tauPrior, d.KL.Item(), mc, se)
		require.Less(t, se, 0.02)
		assert.InDelta(t, mc, d.KL.Item(), 5*se, "τ %v, τ_prior %v", c.tau, c.tauPrior)
		kls = append(kls, d.KL.Item())
	}
	// With τ_prior following τ the KL is that of the untempered nodes,
	// whatever τ.
	assert.InDelta(t, kls[0], kls[3], 1e-12)
}

func TestGumbelSinkhornKLGradient(t *testing.T) {
	g, err := NewGumbelSinkhorn("P", 1, 3, nil, optim.Constant(0.8), 1.5, 5)
	require.NoError(t, err)
	g.PriorLogits = []float64{0.3, -0.2, 1, 0, 0.5, -1, 2, 0.1, -0.4}
	x := &ad.Tensor{Shape: []int{1, 3, 3}, Data: []float64{0.1, 0.7, -0.3, 1.2, -0.5, 0.4, 0, 0.9, -1.1}}
	require.NoError(t, ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
		kl, err := g.kl(tp, xs[0], 0.8)
		if err != nil {
			tp.Fail(err)
		}
		return kl
	}, x))
}

func TestFitModelResume(t *testing.T) {
	// A run cancelled in its second fit and resumed from its checkpoints
	// returns exactly what an uninterrupted run returns, restarts on a
	// plateau included.
	m := newPointMatch(4, 0.2, 2)
	o := ModelOptions{Seed: 4, Steps: 400, Starts: 2, Restart: Restart{Window: 40}, ELBOSamples: 200, PosteriorDraws: 200}
	want, err := FitModel(context.Background(), m, o)
	require.NoError(t, err)
	require.Greater(t, want.Starts, 2, "the test needs a plateau restart")

	o.Checkpoint = filepath.Join(t.TempDir(), "fit")
	o.CheckpointEvery = 30
	ctx, cancel := context.WithCancel(context.Background())
	o.ProgressEvery = 1
	o.Progress = func(p ModelProgress) {
		if p.Fit == 1 && p.Step == 50 {
			cancel()
		}
	}
	_, err = FitModel(ctx, m, o)
	require.ErrorIs(t, err, context.Canceled)

	o.Progress = nil
	got, err := FitModel(context.Background(), m, o)
	require.NoError(t, err)
	assert.Equal(t, want.FitELBO, got.FitELBO)
	assert.Equal(t, want.FitSteps, got.FitSteps)
	assert.Equal(t, want.ELBO, got.ELBO)
	assert.Equal(t, want.Posterior.Perms["P"].Marginals, got.Posterior.Perms["P"].Marginals)
}

func TestFitModelRounding(t *testing.T) {
	// The rounding guide fits the point-matching model too; its mode is the
	// exact one on a problem whose posterior is concentrated.
	m := newPointMatch(4, 0.1, 3)
	ex, err := models.Exact(m)
	require.NoError(t, err)
	res, err := FitModel(context.Background(), m, ModelOptions{Seed: 1, Steps: 800, Guides: map[string]GuideKind{"P": GuideRounding}, ELBOSamples: 200})
	require.NoError(t, err)
	assert.Equal(t, "vi (rounding)", res.Posterior.Method)
	assert.Equal(t, ex.Perms["P"].Mode[0], res.Posterior.Perms["P"].Mode[0])
}

// gaussMeans is a model with one real site and no permutation:
// y_dj ~ N(θ_d, 1), j < n, with a prior on θ that is either models.Normal
// (closed-form KL) or the same density under another type (Monte Carlo
// log-ratio).
type gaussMeans struct {
	sums  []float64 // Σ_j y_dj
	n     float64
	prior models.RealPrior
}

func (m *gaussMeans) Sites() []models.Site {
	return []models.Site{&models.RealSite{Name: "theta", Shape: []int{len(m.sums)}, Prior: m.prior}}
}

func (m *gaussMeans) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	theta := z.Real("theta") // (K, D)
	sums := t.Const(&ad.Tensor{Shape: []int{len(m.sums)}, Data: m.sums})
	// Σ_dj log N(y_dj; θ_d, 1) = Σ_d [θ_d Σ_j y_dj − n θ_d²/2] + const.
	return ad.SumAxis(ad.Sub(ad.Mul(theta, sums), ad.Scale(ad.Square(theta), 0.5*m.n)), 1)
}

// opaqueNormal is models.Normal under another type, so that FitModel cannot
// see that its KL has a closed form.
type opaqueNormal struct{ models.Normal }

func TestFitModelRealOnly(t *testing.T) {
	// The exact posterior of θ_d is N((Σy_d + μ₀/σ₀²)/λ, 1/λ) with
	// λ = n + 1/σ₀². Both KL paths must recover it. The fit's stochastic
	// optimum wanders with the gradient noise: with K = 32 and a learning
	// rate decaying to 0.001 the means and standard deviations end within
	// 0.005 of the exact ones on both paths (measured; with the defaults,
	// K = 8 and a final rate of 0.005, within 0.035). The tolerance 0.015
	// is a twentieth of the posterior standard deviation 0.31.
	prior := models.Normal{Mu: 0.5, Sigma: 2}
	for _, c := range []struct {
		prior models.RealPrior
		tol   float64
		note  bool
	}{{prior, 0.015, false}, {opaqueNormal{prior}, 0.015, true}} {
		m := &gaussMeans{sums: []float64{12, -3}, n: 10, prior: c.prior}
		res, err := FitModel(context.Background(), m, ModelOptions{Seed: 5, Steps: 3000, K: 32, LR: optim.Geometric{Start: 0.1, End: 0.001, Steps: 3000}})
		require.NoError(t, err)
		post := res.Posterior.Reals["theta"]
		require.NotNil(t, post)
		lambda := m.n + 1/(prior.Sigma*prior.Sigma)
		for d, s := range m.sums {
			assert.InDelta(t, (s+prior.Mu/(prior.Sigma*prior.Sigma))/lambda, post.Mean[d], c.tol, "%T mean %d", c.prior, d)
			assert.InDelta(t, 1/math.Sqrt(lambda), post.Std[d], c.tol, "%T std %d", c.prior, d)
		}
		t.Logf("%T: mean %.4f, std %.4f", c.prior, post.Mean, post.Std)
		assert.Equal(t, "vi (mean-field Normal)", res.Posterior.Method)
		hasNote := false
		for _, n := range res.Posterior.Notes {
			hasNote = hasNote || strings.Contains(n, "Monte Carlo")
		}
		assert.Equal(t, c.note, hasNote, "%v", res.Posterior.Notes)
	}
}

// constrainedMatch is pointMatch with a candidate mask and a fixed row.
type constrainedMatch struct {
	*pointMatch
	mask  *perm.Mask
	fixed []int
}

func (m *constrainedMatch) Sites() []models.Site {
	return []models.Site{&models.PermSite{Name: "P", N: m.n, Masks: []*perm.Mask{m.mask}, Fixed: [][]int{m.fixed}}}
}

func TestFitModelMasksAndFixedRows(t *testing.T) {
	// Every draw honours the mask and the fixed row, the mode is the exact
	// one, and the marginals are as close to the exact ones as on the
	// unconstrained problems (measured max row TV 0.08).
	pm := newPointMatch(5, 0.15, 3)
	ex0, err := models.Exact(pm)
	require.NoError(t, err)
	truth := ex0.Perms["P"].Mode[0]
	mask, err := perm.FullMask(5)
	require.NoError(t, err)
	for i := range 5 {
		// Forbid, in every row, the column after the likely one.
		require.NoError(t, mask.Set(i, (truth[i]+1)%5, false))
	}
	fixed := []int{truth[0], -1, -1, -1, -1}
	m := &constrainedMatch{pointMatch: pm, mask: mask, fixed: fixed}
	ex, err := models.Exact(m)
	require.NoError(t, err)
	res, err := FitModel(context.Background(), m, ModelOptions{Seed: 1})
	require.NoError(t, err)
	got := res.Posterior.Perms["P"]
	spec, err := models.Check(m)
	require.NoError(t, err)
	for _, d := range got.Draws {
		require.True(t, spec.Perms[0].Masks[0].Admits(d[0]), "draw %v", d[0])
	}
	tv, err := ex.Perms["P"].MaxRowTV(got)
	require.NoError(t, err)
	t.Logf("max row TV %.3f", tv)
	assert.Equal(t, ex.Perms["P"].Mode[0], got.Mode[0])
	assert.Less(t, tv, 0.45)
	assert.InDelta(t, 1, got.Marginals[0].At(0, truth[0]), 1e-9)
	joined := strings.Join(res.Posterior.Notes, "\n")
	assert.Contains(t, joined, "close to, not exactly, uniform")
}

func TestFitModelNoKL(t *testing.T) {
	m := newPointMatch(4, 0.2, 1)
	res, err := FitModel(context.Background(), m, ModelOptions{Seed: 1, Steps: 200, NoKL: true, ELBOSamples: 100})
	require.NoError(t, err)
	assert.Contains(t, strings.Join(res.Posterior.Notes, "\n"), "NoKL")
	// Without the KL the objective is the expected log-likelihood alone.
	g := res.Guides[0].(*GumbelSinkhorn)
	require.True(t, g.NoKL)
}

func TestFitModelReproducible(t *testing.T) {
	// The same seed gives the same result whatever GOMAXPROCS is.
	m := newPermRegression(1, 0.3)
	o := ModelOptions{Seed: 8, Steps: 200, Starts: 2, ELBOSamples: 500, PosteriorDraws: 300}
	run := func(procs int) *ModelResult {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		res, err := FitModel(context.Background(), m, o)
		require.NoError(t, err)
		return res
	}
	a, b := run(1), run(4)
	assert.Equal(t, a.FitELBO, b.FitELBO)
	assert.Equal(t, a.Posterior.Perms["P"].Draws, b.Posterior.Perms["P"].Draws)
	assert.Equal(t, a.Posterior.Reals["beta"], b.Posterior.Reals["beta"])
}

// batchMatch is two independent point-matching problems in one site with
// Batch 2.
type batchMatch struct{ a, b *pointMatch }

func (m *batchMatch) Sites() []models.Site {
	return []models.Site{&models.PermSite{Name: "P", N: m.a.n, Batch: 2}}
}

func (m *batchMatch) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, k := m.a.n, z.K()
	p := z.Perm("P") // (K, 2, n, n)
	var ll *ad.Var
	for b, pm := range []*pointMatch{m.a, m.b} {
		pb := ad.Reshape(ad.Take(ad.Reshape(p, k*2, n, n), batchIndex(k, 2, b)), k, n, n)
		r := ad.Sub(ad.MatMul(pb, t.Const(pm.ref)), t.Const(pm.obs))
		term := ad.Scale(ad.SumAxis(ad.Reshape(ad.Square(r), k, -1), 1), -0.5/(pm.s*pm.s))
		if ll == nil {
			ll = term
		} else {
			ll = ad.Add(ll, term)
		}
	}
	return ll
}

// batchIndex returns the rows q·nb + b, q < k, of a (k·nb, …) tensor: the
// permutation b of every sample.
func batchIndex(k, nb, b int) []int {
	idx := make([]int, k)
	for q := range idx {
		idx[q] = q*nb + b
	}
	return idx
}

func TestFitModelBatch(t *testing.T) {
	// Each permutation of a batched site is fitted and reported on its
	// own: the modes match exact enumeration of the joint posterior, and the
	// marginals are as close as on single problems (measured max row TV 0.25).
	m := &batchMatch{a: newPointMatch(4, 0.15, 5), b: newPointMatch(4, 0.15, 6)}
	ex, err := models.Exact(m)
	require.NoError(t, err)
	res, err := FitModel(context.Background(), m, ModelOptions{Seed: 1, Steps: 1000, ELBOSamples: 1000})
	require.NoError(t, err)
	got := res.Posterior.Perms["P"]
	require.Len(t, got.Mode, 2)
	assert.Equal(t, ex.Perms["P"].Mode, got.Mode)
	tv, err := ex.Perms["P"].MaxRowTV(got)
	require.NoError(t, err)
	t.Logf("max row TV %.3f", tv)
	assert.Less(t, tv, 0.45)
	require.Len(t, got.Draws[0], 2)
}
