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

// Pairwise is a matching problem observed through pairs: n observations
// are matched to n reference items by an unknown permutation σ, and what is
// observed is a quantity for every pair of observations (here a distance)
// that is a noisy copy of the known quantity of the matched pair of
// reference items,
//
//	D^obs_ik = D^ref_{σ(i)σ(k)} + ε_ik,   ε_ik ~ N(0, Sigma²),   i < k,
//
// with σ uniform over the permutations admitted by a candidate mask and
// fixed rows. Both matrices are symmetric; their diagonals are not used.
// The log likelihood is quadratic in the permutation matrix P (a quadratic
// assignment problem, not a linear one), so the posterior over σ is not an
// exponential family in P. It implements models.Model, with the
// permutation site Site (mask Mask and fixed rows Fixed), and the fast
// paths models.StateLogLiker and models.SwapDeltaer; see the package
// documentation for the math.
//
// A Pairwise is read-only after NewPairwise or GeneratePairwise; engines
// may evaluate it from several goroutines at once.
type Pairwise struct {
	RefDist *mat.Dense // n×n reference quantities D^ref (symmetric, zero diagonal)
	ObsDist *mat.Dense // n×n observed quantities D^obs (symmetric, zero diagonal)
	Sigma   float64    // noise standard deviation s
	Mask    *perm.Mask // candidate mask; nil admits every permutation
	// Fixed, if not nil, has length n: Fixed[i] = j >= 0 pins observation
	// i to reference item j (a known assignment), -1 leaves it free.
	Fixed []int
	Truth perm.Perm    // the permutation that generated ObsDist; nil if unknown
	Ref   [][2]float64 // positions of the reference items, when generated; nil otherwise

	ref, obs *ad.Tensor // the matrices on the tape, n×n
	off      *ad.Tensor // 1 off the diagonal, 0 on it, n×n
	logZ0    float64    // n(n−1)/2 · log(√(2π) s)
}

// PairwiseConfig describes a random Pairwise problem for GeneratePairwise.
type PairwiseConfig struct {
	N     int     // number of items (>= 1)
	Sigma float64 // noise standard deviation of the observed distances (finite, > 0)
	// Radius, if > 0, builds a candidate mask: observation i may be
	// matched to reference item j only if ‖r_{Truth(i)} − r_j‖ < Radius,
	// so the truth is always a candidate. 0 means no mask.
	Radius float64
	// Fixed is the number of observations pinned to their true reference
	// item, chosen at random (0 <= Fixed <= N).
	Fixed int
	Seed  uint64
}

// GeneratePairwise draws a Pairwise problem from cfg.Seed: reference points
// r_j uniform on the unit square with D^ref_jl = ‖r_j − r_l‖, a uniform
// random true permutation, cfg.Fixed rows chosen at random and pinned to it,
// and observed distances D^obs_ik = ‖r_{σ(i)} − r_{σ(k)}‖ + ε_ik for i < k
// (mirrored for i > k) with ε_ik ~ N(0, Sigma²).
func GeneratePairwise(cfg PairwiseConfig) (*Pairwise, error) {
	switch {
	case cfg.N < 1:
		return nil, fmt.Errorf("matching: GeneratePairwise: N must be >= 1, got %d", cfg.N)
	case !(cfg.Sigma > 0) || math.IsInf(cfg.Sigma, 1):
		return nil, fmt.Errorf("matching: GeneratePairwise: Sigma must be finite and > 0, got %v", cfg.Sigma)
	case math.IsNaN(cfg.Radius):
		return nil, errors.New("matching: GeneratePairwise: Radius is NaN")
	case cfg.Fixed < 0 || cfg.Fixed > cfg.N:
		return nil, fmt.Errorf("matching: GeneratePairwise: Fixed must be in [0, %d], got %d", cfg.N, cfg.Fixed)
	}
	n := cfg.N
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7061697273)) // "pairs"
	ref := make([][2]float64, n)
	for j := range ref {
		ref[j] = [2]float64{rng.Float64(), rng.Float64()}
	}
	truth := perm.Random(n, rng)
	var fixed []int
	if cfg.Fixed > 0 {
		fixed = make([]int, n)
		for i := range fixed {
			fixed[i] = -1
		}
		for _, i := range rng.Perm(n)[:cfg.Fixed] {
			fixed[i] = truth[i]
		}
	}
	refDist := mat.NewDense(n, n, nil)
	obsDist := mat.NewDense(n, n, nil)
	for j := range n {
		for l := range n {
			refDist.Set(j, l, math.Sqrt(sqDist(ref[j], ref[l])))
		}
	}
	for i := range n {
		for k := i + 1; k < n; k++ {
			v := refDist.At(truth[i], truth[k]) + cfg.Sigma*rng.NormFloat64()
			obsDist.Set(i, k, v)
			obsDist.Set(k, i, v)
		}
	}
	mask, err := radiusMask(ref, truth, cfg.Radius)
	if err != nil {
		return nil, fmt.Errorf("matching: GeneratePairwise: %w", err)
	}
	pr, err := NewPairwise(refDist, obsDist, cfg.Sigma, mask, fixed)
	if err != nil {
		return nil, fmt.Errorf("matching: GeneratePairwise: %w", err)
	}
	pr.Truth, pr.Ref = truth, ref
	return pr, nil
}

