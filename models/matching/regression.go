package matching

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// BetaSite is the name of the coefficient site of a Regression.
const BetaSite = "beta"

// Regression is permutation regression: responses y_i whose covariate rows
// were shuffled by an unknown permutation σ,
//
//	y_i = x_{σ(i)}ᵀ β + ε_i,   ε_i ~ N(0, S²),   β ~ N(0, PriorSigma² I_d),
//
// with σ uniform over the n! permutations. It implements models.Model with
// the permutation site Site and the real site BetaSite of d coordinates,
// the fast paths models.StateLogLiker and models.SwapDeltaer, and
// models.Collapser, which integrates β out (see the package documentation).
//
// Its posterior over σ is multimodal: a sampler that alternates swaps of σ
// with updates of β stays near a local maximum that no single swap can
// leave, while MCMC on the collapsed likelihood p(y | σ) does not have to
// move β with σ. A Regression is read-only after NewRegression or
// GenerateRegression.
type Regression struct {
	X          *mat.Dense // n×d covariates, row j is x_j
	Y          []float64  // responses y_i
	S          float64    // noise standard deviation
	PriorSigma float64    // prior standard deviation of each coordinate of β
	Truth      perm.Perm  // the permutation that generated Y; nil if unknown
	Beta       []float64  // the coefficients that generated Y; nil if unknown

	x    *ad.Tensor   // X on the tape, n×d
	y    *ad.Tensor   // Y on the tape, (n)
	chol mat.Cholesky // Λ = I/PriorSigma² + XᵀX/S², the same for every σ
	u    mat.TriDense // upper Cholesky factor U of Λ = UᵀU
	logC float64      // the σ-free part of log p(y | σ)
}

// RegressionConfig describes a random Regression for GenerateRegression.
type RegressionConfig struct {
	N, D int     // observations (>= 1) and coefficients (>= 1)
	S    float64 // noise standard deviation (> 0)
	Seed uint64
}

// GenerateRegression draws a Regression from cfg.Seed: covariates and β iid
// N(0, 1), a uniform random σ, Gaussian noise, and a N(0, 1) prior on β.
func GenerateRegression(cfg RegressionConfig) (*Regression, error) {
	if cfg.N < 1 || cfg.D < 1 {
		return nil, fmt.Errorf("matching: GenerateRegression: N and D must be >= 1, got %d and %d", cfg.N, cfg.D)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x72656772)) // "regr"
	x := mat.NewDense(cfg.N, cfg.D, nil)
	for i := range cfg.N {
		for k := range cfg.D {
			x.Set(i, k, rng.NormFloat64())
		}
	}
	beta := make([]float64, cfg.D)
	for k := range beta {
		beta[k] = rng.NormFloat64()
	}
	truth := perm.Random(cfg.N, rng)
	y := make([]float64, cfg.N)
	for i, j := range truth {
		y[i] = mat.Dot(x.RowView(j), mat.NewVecDense(cfg.D, beta)) + cfg.S*rng.NormFloat64()
	}
	r, err := NewRegression(x, y, cfg.S, 1)
	if err != nil {
		return nil, fmt.Errorf("matching: GenerateRegression: %w", err)
	}
	r.Truth, r.Beta = truth, beta
	return r, nil
}

