package dist

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// Rounding is the rounding distribution of Linderman et al. (2018), a
// relaxation of a distribution on permutations that puts its mass near the
// permutation matrices. A Gaussian matrix is drawn and pulled toward its
// nearest permutation matrix (see relax.Rounding):
//
//	Ψ = M + V ⊙ Z,  Z_ij ~ N(0, 1),
//	P̃ = τ Ψ + (1 − τ) round(Ψ),
//
// with mean M = Mu (in the paper, a Sinkhorn-projected point of the
// Birkhoff polytope), noise scales V = Sigma and temperature τ = Tau in
// (0, 1]. round(Ψ) is the permutation matrix nearest to Ψ among those
// allowed by Allowed (nil allows all). Since round(P̃) = round(Ψ), the map
// is invertible on its image, and the density of P̃ with respect to
// Lebesgue measure on its N² entries is
//
//	log q(P̃) = Σ_ij log N(ψ_ij; m_ij, v_ij²) − N² log τ,
//	ψ = (P̃ − (1 − τ) round(P̃)) / τ,
//
// and zero off the image (the part of each nearest-permutation cell shrunk
// toward its vertex by the factor τ). As τ → 0 the samples approach
// permutation matrices.
//
// Mu and Sigma are N×N; every entry of Mu must be finite, every entry of
// Sigma finite and > 0.
type Rounding struct {
	Mu, Sigma mat.Matrix
	Tau       float64
	Allowed   *perm.Mask
}

// Validate returns an error if the parameters do not define a distribution.
func (d Rounding) Validate() error {
	_, err := d.validate()
	return err
}

func (d Rounding) validate() (int, error) {
	n, err := birkhoffGaussValidate("Rounding", d.Mu, d.Sigma)
	if err != nil {
		return 0, err
	}
	if err := roundingParams("Rounding", n, d.Tau, d.Allowed); err != nil {
		return 0, err
	}
	return n, nil
}

// roundingParams checks the temperature and the mask size.
func roundingParams(fn string, n int, tau float64, allowed *perm.Mask) error {
	if !(tau > 0 && tau <= 1) {
		return fmt.Errorf("dist: %s: Tau must be in (0, 1], got %v", fn, tau)
	}
	if allowed != nil && allowed.Size() != n {
		return fmt.Errorf("dist: %s: mask is %d×%d, Mu is %d×%d", fn, allowed.Size(), allowed.Size(), n, n)
	}
	return nil
}

// Rand draws P̃, with Z drawn from rng (nil: the global source) in row-major
// order, into dst (allocated when nil; otherwise it must be N×N) and
// returns it. It returns an error wrapping relax.ErrInfeasible if the mask
// admits no permutation.
func (d Rounding) Rand(dst *mat.Dense, rng *rand.Rand) (*mat.Dense, error) {
	n, err := d.validate()
	if err != nil {
		return nil, err
	}
	if err := birkhoffCheckDst("Rounding.Rand", dst, n); err != nil {
		return nil, err
	}
	psi := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			psi.Set(i, j, d.Mu.At(i, j)+d.Sigma.At(i, j)*stdNormal(rng))
		}
	}
	pt, _, err := relax.Rounding(psi, d.Tau, d.Allowed)
	if err != nil {
		return nil, fmt.Errorf("dist: Rounding.Rand: %w", err)
	}
	if dst == nil {
		return pt, nil
	}
	dst.Copy(pt)
	return dst, nil
}

// LogProb returns log q(pt) for an N×N matrix pt: −Inf off the image of
// the rounding map. A wrongly sized or non-finite pt, or a mask admitting
// no permutation, is an error.
func (d Rounding) LogProb(pt mat.Matrix) (float64, error) {
	n, err := d.validate()
	if err != nil {
		return math.NaN(), err
	}
	psi, ok, err := roundingPreimage("Rounding.LogProb", pt, n, d.Tau, d.Allowed)
	if err != nil || !ok {
		return math.Inf(-1), err
	}
	var lp float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			s := d.Sigma.At(i, j)
			z := (psi.At(i, j) - d.Mu.At(i, j)) / s
			lp -= logSqrt2Pi + math.Log(s) + 0.5*z*z
		}
	}
	return lp - relax.RoundingLogDet(n, d.Tau), nil
}

