package matching

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// ASite is the name of the log-baseline site of a Counts model, a scalar.
const ASite = "a"

// WSite is the name of the covariate-weight site of a Counts model whose
// weights are latent (NewCountsLatentW), a vector of d coordinates.
const WSite = "w"

// Counts is a permuted Poisson regression: counts y_i whose units' covariate
// rows were shuffled by an unknown permutation σ,
//
//	y_i ~ Poisson(λ_i),   log λ_i = a + x_{σ(i)}ᵀ w,   a ~ APrior,
//
// with σ uniform over the permutations Mask admits. The log baseline a is
// the real site ASite (one coordinate). The weights w are known (W, from
// NewCounts) or a second real site WSite with independent WPrior coordinates
// (NewCountsLatentW); with one covariate the model then has two real
// coordinates. It implements models.Model, with the permutation site Site,
// and the fast paths models.StateLogLiker and models.SwapDeltaer; see the
// package documentation for the math.
//
// A Counts is read-only after NewCounts, NewCountsLatentW or GenerateCounts;
// engines may evaluate it from several goroutines at once.
type Counts struct {
	X      *mat.Dense    // n×d covariates, row j is x_j
	Y      []int         // observed counts y_i
	W      []float64     // known weights w (len d); nil when w is the latent site WSite
	APrior models.Normal // prior of the log baseline a
	WPrior models.Normal // prior of each coordinate of w when latent; unused when W is known
	Mask   *perm.Mask    // candidate mask; nil admits every permutation
	Truth  perm.Perm     // the permutation that generated Y; nil if unknown
	TrueA  float64       // the log baseline that generated Y; NaN if unknown
	TrueW  []float64     // the weights that generated Y; nil if unknown

	x    *ad.Tensor // X on the tape, n×d
	y    *ad.Tensor // Y as float64, (n)
	off  []float64  // offsets o_j = x_jᵀ W when W is known
	offT *ad.Tensor // off on the tape, (n, 1)
	lgY  float64    // Σ_i log y_i!
}

// CountsConfig describes a random Counts model for GenerateCounts.
type CountsConfig struct {
	N int // number of units (>= 1)
	// D is the number of covariates per unit, 1 or 2; 0 means 1. It must
	// be 1 when LatentW is set, so that the model has at most two real
	// coordinates (a and w), which exact enumeration can integrate.
	D int
	// MeanCount is exp(a), the expected count of a unit with x·w = 0;
	// it sets the noise level, since a Poisson count of mean λ has
	// relative spread 1/√λ. It must be finite and > 0; 0 means 50.
	MeanCount float64
	// Spread is the standard deviation of the log-rate offsets x_j·w
	// across units, the separation of the units' rates. It must be
	// finite and > 0; 0 means 1.
	Spread float64
	// LatentW makes w a latent site (WSite, prior N(0, 2²)) instead of
	// known weights.
	LatentW bool
	// Radius, if > 0, builds a candidate mask: unit i may be matched to
	// covariate row j only if ‖x_{Truth(i)} − x_j‖ < Radius, so the
	// truth is always a candidate.
	Radius float64
	Seed   uint64
}

// Default values of CountsConfig's zero fields.
const (
	defaultMeanCount = 50
	defaultSpread    = 1
)