// NewRegression returns the permutation regression of covariates x (n×d)
// and responses y (length n), with noise standard deviation s and prior
// standard deviation priorSigma of β; both must be finite and > 0, and the
// data finite. x and y are copied.
func NewRegression(x mat.Matrix, y []float64, s, priorSigma float64) (*Regression, error) {
	n, d := x.Dims()
	switch {
	case n < 1 || d < 1:
		return nil, fmt.Errorf("matching: NewRegression: covariates are %d×%d", n, d)
	case len(y) != n:
		return nil, fmt.Errorf("matching: NewRegression: %d responses for %d covariate rows", len(y), n)
	case !(s > 0) || math.IsInf(s, 1):
		return nil, fmt.Errorf("matching: NewRegression: s must be finite and > 0, got %v", s)
	case !(priorSigma > 0) || math.IsInf(priorSigma, 1):
		return nil, fmt.Errorf("matching: NewRegression: priorSigma must be finite and > 0, got %v", priorSigma)
	}
	r := &Regression{X: mat.DenseCopyOf(x), Y: append([]float64(nil), y...), S: s, PriorSigma: priorSigma}
	for _, v := range append(append([]float64(nil), r.X.RawMatrix().Data...), r.Y...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("matching: NewRegression: the data are not finite")
		}
	}
	r.x = &ad.Tensor{Shape: []int{n, d}, Data: r.X.RawMatrix().Data}
	r.y = &ad.Tensor{Shape: []int{n}, Data: r.Y}

	lam := mat.NewSymDense(d, nil)
	lam.SymOuterK(1/(s*s), r.X.T())
	for k := range d {
		lam.SetSym(k, k, lam.At(k, k)+1/(priorSigma*priorSigma))
	}
	if !r.chol.Factorize(lam) {
		return nil, errors.New("matching: NewRegression: the posterior precision of β is not positive definite")
	}
	r.chol.UTo(&r.u)
	r.logC = -float64(n)/2*math.Log(2*math.Pi*s*s) - float64(d)*math.Log(priorSigma) - r.chol.LogDet()/2 -
		floats.Dot(r.Y, r.Y)/(2*s*s)
	return r, nil
}

// Sites implements models.Model: the permutation Site of size n, uniform,
// and BetaSite with d coordinates and prior N(0, PriorSigma²).
func (r *Regression) Sites() []models.Site {
	n, d := r.X.Dims()
	return []models.Site{
		&models.PermSite{Name: Site, N: n},
		&models.RealSite{Name: BetaSite, Shape: []int{d}, Prior: models.Normal{Mu: 0, Sigma: r.PriorSigma}},
	}
}

// LogLik implements models.Model: −‖y − P X β‖²/(2S²) − (n/2) log(2π S²)
// for each of the K samples; row i of P X is x_{σ(i)} for a permutation
// matrix P.
func (r *Regression) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, d := r.X.Dims()
	k := z.K()
	px := ad.MatMul(ad.Reshape(z.Perm(Site), k, n, n), t.Const(r.x))               // (K, n, d)
	pred := ad.Reshape(ad.MatMul(px, ad.Reshape(z.Real(BetaSite), k, d, 1)), k, n) // (K, n)
	sq := ad.SumAxis(ad.Square(ad.Sub(pred, t.Const(r.y))), 1)
	return ad.AddConst(ad.Scale(sq, -0.5/(r.S*r.S)), -float64(n)/2*math.Log(2*math.Pi*r.S*r.S))
}

// state returns the permutation and coefficients of s, checked for size.
func (r *Regression) state(s *models.State, needBeta bool) (perm.Perm, []float64, error) {
	n, d := r.X.Dims()
	ps := s.Perms[Site]
	if len(ps) != 1 || len(ps[0]) != n {
		return nil, nil, fmt.Errorf("state has no permutation of size %d for site %q", n, Site)
	}
	beta := s.Reals[BetaSite]
	if needBeta && len(beta) != d {
		return nil, nil, fmt.Errorf("state has %d coefficients for site %q, want %d", len(beta), BetaSite, d)
	}
	return ps[0], beta, nil
}

// residual returns y_i − x_jᵀ β.
func (r *Regression) residual(i, j int, beta []float64) float64 {
	return r.Y[i] - floats.Dot(r.X.RawRowView(j), beta)
}

// LogLikState implements models.StateLogLiker.
func (r *Regression) LogLikState(s *models.State) (float64, error) {
	p, beta, err := r.state(s, true)
	if err != nil {
		return 0, fmt.Errorf("matching: Regression.LogLikState: %w", err)
	}
	ss := 0.0
	for i, j := range p {
		e := r.residual(i, j, beta)
		ss += e * e
	}
	return -ss/(2*r.S*r.S) - float64(len(p))/2*math.Log(2*math.Pi*r.S*r.S), nil
}