// NewPairwise returns the pairwise matching problem of the reference and
// observed n×n matrices, with noise standard deviation sigma (finite, > 0),
// candidate mask mask (nil for none) and fixed rows fixed (nil for none;
// otherwise length n, each entry -1 or a column). The matrices must be
// symmetric with finite entries off the diagonal; their diagonals are
// ignored (stored as 0). The mask and the fixed rows must admit some
// permutation: a fixed row outside its mask, a column fixed twice or a
// mask that admits no permutation is an error. Everything is copied.
func NewPairwise(refDist, obsDist mat.Matrix, sigma float64, mask *perm.Mask, fixed []int) (*Pairwise, error) {
	if refDist == nil || obsDist == nil {
		return nil, errors.New("matching: NewPairwise: nil matrix")
	}
	n, c := refDist.Dims()
	switch {
	case n < 1 || n != c:
		return nil, fmt.Errorf("matching: NewPairwise: reference matrix is %d×%d, want square and non-empty", n, c)
	case !(sigma > 0) || math.IsInf(sigma, 1):
		return nil, fmt.Errorf("matching: NewPairwise: sigma must be finite and > 0, got %v", sigma)
	}
	if r, c := obsDist.Dims(); r != n || c != n {
		return nil, fmt.Errorf("matching: NewPairwise: observed matrix is %d×%d, want %d×%d", r, c, n, n)
	}
	pr := &Pairwise{Sigma: sigma}
	for k, m := range []mat.Matrix{refDist, obsDist} {
		name := [...]string{"reference", "observed"}[k]
		cp := mat.NewDense(n, n, nil)
		for i := range n {
			for j := i + 1; j < n; j++ {
				v := m.At(i, j)
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("matching: NewPairwise: %s entry (%d, %d) is not finite: %v", name, i, j, v)
				}
				if w := m.At(j, i); w != v {
					return nil, fmt.Errorf("matching: NewPairwise: %s matrix is not symmetric: (%d, %d) is %v, (%d, %d) is %v", name, i, j, v, j, i, w)
				}
				cp.Set(i, j, v)
				cp.Set(j, i, v)
			}
		}
		if k == 0 {
			pr.RefDist = cp
		} else {
			pr.ObsDist = cp
		}
	}
	if mask != nil {
		if mask.Size() != n {
			return nil, fmt.Errorf("matching: NewPairwise: mask is %d×%d, want %d×%d", mask.Size(), mask.Size(), n, n)
		}
		pr.Mask = mask.Clone()
	}
	if fixed != nil {
		if len(fixed) != n {
			return nil, fmt.Errorf("matching: NewPairwise: %d fixed rows, want %d", len(fixed), n)
		}
		pr.Fixed = append([]int(nil), fixed...)
	}
	if _, err := models.Check(pr); err != nil {
		return nil, fmt.Errorf("matching: NewPairwise: %w", err)
	}
	off := make([]float64, n*n)
	for i := range n {
		for k := range n {
			if i != k {
				off[i*n+k] = 1
			}
		}
	}
	pr.ref = &ad.Tensor{Shape: []int{n, n}, Data: pr.RefDist.RawMatrix().Data}
	pr.obs = &ad.Tensor{Shape: []int{n, n}, Data: pr.ObsDist.RawMatrix().Data}
	pr.off = &ad.Tensor{Shape: []int{n, n}, Data: off}
	pr.logZ0 = float64(n*(n-1)/2) * (0.5*math.Log(2*math.Pi) + math.Log(sigma))
	return pr, nil
}

// N returns the number of items.
func (pr *Pairwise) N() int { r, _ := pr.RefDist.Dims(); return r }

// Sites implements models.Model: one permutation site, Site, of size n with
// the problem's mask, fixed rows and a uniform prior.
func (pr *Pairwise) Sites() []models.Site {
	s := &models.PermSite{Name: Site, N: pr.N()}
	if pr.Mask != nil {
		s.Masks = []*perm.Mask{pr.Mask}
	}
	if pr.Fixed != nil {
		s.Fixed = [][]int{pr.Fixed}
	}
	return []models.Site{s}
}

