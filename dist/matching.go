package dist

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// GumbelMatching is the Gumbel-Matching distribution GM(X) of the seed
// paper over permutations of N items: a sample is
//
//	P = M(X + ε),  ε_ij independent standard Gumbel,
//
// where M is the matching operator (relax.Matching), the permutation
// maximising <P, X + ε>. Sampling is exact; the distribution has no
// tractable mass function. It is the perturb-and-MAP analogue of the
// Gumbel-max trick, but with only N² perturbations for N! permutations it is
// not the Gibbs distribution P ∝ exp(<P, X>) except in special cases; it
// concentrates on M(X) as X grows (and is uniform at X = 0 by symmetry).
//
// X is an N×N matrix; -Inf entries forbid a pair (a candidate mask) and stay
// forbidden after perturbation. NaN and +Inf entries are errors.
type GumbelMatching struct {
	X mat.Matrix
}

// validMatrix checks that x is a non-nil square matrix without NaN or +Inf
// and returns its size.
func validMatrix(fn string, x mat.Matrix) (int, error) {
	if x == nil {
		return 0, fmt.Errorf("dist: %s: nil matrix", fn)
	}
	r, c := x.Dims()
	if r != c {
		return 0, fmt.Errorf("dist: %s: matrix must be square, got %d×%d", fn, r, c)
	}
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			if v := x.At(i, j); math.IsNaN(v) || math.IsInf(v, 1) {
				return 0, fmt.Errorf("dist: %s: entry (%d, %d) is %v", fn, i, j, v)
			}
		}
	}
	return r, nil
}

// perturb returns X + ε as a new n×n matrix (n >= 1), drawing ε row-major
// from rng.
func perturb(x mat.Matrix, n int, rng *rand.Rand) *mat.Dense {
	d := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			d[i*n+j] = x.At(i, j) + StandardGumbel(rng)
		}
	}
	return mat.NewDense(n, n, d)
}

// Validate returns an error if X is not a square matrix free of NaN and
// +Inf. (A mask that admits no permutation is only found by Rand.)
func (g GumbelMatching) Validate() error {
	_, err := validMatrix("GumbelMatching", g.X)
	return err
}

// Rand draws one permutation M(X + ε), taking N² Gumbel draws from rng (nil:
// the global source) in row-major order.
func (g GumbelMatching) Rand(rng *rand.Rand) (perm.Perm, error) {
	n, err := validMatrix("GumbelMatching", g.X)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return perm.Perm{}, nil
	}
	p, err := relax.Matching(perturb(g.X, n, rng))
	if err != nil {
		return nil, fmt.Errorf("dist: GumbelMatching: %w", err)
	}
	return p, nil
}

// RandBatch draws k independent permutations. The noise of every sample is
// drawn first, sample after sample, from rng (so the result equals k calls
// of Rand on the same rng); the k matchings are then solved in parallel by
// relax.MatchingBatch, which does not change the result whatever GOMAXPROCS.
func (g GumbelMatching) RandBatch(k int, rng *rand.Rand) ([]perm.Perm, error) {
	n, err := validMatrix("GumbelMatching", g.X)
	if err != nil {
		return nil, err
	}
	if k < 0 {
		return nil, fmt.Errorf("dist: GumbelMatching: RandBatch: k must be >= 0, got %d", k)
	}
	out := make([]perm.Perm, k)
	if n == 0 {
		for i := range out {
			out[i] = perm.Perm{}
		}
		return out, nil
	}
	xs := make([]mat.Matrix, k)
	for s := range xs {
		xs[s] = perturb(g.X, n, rng)
	}
	ps, err := relax.MatchingBatch(xs)
	if err != nil {
		return nil, fmt.Errorf("dist: GumbelMatching: %w", err)
	}
	return ps, nil
}
