package dist

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/relax"
)

// StickBreaking is the stick-breaking distribution of Linderman et al.
// (2018) on the Birkhoff polytope of N×N doubly stochastic matrices:
// independent Gaussians pushed through relax.StickBreaking,
//
//	Ψ_ij ~ N(μ_ij, σ_ij²) for i, j < N−1,  X = SB(Ψ).
//
// X is determined by its (N−1)² free entries x_ij, i, j < N−1, and its
// density with respect to Lebesgue measure on them is, by the change of
// variables ψ = SB⁻¹(X),
//
//	log q(X) = Σ_ij log N(ψ_ij; μ_ij, σ_ij²) − log |det ∂x/∂ψ|.
//
// Mu and Sigma are (N−1)×(N−1), N >= 2; every μ must be finite and every σ
// finite and > 0.
type StickBreaking struct {
	Mu, Sigma mat.Matrix
}

// Validate returns an error if the parameters do not define a distribution.
func (d StickBreaking) Validate() error {
	_, err := birkhoffGaussValidate("StickBreaking", d.Mu, d.Sigma)
	return err
}

// Rand draws X = SB(μ + σ ⊙ ε), ε ~ N(0, I) drawn from rng (nil: the global
// source) in row-major order, into dst (allocated when nil; otherwise it
// must be N×N) and returns it.
func (d StickBreaking) Rand(dst *mat.Dense, rng *rand.Rand) (*mat.Dense, error) {
	n, err := birkhoffGaussValidate("StickBreaking", d.Mu, d.Sigma)
	if err != nil {
		return nil, err
	}
	if err := birkhoffCheckDst("StickBreaking.Rand", dst, n+1); err != nil {
		return nil, err
	}
	psi := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			psi.Set(i, j, d.Mu.At(i, j)+d.Sigma.At(i, j)*stdNormal(rng))
		}
	}
	x, _, err := relax.StickBreaking(psi)
	if err != nil {
		return nil, fmt.Errorf("dist: StickBreaking.Rand: %w", err)
	}
	if dst == nil {
		return x, nil
	}
	dst.Copy(x)
	return dst, nil
}

// LogProb returns log q(x) for an N×N matrix x. Points outside the open
// polytope's image (not doubly stochastic, or with a free entry at an end
// of its interval, see relax.StickBreakingInverse) have log density −Inf.
// A wrongly sized or non-finite x is an error.
func (d StickBreaking) LogProb(x mat.Matrix) (float64, error) {
	n, err := birkhoffGaussValidate("StickBreaking", d.Mu, d.Sigma)
	if err != nil {
		return math.NaN(), err
	}
	psi, logDet, ok, err := stickBreakingPreimage("StickBreaking.LogProb", x, n)
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
	return lp - logDet, nil
}

// stickBreakingPreimage returns ψ = SB⁻¹(x) and log |det J| for an N×N x,
// N = n+1, with ok false when x is outside the map's image.
func stickBreakingPreimage(fn string, x mat.Matrix, n int) (*mat.Dense, float64, bool, error) {
	if x == nil {
		return nil, 0, false, fmt.Errorf("dist: %s: nil matrix", fn)
	}
	if r, c := x.Dims(); r != n+1 || c != n+1 {
		return nil, 0, false, fmt.Errorf("dist: %s: x is %d×%d, want %d×%d", fn, r, c, n+1, n+1)
	}
	psi, logDet, err := relax.StickBreakingInverse(x)
	if errors.Is(err, relax.ErrOutsideImage) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("dist: %s: %w", fn, err)
	}
	return psi, logDet, true, nil
}

// StickBreakingVar is StickBreaking with parameters on an ad tape: location
// Mu, of shape (N−1, N−1), and log standard deviation LogSigma
// (unconstrained), of Mu's shape or a single element shared by every entry.
//
// Errors (nil parameters, bad shapes, non-finite values) are recorded on the
// tape, as every ad op does.
type StickBreakingVar struct {
	Mu       *ad.Var
	LogSigma *ad.Var
}

