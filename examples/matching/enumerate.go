package main

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

// MaxEnumerate is the largest n that Enumerate accepts: 10! is 3.6 million
// permutations, a few seconds of work.
const MaxEnumerate = 10

// Exact is a distribution over permutations computed by enumeration.
type Exact struct {
	// Marginals[i][j] = P(p(i) = j), an n x n doubly stochastic matrix.
	Marginals *mat.Dense
	// MAP is the most probable permutation (the first in lexicographic
	// order if several tie) and MAPLogDensity its unnormalized log density.
	MAP           perm.Perm
	MAPLogDensity float64
	// LogZ is log Σ_p exp(logf(p)), the log normaliser. For
	// Problem.Exact it is the log evidence log p(Y).
	LogZ float64
	// Count is the number of permutations enumerated (admitted by the mask).
	Count int
}

// Enumerate computes the distribution p(P) ∝ exp(logf(P)) over the
// permutations of size n admitted by mask (all permutations if mask is nil)
// by visiting every one of them. logf may return -Inf (zero probability) but
// not NaN or +Inf; it must not modify or retain its argument. n must be in
// [1, MaxEnumerate].
func Enumerate(n int, mask *perm.Mask, logf func(perm.Perm) float64) (*Exact, error) {
	switch {
	case n < 1 || n > MaxEnumerate:
		return nil, fmt.Errorf("matching: Enumerate: n must be in [1, %d], got %d", MaxEnumerate, n)
	case logf == nil:
		return nil, errors.New("matching: Enumerate: nil log density")
	case mask != nil && mask.Size() != n:
		return nil, fmt.Errorf("matching: Enumerate: mask is %d x %d, want %d x %d", mask.Size(), mask.Size(), n, n)
	}

	// Pass 1 stores every log density, in visiting order, and finds the MAP.
	var vals []float64
	best := math.Inf(-1)
	var mapPerm perm.Perm
	var bad error
	visit(n, mask, func(p perm.Perm) {
		v := logf(p)
		if bad == nil && (math.IsNaN(v) || math.IsInf(v, 1)) {
			bad = fmt.Errorf("matching: Enumerate: log density of %v is %v", []int(p), v)
		}
		if v > best {
			best = v
			mapPerm = p.Clone()
		}
		vals = append(vals, v)
	})
	switch {
	case bad != nil:
		return nil, bad
	case len(vals) == 0:
		return nil, errors.New("matching: Enumerate: the mask admits no permutation")
	case math.IsInf(best, -1):
		return nil, errors.New("matching: Enumerate: every permutation has zero density")
	}

	// Pass 2 visits the permutations in the same order and accumulates the
	// weights exp(v - max), which cannot overflow.
	marg := mat.NewDense(n, n, nil)
	raw := marg.RawMatrix()
	z := 0.0
	k := 0
	visit(n, mask, func(p perm.Perm) {
		w := math.Exp(vals[k] - best)
		k++
		z += w
		for i, j := range p {
			raw.Data[i*raw.Stride+j] += w
		}
	})
	marg.Scale(1/z, marg)
	return &Exact{
		Marginals:     marg,
		MAP:           mapPerm,
		MAPLogDensity: best,
		LogZ:          best + math.Log(z),
		Count:         len(vals),
	}, nil
}

// Exact returns the exact posterior of the problem by enumeration; LogZ is
// the log evidence log p(Y). The problem size must be at most MaxEnumerate.
func (pr *Problem) Exact() (*Exact, error) {
	return Enumerate(pr.N(), pr.Mask, pr.LogDensity)
}

// visit calls fn on every permutation of size n admitted by mask, in
// lexicographic order, by depth-first search that prunes disallowed
// columns. fn receives the same buffer every time.
func visit(n int, mask *perm.Mask, fn func(perm.Perm)) {
	p := make(perm.Perm, n)
	used := make([]bool, n)
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			fn(p)
			return
		}
		for j := range n {
			if used[j] || (mask != nil && !mask.Allowed(i, j)) {
				continue
			}
			used[j] = true
			p[i] = j
			rec(i + 1)
			used[j] = false
		}
	}
	rec(0)
}
