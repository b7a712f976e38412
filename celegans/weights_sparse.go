package celegans

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// SparseWeights is an N × N weight matrix stored by rows of its non-zero
// entries (compressed sparse rows), the form of W for connectomes too
// large for a dense matrix: its memory and the cost of a product with a
// vector grow with the number of edges. It implements mat.Matrix, so it can
// stand wherever a W is read entry by entry (At costs a binary search in the
// row).
type SparseWeights struct {
	n      int
	rowPtr []int
	cols   []int
	vals   []float64
}

// Dims implements mat.Matrix.
func (w *SparseWeights) Dims() (int, int) { return w.n, w.n }

// At implements mat.Matrix.
func (w *SparseWeights) At(i, j int) float64 {
	if i < 0 || i >= w.n || j < 0 || j >= w.n {
		panic(mat.ErrIndexOutOfRange)
	}
	lo, hi := w.rowPtr[i], w.rowPtr[i+1]
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := w.cols[m]; {
		case c == j:
			return w.vals[m]
		case c < j:
			lo = m + 1
		default:
			hi = m
		}
	}
	return 0
}

// T implements mat.Matrix.
func (w *SparseWeights) T() mat.Matrix { return mat.Transpose{Matrix: w} }

// NNZ returns the number of stored entries.
func (w *SparseWeights) NNZ() int { return len(w.cols) }

// mulVec sets dst = W x.
func (w *SparseWeights) mulVec(dst, x []float64) {
	for i := range w.n {
		s := 0.0
		for e := w.rowPtr[i]; e < w.rowPtr[i+1]; e++ {
			s += w.vals[e] * x[w.cols[e]]
		}
		dst[i] = s
	}
}

// mulTVec sets dst = Wᵀ x.
func (w *SparseWeights) mulTVec(dst, x []float64) {
	clear(dst)
	for i := range w.n {
		for e := w.rowPtr[i]; e < w.rowPtr[i+1]; e++ {
			dst[w.cols[e]] += w.vals[e] * x[i]
		}
	}
}

// SampleSparseWeights is SampleWeights in the sparse form, for any N: the
// same draws (one standard normal per edge, in the connectome's edge order,
// W antisymmetric), divided by factor times the spectral norm, which power
// iteration on WᵀW finds in O(edges) per iteration. For an antisymmetric W,
// a normal matrix, the spectral norm is the spectral radius that
// SampleWeights computes by a dense SVD. The iteration stops when the norm
// estimate changes by less than 1e-10 relative (at most 20,000 iterations).
func SampleSparseWeights(c *Connectome, factor float64, seed uint64) (*SparseWeights, error) {
	if c == nil {
		return nil, fmt.Errorf("celegans: SampleSparseWeights: nil connectome")
	}
	if !(factor > 0) || math.IsInf(factor, 1) {
		return nil, fmt.Errorf("celegans: SampleSparseWeights: factor must be finite and > 0, got %v", factor)
	}
	n := c.N()
	rng := rand.New(rand.NewPCG(seed, streamWeights))
	rows := make([][]int, n)
	vals := make([][]float64, n)
	for _, e := range c.EdgeList() {
		v := rng.NormFloat64()
		rows[e[0]], vals[e[0]] = append(rows[e[0]], e[1]), append(vals[e[0]], v)
		rows[e[1]], vals[e[1]] = append(rows[e[1]], e[0]), append(vals[e[1]], -v)
	}
	w := &SparseWeights{n: n, rowPtr: make([]int, n+1)}
	for i := range n {
		// Columns in increasing order, for At.
		order := make([]int, len(rows[i]))
		for a := range order {
			order[a] = a
		}
		slices.SortFunc(order, func(a, b int) int { return rows[i][a] - rows[i][b] }) // distinct columns
		for _, a := range order {
			w.cols = append(w.cols, rows[i][a])
			w.vals = append(w.vals, vals[i][a])
		}
		w.rowPtr[i+1] = len(w.cols)
	}
	if len(w.cols) == 0 {
		return w, nil
	}
	rho := w.norm2(rand.New(rand.NewPCG(seed, streamWeights+1)))
	for e := range w.vals {
		w.vals[e] /= factor * rho
	}
	return w, nil
}

// norm2 returns the spectral norm ‖W‖₂ by power iteration on WᵀW from a
// random start.
func (w *SparseWeights) norm2(rng *rand.Rand) float64 {
	v := make([]float64, w.n)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	u := make([]float64, w.n)
	prev := 0.0
	for range 20000 {
		normalize(v)
		w.mulVec(u, v)
		w.mulTVec(v, u)
		// v = WᵀW v; its component along the unit start is ‖W v‖².
		est := math.Sqrt(dot(u, u))
		if math.Abs(est-prev) <= 1e-10*est {
			return est
		}
		prev = est
	}
	return prev
}

func normalize(v []float64) {
	s := math.Sqrt(dot(v, v))
	for i := range v {
		v[i] /= s
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, x := range a {
		s += x * b[i]
	}
	return s
}
