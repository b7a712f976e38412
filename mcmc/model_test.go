package mcmc

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// permReg is the permutation-regression model of permlab issue 12:
// y_i = x_{σ(i)}ᵀ β + ε_i with ε_i ~ N(0, s²), β ~ N(0, I₂), σ uniform, x
// known. It has no fast paths; the wrappers below add them.
type permReg struct {
	x [][2]float64
	y []float64
	s float64
}

func (m *permReg) Sites() []models.Site {
	return []models.Site{
		&models.PermSite{Name: "P", N: len(m.y)},
		&models.RealSite{Name: "beta", Shape: []int{2}, Prior: models.Normal{Sigma: 1}},
	}
}

func (m *permReg) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, k := len(m.y), z.K()
	xs := make([]float64, 2*n)
	for i, r := range m.x {
		xs[2*i], xs[2*i+1] = r[0], r[1]
	}
	p := ad.Reshape(z.Perm("P"), k, n, n)
	px := ad.MatMul(p, t.Const(&ad.Tensor{Shape: []int{n, 2}, Data: xs})) // row i: x_{σ(i)}
	pred := ad.Reshape(ad.MatMul(px, ad.Reshape(z.Real("beta"), k, 2, 1)), k, n)
	r := ad.Sub(pred, t.Const(&ad.Tensor{Shape: []int{n}, Data: m.y}))
	c := -0.5 * float64(n) * math.Log(2*math.Pi*m.s*m.s)
	return ad.AddConst(ad.Scale(ad.SumAxis(ad.Square(r), 1), -0.5/(m.s*m.s)), c)
}

// swapDelta is the change of log p(y | σ, β) when rows i and j exchange
// their columns.
func (m *permReg) swapDelta(s *models.State, b, i, j int) float64 {
	p, beta := s.Perms["P"][b], s.Reals["beta"]
	pred := func(c int) float64 { return m.x[c][0]*beta[0] + m.x[c][1]*beta[1] }
	sq := func(v float64) float64 { return v * v }
	before := sq(pred(p[i])-m.y[i]) + sq(pred(p[j])-m.y[j])
	after := sq(pred(p[j])-m.y[i]) + sq(pred(p[i])-m.y[j])
	return -0.5 * (after - before) / (m.s * m.s)
}

// permRegSwap adds the SwapDeltaer fast path.
type permRegSwap struct{ *permReg }

func (m permRegSwap) SwapDelta(s *models.State, site string, b, i, j int) (float64, error) {
	return m.swapDelta(s, b, i, j), nil
}

// permRegCollapsed integrates β out: given σ, y ~ N(0, s² I + X_σ X_σᵀ)
// with X_σ the rows x_{σ(i)}. Since X_σᵀ X_σ = XᵀX for every σ, Woodbury
// gives, with A = I + XᵀX/s² and b = X_σᵀ y,
//
//	yᵀ (s² I + X_σ X_σᵀ)⁻¹ y = |y|²/s² − bᵀ A⁻¹ b / s⁴,
//	log det(s² I + X_σ X_σᵀ) = n log s² + log det A,
//
// and β | σ, y ~ N(A⁻¹ b / s², A⁻¹).
type permRegCollapsed struct{ *permReg }

func (m permRegCollapsed) CollapsedSites() []string { return []string{"beta"} }

// posterior returns A⁻¹ (as a, b, c for [[a b] [b c]]), and the vector b.
func (m permRegCollapsed) stats(p perm.Perm) (ainv [3]float64, bv [2]float64) {
	s2 := m.s * m.s
	var g [3]float64
	for i, r := range m.x {
		g[0] += r[0] * r[0]
		g[1] += r[0] * r[1]
		g[2] += r[1] * r[1]
		c := m.x[p[i]]
		bv[0] += c[0] * m.y[i]
		bv[1] += c[1] * m.y[i]
	}
	a := [3]float64{1 + g[0]/s2, g[1] / s2, 1 + g[2]/s2}
	det := a[0]*a[2] - a[1]*a[1]
	return [3]float64{a[2] / det, -a[1] / det, a[0] / det}, bv
}

