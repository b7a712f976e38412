package dist

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// GumbelSinkhorn is the Gumbel-Sinkhorn distribution GS(X, τ) of the seed
// paper, the relaxation of GumbelMatching to doubly stochastic matrices: a
// sample is
//
//	S((X + ε)/τ),  ε_ij independent standard Gumbel,
//
// with S the Sinkhorn operator truncated at Iters row-and-column
// normalisations (relax.Sinkhorn). As τ → 0 (and Iters → ∞) samples tend to
// the permutation matrices M(X + ε) of GM(X). GS(X, τ) has no tractable
// density; inference works with the Gumbel-space variable Z = (X + ε)/τ,
// whose entries are independent Gumbel(x_ij/τ, 1/τ), and the closed-form
// GumbelKL.
//
// This type samples with float64 matrices; GumbelSinkhornVar samples on an
// ad tape for reparameterized gradients.
type GumbelSinkhorn struct {
	X     mat.Matrix // N×N parameter; -Inf entries forbid a pair
	Tau   float64    // temperature τ > 0
	Iters int        // Sinkhorn iterations L >= 1
}

// GumbelSinkhornSample is one draw of GumbelSinkhorn, with the noise ε
// shared by its three views.
type GumbelSinkhornSample struct {
	Soft *mat.Dense // S((X + ε)/τ), doubly stochastic
	Z    *mat.Dense // the Gumbel-space variable (X + ε)/τ
	Hard perm.Perm  // M(X + ε), the matching GS tends to as τ → 0
}

// Validate returns an error if the parameters do not define a
// distribution: X must be a non-empty square matrix free of NaN and +Inf,
// τ finite and > 0, and Iters >= 1.
func (g GumbelSinkhorn) Validate() error {
	_, err := g.validate()
	return err
}

// validate checks the parameters and returns N.
func (g GumbelSinkhorn) validate() (int, error) {
	n, err := validMatrix("GumbelSinkhorn", g.X)
	if err != nil {
		return 0, err
	}
	if err := validTemp("GumbelSinkhorn", g.Tau); err != nil {
		return 0, err
	}
	if g.Iters < 1 {
		return 0, fmt.Errorf("dist: GumbelSinkhorn: Iters must be >= 1, got %d", g.Iters)
	}
	if n == 0 {
		return 0, fmt.Errorf("dist: GumbelSinkhorn: empty matrix")
	}
	return n, nil
}

// Rand draws one sample, taking N² Gumbel draws from rng (nil: the global
// source) in row-major order; with the same rng state GumbelMatching.Rand
// returns the same Hard permutation.
func (g GumbelSinkhorn) Rand(rng *rand.Rand) (GumbelSinkhornSample, error) {
	n, err := g.validate()
	if err != nil {
		return GumbelSinkhornSample{}, err
	}
	xe := perturb(g.X, n, rng)
	soft, err := relax.Sinkhorn(xe, g.Tau, g.Iters)
	if err != nil {
		return GumbelSinkhornSample{}, fmt.Errorf("dist: GumbelSinkhorn: %w", err)
	}
	hard, err := relax.Matching(xe)
	if err != nil {
		return GumbelSinkhornSample{}, fmt.Errorf("dist: GumbelSinkhorn: %w", err)
	}
	var z mat.Dense
	z.Scale(1/g.Tau, xe)
	return GumbelSinkhornSample{Soft: soft, Z: &z, Hard: hard}, nil
}

// RandSoft draws only the relaxed view S((X + ε)/τ) of a sample, with the
// same N² draws from rng as Rand (so, from the same rng state, it equals
// Rand's Soft), into dst (allocated when nil; otherwise it must be N×N) and
// returns it. It skips the matching that Rand solves for Hard, the cost
// that dominates Rand for large N, and suits Monte Carlo averages of
// relaxed samples such as the posterior mean E[S((X + ε)/τ)].
func (g GumbelSinkhorn) RandSoft(dst *mat.Dense, rng *rand.Rand) (*mat.Dense, error) {
	n, err := g.validate()
	if err != nil {
		return nil, err
	}
	if err := birkhoffCheckDst("GumbelSinkhorn.RandSoft", dst, n); err != nil {
		return nil, err
	}
	soft, err := relax.Sinkhorn(perturb(g.X, n, rng), g.Tau, g.Iters)
	if err != nil {
		return nil, fmt.Errorf("dist: GumbelSinkhorn: %w", err)
	}
	if dst == nil {
		return soft, nil
	}
	dst.Copy(soft)
	return dst, nil
}

// GumbelSinkhornVar is GS(X, τ) with X a value on an ad tape, of shape
// (N, N) or (B, N, N) (a batch of B parameter matrices, for example one per
// input of a Sinkhorn network). Tau and Iters are constants.
//
// Errors (nil or badly shaped X, NaN or +Inf entries, τ <= 0, Iters < 1,
// k < 1, a wrong noise shape) are recorded on the tape, as every ad op does.
type GumbelSinkhornVar struct {
	X     *ad.Var
	Tau   float64
	Iters int
}