// Rsample returns a reparameterized sample X = SB(μ + exp(log σ) ⊙ ε), ε ~
// N(0, I) drawn from rng (nil: the global source) in row-major order, and
// its log density log q(X) as a scalar. Both are differentiable in Mu and
// LogSigma; log q is the total derivative along the sample path,
//
//	log q(X) = Σ_ij (−ε_ij²/2 − log √(2π) − log σ_ij) − log |det ∂x/∂ψ|.
func (d StickBreakingVar) Rsample(rng *rand.Rand) (x, logq *ad.Var) {
	t, n, ok := birkhoffVarCheck("StickBreakingVar.Rsample", d.Mu, d.LogSigma)
	if !ok {
		v := deadOrNil(t)
		return v, v
	}
	return d.rsample(t, normalNoise(t, rng, n, n))
}

// RsampleNoise is Rsample with the standard normal noise ε given, of shape
// (N−1, N−1). It lets a caller hold the noise fixed, as a gradient check
// does.
func (d StickBreakingVar) RsampleNoise(eps *ad.Tensor) (x, logq *ad.Var) {
	const fn = "StickBreakingVar.RsampleNoise"
	t, n, ok := birkhoffVarCheck(fn, d.Mu, d.LogSigma)
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

func (d StickBreakingVar) rsample(t *ad.Tape, eps *ad.Tensor) (x, logq *ad.Var) {
	psi := ad.Add(d.Mu, ad.Mul(ad.Exp(d.LogSigma), t.Const(eps)))
	x, logDet := relax.StickBreakingVar(psi)
	return x, ad.Sub(birkhoffNoiseLogProb(eps, d.LogSigma), logDet)
}

// LogProb returns log q(x) as a scalar for an N×N matrix x, differentiable
// in Mu and LogSigma (x is data: no gradient flows to it). A point outside
// the map's image gives the constant −Inf; a wrongly sized or non-finite x
// is recorded on the tape as an error.
func (d StickBreakingVar) LogProb(x mat.Matrix) *ad.Var {
	const fn = "StickBreakingVar.LogProb"
	t, n, ok := birkhoffVarCheck(fn, d.Mu, d.LogSigma)
	if !ok {
		return deadOrNil(t)
	}
	psi, logDet, ok, err := stickBreakingPreimage(fn, x, n)
	if err != nil {
		t.Fail(err)
		return deadOrNil(t)
	}
	if !ok {
		return t.ConstScalar(math.Inf(-1))
	}
	return ad.AddConst(birkhoffLogProbAt(t, psi.RawMatrix().Data, n, d.Mu, d.LogSigma), -logDet)
}

// birkhoffGaussValidate checks the parameters of a matrix of independent
// Gaussians: square, non-empty, same size, μ finite, σ finite and > 0. It
// returns the size.
func birkhoffGaussValidate(fn string, mu, sigma mat.Matrix) (int, error) {
	if mu == nil || sigma == nil {
		return 0, fmt.Errorf("dist: %s: nil Mu or Sigma", fn)
	}
	r, c := mu.Dims()
	if r != c || r == 0 {
		return 0, fmt.Errorf("dist: %s: Mu is %d×%d, want a non-empty square matrix", fn, r, c)
	}
	if sr, sc := sigma.Dims(); sr != r || sc != c {
		return 0, fmt.Errorf("dist: %s: Sigma is %d×%d, Mu is %d×%d", fn, sr, sc, r, c)
	}
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			if m := mu.At(i, j); math.IsNaN(m) || math.IsInf(m, 0) {
				return 0, fmt.Errorf("dist: %s: Mu(%d, %d) must be finite, got %v", fn, i, j, m)
			}
			if s := sigma.At(i, j); !(s > 0) || math.IsInf(s, 1) {
				return 0, fmt.Errorf("dist: %s: Sigma(%d, %d) must be finite and > 0, got %v", fn, i, j, s)
			}
		}
	}
	return r, nil
}

// birkhoffCheckDst checks that a destination matrix is nil or n×n.
func birkhoffCheckDst(fn string, dst *mat.Dense, n int) error {
	if dst == nil {
		return nil
	}
	if r, c := dst.Dims(); r != n || c != n {
		return fmt.Errorf("dist: %s: dst is %d×%d, want %d×%d", fn, r, c, n, n)
	}
	return nil
}