func (m permRegCollapsed) CollapsedLogLik(s *models.State) (float64, error) {
	n := float64(len(m.y))
	s2 := m.s * m.s
	ainv, b := m.stats(s.Perms["P"][0])
	yy := 0.0
	for _, v := range m.y {
		yy += v * v
	}
	bab := b[0]*(ainv[0]*b[0]+ainv[1]*b[1]) + b[1]*(ainv[1]*b[0]+ainv[2]*b[1])
	logDetA := -math.Log(ainv[0]*ainv[2] - ainv[1]*ainv[1])
	quad := yy/s2 - bab/(s2*s2)
	return -0.5 * (quad + n*math.Log(s2) + logDetA + n*math.Log(2*math.Pi)), nil
}

func (m permRegCollapsed) SampleCollapsed(rng *rand.Rand, s *models.State) error {
	s2 := m.s * m.s
	ainv, b := m.stats(s.Perms["P"][0])
	mu := [2]float64{(ainv[0]*b[0] + ainv[1]*b[1]) / s2, (ainv[1]*b[0] + ainv[2]*b[1]) / s2}
	// Cholesky of A⁻¹ = L Lᵀ.
	l00 := math.Sqrt(ainv[0])
	l10 := ainv[1] / l00
	l11 := math.Sqrt(ainv[2] - l10*l10)
	z0, z1 := rng.NormFloat64(), rng.NormFloat64()
	beta := s.Reals["beta"]
	beta[0] = mu[0] + l00*z0
	beta[1] = mu[1] + l10*z0 + l11*z1
	return nil
}

// permRegConj draws β from its full conditional, the Conjugate fast path:
// given σ it is the same Gaussian as in permRegCollapsed.
type permRegConj struct{ *permReg }

func (m permRegConj) ConjugateSites() []string { return []string{"beta"} }

func (m permRegConj) SampleConditional(rng *rand.Rand, s *models.State, site string) error {
	return permRegCollapsed(m).SampleCollapsed(rng, s)
}

// newPermReg draws the test problem: x_i ~ N(0, I₂), a random σ, β fixed.
func newPermReg(seed uint64, n int, s float64, beta [2]float64) *permReg {
	rng := rand.New(rand.NewPCG(seed, 11))
	m := &permReg{x: make([][2]float64, n), y: make([]float64, n), s: s}
	for i := range m.x {
		m.x[i] = [2]float64{rng.NormFloat64(), rng.NormFloat64()}
	}
	sigma := rng.Perm(n)
	for i := range m.y {
		c := m.x[sigma[i]]
		m.y[i] = c[0]*beta[0] + c[1]*beta[1] + s*rng.NormFloat64()
	}
	return m
}

// hardPermReg is the test problem of permlab issue 12: with s = 0.2 the
// collapsed posterior over σ has two swap-local maxima 14.5 and 18.0 nats
// below the global one, and the exact marginals put 0.23 on a second mode.
func hardPermReg() *permReg { return newPermReg(4, 6, 0.2, [2]float64{1.5, -1}) }

// maxTVBound is the largest row total-variation distance to the exact
// marginals that the tests accept. With the default 4 × 1000 draws the runs
// below report a permutation ESS of about 1700 to 2400; the row with the most
// spread (0.77 / 0.23) then has a Monte Carlo standard deviation of
// sqrt(0.77·0.23/1700) ≈ 0.010 per entry and a TV error of about 0.01, so
// 0.05 is about five standard deviations. The naive sampler misses by 0.75.
const maxTVBound = 0.05

func rowTV(t *testing.T, got, want *models.Posterior) float64 {
	t.Helper()
	tv, err := got.Perms["P"].MaxRowTV(want.Perms["P"])
	if err != nil {
		t.Fatal(err)
	}
	return tv
}

