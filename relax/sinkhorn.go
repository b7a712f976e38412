package relax

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"
)

// ErrNotConverged is wrapped by the errors of SinkhornTol and
// SinkhornImplicitVar when the row sums did not reach the tolerance within
// the allowed iterations.
var ErrNotConverged = errors.New("tolerance not reached")

// Sinkhorn returns the truncated Sinkhorn operator S^L(X/τ) with L = iters:
// exp(X/τ) normalised iters times, rows then columns, so that the result has
// columns summing to one (to rounding) and rows summing to one up to the
// truncation error. It is computed in the log domain and neither overflows
// nor underflows to NaN for any finite X/τ (tested for τ in [1e-4, 1e3] and
// |X| up to 1e6). X/τ is formed as X·(1/τ).
//
// X must be square and non-empty. Entries equal to −Inf are forbidden: their
// probability is exactly zero. NaN or +Inf entries, a row or column with no
// finite entry, τ ≤ 0, τ = +Inf or NaN, τ so small that 1/τ or X/τ
// overflows, and iters < 1 are errors.
func Sinkhorn(x mat.Matrix, tau float64, iters int) (*mat.Dense, error) {
	return sinkhornDense("Sinkhorn", x, tau, iters, false)
}

// LogSinkhorn returns log S^L(X/τ), the logarithm of Sinkhorn's result,
// computed without forming S, so entries far below the smallest float64 keep
// their value. Forbidden (−Inf) entries of X give −Inf.
func LogSinkhorn(x mat.Matrix, tau float64, iters int) (*mat.Dense, error) {
	return sinkhornDense("LogSinkhorn", x, tau, iters, true)
}

// SinkhornBatch returns Sinkhorn(xs[k], tau, iters) for every k, computed in
// parallel on at most GOMAXPROCS goroutines. The matrices may differ in
// size. The results are identical to one-by-one calls; the first invalid
// matrix (in index order) makes the call fail.
func SinkhornBatch(xs []mat.Matrix, tau float64, iters int) ([]*mat.Dense, error) {
	const fn = "SinkhornBatch"
	if err := checkTauIters(tau, iters); err != nil {
		return nil, fmt.Errorf("relax: %s: %w", fn, err)
	}
	data := make([][]float64, len(xs))
	ns := make([]int, len(xs))
	for k, x := range xs {
		d, n, err := denseData(x)
		if err != nil {
			return nil, fmt.Errorf("relax: %s: matrix %d: %w", fn, k, err)
		}
		data[k], ns[k] = d, n
	}
	out := make([]*mat.Dense, len(xs))
	errs := make([]error, len(xs))
	work := 0
	for _, n := range ns {
		work = max(work, 4*iters*n*n)
	}
	sinkParallel(len(xs), work, func(k int) {
		out[k], _, errs[k] = sinkhornRaw(data[k], ns[k], tau, iters, 0, false)
	})
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("relax: %s: matrix %d: %w", fn, k, err)
		}
	}
	return out, nil
}

// SinkhornTol is Sinkhorn with a stopping rule: it performs row-then-column
// normalisations until every row sum is within tol of one (the column sums
// are one after each column normalisation), but at most maxIters of them. It
// returns the result and the number of iterations performed. If the rule was
// not met it still returns the result after maxIters iterations, with an
// error wrapping ErrNotConverged. tol must be > 0.
//
// Convergence is linear with a rate that degrades as τ decreases; small τ
// may need thousands of iterations.
func SinkhornTol(x mat.Matrix, tau, tol float64, maxIters int) (*mat.Dense, int, error) {
	const fn = "SinkhornTol"
	if !(tol > 0) {
		return nil, 0, fmt.Errorf("relax: %s: tol must be > 0, got %g", fn, tol)
	}
	if err := checkTauIters(tau, maxIters); err != nil {
		return nil, 0, fmt.Errorf("relax: %s: %w", fn, err)
	}
	d, n, err := denseData(x)
	if err != nil {
		return nil, 0, fmt.Errorf("relax: %s: %w", fn, err)
	}
	s, used, err := sinkhornRaw(d, n, tau, maxIters, tol, false)
	if err != nil {
		return nil, 0, fmt.Errorf("relax: %s: %w", fn, err)
	}
	if used == maxIters {
		w := sinkRowSumError(s)
		if w > tol {
			return s, used, fmt.Errorf("relax: %s: %w after %d iterations: max |row sum - 1| = %g > %g",
				fn, ErrNotConverged, used, w, tol)
		}
	}
	return s, used, nil
}