// GenerateCounts draws a Counts model from cfg.Seed: covariates x_j iid
// N(0, I_d); weights w of norm Spread (w = Spread for d = 1, a uniform
// random direction for d = 2); a = log MeanCount; a uniform random σ; and
// counts y_i ~ Poisson(exp(a + x_{σ(i)}ᵀ w)). The prior of a is N(0, 5²),
// that of each coordinate of a latent w N(0, 2²).
func GenerateCounts(cfg CountsConfig) (*Counts, error) {
	d, mean, spread := cfg.D, cfg.MeanCount, cfg.Spread
	if d == 0 {
		d = 1
	}
	if mean == 0 {
		mean = defaultMeanCount
	}
	if spread == 0 {
		spread = defaultSpread
	}
	switch {
	case cfg.N < 1:
		return nil, fmt.Errorf("matching: GenerateCounts: N must be >= 1, got %d", cfg.N)
	case d < 1 || d > 2:
		return nil, fmt.Errorf("matching: GenerateCounts: D must be 1 or 2, got %d", cfg.D)
	case cfg.LatentW && d != 1:
		return nil, fmt.Errorf("matching: GenerateCounts: D must be 1 with LatentW (at most two real coordinates), got %d", d)
	case !(mean > 0) || math.IsInf(mean, 1):
		return nil, fmt.Errorf("matching: GenerateCounts: MeanCount must be finite and > 0, got %v", cfg.MeanCount)
	case !(spread > 0) || math.IsInf(spread, 1):
		return nil, fmt.Errorf("matching: GenerateCounts: Spread must be finite and > 0, got %v", cfg.Spread)
	case math.IsNaN(cfg.Radius):
		return nil, errors.New("matching: GenerateCounts: Radius is NaN")
	}
	n := cfg.N
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x636f756e7473)) // "counts"
	x := mat.NewDense(n, d, nil)
	for j := range n {
		for k := range d {
			x.Set(j, k, rng.NormFloat64())
		}
	}
	w := []float64{spread}
	if d == 2 {
		th := 2 * math.Pi * rng.Float64()
		w = []float64{spread * math.Cos(th), spread * math.Sin(th)}
	}
	a := math.Log(mean)
	truth := perm.Random(n, rng)
	y := make([]int, n)
	for i, j := range truth {
		lam := math.Exp(a + mat.Dot(x.RowView(j), mat.NewVecDense(d, w)))
		y[i] = int(distuv.Poisson{Lambda: lam, Src: rng}.Rand())
	}
	var mask *perm.Mask
	if cfg.Radius > 0 {
		var err error
		if mask, err = perm.NewMask(n); err != nil {
			return nil, fmt.Errorf("matching: GenerateCounts: %w", err)
		}
		for i := range n {
			for j := range n {
				var dd float64
				for k := range d {
					e := x.At(truth[i], k) - x.At(j, k)
					dd += e * e
				}
				if dd < cfg.Radius*cfg.Radius {
					_ = mask.Set(i, j, true) // indices are in range
				}
			}
		}
	}
	aPrior := models.Normal{Mu: 0, Sigma: 5}
	var c *Counts
	var err error
	if cfg.LatentW {
		c, err = NewCountsLatentW(x, y, aPrior, models.Normal{Mu: 0, Sigma: 2}, mask)
	} else {
		c, err = NewCounts(x, y, w, aPrior, mask)
	}
	if err != nil {
		return nil, fmt.Errorf("matching: GenerateCounts: %w", err)
	}
	c.Truth, c.TrueA, c.TrueW = truth, a, w
	return c, nil
}

// NewCounts returns the permuted Poisson regression of covariates x (n×d,
// finite), counts y (length n, each >= 0) and known weights w (length d,
// finite), with prior aPrior on the log baseline and candidate mask mask
// (nil for none; otherwise n×n and admitting some permutation). The data
// are copied.
func NewCounts(x mat.Matrix, y []int, w []float64, aPrior models.Normal, mask *perm.Mask) (*Counts, error) {
	if w == nil {
		return nil, errors.New("matching: NewCounts: nil weights (use NewCountsLatentW for latent weights)")
	}
	return newCounts("NewCounts", x, y, w, aPrior, models.Normal{}, mask)
}

// NewCountsLatentW is NewCounts with the weights w a latent site, WSite, of
// d coordinates with independent prior wPrior.
func NewCountsLatentW(x mat.Matrix, y []int, aPrior, wPrior models.Normal, mask *perm.Mask) (*Counts, error) {
	if err := wPrior.Validate(); err != nil {
		return nil, fmt.Errorf("matching: NewCountsLatentW: prior of w: %w", err)
	}
	return newCounts("NewCountsLatentW", x, y, nil, aPrior, wPrior, mask)
}