func TestRunModelMatchesExact(t *testing.T) {
	m := hardPermReg()
	ex, err := models.Exact(permRegCollapsed{m})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// The naive sampler (single swaps, no tempering) is stuck, and says so.
	naive, err := RunModel(ctx, permRegCollapsed{m}, ModelOptions{Seed: 1, Temperatures: 1, BlockMoves: -1})
	if err != nil {
		t.Fatal(err)
	}
	tv := rowTV(t, naive.Posterior, ex.Posterior)
	t.Logf("naive: max row TV %.3f, R̂ %.3g", tv, naive.Posterior.Perms["P"].RHat)
	if tv < 0.5 {
		t.Errorf("naive collapsed sampler: max row TV %.3f; the test problem is not hard enough to show anything", tv)
	}
	if len(naive.Posterior.Warnings) == 0 {
		t.Errorf("naive collapsed sampler: stuck chains gave no warning")
	}

	cases := []struct {
		name string
		m    models.Model
		long bool
	}{
		{"collapsed", permRegCollapsed{m}, false},
		{"tape", m, true},
		{"gibbs", permRegConj{m}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.long && !longtest.Enabled {
				t.Skip("about 10 s of CPU: the uncollapsed model evaluates LogLik on the tape at 8 temperatures")
			}
			res, err := RunModel(ctx, c.m, ModelOptions{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			post := res.Posterior
			tv := rowTV(t, post, ex.Posterior)
			t.Logf("max row TV %.4f, R̂ %.3f, ESS %.0f, wall %v, acceptance %v", tv, post.Perms["P"].RHat, post.Perms["P"].ESS, res.Wall, res.Acceptance)
			if tv > maxTVBound {
				t.Errorf("max row TV to the exact marginals %.3f > %.2f\n%s", tv, maxTVBound, post.Summary())
			}
			if len(post.Warnings) != 0 {
				t.Errorf("unexpected warnings: %v", post.Warnings)
			}
			if pp := post.Perms["P"]; !(pp.RHat < 1.05 && pp.ESS > 400) {
				t.Errorf("P: R̂ %.3f, ESS %.0f", pp.RHat, pp.ESS)
			}
			if !slicesEqualPerm(post.Perms["P"].Mode, ex.Perms["P"].Mode) {
				t.Errorf("mode %v, exact %v", post.Perms["P"].Mode, ex.Perms["P"].Mode)
			}
			if got := len(post.Reals["beta"].Draws); got != 4000 {
				t.Errorf("%d beta draws, want 4000", got)
			}
			if len(res.Ladder) != DefaultTemperatures || res.Ladder[0] != 1 {
				t.Errorf("ladder %v", res.Ladder)
			}
			if _, gibbs := c.m.(models.Conjugate); gibbs && !slices.ContainsFunc(res.Acceptance, func(s StageStats) bool { return s.Name == "gibbs beta" }) {
				t.Errorf("no Gibbs stage for beta: %v", res.Acceptance)
			}
			for _, st := range res.Acceptance {
				if st.Steps == 0 || st.Accepted == 0 {
					t.Errorf("stage %q: %d of %d accepted", st.Name, st.Accepted, st.Steps)
				}
			}
		})
	}
}

func slicesEqualPerm(a, b []perm.Perm) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !a[k].Equal(b[k]) {
			return false
		}
	}
	return true
}

// The generic path (LogLik on one-hot values through the tape) and the
// model's SwapDelta fast path make the same chain, draw for draw.
func TestRunModelSwapDeltaSameChain(t *testing.T) {
	m := hardPermReg()
	if err := models.CheckFastPaths(permRegSwap{m}, 20, 1, 1e-9); err != nil {
		t.Fatal(err)
	}
	o := ModelOptions{Seed: 3, Chains: 2, Burn: 40, Draws: 60, Temperatures: 3}
	slow, err := RunModel(context.Background(), m, o)
	if err != nil {
		t.Fatal(err)
	}
	fast, err := RunModel(context.Background(), permRegSwap{m}, o)
	if err != nil {
		t.Fatal(err)
	}
	sd, fd := slow.Posterior.Perms["P"].Draws, fast.Posterior.Perms["P"].Draws
	if len(sd) != 120 || len(fd) != 120 {
		t.Fatalf("%d and %d draws, want 120", len(sd), len(fd))
	}
	moved := 0
	for d := range sd {
		if !sd[d][0].Equal(fd[d][0]) {
			t.Fatalf("draw %d: tape %v, SwapDelta %v", d, sd[d][0], fd[d][0])
		}
		if d > 0 && !sd[d][0].Equal(sd[d-1][0]) {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("the chains never moved")
	}
	sb, fb := slow.Posterior.Reals["beta"].Draws, fast.Posterior.Reals["beta"].Draws
	for d := range sb {
		if math.Abs(sb[d][0]-fb[d][0]) > 1e-9 || math.Abs(sb[d][1]-fb[d][1]) > 1e-9 {
			t.Fatalf("draw %d: beta %v (tape) against %v (SwapDelta)", d, sb[d], fb[d])
		}
	}
}

// gauss2 is a model with one real site x ∈ R² and a correlated Gaussian
// likelihood, log p(y | x) = -½ (x - μ)ᵀ Λ (x - μ), with prior N(0, 10²)
// per coordinate. The posterior is Gaussian with precision Λ + I/100 and
// mean (Λ + I/100)⁻¹ Λ μ.
type gauss2 struct {
	mu  [2]float64
	lam [4]float64
}

func (g *gauss2) Sites() []models.Site {
	return []models.Site{&models.RealSite{Name: "x", Shape: []int{2}, Prior: models.Normal{Sigma: 10}}}
}

func (g *gauss2) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	d := ad.Sub(z.Real("x"), t.Const(&ad.Tensor{Shape: []int{2}, Data: g.mu[:]}))
	ld := ad.MatMul(d, t.Const(&ad.Tensor{Shape: []int{2, 2}, Data: g.lam[:]}))
	return ad.Scale(ad.SumAxis(ad.Mul(d, ld), 1), -0.5)
}