// SwapDelta implements models.SwapDeltaer: rows i and j exchange their
// covariates, which changes two residuals, in O(d).
func (r *Regression) SwapDelta(s *models.State, site string, b, i, j int) (float64, error) {
	n, _ := r.X.Dims()
	switch {
	case site != Site:
		return 0, fmt.Errorf("matching: Regression.SwapDelta: not a permutation site: %q", site)
	case b != 0:
		return 0, fmt.Errorf("matching: Regression.SwapDelta: permutation %d out of range [0, 1)", b)
	case i < 0 || i >= n || j < 0 || j >= n:
		return 0, fmt.Errorf("matching: Regression.SwapDelta: rows %d, %d out of range [0, %d)", i, j, n)
	}
	p, beta, err := r.state(s, true)
	if err != nil {
		return 0, fmt.Errorf("matching: Regression.SwapDelta: %w", err)
	}
	sq := func(e float64) float64 { return e * e }
	before := sq(r.residual(i, p[i], beta)) + sq(r.residual(j, p[j], beta))
	after := sq(r.residual(i, p[j], beta)) + sq(r.residual(j, p[i], beta))
	return (before - after) / (2 * r.S * r.S), nil
}

// CollapsedSites implements models.Collapser: β is integrated out.
func (r *Regression) CollapsedSites() []string { return []string{BetaSite} }

// posteriorMean returns b = X_σᵀ y / S² and the mean Λ⁻¹ b of β | y, σ.
func (r *Regression) posteriorMean(p perm.Perm) (b, mean *mat.VecDense, err error) {
	_, d := r.X.Dims()
	b = mat.NewVecDense(d, nil)
	for i, j := range p {
		b.AddScaledVec(b, r.Y[i]/(r.S*r.S), r.X.RowView(j))
	}
	mean = mat.NewVecDense(d, nil)
	if err := r.chol.SolveVecTo(mean, b); err != nil {
		return nil, nil, err
	}
	return b, mean, nil
}

// CollapsedLogLik implements models.Collapser: log p(y | σ), the density of
// N(0, S² I + PriorSigma² X_σ X_σᵀ) at y, in the O(n d) form of the package
// documentation.
func (r *Regression) CollapsedLogLik(s *models.State) (float64, error) {
	p, _, err := r.state(s, false)
	if err != nil {
		return 0, fmt.Errorf("matching: Regression.CollapsedLogLik: %w", err)
	}
	b, mean, err := r.posteriorMean(p)
	if err != nil {
		return 0, fmt.Errorf("matching: Regression.CollapsedLogLik: %w", err)
	}
	return r.logC + mat.Dot(b, mean)/2, nil
}

// SampleCollapsed implements models.Collapser: it sets β to a draw from
// N(Λ⁻¹ b, Λ⁻¹), as Λ⁻¹ b + U⁻¹ ξ with Λ = UᵀU and ξ ~ N(0, I).
func (r *Regression) SampleCollapsed(rng *rand.Rand, s *models.State) error {
	p, _, err := r.state(s, false)
	if err != nil {
		return fmt.Errorf("matching: Regression.SampleCollapsed: %w", err)
	}
	_, mean, err := r.posteriorMean(p)
	if err != nil {
		return fmt.Errorf("matching: Regression.SampleCollapsed: %w", err)
	}
	_, d := r.X.Dims()
	xi := mat.NewVecDense(d, nil)
	for k := range d {
		xi.SetVec(k, rng.NormFloat64())
	}
	var beta mat.VecDense
	if err := beta.SolveVec(&r.u, xi); err != nil {
		return fmt.Errorf("matching: Regression.SampleCollapsed: %w", err)
	}
	beta.AddVec(&beta, mean)
	if s.Reals == nil {
		s.Reals = map[string][]float64{}
	}
	s.Reals[BetaSite] = beta.RawVector().Data
	return nil
}