// LogLik implements models.Model: for each of the K values of P,
//
//	−Σ_{i≠k} (D^obs_ik − (P D^ref Pᵀ)_ik)² / (4 Sigma²) − n(n−1)/2 · log(√(2π) Sigma),
//
// with two matrix products. For a permutation matrix (P D^ref Pᵀ)_ik =
// D^ref_{σ(i)σ(k)} and the sum over ordered pairs i ≠ k counts each pair
// twice, so this is the Gaussian log likelihood; for a relaxed P,
// (P D^ref Pᵀ)_ik = Σ_{j,l} P_ij P_kl D^ref_jl is the reference quantity
// averaged over the rows' weights.
func (pr *Pairwise) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, k := pr.N(), z.K()
	p := ad.Reshape(z.Perm(Site), k, n, n)
	pred := ad.MatMul(ad.MatMul(p, t.Const(pr.ref)), ad.Transpose(p)) // (K, n, n)
	sq := ad.Mul(ad.Square(ad.Sub(pred, t.Const(pr.obs))), t.Const(pr.off))
	ss := ad.SumAxis(ad.Reshape(sq, k, n*n), 1)
	return ad.AddConst(ad.Scale(ss, -0.25/(pr.Sigma*pr.Sigma)), -pr.logZ0)
}

// statePerm returns the permutation of s, checked for size.
func (pr *Pairwise) statePerm(s *models.State) (perm.Perm, error) {
	ps := s.Perms[Site]
	if len(ps) != 1 {
		return nil, fmt.Errorf("state has %d permutations for site %q, want 1", len(ps), Site)
	}
	if len(ps[0]) != pr.N() {
		return nil, fmt.Errorf("permutation has size %d, want %d", len(ps[0]), pr.N())
	}
	return ps[0], nil
}

// LogLikState implements models.StateLogLiker:
// −Σ_{i<k} (D^obs_ik − D^ref_{σ(i)σ(k)})² / (2 Sigma²) − n(n−1)/2 · log(√(2π) Sigma),
// in O(n²).
func (pr *Pairwise) LogLikState(s *models.State) (float64, error) {
	p, err := pr.statePerm(s)
	if err != nil {
		return 0, fmt.Errorf("matching: Pairwise.LogLikState: %w", err)
	}
	n := pr.N()
	obs, ref := pr.obs.Data, pr.ref.Data
	ss := 0.0
	for i := range n {
		for k := i + 1; k < n; k++ {
			e := obs[i*n+k] - ref[p[i]*n+p[k]]
			ss += e * e
		}
	}
	return -ss/(2*pr.Sigma*pr.Sigma) - pr.logZ0, nil
}

// SwapDelta implements models.SwapDeltaer: when rows i and j exchange their
// columns only the pairs (i, k) and (j, k) with k ∉ {i, j} change (the pair
// (i, j) itself keeps D^ref_{σ(i)σ(j)}, by symmetry), so the change costs
// O(n).
func (pr *Pairwise) SwapDelta(s *models.State, site string, b, i, j int) (float64, error) {
	n := pr.N()
	switch {
	case site != Site:
		return 0, fmt.Errorf("matching: Pairwise.SwapDelta: unknown site %q, want %q", site, Site)
	case b != 0:
		return 0, fmt.Errorf("matching: Pairwise.SwapDelta: permutation %d out of range [0, 1)", b)
	case i < 0 || i >= n || j < 0 || j >= n:
		return 0, fmt.Errorf("matching: Pairwise.SwapDelta: rows %d, %d out of range [0, %d)", i, j, n)
	}
	p, err := pr.statePerm(s)
	if err != nil {
		return 0, fmt.Errorf("matching: Pairwise.SwapDelta: %w", err)
	}
	if i == j {
		return 0, nil
	}
	obs, ref := pr.obs.Data, pr.ref.Data
	pi, pj := p[i]*n, p[j]*n
	d := 0.0
	for k := range n {
		if k == i || k == j {
			continue
		}
		oi, oj, pk := obs[i*n+k], obs[j*n+k], p[k]
		before1, before2 := oi-ref[pi+pk], oj-ref[pj+pk]
		after1, after2 := oi-ref[pj+pk], oj-ref[pi+pk]
		d += before1*before1 + before2*before2 - after1*after1 - after2*after2
	}
	return d / (2 * pr.Sigma * pr.Sigma), nil
}