func newCounts(fn string, x mat.Matrix, y []int, w []float64, aPrior, wPrior models.Normal, mask *perm.Mask) (*Counts, error) {
	if x == nil {
		return nil, fmt.Errorf("matching: %s: nil covariates", fn)
	}
	n, d := x.Dims()
	switch {
	case n < 1 || d < 1:
		return nil, fmt.Errorf("matching: %s: covariates are %d×%d", fn, n, d)
	case len(y) != n:
		return nil, fmt.Errorf("matching: %s: %d counts for %d covariate rows", fn, len(y), n)
	case w != nil && len(w) != d:
		return nil, fmt.Errorf("matching: %s: %d weights for %d covariates", fn, len(w), d)
	}
	if err := aPrior.Validate(); err != nil {
		return nil, fmt.Errorf("matching: %s: prior of a: %w", fn, err)
	}
	c := &Counts{
		X: mat.DenseCopyOf(x), Y: append([]int(nil), y...), APrior: aPrior,
		TrueA: math.NaN(),
	}
	for _, v := range append(append([]float64(nil), c.X.RawMatrix().Data...), w...) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("matching: %s: the covariates or weights are not finite", fn)
		}
	}
	yf := make([]float64, n)
	for i, v := range y {
		if v < 0 {
			return nil, fmt.Errorf("matching: %s: count %d is %d; counts must be >= 0", fn, i, v)
		}
		yf[i] = float64(v)
		lg, _ := math.Lgamma(yf[i] + 1)
		c.lgY += lg
	}
	if mask != nil {
		if mask.Size() != n {
			return nil, fmt.Errorf("matching: %s: mask is %d×%d, want %d×%d", fn, mask.Size(), mask.Size(), n, n)
		}
		if _, err := models.RandomAdmitted(mask, rand.New(rand.NewPCG(0, 0))); err != nil {
			return nil, fmt.Errorf("matching: %s: the mask admits no permutation", fn)
		}
		c.Mask = mask.Clone()
	}
	c.x = &ad.Tensor{Shape: []int{n, d}, Data: c.X.RawMatrix().Data}
	c.y = &ad.Tensor{Shape: []int{n}, Data: yf}
	if w != nil {
		c.W = append([]float64(nil), w...)
		c.off = c.offsets(c.W)
		c.offT = &ad.Tensor{Shape: []int{n, 1}, Data: c.off}
	} else {
		c.WPrior = wPrior
	}
	return c, nil
}

// N returns the number of units.
func (c *Counts) N() int { return len(c.Y) }

// offsets returns o_j = x_jᵀ w for every row j.
func (c *Counts) offsets(w []float64) []float64 {
	n, _ := c.X.Dims()
	o := make([]float64, n)
	for j := range o {
		o[j] = dot(c.X.RawRowView(j), w)
	}
	return o
}

func dot(a, b []float64) float64 {
	s := 0.0
	for k, v := range a {
		s += v * b[k]
	}
	return s
}

// Logits returns, for known weights, the n×n matrix X_ij = y_i o_j with
// o_j = x_jᵀ w: the part of the log likelihood that depends on σ is ⟨P, X⟩
// = Σ_i y_i o_{σ(i)}, and a posteriori σ is independent of a, with
// p(σ | y) ∝ exp(⟨P_σ, X⟩) on the permutations Mask admits. It returns nil
// when w is latent.
func (c *Counts) Logits() *mat.Dense {
	if c.W == nil {
		return nil
	}
	n := c.N()
	x := mat.NewDense(n, n, nil)
	for i, y := range c.Y {
		for j, o := range c.off {
			x.Set(i, j, float64(y)*o)
		}
	}
	return x
}

// Sites implements models.Model: the permutation Site of size n with the
// model's mask and a uniform prior, the scalar ASite with prior APrior, and,
// when w is latent, WSite with d coordinates and prior WPrior.
func (c *Counts) Sites() []models.Site {
	s := &models.PermSite{Name: Site, N: c.N()}
	if c.Mask != nil {
		s.Masks = []*perm.Mask{c.Mask}
	}
	sites := []models.Site{s, &models.RealSite{Name: ASite, Prior: c.APrior}}
	if c.W == nil {
		_, d := c.X.Dims()
		sites = append(sites, &models.RealSite{Name: WSite, Shape: []int{d}, Prior: c.WPrior})
	}
	return sites
}

