package matching

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// Site is the name of the model's permutation site: in a models.Posterior
// of a Problem, Perms[Site] holds the posterior of σ.
const Site = "P"

// Problem is a point-matching problem, y_i = r_{σ(i)} + ε_i with ε_i ~
// N(0, Sigma² I₂) and σ uniform over the permutations Mask admits. It
// implements models.Model with the single permutation site Site, and the
// fast paths models.StateLogLiker and models.SwapDeltaer.
//
// A Problem is read-only after NewProblem or Generate; engines may evaluate
// it from several goroutines at once.
type Problem struct {
	Ref   [][2]float64 // reference points r_j
	Obs   [][2]float64 // observed points y_i
	Sigma float64      // noise standard deviation s
	Mask  *perm.Mask   // candidate mask; nil admits every permutation
	Truth perm.Perm    // the permutation that generated Obs; nil if unknown

	x     *ad.Tensor // logits X, shape (n·n, 1), row-major
	logZ0 float64    // n log(2π s²)
}

// Config describes a random Problem for Generate.
type Config struct {
	N     int     // number of points (>= 1)
	Sigma float64 // noise standard deviation (> 0)
	// Radius, if > 0, builds a candidate mask: observation i may be matched
	// to reference point j only if ‖r_{Truth(i)} − r_j‖ < Radius, so the
	// truth is always a candidate.
	Radius float64
	Seed   uint64
}

// Generate draws a Problem from cfg.Seed: reference points uniform on the
// unit square, a uniform random true permutation, and Gaussian observation
// noise.
func Generate(cfg Config) (*Problem, error) {
	switch {
	case cfg.N < 1:
		return nil, fmt.Errorf("matching: Generate: N must be >= 1, got %d", cfg.N)
	case !(cfg.Sigma > 0) || math.IsInf(cfg.Sigma, 1):
		return nil, fmt.Errorf("matching: Generate: Sigma must be finite and > 0, got %v", cfg.Sigma)
	case math.IsNaN(cfg.Radius):
		return nil, errors.New("matching: Generate: Radius is NaN")
	}
	n := cfg.N
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6d61746368)) // "match"
	ref := make([][2]float64, n)
	for j := range ref {
		ref[j] = [2]float64{rng.Float64(), rng.Float64()}
	}
	truth := perm.Random(n, rng)
	obs := make([][2]float64, n)
	for i := range obs {
		r := ref[truth[i]]
		obs[i] = [2]float64{r[0] + cfg.Sigma*rng.NormFloat64(), r[1] + cfg.Sigma*rng.NormFloat64()}
	}
	mask, err := radiusMask(ref, truth, cfg.Radius)
	if err != nil {
		return nil, fmt.Errorf("matching: Generate: %w", err)
	}
	pr, err := NewProblem(ref, obs, cfg.Sigma, mask)
	if err != nil {
		return nil, fmt.Errorf("matching: Generate: %w", err)
	}
	pr.Truth = truth
	return pr, nil
}

// NewProblem returns the matching problem of the given points. ref and obs
// must have the same length n >= 1 and finite coordinates, sigma must be
// finite and > 0, and mask, if not nil, must be n×n and admit at least one
// permutation. The points and the mask are copied.
func NewProblem(ref, obs [][2]float64, sigma float64, mask *perm.Mask) (*Problem, error) {
	n := len(ref)
	switch {
	case n < 1:
		return nil, errors.New("matching: NewProblem: no points")
	case len(obs) != n:
		return nil, fmt.Errorf("matching: NewProblem: %d observed points, %d reference points", len(obs), n)
	case !(sigma > 0) || math.IsInf(sigma, 1):
		return nil, fmt.Errorf("matching: NewProblem: sigma must be finite and > 0, got %v", sigma)
	}
	for k, pts := range [][][2]float64{ref, obs} {
		for i, pt := range pts {
			for _, v := range pt {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("matching: NewProblem: %s point %d is not finite: %v", [...]string{"reference", "observed"}[k], i, pt)
				}
			}
		}
	}
	pr := &Problem{
		Ref:   append([][2]float64(nil), ref...),
		Obs:   append([][2]float64(nil), obs...),
		Sigma: sigma,
		logZ0: float64(n) * math.Log(2*math.Pi*sigma*sigma),
	}
	if mask != nil {
		if mask.Size() != n {
			return nil, fmt.Errorf("matching: NewProblem: mask is %d×%d, want %d×%d", mask.Size(), mask.Size(), n, n)
		}
		if _, err := models.RandomAdmitted(mask, rand.New(rand.NewPCG(0, 0))); err != nil {
			return nil, errors.New("matching: NewProblem: the mask admits no permutation")
		}
		pr.Mask = mask.Clone()
	}
	x := make([]float64, n*n)
	for i := range n {
		for j := range n {
			x[i*n+j] = -sqDist(pr.Obs[i], pr.Ref[j]) / (2 * sigma * sigma)
		}
	}
	pr.x = &ad.Tensor{Shape: []int{n * n, 1}, Data: x}
	return pr, nil
}