func TestRunModelHMCGaussian(t *testing.T) {
	// Covariance [[1, 0.9·2], [0.9·2, 4]] (correlation 0.9), as a precision.
	cov := [4]float64{1, 1.8, 1.8, 4}
	det := cov[0]*cov[3] - cov[1]*cov[2]
	g := &gauss2{mu: [2]float64{1, -2}, lam: [4]float64{cov[3] / det, -cov[1] / det, -cov[2] / det, cov[0] / det}}
	// Exact posterior: precision Λ + I/100.
	p := [4]float64{g.lam[0] + 0.01, g.lam[1], g.lam[2], g.lam[3] + 0.01}
	pd := p[0]*p[3] - p[1]*p[2]
	wantCov := [4]float64{p[3] / pd, -p[1] / pd, -p[2] / pd, p[0] / pd}
	lm := [2]float64{g.lam[0]*g.mu[0] + g.lam[1]*g.mu[1], g.lam[2]*g.mu[0] + g.lam[3]*g.mu[1]}
	wantMean := [2]float64{wantCov[0]*lm[0] + wantCov[1]*lm[1], wantCov[2]*lm[0] + wantCov[3]*lm[1]}

	for _, diag := range []bool{false, true} {
		res, err := RunModel(context.Background(), g, ModelOptions{Seed: 5, HMC: HMCOptions{DiagonalMass: diag}})
		if err != nil {
			t.Fatal(err)
		}
		checkGauss2(t, res, wantMean, wantCov)
	}
}

func checkGauss2(t *testing.T, res *ModelResult, wantMean [2]float64, wantCov [4]float64) {
	t.Helper()
	rp := res.Posterior.Reals["x"]
	if len(res.Ladder) != 1 {
		t.Errorf("a model without permutations was tempered: %v", res.Ladder)
	}
	if math.Min(rp.ESS[0], rp.ESS[1]) < 500 || len(res.Posterior.Warnings) > 0 {
		t.Fatalf("ESS %v, R̂ %v, warnings %v", rp.ESS, rp.RHat, res.Posterior.Warnings)
	}
	if acc := res.Acceptance[0].Rate(); acc < 0.6 || acc > 0.95 {
		t.Errorf("HMC acceptance %.2f after adapting to 0.8", acc)
	}
	// Sample moments against the exact ones, within five Monte Carlo
	// standard deviations. Each moment is the mean of a series (x_i, or
	// (x_i - μ_i)(x_j - μ_j) about the exact mean μ), whose standard error
	// is sqrt(Var/ESS) with the ESS of that series itself: HMC draws can be
	// anticorrelated for the mean and correlated for the squares. For a
	// Gaussian, Var(x_i) = Σ_ii and Var((x_i - μ_i)(x_j - μ_j)) = Σ_ij² +
	// Σ_ii Σ_jj.
	nc, nd := len(res.LogLik), len(res.LogLik[0])
	series := func(f func(x []float64) float64) (mean, ess float64) {
		chains := make([][]float64, nc)
		for c := range chains {
			chains[c] = make([]float64, nd)
			for k := range nd {
				v := f(rp.Draws[c*nd+k])
				chains[c][k] = v
				mean += v / float64(nc*nd)
			}
		}
		ess, err := ESS(SplitChains(chains))
		if err != nil {
			t.Fatal(err)
		}
		return mean, ess
	}
	for i := range 2 {
		m, ess := series(func(x []float64) float64 { return x[i] })
		if tol := 5 * math.Sqrt(wantCov[3*i]/ess); math.Abs(m-wantMean[i]) > tol {
			t.Errorf("mean[%d] = %.4f, want %.4f ± %.4f", i, m, wantMean[i], tol)
		}
		for j := range 2 {
			c, ess := series(func(x []float64) float64 { return (x[i] - wantMean[i]) * (x[j] - wantMean[j]) })
			w := wantCov[2*i+j]
			t.Logf("cov[%d][%d] = %.4f, exact %.4f, ESS of the products %.0f", i, j, c, w, ess)
			if tol := 5 * math.Sqrt((w*w+wantCov[3*i]*wantCov[3*j])/ess); math.Abs(c-w) > tol {
				t.Errorf("cov[%d][%d] = %.4f, want %.4f ± %.4f (ESS %.0f)", i, j, c, w, tol, ess)
			}
		}
	}
}

