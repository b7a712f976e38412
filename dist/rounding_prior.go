package dist

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
)

// RoundingPrior is the prior Linderman et al. (2018) pair with Rounding for
// an N×N relaxed permutation P̃: entries are independent, each a mixture of
// two Gaussians with standard deviation s = Std, around 0 with weight
// (N−1)/N and around 1 with weight 1/N, the frequencies of zeros and ones in
// a permutation matrix:
//
//	log p(P̃) = Σ_ij log[ (N−1)/N · N(p̃_ij; 0, s²) + 1/N · N(p̃_ij; 1, s²) ].
//
// It is a density on all of R^(N×N) and does not itself favour
// permutations over other 0-1 matrices; with small s it pulls the entries
// of a rounded sample toward {0, 1}. Std must be finite and > 0 (the paper
// uses values around 0.1 to 0.3).
type RoundingPrior struct {
	Std float64
}

// Validate returns an error if Std is not finite and > 0.
func (p RoundingPrior) Validate() error {
	if !(p.Std > 0) || math.IsInf(p.Std, 1) {
		return fmt.Errorf("dist: RoundingPrior: Std must be finite and > 0, got %v", p.Std)
	}
	return nil
}

// roundingPriorEntry returns the log density of one entry x of an N×N
// matrix and its derivative in x.
func roundingPriorEntry(x, s, logW0, logW1 float64) (lp, dlp float64) {
	a := logW0 - 0.5*(x/s)*(x/s)
	b := logW1 - 0.5*((x-1)/s)*((x-1)/s)
	m := max(a, b)
	ea, eb := math.Exp(a-m), math.Exp(b-m)
	sum := ea + eb
	lp = m + math.Log(sum) - math.Log(s) - logSqrt2Pi
	// Responsibility-weighted pull toward each centre.
	dlp = -((ea/sum)*x + (eb/sum)*(x-1)) / (s * s)
	return lp, dlp
}

// roundingPriorWeights returns log((N−1)/N) and log(1/N).
func roundingPriorWeights(n int) (float64, float64) {
	fn := float64(n)
	return math.Log((fn - 1) / fn), -math.Log(fn)
}

// LogProb returns log p(x) for a square, non-empty, finite matrix x.
func (p RoundingPrior) LogProb(x mat.Matrix) (float64, error) {
	if err := p.Validate(); err != nil {
		return math.NaN(), err
	}
	if x == nil {
		return math.NaN(), fmt.Errorf("dist: RoundingPrior.LogProb: nil matrix")
	}
	r, c := x.Dims()
	if r != c || r == 0 {
		return math.NaN(), fmt.Errorf("dist: RoundingPrior.LogProb: x is %d×%d, want a non-empty square matrix", r, c)
	}
	lw0, lw1 := roundingPriorWeights(r)
	var lp float64
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			v := x.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return math.NaN(), fmt.Errorf("dist: RoundingPrior.LogProb: entry (%d, %d) is %v", i, j, v)
			}
			l, _ := roundingPriorEntry(v, p.Std, lw0, lw1)
			lp += l
		}
	}
	return lp, nil
}

// Rand draws an n×n matrix of independent entries from the mixture, using
// rng (nil: the global source): per entry, first the component (1 with
// probability 1/n), then the Gaussian noise.
func (p RoundingPrior) Rand(n int, rng *rand.Rand) (*mat.Dense, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, fmt.Errorf("dist: RoundingPrior.Rand: size must be >= 1, got %d", n)
	}
	u := rand.Float64
	if rng != nil {
		u = rng.Float64
	}
	out := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var centre float64
			if u() < 1/float64(n) {
				centre = 1
			}
			out.Set(i, j, centre+p.Std*stdNormal(rng))
		}
	}
	return out, nil
}

// LogProbVar returns log p(x) for x of shape (N, N), or (…, N, N) for a
// batch, with one value per matrix (a scalar for a single matrix),
// differentiable in x. Invalid input is recorded on the tape.
func (p RoundingPrior) LogProbVar(x *ad.Var) *ad.Var {
	const fn = "RoundingPrior.LogProbVar"
	if x == nil {
		return nil
	}
	t := x.Tape()
	if t.Err() != nil {
		return deadOrNil(t)
	}
	if err := p.Validate(); err != nil {
		t.Fail(err)
		return deadOrNil(t)
	}
	s := x.Shape()
	if len(s) < 2 || s[len(s)-1] != s[len(s)-2] || s[len(s)-1] == 0 {
		return failVar(t, "%s: x has shape %v, want (…, N, N) with N >= 1", fn, s)
	}
	n := s[len(s)-1]
	vals := x.Value()
	for k, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return failVar(t, "%s: x element %d is %v", fn, k, v)
		}
	}
	lw0, lw1 := roundingPriorWeights(n)
	std := p.Std
	m := n * n
	out := t.Alloc(len(vals) / m)
	for b := range out {
		var lp float64
		for _, v := range vals[b*m : (b+1)*m] {
			l, _ := roundingPriorEntry(v, std, lw0, lw1)
			lp += l
		}
		out[b] = lp
	}
	return t.Custom(s[:len(s)-2], out, []*ad.Var{x}, func(gOut []float64, gIn [][]float64) {
		g := gIn[0]
		if g == nil {
			return
		}
		for k, v := range vals {
			_, d := roundingPriorEntry(v, std, lw0, lw1)
			g[k] += gOut[k/m] * d
		}
	})
}

// LogProbSparseVar records the log density of K batches of N × N matrices
// stored sparsely: x has shape (K, E) and holds E entries of each batch
// (any E entries, say the candidates of B matrices), and the batch's other
// zeros entries are 0. It returns the (K) totals
//
//	Σ_e log p(x[k][e]) + zeros · log p(0),
//
// the sum LogProbVar gives over the batch's matrices written out densely,
// at O(K·E) cost. Gradients flow to x.
func (p RoundingPrior) LogProbSparseVar(x *ad.Var, n, zeros int) *ad.Var {
	const fn = "RoundingPrior.LogProbSparseVar"
	if x == nil {
		return nil
	}
	t := x.Tape()
	if t.Err() != nil {
		return deadOrNil(t)
	}
	if err := p.Validate(); err != nil {
		t.Fail(err)
		return deadOrNil(t)
	}
	s := x.Shape()
	switch {
	case len(s) != 2 || s[0] < 1:
		return failVar(t, "%s: x has shape %v, want (K, E) with K >= 1", fn, s)
	case n < 1 || zeros < 0:
		return failVar(t, "%s: need N >= 1 and zeros >= 0, got %d and %d", fn, n, zeros)
	}
	vals := x.Value()
	for k, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return failVar(t, "%s: x element %d is %v", fn, k, v)
		}
	}
	lw0, lw1 := roundingPriorWeights(n)
	std := p.Std
	l0, _ := roundingPriorEntry(0, std, lw0, lw1)
	e := s[1]
	out := t.Alloc(s[0])
	for k := range out {
		lp := float64(zeros) * l0
		for _, v := range vals[k*e : (k+1)*e] {
			l, _ := roundingPriorEntry(v, std, lw0, lw1)
			lp += l
		}
		out[k] = lp
	}
	return t.Custom([]int{s[0]}, out, []*ad.Var{x}, func(gOut []float64, gIn [][]float64) {
		g := gIn[0]
		if g == nil || e == 0 {
			return
		}
		for k, v := range vals {
			_, d := roundingPriorEntry(v, std, lw0, lw1)
			g[k] += gOut[k/e] * d
		}
	})
}
