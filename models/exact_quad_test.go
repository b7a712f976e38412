package models_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
	"github.com/permlab/permlab/perm"
)

// fastCounts adds the StateLogLiker fast path to Counts.
type fastCounts struct{ *Counts }

func (m fastCounts) LogLikState(s *models.State) (float64, error) {
	p, a, b := s.Perms["P"][0], s.Reals["a"][0], s.Reals["b"][0]
	ll := 0.0
	for i, j := range p {
		eta := a + b*m.X[j]
		ll += m.Y[i]*eta - math.Exp(eta)
	}
	return ll, nil
}

// quadCounts is Counts with a quadratic term, y_i ~ Poisson(exp(θ₀ + θ₁ x +
// θ₂ x²)) with θ ~ N(0, 1), one real site of three coordinates.
type quadCounts struct{ X, Y []float64 }

func (m *quadCounts) Sites() []models.Site {
	return []models.Site{
		&models.PermSite{Name: "P", N: len(m.X)},
		&models.RealSite{Name: "theta", Shape: []int{3}, Prior: models.Normal{Sigma: 1}},
	}
}

func (m *quadCounts) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, k := len(m.X), z.K()
	feat := make([]float64, 0, 3*n)
	for _, x := range m.X {
		feat = append(feat, 1, x, x*x)
	}
	f := ad.MatMul(ad.Reshape(z.Perm("P"), k, n, n), t.Const(&ad.Tensor{Shape: []int{n, 3}, Data: feat})) // (K, n, 3)
	eta := ad.Reshape(ad.MatMul(f, ad.Reshape(z.Real("theta"), k, 3, 1)), k, n)
	ll := ad.Sub(ad.Mul(eta, t.Const(&ad.Tensor{Shape: []int{n}, Data: m.Y})), ad.Exp(eta))
	return ad.SumAxis(ll, 1)
}

// gridResult is a brute-force posterior: per permutation (lexicographic
// order) the log of a Riemann sum of p(y | σ, θ) p(θ) over a box, the
// marginals, the log evidence and the real coordinates' means and sds.
type gridResult struct {
	logw     []float64
	marg     [][]float64
	logZ     float64
	mean, sd []float64
}

// bruteGrid integrates loglik(σ, θ) + Σ log N(θ_j; 0, 1) over [−lim, lim]^d
// with step h, for every permutation of size n.
func bruteGrid(n, d int, lim, h float64, loglik func(p perm.Perm, theta []float64) float64) gridResult {
	k := int(math.Round(2*lim/h)) + 1
	pts := 1
	for range d {
		pts *= k
	}
	var res gridResult
	var perms []perm.Perm
	var m1s, m2s [][]float64
	theta := make([]float64, d)
	_ = perm.Enumerate(n, nil, func(p perm.Perm) error {
		perms = append(perms, p.Clone())
		top := math.Inf(-1)
		vals := make([]float64, pts)
		for g := range pts {
			r := g
			lp := 0.0
			for j := range d {
				theta[j] = -lim + h*float64(r%k)
				r /= k
				lp += -0.5*theta[j]*theta[j] - 0.5*math.Log(2*math.Pi)
			}
			vals[g] = loglik(p, theta) + lp
			top = math.Max(top, vals[g])
		}
		s := 0.0
		m1, m2 := make([]float64, d), make([]float64, d)
		for g, v := range vals {
			w := math.Exp(v - top)
			s += w
			r := g
			for j := range d {
				x := -lim + h*float64(r%k)
				r /= k
				m1[j] += w * x
				m2[j] += w * x * x
			}
		}
		for j := range d {
			m1[j] /= s
			m2[j] /= s
		}
		res.logw = append(res.logw, top+math.Log(s)+float64(d)*math.Log(h))
		m1s, m2s = append(m1s, m1), append(m2s, m2)
		return nil
	})
	top := math.Inf(-1)
	for _, w := range res.logw {
		top = math.Max(top, w)
	}
	z := 0.0
	for _, w := range res.logw {
		z += math.Exp(w - top)
	}
	res.logZ = top + math.Log(z)
	res.marg = make([][]float64, n)
	for i := range res.marg {
		res.marg[i] = make([]float64, n)
	}
	res.mean, res.sd = make([]float64, d), make([]float64, d)
	e2 := make([]float64, d)
	for q, p := range perms {
		pr := math.Exp(res.logw[q] - res.logZ)
		for i, j := range p {
			res.marg[i][j] += pr
		}
		for j := range d {
			res.mean[j] += pr * m1s[q][j]
			e2[j] += pr * m2s[q][j]
		}
	}
	for j := range d {
		res.sd[j] = math.Sqrt(e2[j] - res.mean[j]*res.mean[j])
	}
	return res
}