// LogLik implements models.Model: the Poisson log likelihood, with the
// log y_i! constants, of the log-rates η = a + P X w for each of the K
// samples, computed by dist.PoissonLogLik. For a permutation matrix P, row
// i of P X w is x_{σ(i)}ᵀ w; for a relaxed one it is the average Σ_j P_ij
// x_jᵀ w, so that the log-rates, not the rates, are interpolated.
func (c *Counts) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, d := c.X.Dims()
	k := z.K()
	p := ad.Reshape(z.Perm(Site), k, n, n)
	var off *ad.Var
	if c.W != nil {
		off = ad.MatMul(p, t.Const(c.offT)) // (K, n, 1)
	} else {
		px := ad.MatMul(p, t.Const(c.x))                        // (K, n, d)
		off = ad.MatMul(px, ad.Reshape(z.Real(WSite), k, d, 1)) // (K, n, 1)
	}
	eta := ad.Add(ad.Reshape(off, k, n), ad.Reshape(z.Real(ASite), k, 1))
	return dist.PoissonLogLik(t.Const(c.y), eta)
}

// state returns the permutation of s, its a (if needA) and the offsets
// under its weights, checked for size.
func (c *Counts) state(s *models.State, needA bool) (p perm.Perm, a float64, off []float64, err error) {
	n, d := c.X.Dims()
	ps := s.Perms[Site]
	if len(ps) != 1 || len(ps[0]) != n {
		return nil, 0, nil, fmt.Errorf("state has no permutation of size %d for site %q", n, Site)
	}
	if needA {
		av := s.Reals[ASite]
		if len(av) != 1 {
			return nil, 0, nil, fmt.Errorf("state has %d values for site %q, want 1", len(av), ASite)
		}
		a = av[0]
	}
	off = c.off
	if c.W == nil {
		w := s.Reals[WSite]
		if len(w) != d {
			return nil, 0, nil, fmt.Errorf("state has %d values for site %q, want %d", len(w), WSite, d)
		}
		off = nil // computed by the caller, for the rows it needs
	}
	return ps[0], a, off, nil
}

// offset returns o_j under the known weights or those of s.
func (c *Counts) offset(s *models.State, off []float64, j int) float64 {
	if off != nil {
		return off[j]
	}
	return dot(c.X.RawRowView(j), s.Reals[WSite])
}

// LogLikState implements models.StateLogLiker:
// Σ_i [y_i η_i − exp(η_i) − log y_i!] with η_i = a + x_{σ(i)}ᵀ w, in O(n d).
func (c *Counts) LogLikState(s *models.State) (float64, error) {
	p, a, off, err := c.state(s, true)
	if err != nil {
		return 0, fmt.Errorf("matching: Counts.LogLikState: %w", err)
	}
	ll := -c.lgY
	for i, j := range p {
		eta := a + c.offset(s, off, j)
		ll += float64(c.Y[i])*eta - math.Exp(eta)
	}
	return ll, nil
}

// SwapDelta implements models.SwapDeltaer: when rows i and j exchange their
// covariate rows the sum of the rates is unchanged, and the log likelihood
// changes by (y_i − y_j)(o_{σ(j)} − o_{σ(i)}), o = x·w, in O(d) whatever
// n. It does not read a.
func (c *Counts) SwapDelta(s *models.State, site string, b, i, j int) (float64, error) {
	n := c.N()
	switch {
	case site != Site:
		return 0, fmt.Errorf("matching: Counts.SwapDelta: not a permutation site: %q", site)
	case b != 0:
		return 0, fmt.Errorf("matching: Counts.SwapDelta: permutation %d out of range [0, 1)", b)
	case i < 0 || i >= n || j < 0 || j >= n:
		return 0, fmt.Errorf("matching: Counts.SwapDelta: rows %d, %d out of range [0, %d)", i, j, n)
	}
	p, _, off, err := c.state(s, false)
	if err != nil {
		return 0, fmt.Errorf("matching: Counts.SwapDelta: %w", err)
	}
	return float64(c.Y[i]-c.Y[j]) * (c.offset(s, off, p[j]) - c.offset(s, off, p[i])), nil
}