// birkhoffCheckNoise checks that eps is an n×n tensor of finite values.
func birkhoffCheckNoise(fn string, eps *ad.Tensor, n int) error {
	if eps == nil {
		return fmt.Errorf("dist: %s: nil noise", fn)
	}
	if len(eps.Shape) != 2 || eps.Shape[0] != n || eps.Shape[1] != n || len(eps.Data) != n*n {
		return fmt.Errorf("dist: %s: noise has shape %v, want [%d %d]", fn, eps.Shape, n, n)
	}
	for k, v := range eps.Data {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("dist: %s: noise element %d is %v", fn, k, v)
		}
	}
	return nil
}

// birkhoffVarCheck checks Mu, of shape (n, n) with n >= 1, and LogSigma,
// of Mu's shape or one element, both finite. It returns the tape and n, or
// ok false with the error recorded on the tape (a nil tape when both are
// nil).
func birkhoffVarCheck(fn string, mu, logSigma *ad.Var) (t *ad.Tape, n int, ok bool) {
	t = tapeOfVars(mu, logSigma)
	if t == nil {
		return nil, 0, false
	}
	if mu == nil || logSigma == nil {
		failVar(t, "%s: nil Mu or LogSigma", fn)
		return t, 0, false
	}
	if t.Err() != nil {
		return t, 0, false
	}
	s := mu.Shape()
	if len(s) != 2 || s[0] != s[1] || s[0] == 0 {
		failVar(t, "%s: Mu has shape %v, want a non-empty square matrix", fn, s)
		return t, 0, false
	}
	ls := logSigma.Shape()
	if logSigma.Size() != 1 && (len(ls) != 2 || ls[0] != s[0] || ls[1] != s[1]) {
		failVar(t, "%s: LogSigma has shape %v, want %v or one element", fn, ls, s)
		return t, 0, false
	}
	for _, v := range [...]*ad.Var{mu, logSigma} {
		for k, x := range v.Value() {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				failVar(t, "%s: parameter element %d is %v", fn, k, x)
				return t, 0, false
			}
		}
	}
	return t, s[0], true
}

// birkhoffSumLogSigma returns Σ_ij log σ_ij over an n×n matrix as a scalar Var,
// counting a shared LogSigma n² times.
func birkhoffSumLogSigma(logSigma *ad.Var, n int) *ad.Var {
	s := ad.Sum(logSigma)
	if logSigma.Size() == 1 {
		s = ad.Scale(s, float64(n*n))
	}
	return s
}

// birkhoffNoiseLogProb returns Σ_ij log N(ψ_ij; μ_ij, σ_ij²) at ψ = μ + σ ⊙ ε,
// that is Σ_ij (−ε_ij²/2 − log √(2π)) − Σ_ij log σ_ij, as a scalar Var
// differentiable in LogSigma.
func birkhoffNoiseLogProb(eps *ad.Tensor, logSigma *ad.Var) *ad.Var {
	var c float64
	for _, e := range eps.Data {
		c -= 0.5*e*e + logSqrt2Pi
	}
	n := eps.Shape[0]
	return ad.AddConst(ad.Neg(birkhoffSumLogSigma(logSigma, n)), c)
}

// birkhoffLogProbAt returns Σ_ij log N(ψ_ij; μ_ij, σ_ij²) for the constant n×n
// matrix ψ (row-major), differentiable in Mu and LogSigma.
func birkhoffLogProbAt(t *ad.Tape, psi []float64, n int, mu, logSigma *ad.Var) *ad.Var {
	p := &ad.Tensor{Shape: []int{n, n}, Data: psi}
	z := ad.Mul(ad.Sub(t.Const(p), mu), ad.Exp(ad.Neg(logSigma)))
	sq := ad.Scale(ad.Sum(ad.Square(z)), -0.5)
	return ad.AddConst(ad.Sub(sq, birkhoffSumLogSigma(logSigma, n)), -float64(n*n)*logSqrt2Pi)
}