// countsData draws covariates and Poisson counts from a = 0.5, b = 0.8.
func countsData(n int, seed uint64) ([]float64, []float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	x, y := make([]float64, n), make([]float64, n)
	truth := perm.Random(n, rng)
	for j := range x {
		x[j] = rng.NormFloat64()
	}
	for i := range y {
		y[i] = poisson(math.Exp(0.5+0.8*x[truth[i]]), rng)
	}
	return x, y
}

func poisson(lambda float64, rng *rand.Rand) float64 {
	l, k, p := math.Exp(-lambda), 0.0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// compareGrid checks ex against the brute-force grid g: every state's log
// weight, the log evidence and the marginals within the stated bound plus
// slack (the grid's own error), the real sites' moments within momTol.
func compareGrid(t *testing.T, ex *models.ExactResult, g gridResult, n int, names []string, slack, momTol float64) {
	t.Helper()
	bound := ex.QuadError + slack
	if d := math.Abs(ex.LogEvidence - g.logZ); d > bound {
		t.Errorf("log evidence %.12g, grid %.12g: differ by %.3g > bound %.3g", ex.LogEvidence, g.logZ, d, bound)
	}
	k := 0
	_ = perm.Enumerate(n, nil, func(p perm.Perm) error {
		lp, err := ex.LogProb(&models.State{Perms: map[string][]perm.Perm{"P": {p}}})
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(lp - (g.logw[k] - g.logZ)); d > 2*bound {
			t.Errorf("state %v: log probability %.12g, grid %.12g", p, lp, g.logw[k]-g.logZ)
		}
		k++
		return nil
	})
	marg := ex.Perms["P"].Marginals[0]
	for i := range n {
		for j := range n {
			if d := math.Abs(marg.At(i, j) - g.marg[i][j]); d > 2*bound {
				t.Errorf("marginal (%d, %d) = %.12g, grid %.12g", i, j, marg.At(i, j), g.marg[i][j])
			}
		}
	}
	var mean, sd []float64
	for _, name := range names {
		mean = append(mean, ex.Reals[name].Mean...)
		sd = append(sd, ex.Reals[name].Std...)
	}
	for j := range mean {
		if math.Abs(mean[j]-g.mean[j]) > momTol || math.Abs(sd[j]-g.sd[j]) > momTol {
			t.Errorf("real coordinate %d: %.9g ± %.9g, grid %.9g ± %.9g", j, mean[j], sd[j], g.mean[j], g.sd[j])
		}
	}
}

func TestExactQuadratureMatchesGrid(t *testing.T) {
	const n = 4
	x, y := countsData(n, 1)
	m := &Counts{X: x, Y: y}
	g := bruteGrid(n, 2, 7, 0.04, func(p perm.Perm, th []float64) float64 {
		ll := 0.0
		for i, j := range p {
			eta := th[0] + th[1]*x[j]
			ll += y[i]*eta - math.Exp(eta)
		}
		return ll
	})
	for _, model := range []models.Model{m, fastCounts{m}} {
		ex, err := models.Exact(model)
		if err != nil {
			t.Fatalf("%T: %v", model, err)
		}
		t.Logf("%T: QuadError %.3g, log evidence %.12g (grid %.12g); notes %q", model, ex.QuadError, ex.LogEvidence, g.logZ, ex.Notes)
		if ex.QuadError <= 0 || ex.QuadError > models.ExactQuadTol {
			t.Errorf("%T: QuadError = %v, want in (0, %v]", model, ex.QuadError, models.ExactQuadTol)
		}
		if !strings.Contains(strings.Join(ex.Notes, "\n"), "numerically") {
			t.Errorf("%T: notes %q do not say the real sites were integrated numerically", model, ex.Notes)
		}
		compareGrid(t, ex, g, n, []string{"a", "b"}, 1e-10, 1e-6)
	}
}

func TestExactQuadratureThreeDims(t *testing.T) {
	const n = 3
	x, y := countsData(n, 2)
	m := &quadCounts{X: x, Y: y}
	g := bruteGrid(n, 3, 7, 0.12, func(p perm.Perm, th []float64) float64 {
		ll := 0.0
		for i, j := range p {
			eta := th[0] + th[1]*x[j] + th[2]*x[j]*x[j]
			ll += y[i]*eta - math.Exp(eta)
		}
		return ll
	})
	ex, err := models.Exact(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("QuadError %.3g, log evidence %.12g (grid %.12g); notes %q", ex.QuadError, ex.LogEvidence, g.logZ, ex.Notes)
	compareGrid(t, ex, g, n, []string{"theta"}, 1e-10, 1e-6)
}

// hiddenRegression is a matching.Regression without its Collapser: Exact
// must integrate β numerically.
type hiddenRegression struct{ r *matching.Regression }

func (h hiddenRegression) Sites() []models.Site { return h.r.Sites() }
func (h hiddenRegression) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	return h.r.LogLik(t, z)
}
func (h hiddenRegression) LogLikState(s *models.State) (float64, error) {
	return h.r.LogLikState(s)
}

// tapeRegression hides the fast path too.
type tapeRegression struct{ r *matching.Regression }

func (h tapeRegression) Sites() []models.Site { return h.r.Sites() }
func (h tapeRegression) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	return h.r.LogLik(t, z)
}