// roundingPreimage returns Ψ for P̃ = pt, with ok false when pt is off the
// image of the rounding map.
func roundingPreimage(fn string, pt mat.Matrix, n int, tau float64, allowed *perm.Mask) (*mat.Dense, bool, error) {
	if pt == nil {
		return nil, false, fmt.Errorf("dist: %s: nil matrix", fn)
	}
	if r, c := pt.Dims(); r != n || c != n {
		return nil, false, fmt.Errorf("dist: %s: matrix is %d×%d, want %d×%d", fn, r, c, n, n)
	}
	psi, _, err := relax.RoundingInverse(pt, tau, allowed)
	if errors.Is(err, relax.ErrOutsideImage) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("dist: %s: %w", fn, err)
	}
	return psi, true, nil
}

// RoundingVar is Rounding with its mean and noise scale on an ad tape: Mu
// of shape (N, N) (typically relax's differentiable Sinkhorn of some
// parameters) and the log noise scale LogSigma (unconstrained), of Mu's
// shape or a single element shared by every entry. Tau and Allowed are
// constants.
//
// Errors (nil parameters, bad shapes, non-finite values, Tau outside (0, 1],
// a mask of the wrong size or admitting no permutation) are recorded on the
// tape, as every ad op does.
type RoundingVar struct {
	Mu       *ad.Var
	LogSigma *ad.Var
	Tau      float64
	Allowed  *perm.Mask
}

func (d RoundingVar) check(fn string) (*ad.Tape, int, bool) {
	t, n, ok := birkhoffVarCheck(fn, d.Mu, d.LogSigma)
	if !ok {
		return t, 0, false
	}
	if err := roundingParams(fn, n, d.Tau, d.Allowed); err != nil {
		t.Fail(err)
		return t, 0, false
	}
	return t, n, true
}

// Rsample returns a reparameterized sample P̃, with Z drawn from rng (nil:
// the global source) in row-major order, and its log density as a scalar,
//
//	log q(P̃) = Σ_ij (−z_ij²/2 − log √(2π) − log v_ij) − N² log τ.
//
// P̃ is differentiable in Mu and LogSigma (round(Ψ) is piecewise constant
// and contributes no gradient), log q in LogSigma.
func (d RoundingVar) Rsample(rng *rand.Rand) (pt, logq *ad.Var) {
	t, n, ok := d.check("RoundingVar.Rsample")
	if !ok {
		v := deadOrNil(t)
		return v, v
	}
	return d.rsample(t, normalNoise(t, rng, n, n))
}

// RsampleNoise is Rsample with the standard normal noise Z given, of shape
// (N, N).
func (d RoundingVar) RsampleNoise(eps *ad.Tensor) (pt, logq *ad.Var) {
	const fn = "RoundingVar.RsampleNoise"
	t, n, ok := d.check(fn)
	if !ok {
		v := deadOrNil(t)
		return v, v
	}
	if err := birkhoffCheckNoise(fn, eps, n); err != nil {
		t.Fail(err)
		v := deadOrNil(t)
		return v, v
	}
	return d.rsample(t, eps)
}

func (d RoundingVar) rsample(t *ad.Tape, eps *ad.Tensor) (pt, logq *ad.Var) {
	n := eps.Shape[0]
	psi := ad.Add(d.Mu, ad.Mul(ad.Exp(d.LogSigma), t.Const(eps)))
	pt, _ = relax.RoundingVar(psi, d.Tau, d.Allowed)
	logq = ad.AddConst(birkhoffNoiseLogProb(eps, d.LogSigma), -relax.RoundingLogDet(n, d.Tau))
	return pt, logq
}

// LogProb returns log q(pt) as a scalar for an N×N matrix pt,
// differentiable in Mu and LogSigma (pt is data: no gradient flows to it).
// A point off the image of the rounding map gives the constant −Inf; a
// wrongly sized or non-finite pt is recorded on the tape as an error.
func (d RoundingVar) LogProb(pt mat.Matrix) *ad.Var {
	const fn = "RoundingVar.LogProb"
	t, n, ok := d.check(fn)
	if !ok {
		return deadOrNil(t)
	}
	psi, ok, err := roundingPreimage(fn, pt, n, d.Tau, d.Allowed)
	if err != nil {
		t.Fail(err)
		return deadOrNil(t)
	}
	if !ok {
		return t.ConstScalar(math.Inf(-1))
	}
	lp := birkhoffLogProbAt(t, psi.RawMatrix().Data, n, d.Mu, d.LogSigma)
	return ad.AddConst(lp, -relax.RoundingLogDet(n, d.Tau))
}