// N returns the number of points.
func (pr *Problem) N() int { return len(pr.Ref) }

// Logits returns a new n×n matrix holding X, X_ij = −‖y_i − r_j‖²/(2s²),
// so that log p(Y | P) = ⟨P, X⟩ − n log(2π s²) and the posterior is
// p(P | Y) ∝ exp(⟨P, X⟩) on the permutations Mask admits. Entries outside the
// mask are included; the mask alone restricts the support.
func (pr *Problem) Logits() *mat.Dense {
	n := pr.N()
	return mat.NewDense(n, n, append([]float64(nil), pr.x.Data...))
}

// Sites implements models.Model: one permutation site, Site, of size n with
// the problem's mask and a uniform prior.
func (pr *Problem) Sites() []models.Site {
	s := &models.PermSite{Name: Site, N: pr.N()}
	if pr.Mask != nil {
		s.Masks = []*perm.Mask{pr.Mask}
	}
	return []models.Site{s}
}

// LogLik implements models.Model: ⟨P, X⟩ − n log(2π s²) for each of the K
// values of P, computed as vec(P)ᵀ vec(X). It is the exact Gaussian log
// likelihood on permutation matrices and its linear extension on relaxed
// ones.
func (pr *Problem) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, k := pr.N(), z.K()
	p := ad.Reshape(z.Perm(Site), k, n*n)
	ll := ad.Reshape(ad.MatMul(p, t.Const(pr.x)), k) // (K, n²)·(n², 1)
	return ad.AddConst(ll, -pr.logZ0)
}

// LogLikState implements models.StateLogLiker: Σ_i X_{i,σ(i)} − n log(2π s²).
func (pr *Problem) LogLikState(s *models.State) (float64, error) {
	p, err := pr.statePerm(s)
	if err != nil {
		return 0, fmt.Errorf("matching: LogLikState: %w", err)
	}
	n := pr.N()
	ll := -pr.logZ0
	for i, j := range p {
		ll += pr.x.Data[i*n+j]
	}
	return ll, nil
}

// SwapDelta implements models.SwapDeltaer: the change of the log likelihood
// when rows i and j exchange their columns, in O(1).
func (pr *Problem) SwapDelta(s *models.State, site string, b, i, j int) (float64, error) {
	n := pr.N()
	switch {
	case site != Site:
		return 0, fmt.Errorf("matching: SwapDelta: unknown site %q, want %q", site, Site)
	case b != 0:
		return 0, fmt.Errorf("matching: SwapDelta: permutation %d out of range [0, 1)", b)
	case i < 0 || i >= n || j < 0 || j >= n:
		return 0, fmt.Errorf("matching: SwapDelta: rows %d, %d out of range [0, %d)", i, j, n)
	}
	p, err := pr.statePerm(s)
	if err != nil {
		return 0, fmt.Errorf("matching: SwapDelta: %w", err)
	}
	x := pr.x.Data
	return x[i*n+p[j]] + x[j*n+p[i]] - x[i*n+p[i]] - x[j*n+p[j]], nil
}

// statePerm returns the permutation of s, checked for size.
func (pr *Problem) statePerm(s *models.State) (perm.Perm, error) {
	ps := s.Perms[Site]
	if len(ps) != 1 {
		return nil, fmt.Errorf("state has %d permutations for site %q, want 1", len(ps), Site)
	}
	if len(ps[0]) != pr.N() {
		return nil, fmt.Errorf("permutation has size %d, want %d", len(ps[0]), pr.N())
	}
	return ps[0], nil
}

// radiusMask returns the candidate mask that lets observation i go to
// reference point j only if ‖r_{truth(i)} − r_j‖ < radius, so that the
// truth is always a candidate; nil (no mask) for radius <= 0.
func radiusMask(ref [][2]float64, truth perm.Perm, radius float64) (*perm.Mask, error) {
	if radius <= 0 {
		return nil, nil
	}
	n := len(ref)
	mask, err := perm.NewMask(n)
	if err != nil {
		return nil, err
	}
	for i := range n {
		for j := range n {
			if sqDist(ref[truth[i]], ref[j]) < radius*radius {
				_ = mask.Set(i, j, true) // indices are in range
			}
		}
	}
	return mask, nil
}

func sqDist(a, b [2]float64) float64 {
	dx, dy := a[0]-b[0], a[1]-b[1]
	return dx*dx + dy*dy
}