func TestExactQuadratureMatchesCollapsedRegression(t *testing.T) {
	for _, d := range []int{1, 2, 3} {
		r, err := matching.GenerateRegression(matching.RegressionConfig{N: 5, D: d, S: 0.5, Seed: uint64(d)})
		if err != nil {
			t.Fatal(err)
		}
		want, err := models.Exact(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []models.Model{hiddenRegression{r}, tapeRegression{r}} {
			got, err := models.Exact(m)
			if err != nil {
				t.Fatalf("d = %d, %T: %v", d, m, err)
			}
			tv, _ := got.Perms[matching.Site].MaxRowTV(want.Perms[matching.Site])
			dz := math.Abs(got.LogEvidence - want.LogEvidence)
			t.Logf("d = %d, %T: row TV %.2g, log evidence %.2g, QuadError %.2g", d, m, tv, dz, got.QuadError)
			if tv > 1e-9 || dz > got.QuadError+1e-9 {
				t.Errorf("d = %d, %T: marginals differ by %v (row TV), log evidences by %v (QuadError %v)", d, m, tv, dz, got.QuadError)
			}
			if rp := got.Reals[matching.BetaSite]; rp == nil || len(rp.Mean) != d {
				t.Errorf("d = %d, %T: posterior of beta %+v", d, m, rp)
			}
		}
	}
}

func TestExactRefusesTooManyRealDims(t *testing.T) {
	r, err := matching.GenerateRegression(matching.RegressionConfig{N: 4, D: models.MaxExactRealDims + 1, S: 0.5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = models.Exact(hiddenRegression{r})
	if err == nil || !strings.Contains(err.Error(), "MaxExactRealDims") || !strings.Contains(err.Error(), "Collapser") {
		t.Errorf("%d real coordinates and no Collapser: error %v", models.MaxExactRealDims+1, err)
	}
	if _, err := models.Exact(r); err != nil {
		t.Errorf("with its Collapser: %v", err)
	}
}

// cauchyShift has a Cauchy likelihood with a very wide prior: the
// posterior's tails are far heavier than its Laplace approximation's, and
// Gauss-Hermite quadrature does not converge.
type cauchyShift struct{ y []float64 }

func (m *cauchyShift) Sites() []models.Site {
	return []models.Site{
		&models.PermSite{Name: "P", N: len(m.y)},
		&models.RealSite{Name: "c", Prior: models.Normal{Sigma: 1e4}},
	}
}

func (m *cauchyShift) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, k := len(m.y), z.K()
	w := make([]float64, n)
	for i := range w {
		w[i] = float64(i)
	}
	pw := ad.Reshape(ad.MatMul(ad.Reshape(z.Perm("P"), k, n, n), t.Const(&ad.Tensor{Shape: []int{n, 1}, Data: w})), k, n)
	r := ad.Sub(ad.Add(pw, ad.Reshape(z.Real("c"), k, 1)), t.Const(&ad.Tensor{Shape: []int{n}, Data: m.y}))
	return ad.Neg(ad.SumAxis(ad.Log1p(ad.Square(r)), 1))
}

func TestExactReportsQuadratureFailure(t *testing.T) {
	_, err := models.Exact(&cauchyShift{y: []float64{0.3, 0.9}})
	if err == nil || !strings.Contains(err.Error(), "did not converge") || !strings.Contains(err.Error(), "state map[P:") {
		t.Errorf("heavy tails: error %v, want one naming the state and saying the quadrature did not converge", err)
	}
}

// TestExactQuadratureTiming measures Exact on 720 and 40320 states.
func TestExactQuadratureTiming(t *testing.T) {
	type run struct {
		name string
		m    models.Model
	}
	x6, y6 := countsData(6, 3)
	runs := []run{
		{"n = 6, 2 coordinates, LogLik", &Counts{X: x6, Y: y6}},
		{"n = 6, 2 coordinates, LogLikState", fastCounts{&Counts{X: x6, Y: y6}}},
		{"n = 6, 1 coordinate, LogLik", oneCoef{&Counts{X: x6, Y: y6}}},
	}
	if longtest.Enabled {
		x8, y8 := countsData(8, 3)
		runs = append(runs, run{"n = 8, 1 coordinate, LogLik", oneCoef{&Counts{X: x8, Y: y8}}})
	}
	for _, r := range runs {
		start := time.Now()
		ex, err := models.Exact(r.m)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		t.Logf("%s: %d states in %v, QuadError %.2g", r.name, ex.States, time.Since(start).Round(time.Millisecond), ex.QuadError)
	}
}

// oneCoef is Counts with a = 0.5 known: one real coordinate.
type oneCoef struct{ *Counts }

func (m oneCoef) Sites() []models.Site {
	return []models.Site{
		&models.PermSite{Name: "P", N: len(m.X)},
		&models.RealSite{Name: "b", Prior: models.Normal{Sigma: 1}},
	}
}

func (m oneCoef) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, k := len(m.X), z.K()
	px := ad.Reshape(ad.MatMul(ad.Reshape(z.Perm("P"), k, n, n), t.Const(&ad.Tensor{Shape: []int{n, 1}, Data: m.X})), k, n)
	eta := ad.AddConst(ad.Mul(ad.Reshape(z.Real("b"), k, 1), px), 0.5)
	ll := ad.Sub(ad.Mul(eta, t.Const(&ad.Tensor{Shape: []int{n}, Data: m.Y})), ad.Exp(eta))
	return ad.SumAxis(ll, 1)
}
