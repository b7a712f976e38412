package celegans

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

// Stats holds the sufficient statistics of a recording y_0, ..., y_{T-1}
// (vectors of N neurons) for the linear-Gaussian model
// y_t = A y_{t-1} + e_t, e_t ~ N(0, eta^2 I):
//
//	Sxx = Σ_{t=1}^{T-1} y_{t-1} y_{t-1}ᵀ
//	Syx = Σ_{t=1}^{T-1} y_t y_{t-1}ᵀ
//	Syy = Σ_{t=1}^{T-1} y_t y_tᵀ
//
// and Count = T - 1 transitions. The neuron order is that of the data
// (observed order for a recording); see Canonical for reordering.
//
// The moments are N × N, so for N much above T they outgrow the recording
// itself, and the likelihood computed from them costs O(N³). NewDataStats
// keeps the recording instead (the data form): Prev and Next, N × Count
// and neuron-major, with Prev[m][t] = y_t[m] and Next[m][t] = y_{t+1}[m],
// and the moments nil. The model then evaluates ‖Next − A Prev‖² with
// sparse products, in time that grows with N·T·(candidates + degree)
// instead of N³ (see Model); MCMC's swap deltas and draws of W and the
// collapsed likelihood read the recording too (see Model.PrepareSwap).
type Stats struct {
	N     int
	Count int
	Sxx   *mat.SymDense
	Syx   *mat.Dense
	Syy   *mat.SymDense

	Prev, Next *mat.Dense // the data form (NewDataStats); nil otherwise
}

// DataForm reports whether s holds the recording (NewDataStats) rather
// than the moments.
func (s *Stats) DataForm() bool { return s.Prev != nil }

// NewDataStats returns the data form of the statistics of y, a T × N matrix
// whose row t is y_t (see Stats): the recording, neuron-major, without the
// N × N moments. T must be at least 2 and every entry finite.
func NewDataStats(y mat.Matrix) (*Stats, error) {
	if y == nil {
		return nil, fmt.Errorf("celegans: NewDataStats: nil data")
	}
	t, n := y.Dims()
	if t < 2 || n < 1 {
		return nil, fmt.Errorf("celegans: NewDataStats: need at least 2 time steps and 1 neuron, got %d x %d", t, n)
	}
	s := &Stats{N: n, Count: t - 1, Prev: mat.NewDense(n, t-1, nil), Next: mat.NewDense(n, t-1, nil)}
	prev, next := s.Prev.RawMatrix().Data, s.Next.RawMatrix().Data
	for i := 0; i < t; i++ {
		for m := 0; m < n; m++ {
			v := y.At(i, m)
			if !finite(v) {
				return nil, fmt.Errorf("celegans: NewDataStats: y[%d][%d] = %v is not finite", i, m, v)
			}
			if i < t-1 {
				prev[m*(t-1)+i] = v
			}
			if i > 0 {
				next[m*(t-1)+i-1] = v
			}
		}
	}
	return s, nil
}

// NewStats returns the statistics of y, a T x N matrix whose row t is y_t.
// T must be at least 2 and every entry finite.
func NewStats(y mat.Matrix) (*Stats, error) {
	if y == nil {
		return nil, fmt.Errorf("celegans: NewStats: nil data")
	}
	t, n := y.Dims()
	if t < 2 || n < 1 {
		return nil, fmt.Errorf("celegans: NewStats: need at least 2 time steps and 1 neuron, got %d x %d", t, n)
	}
	yd := mat.DenseCopyOf(y)
	for i := 0; i < t; i++ {
		for j, v := range yd.RawRowView(i) {
			if !finite(v) {
				return nil, fmt.Errorf("celegans: NewStats: y[%d][%d] = %v is not finite", i, j, v)
			}
		}
	}
	prev := yd.Slice(0, t-1, 0, n).(*mat.Dense)
	next := yd.Slice(1, t, 0, n).(*mat.Dense)
	s := &Stats{N: n, Count: t - 1, Sxx: &mat.SymDense{}, Syx: &mat.Dense{}, Syy: &mat.SymDense{}}
	s.Sxx.SymOuterK(1, prev.T())
	s.Syy.SymOuterK(1, next.T())
	s.Syx.Mul(next.T(), prev)
	return s, nil
}