func TestRunModelRHatWarning(t *testing.T) {
	// Too short and without the moves that leave local maxima: the chains
	// sit in different modes.
	res, err := RunModel(context.Background(), permRegCollapsed{hardPermReg()},
		ModelOptions{Seed: 2, Burn: 20, Draws: 40, Temperatures: 1, BlockMoves: -1})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range res.Posterior.Warnings {
		found = found || strings.Contains(w, "chains disagree on site P")
	}
	if !found {
		t.Errorf("no R̂ warning for site P (R̂ %.2f): %v", res.Posterior.Perms["P"].RHat, res.Posterior.Warnings)
	}
}

func TestRunModelGOMAXPROCS(t *testing.T) {
	for _, m := range []models.Model{permRegCollapsed{hardPermReg()}, hardPermReg()} {
		testGOMAXPROCS(t, m)
	}
}

func testGOMAXPROCS(t *testing.T, m models.Model) {
	o := ModelOptions{Seed: 9, Burn: 30, Draws: 30, Temperatures: 3}
	run := func(procs int) *ModelResult {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		res, err := RunModel(context.Background(), m, o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(1), run(4)
	for d, x := range a.Posterior.Perms["P"].Draws {
		if !x[0].Equal(b.Posterior.Perms["P"].Draws[d][0]) {
			t.Fatalf("%T: draw %d differs with GOMAXPROCS 1 and 4", m, d)
		}
	}
	for d, x := range a.Posterior.Reals["beta"].Draws {
		if !slices.Equal(x, b.Posterior.Reals["beta"].Draws[d]) {
			t.Fatalf("%T: beta draw %d differs with GOMAXPROCS 1 and 4", m, d)
		}
	}
}

// gsModel has a permutation site with a Gumbel-Sinkhorn prior.
type gsModel struct{ permReg }

func (g *gsModel) Sites() []models.Site {
	s := g.permReg.Sites()
	s[0].(*models.PermSite).Prior = models.GumbelSinkhornPrior{Tau: 1}
	return s
}

func TestRunModelErrors(t *testing.T) {
	m := hardPermReg()
	ctx := context.Background()
	cases := []struct {
		name string
		m    models.Model
		o    ModelOptions
		want string
	}{
		{"intractable prior", &gsModel{*m}, ModelOptions{}, `site "P"`},
		{"negative", m, ModelOptions{Draws: -1}, "must be >= 0"},
		{"kernel name", m, ModelOptions{Kernels: map[string]SiteKernel{"beat": KernelHMC}}, `"beat"`},
		{"kernel kind", m, ModelOptions{Kernels: map[string]SiteKernel{"P": KernelHMC}}, "permutation site"},
		{"gibbs", m, ModelOptions{Kernels: map[string]SiteKernel{"beta": KernelGibbs}}, "Conjugate"},
		{"init name", m, ModelOptions{Init: &models.State{Reals: map[string][]float64{"b": {0, 0}}}}, `"b"`},
		{"init perm", m, ModelOptions{Init: &models.State{Perms: map[string][]perm.Perm{"P": {{0, 0, 1, 2, 3, 4}}}}}, "not a permutation"},
		{"init real", m, ModelOptions{Init: &models.State{Reals: map[string][]float64{"beta": {0}}}}, "needs 2"},
		{"ladder", m, ModelOptions{Ladder: []float64{1, 2}}, "decrease"},
		{"beta min", m, ModelOptions{BetaMin: 2}, "BetaMin"},
		{"discard all", m, ModelOptions{Discard: 1}, "Discard"},
		{"discard negative", m, ModelOptions{Discard: -0.1}, "Discard"},
		{"discard NaN", m, ModelOptions{Discard: math.NaN()}, "Discard"},
		{"trace every", m, ModelOptions{TraceEvery: -1}, "TraceEvery"},
		{"record name", m, ModelOptions{Record: []string{"P", "b"}}, `Record names site "b"`},
	}
	for _, c := range cases {
		_, err := RunModel(ctx, c.m, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// Cancellation is reported.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := RunModel(cctx, m, ModelOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: error %v", err)
	}
}

func TestRunModelInit(t *testing.T) {
	// Single swaps cannot leave a swap-local maximum 14.5 nats below the
	// global one: started there in every chain, the swap-only sampler stays,
	// which shows that every chain starts from Init.
	m := permRegCollapsed{hardPermReg()}
	ex, err := models.Exact(m)
	if err != nil {
		t.Fatal(err)
	}
	trap := localMaximum(t, m, ex.MAP.Perms["P"][0])
	res, err := RunModel(context.Background(), m, ModelOptions{
		Seed: 1, Burn: 100, Draws: 200, Temperatures: 1,
		Kernels: map[string]SiteKernel{"P": KernelSwapOnly},
		Init:    &models.State{Perms: map[string][]perm.Perm{"P": {trap}}, Reals: map[string][]float64{"beta": {0, 0}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pp := res.Posterior.Perms["P"]
	if tv := rowTV(t, res.Posterior, ex.Posterior); !pp.Mode[0].Equal(trap) || tv < 0.5 {
		t.Errorf("started at the local maximum %v: mode %v, max row TV to the exact marginals %.3f", trap, pp.Mode[0], tv)
	}
	for _, st := range res.Acceptance {
		if strings.HasPrefix(st.Name, "block") {
			t.Errorf("KernelSwapOnly ran block moves: %v", res.Acceptance)
		}
	}
}

// localMaximum returns a permutation, other than the global maximum best,
// from which no single swap increases the collapsed likelihood.
func localMaximum(t *testing.T, m permRegCollapsed, best perm.Perm) perm.Perm {
	t.Helper()
	ll := func(p perm.Perm) float64 {
		v, _ := m.CollapsedLogLik(&models.State{Perms: map[string][]perm.Perm{"P": {p}}})
		return v
	}
	var found perm.Perm
	err := perm.Enumerate(6, nil, func(p perm.Perm) error {
		v := ll(p)
		for i := range 6 {
			for j := i + 1; j < 6; j++ {
				q := p.Clone()
				q[i], q[j] = q[j], q[i]
				if ll(q) > v {
					return nil
				}
			}
		}
		if !p.Equal(best) && ll(best)-v > 10 {
			found = p.Clone()
			return perm.ErrStop
		}
		return nil
	})
	if found == nil {
		t.Fatalf("no local maximum: %v", err)
	}
	return found
}

// linearPrior is a tractable non-uniform permutation prior, log p(σ) =
// Σ_i w[i][σ(i)] + const.
type linearPrior [][]float64

func (w linearPrior) Validate(n int) error { return nil }
func (w linearPrior) Tractable() bool      { return true }
func (w linearPrior) String() string       { return "linear" }
func (w linearPrior) LogMass(p []int) float64 {
	s := 0.0
	for i, c := range p {
		s += w[i][c]
	}
	return s
}

// batchLogits has a site of two permutations of size 4 with a shared mask,
// a fixed row in the second, the prior linearPrior and the likelihood
// log p(y | σ) = Σ_b Σ_i x[b][i][σ_b(i)], with the StateLogLiker fast path.
type batchLogits struct {
	x     [2][4][4]float64
	prior linearPrior
	mask  *perm.Mask
}

func (m *batchLogits) Sites() []models.Site {
	return []models.Site{&models.PermSite{
		Name: "P", N: 4, Batch: 2, Masks: []*perm.Mask{m.mask},
		Fixed: [][]int{{-1, -1, -1, -1}, {-1, -1, 3, -1}}, Prior: m.prior,
	}}
}

func (m *batchLogits) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	data := make([]float64, 0, 32)
	for b := range m.x {
		for i := range m.x[b] {
			data = append(data, m.x[b][i][:]...)
		}
	}
	w := ad.Mul(z.Perm("P"), t.Const(&ad.Tensor{Shape: []int{2, 4, 4}, Data: data}))
	return ad.SumAxis(ad.Reshape(w, z.K(), 32), 1)
}

func (m *batchLogits) LogLikState(s *models.State) (float64, error) {
	v := 0.0
	for b, p := range s.Perms["P"] {
		for i, c := range p {
			v += m.x[b][i][c]
		}
	}
	return v, nil
}

func TestRunModelBatchMaskPrior(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	m := &batchLogits{prior: make(linearPrior, 4)}
	for b := range m.x {
		for i := range m.x[b] {
			for j := range m.x[b][i] {
				m.x[b][i][j] = 1.5 * rng.NormFloat64()
			}
		}
	}
	for i := range m.prior {
		m.prior[i] = []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
	}
	m.mask = testMask(t, 4, [][]int{{0, 1, 2}, {0, 1, 2, 3}, {1, 2, 3}, {0, 2, 3}})
	if err := models.CheckFastPaths(m, 10, 1, 1e-12); err != nil {
		t.Fatal(err)
	}
	ex, err := models.Exact(m)
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunModel(context.Background(), m, ModelOptions{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	tv, err := res.Posterior.Perms["P"].MaxRowTV(ex.Perms["P"])
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("max row TV %.4f, R̂ %.3f, ESS %.0f", tv, res.Posterior.Perms["P"].RHat, res.Posterior.Perms["P"].ESS)
	if tv > maxTVBound || len(res.Posterior.Warnings) > 0 {
		t.Errorf("max row TV %.3f to the exact marginals, warnings %v", tv, res.Posterior.Warnings)
	}
	for _, d := range res.Posterior.Perms["P"].Draws {
		if d[1][2] != 3 || !m.mask.Admits(d[0]) || !m.mask.Admits(d[1]) {
			t.Fatalf("draw %v leaves the mask or moves the fixed row", d)
		}
	}
}

// bandLogits is a site of one permutation of size n whose rows may go only
// to the 2w+1 columns around their own, with the likelihood
// Σ_i x[i][σ(i)] and its StateLogLiker fast path.
type bandLogits struct {
	n    int
	x    []float64
	mask *perm.Mask
}

func (m *bandLogits) Sites() []models.Site {
	return []models.Site{&models.PermSite{Name: "P", N: m.n, Masks: []*perm.Mask{m.mask}}}
}

func (m *bandLogits) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	w := ad.Mul(z.Perm("P"), t.Const(&ad.Tensor{Shape: []int{1, m.n, m.n}, Data: m.x}))
	return ad.SumAxis(ad.Reshape(w, z.K(), m.n*m.n), 1)
}

func (m *bandLogits) LogLikState(s *models.State) (float64, error) {
	v := 0.0
	for i, c := range s.Perms["P"][0] {
		v += m.x[i*m.n+c]
	}
	return v, nil
}

// TestRunModelSparseMarginals checks that a large, sparsely masked site
// keeps its marginals on the candidates, with the frequencies and the mode
// of the dense summary of the same draws.
func TestRunModelSparseMarginals(t *testing.T) {
	const n, w = 80, 2
	rng := rand.New(rand.NewPCG(3, 4))
	mask, err := perm.NewMask(n)
	if err != nil {
		t.Fatal(err)
	}
	m := &bandLogits{n: n, x: make([]float64, n*n), mask: mask}
	for i := range n {
		for d := -w; d <= w; d++ {
			c := (i + d + n) % n
			if err := mask.Set(i, c, true); err != nil {
				t.Fatal(err)
			}
			m.x[i*n+c] = rng.NormFloat64()
		}
	}
	res, err := RunModel(context.Background(), m, ModelOptions{Seed: 1, Chains: 2, Burn: 20, Draws: 50, Temperatures: 1})
	if err != nil {
		t.Fatal(err)
	}
	pp := res.Posterior.Perms["P"]
	if len(pp.SparseMarginals) != 1 || pp.Marginals != nil {
		t.Fatalf("%d sparse and %d dense marginals: an 80-row site with 5 candidates a row keeps sparse ones", len(pp.SparseMarginals), len(pp.Marginals))
	}
	dense, err := models.PermPosteriorFromDraws(pp.Draws, []*perm.Mask{mask})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dense.Mode[0], pp.Mode[0]) {
		t.Errorf("mode %v, the dense summary's %v", pp.Mode[0], dense.Mode[0])
	}
	for i := range n {
		for j := range n {
			if got, want := pp.Marginal(0).At(i, j), dense.Marginals[0].At(i, j); got != want {
				t.Fatalf("marginal (%d, %d) = %v, the dense summary's %v", i, j, got, want)
			}
		}
	}
}