// GumbelSinkhornVarSample holds k reparameterized samples of
// GumbelSinkhornVar. With X of shape (N, N), Soft and Z have shape (k, N, N);
// with X of shape (B, N, N) they have shape (k·B, N, N), sample s of matrix b
// at index s·B + b.
type GumbelSinkhornVarSample struct {
	// Soft is S((X + ε)/τ), the relaxed permutation matrices, differentiable
	// in X (the noise is a constant).
	Soft *ad.Var
	// Z is the Gumbel-space variable (X + ε)/τ, the stochastic node whose
	// KL to the prior ε'/τ_prior is GumbelKLVar.
	Z *ad.Var
	// Perturbed is X + ε, for other operators of the same noise (for
	// example relax.LogSinkhornVar(Perturbed, τ, L) for log S).
	Perturbed *ad.Var

	n     int
	noisy []float64 // X + ε, row-major (k·B, N, N); owned by the tape
}

// Hard returns M(X + ε) for every sample, in the order of Soft: the
// Gumbel-Matching samples that share the noise of the relaxed ones. The
// matchings are solved in parallel; the result does not depend on
// GOMAXPROCS. Call it before the tape is Reset.
func (s GumbelSinkhornVarSample) Hard() ([]perm.Perm, error) {
	if s.n == 0 || s.noisy == nil {
		return nil, fmt.Errorf("dist: GumbelSinkhornVarSample.Hard: no sample (the tape holds an error)")
	}
	nn := s.n * s.n
	xs := make([]mat.Matrix, len(s.noisy)/nn)
	for i := range xs {
		xs[i] = mat.NewDense(s.n, s.n, s.noisy[i*nn:(i+1)*nn])
	}
	ps, err := relax.MatchingBatch(xs)
	if err != nil {
		return nil, fmt.Errorf("dist: GumbelSinkhornVarSample.Hard: %w", err)
	}
	return ps, nil
}

// check validates the distribution and returns the tape and N.
func (g GumbelSinkhornVar) check(fn string) (*ad.Tape, int, bool) {
	if g.X == nil {
		return nil, 0, false
	}
	t := g.X.Tape()
	if t.Err() != nil {
		return t, 0, false
	}
	s := g.X.Shape()
	if (len(s) != 2 && len(s) != 3) || s[len(s)-1] != s[len(s)-2] || s[len(s)-1] == 0 {
		failVar(t, "GumbelSinkhornVar.%s: X must have shape (N, N) or (B, N, N) with N >= 1, got %v", fn, s)
		return t, 0, false
	}
	if err := validTemp("GumbelSinkhornVar."+fn, g.Tau); err != nil {
		t.Fail(err)
		return t, 0, false
	}
	if g.Iters < 1 {
		failVar(t, "GumbelSinkhornVar.%s: Iters must be >= 1, got %d", fn, g.Iters)
		return t, 0, false
	}
	for i, v := range g.X.Value() {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			failVar(t, "GumbelSinkhornVar.%s: X entry %d is %v", fn, i, v)
			return t, 0, false
		}
	}
	return t, s[len(s)-1], true
}

// Rsample draws k >= 1 reparameterized samples, taking k·B·N² Gumbel draws
// from rng (nil: the global source) in row-major order of the noise tensor
// of shape (k, shape of X).
func (g GumbelSinkhornVar) Rsample(rng *rand.Rand, k int) GumbelSinkhornVarSample {
	t, _, ok := g.check("Rsample")
	if !ok {
		return deadSample(t)
	}
	if k < 1 {
		failVar(t, "GumbelSinkhornVar.Rsample: k must be >= 1, got %d", k)
		return deadSample(t)
	}
	shape := append([]int{k}, g.X.Shape()...)
	eps := &ad.Tensor{Shape: shape, Data: FillGumbel(t.Alloc(k*g.X.Size()), rng)}
	return g.RsampleNoise(eps)
}

// RsampleNoise is Rsample with the standard Gumbel noise ε given, of shape
// (k, shape of X). It lets a caller hold the noise fixed (a gradient check)
// or share it with other computations. An entry of ε may be −∞: like a −∞
// entry of X it forbids its pair, in that sample only, and passes no
// gradient to X. A caller with fixed candidate masks can so keep X finite
// and set the forbidden entries of a reused noise buffer to −∞ once,
// drawing only the allowed ones.
func (g GumbelSinkhornVar) RsampleNoise(eps *ad.Tensor) GumbelSinkhornVarSample {
	t, n, ok := g.check("RsampleNoise")
	if !ok {
		return deadSample(t)
	}
	xs := g.X.Shape()
	if eps == nil || len(eps.Shape) != len(xs)+1 || eps.Shape[0] < 1 || !sameInts(eps.Shape[1:], xs) || len(eps.Data) != eps.Shape[0]*g.X.Size() {
		var got any = "nil"
		if eps != nil {
			got = eps.Shape
		}
		failVar(t, "GumbelSinkhornVar.RsampleNoise: noise must have shape (k, %v) with k >= 1, got %v", xs, got)
		return deadSample(t)
	}
	xe := ad.Add(t.Const(eps), g.X) // X broadcast over the k samples
	if len(xs) == 3 {
		xe = ad.Reshape(xe, -1, n, n)
	}
	soft := relax.SinkhornVar(xe, g.Tau, g.Iters)
	z := ad.Scale(xe, 1/g.Tau)
	if t.Err() != nil {
		return deadSample(t)
	}
	return GumbelSinkhornVarSample{Soft: soft, Z: z, Perturbed: xe, n: n, noisy: xe.Value()}
}

func deadSample(t *ad.Tape) GumbelSinkhornVarSample {
	d := deadOrNil(t)
	return GumbelSinkhornVarSample{Soft: d, Z: d, Perturbed: d}
}

func sameInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