// LogLik returns the Gaussian log likelihood of the transitions,
//
//	Σ_{t=1}^{T-1} log N(y_t; A y_{t-1}, eta^2 I)
//	  = -(tr Syy - 2 tr(A Syxᵀ) + tr(A Sxx Aᵀ)) / (2 eta^2)
//	    - Count N log(2π eta^2) / 2,
//
// for an N x N matrix a and noise variance noiseVar = eta^2 > 0. Its cost is
// one N x N x N product, independent of T.
func (s *Stats) LogLik(a mat.Matrix, noiseVar float64) (float64, error) {
	if a == nil {
		return 0, fmt.Errorf("celegans: Stats.LogLik: nil matrix")
	}
	if r, c := a.Dims(); r != s.N || c != s.N {
		return 0, fmt.Errorf("celegans: Stats.LogLik: A is %d x %d, want %d x %d", r, c, s.N, s.N)
	}
	if !(noiseVar > 0) || math.IsInf(noiseVar, 1) {
		return 0, fmt.Errorf("celegans: Stats.LogLik: noise variance must be finite and > 0, got %v", noiseVar)
	}
	n := s.N
	if s.DataForm() {
		// ‖Next − A Prev‖², O(N²·T).
		var r mat.Dense
		r.Mul(a, s.Prev)
		r.Sub(s.Next, &r)
		ss := mat.Norm(&r, 2)
		return -ss*ss/(2*noiseVar) - float64(s.Count*n)/2*math.Log(2*math.Pi*noiseVar), nil
	}
	var as mat.Dense
	as.Mul(a, s.Sxx)
	trYY, cross, quad := 0.0, 0.0, 0.0
	for i := 0; i < n; i++ {
		trYY += s.Syy.At(i, i)
		for j := 0; j < n; j++ {
			aij := a.At(i, j)
			cross += aij * s.Syx.At(i, j)
			quad += as.At(i, j) * aij
		}
	}
	return -(trYY-2*cross+quad)/(2*noiseVar) -
		float64(s.Count*n)/2*math.Log(2*math.Pi*noiseVar), nil
}

// Canonical returns the statistics reordered from observed to canonical
// order, for a recording whose observed neuron m is canonical neuron p[m]:
// the result's entry [p[m]][p[m']] is s's entry [m][m'], that is
// Pᵀ S P with P the matrix of p. Then, for any W,
//
//	s.LogLik(P W Pᵀ, eta2) == s.Canonical(p).LogLik(W, eta2),
//
// so worms can be compared, and their statistics summed, in one frame.
func (s *Stats) Canonical(p perm.Perm) (*Stats, error) {
	if len(p) != s.N {
		return nil, fmt.Errorf("celegans: Stats.Canonical: permutation has length %d, statistics have %d neurons", len(p), s.N)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("celegans: Stats.Canonical: %w", err)
	}
	n := s.N
	if s.DataForm() {
		out := &Stats{N: n, Count: s.Count, Prev: mat.NewDense(n, s.Count, nil), Next: mat.NewDense(n, s.Count, nil)}
		for m, c := range p {
			out.Prev.SetRow(c, s.Prev.RawRowView(m))
			out.Next.SetRow(c, s.Next.RawRowView(m))
		}
		return out, nil
	}
	out := &Stats{
		N: n, Count: s.Count,
		Sxx: mat.NewSymDense(n, nil),
		Syx: mat.NewDense(n, n, nil),
		Syy: mat.NewSymDense(n, nil),
	}
	for m := 0; m < n; m++ {
		for k := m; k < n; k++ {
			out.Sxx.SetSym(p[m], p[k], s.Sxx.At(m, k))
			out.Syy.SetSym(p[m], p[k], s.Syy.At(m, k))
		}
		for k := 0; k < n; k++ {
			out.Syx.Set(p[m], p[k], s.Syx.At(m, k))
		}
	}
	return out, nil
}

// SumStats returns the statistics of several recordings pooled: their
// matrices and counts added. Their log likelihoods under a common A add up
// to the pooled one's. All must have the same N.
func SumStats(stats ...*Stats) (*Stats, error) {
	if len(stats) == 0 {
		return nil, fmt.Errorf("celegans: SumStats: no statistics")
	}
	n := stats[0].N
	out := &Stats{N: n, Sxx: mat.NewSymDense(n, nil), Syx: mat.NewDense(n, n, nil), Syy: mat.NewSymDense(n, nil)}
	for k, s := range stats {
		if s == nil {
			return nil, fmt.Errorf("celegans: SumStats: statistics %d are nil", k)
		}
		if s.N != n {
			return nil, fmt.Errorf("celegans: SumStats: statistics %d have %d neurons, want %d", k, s.N, n)
		}
		if s.DataForm() {
			return nil, fmt.Errorf("celegans: SumStats: statistics %d are in the data form; pooling needs the moments (NewStats)", k)
		}
		out.Count += s.Count
		out.Sxx.AddSym(out.Sxx, s.Sxx)
		out.Syy.AddSym(out.Syy, s.Syy)
		out.Syx.Add(out.Syx, s.Syx)
	}
	return out, nil
}