// sinkRowSumError returns max_i |Σ_j s_ij − 1|.
func sinkRowSumError(s *mat.Dense) float64 {
	n, _ := s.Dims()
	e := 0.0
	for i := 0; i < n; i++ {
		sum := 0.0
		for _, v := range s.RawRowView(i) {
			sum += v
		}
		e = max(e, math.Abs(sum-1))
	}
	return e
}

func sinkhornDense(fn string, x mat.Matrix, tau float64, iters int, logOut bool) (*mat.Dense, error) {
	if err := checkTauIters(tau, iters); err != nil {
		return nil, fmt.Errorf("relax: %s: %w", fn, err)
	}
	d, n, err := denseData(x)
	if err != nil {
		return nil, fmt.Errorf("relax: %s: %w", fn, err)
	}
	s, _, err := sinkhornRaw(d, n, tau, iters, 0, logOut)
	if err != nil {
		return nil, fmt.Errorf("relax: %s: %w", fn, err)
	}
	return s, nil
}

// sinkhornRaw runs the operator on the row-major n×n data (which it keeps
// as input) and returns the result in a new matrix, with the iterations
// performed.
func sinkhornRaw(d []float64, n int, tau float64, iters int, tol float64, logOut bool) (*mat.Dense, int, error) {
	if err := sinkCheck(d, n, tau); err != nil {
		return nil, 0, err
	}
	// The work area comes from a pool: its kernel alone is as large as
	// the result, and allocating it per call costs as much as the
	// iterations themselves at moderate n (zeroing plus garbage
	// collection). Nothing in it needs to start zeroed.
	need := n*n + 2*iters*n + 6*n
	p, _ := sinkSlabs.Get().(*[]float64)
	if p == nil || cap(*p) < need {
		p = new([]float64)
		*p = make([]float64, need)
	}
	defer sinkSlabs.Put(p)
	slab := (*p)[:need]
	alloc := func(k int) []float64 {
		b := slab[:k:k]
		slab = slab[k:]
		return b
	}
	w := newSinkWork(alloc, d, n, tau, iters)
	used := w.run(iters, tol)
	out := make([]float64, n*n)
	alpha, beta := alloc(n), alloc(n)
	if logOut {
		w.logOut(out, alpha, beta)
	} else {
		w.expOut(out, alpha, beta)
	}
	return mat.NewDense(n, n, out), used, nil
}

// sinkSlabs recycles the work areas of sinkhornRaw (*[]float64).
var sinkSlabs sync.Pool

// denseData returns the entries of a square, non-empty matrix as a
// row-major slice, which the caller must only read: the matrix's own
// storage when it is contiguous, a copy otherwise.
func denseData(x mat.Matrix) ([]float64, int, error) {
	if d, ok := x.(*mat.Dense); x == nil || ok && d == nil {
		return nil, 0, errors.New("nil matrix")
	}
	r, c := x.Dims()
	if r != c {
		return nil, 0, fmt.Errorf("matrix must be square, got %d×%d", r, c)
	}
	if r == 0 {
		return nil, 0, errors.New("empty matrix")
	}
	n := r
	if rm, ok := x.(mat.RawMatrixer); ok {
		raw := rm.RawMatrix()
		if raw.Stride == n {
			return raw.Data[:n*n], n, nil
		}
		d := make([]float64, n*n)
		for i := 0; i < n; i++ {
			copy(d[i*n:(i+1)*n], raw.Data[i*raw.Stride:i*raw.Stride+n])
		}
		return d, n, nil
	}
	d := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			d[i*n+j] = x.At(i, j)
		}
	}
	return d, n, nil
}
