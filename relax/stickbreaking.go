package relax

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
)

// ErrOutsideImage is wrapped by the errors of StickBreakingInverse and
// RoundingInverse when the matrix given to them is not in the image of the
// forward map, so that no preimage exists. Distributions built on these maps
// give such points zero density. Test for it with errors.Is.
var ErrOutsideImage = errors.New("matrix is outside the image of the map")

// stickBreakingTol is the tolerance StickBreakingInverse allows on the row
// and column sums of a doubly stochastic matrix and on its entries' signs:
// sums produced by StickBreaking are exact to a few ulps, and matrices
// computed elsewhere (Sinkhorn, averages) carry errors well below 1e-9.
const stickBreakingTol = 1e-9

// Flags saved by the forward pass for the adjoint: which side of the
// min/max defining each bound was active.
const (
	sbUpperRow = 1 // u_ij = r_ij (row remainder), else the column capacity c_j
	sbLowerPos = 2 // l_ij = r_ij − Σ_{k>j} c_k > 0, else l_ij = 0
)

// StickBreaking maps an unconstrained (N−1)×(N−1) matrix ψ onto the
// Birkhoff polytope of N×N doubly stochastic matrices, after Linderman et
// al. (2018), and returns X together with log |det ∂x/∂ψ|, the log-Jacobian
// of the map from ψ to the (N−1)² free entries x_ij, i, j < N−1.
//
// Entries are filled row by row, left to right. Before entry (i, j), let
// r_ij = 1 − Σ_{k<j} x_ik be the mass row i still needs and
// c_k = 1 − Σ_{m<i} x_mk the capacity column k has left. The entry must
// leave the rest of the row fillable by the remaining columns, so it lies in
// [l_ij, u_ij] with
//
//	u_ij = min(r_ij, c_j),
//	l_ij = max(0, r_ij − Σ_{k>j} c_k),
//
// and it is placed at a logistic fraction of that interval:
//
//	β_ij = σ(ψ_ij − log(N−j−1)),  x_ij = l_ij + β_ij (u_ij − l_ij).
//
// The shift log(N−j−1) maps ψ = 0 to the uniform row 1/N in the first row.
// The last entry of each row is r_i,N−1 and the last row holds the leftover
// capacities, so every row and column sums to one. Since x_ij depends on ψ
// only through ψ_ij and earlier entries, the Jacobian is triangular and
//
//	log |det J| = Σ_ij log(u_ij − l_ij) + log σ'(ψ_ij − log(N−j−1)).
//
// psi must be square, non-empty and finite. Large |ψ| push entries to their
// bounds: X stays doubly stochastic with entries in [0, 1], but once an
// interval collapses to a point (u_ij = l_ij in floating point) the
// log-Jacobian is −Inf.
func StickBreaking(psi mat.Matrix) (x *mat.Dense, logDet float64, err error) {
	n, data, err := stickBreakingInput("StickBreaking", psi)
	if err != nil {
		return nil, 0, err
	}
	N := n + 1
	out := make([]float64, N*N)
	work := make([]float64, 3*N)
	logDet = stickBreakingForward(data, n, out, work, stickBreakingTrace{})
	return mat.NewDense(N, N, out), logDet, nil
}

// StickBreakingInverse returns the (N−1)×(N−1) matrix ψ with
// StickBreaking(ψ) = x, and log |det ∂x/∂ψ| at that ψ (the value
// StickBreaking would return), for an N×N doubly stochastic x, N >= 2.
//
// Only the free entries x_ij, i, j < N−1, determine ψ:
//
//	ψ_ij = log(x_ij − l_ij) − log(u_ij − x_ij) + log(N−j−1),
//
// where, as the rows and columns sum to one, the distances to the bounds
// are sums of entries below and right of (i, j), computed without
// cancellation:
//
//	x_ij − l_ij = min(x_ij, Σ_{m>i, k>j} x_mk),
//	u_ij − x_ij = min(Σ_{k>j} x_ik, Σ_{m>i} x_mj).
//
// Row and column sums must be within 1e-9 of one and entries no less than
// −1e-9; a matrix that is not doubly stochastic, or whose free entry lies on
// an end of its interval [l_ij, u_ij] (so that ψ_ij would be infinite), gives
// an error wrapping ErrOutsideImage. Non-square, empty or non-finite input
// is an error.
func StickBreakingInverse(x mat.Matrix) (psi *mat.Dense, logDet float64, err error) {
	const fn = "StickBreakingInverse"
	if x == nil {
		return nil, 0, fmt.Errorf("relax: %s: nil matrix", fn)
	}
	N, c := x.Dims()
	if N != c {
		return nil, 0, fmt.Errorf("relax: %s: matrix is %d×%d, not square", fn, N, c)
	}
	if N < 2 {
		return nil, 0, fmt.Errorf("relax: %s: matrix is %d×%d, need N >= 2", fn, N, N)
	}
	xs := make([]float64, N*N)
	for i := 0; i < N; i++ {
		for j := 0; j < N; j++ {
			v := x.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, 0, fmt.Errorf("relax: %s: entry (%d, %d) is %v", fn, i, j, v)
			}
			if v < -stickBreakingTol {
				return nil, 0, fmt.Errorf("relax: %s: entry (%d, %d) = %v is negative: %w", fn, i, j, v, ErrOutsideImage)
			}
			xs[i*N+j] = v
		}
	}
	for i := 0; i < N; i++ {
		var rs, cs float64
		for j := 0; j < N; j++ {
			rs += xs[i*N+j]
			cs += xs[j*N+i]
		}
		if math.Abs(rs-1) > stickBreakingTol {
			return nil, 0, fmt.Errorf("relax: %s: row %d sums to %v, not 1: %w", fn, i, rs, ErrOutsideImage)
		}
		if math.Abs(cs-1) > stickBreakingTol {
			return nil, 0, fmt.Errorf("relax: %s: column %d sums to %v, not 1: %w", fn, i, cs, ErrOutsideImage)
		}
	}

	// Slacks x − l and u − x from sums below and to the right (see above),
	// accumulated from the bottom row up.
	n := N - 1
	out := make([]float64, n*n)
	below := make([]float64, N) // Σ_{m>i} x_mk
	block := make([]float64, N) // Σ_{m>i, k>j} x_mk
	for i := N - 1; i >= 0; i-- {
		if i < n {
			var right float64 // Σ_{k>j} x_ik
			for j := N - 1; j >= 0; j-- {
				if j < n {
					v := xs[i*N+j]
					lo, hi := min(v, block[j]), min(right, below[j])
					if !(lo > 0 && hi > 0) {
						return nil, 0, fmt.Errorf("relax: %s: entry (%d, %d) = %v is not strictly inside its interval [%v, %v]: %w",
							fn, i, j, v, v-lo, v+hi, ErrOutsideImage)
					}
					z := math.Log(lo) - math.Log(hi)
					out[i*n+j] = z + math.Log(float64(N-j-1))
					logDet += math.Log(lo+hi) + logSigmoidPrime(z)
				}
				right += xs[i*N+j]
			}
		}
		// Fold row i into the sums seen by the rows above it.
		var right float64
		for j := N - 1; j >= 0; j-- {
			block[j] += right
			right += xs[i*N+j]
			below[j] += xs[i*N+j]
		}
	}
	return mat.NewDense(n, n, out), logDet, nil
}

// StickBreakingVar is StickBreaking on a tape: psi has shape (N−1, N−1) or
// (B, N−1, N−1) for a batch; x has shape (N, N) or (B, N, N) and logDet is a
// scalar or has shape (B). Both are differentiable in psi, through a fused
// kernel whose adjoint costs O(N²) per matrix, like the forward pass.
//
// Invalid input (wrong rank, non-square or empty matrices, non-finite
// values) is recorded on the tape, and both results are its dead Var. A nil
// psi gives nil results.
func StickBreakingVar(psi *ad.Var) (x, logDet *ad.Var) {
	const fn = "StickBreakingVar"
	if psi == nil {
		return nil, nil
	}
	t := psi.Tape()
	if t.Err() != nil {
		return stickBreakingDead(t)
	}
	shape := psi.Shape()
	batch, n, ok := squareBatch(shape)
	if !ok {
		t.Fail(fmt.Errorf("relax: %s: psi has shape %v, want (N−1, N−1) or (B, N−1, N−1) with N−1 >= 1", fn, shape))
		return stickBreakingDead(t)
	}
	vals := psi.Value()
	for k, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fail(fmt.Errorf("relax: %s: psi element %d is %v", fn, k, v))
			return stickBreakingDead(t)
		}
	}

	N := n + 1
	xVal := t.Alloc(batch * N * N)
	ldVal := t.Alloc(batch)
	work := t.Alloc(3 * N)
	m := n * n
	var tr stickBreakingTrace
	if psi.RequiresGrad() {
		buf := t.Alloc(4 * batch * m)
		tr = stickBreakingTrace{buf[:batch*m], buf[batch*m : 2*batch*m], buf[2*batch*m : 3*batch*m], buf[3*batch*m:]}
	}
	for b := 0; b < batch; b++ {
		ldVal[b] = stickBreakingForward(vals[b*m:(b+1)*m], n, xVal[b*N*N:(b+1)*N*N], work, tr.item(b, m))
	}

	xShape, ldShape := []int{N, N}, []int{}
	if len(shape) == 3 {
		xShape, ldShape = []int{batch, N, N}, []int{batch}
	}
	inputs := []*ad.Var{psi}
	x = t.Custom(xShape, xVal, inputs, func(gOut []float64, gIn [][]float64) {
		if gIn[0] == nil {
			return
		}
		w := t.Alloc(3 * n)
		for b := 0; b < batch; b++ {
			stickBreakingBackward(n, gOut[b*N*N:(b+1)*N*N], 0, tr.item(b, m), gIn[0][b*m:(b+1)*m], w)
		}
	})
	logDet = t.Custom(ldShape, ldVal, inputs, func(gOut []float64, gIn [][]float64) {
		if gIn[0] == nil {
			return
		}
		w := t.Alloc(3 * n)
		for b := 0; b < batch; b++ {
			stickBreakingBackward(n, nil, gOut[b], tr.item(b, m), gIn[0][b*m:(b+1)*m], w)
		}
	})
	return x, logDet
}

// stickBreakingDead returns the tape's dead Var twice; t must hold an
// error, so that Custom refuses to record anything.
func stickBreakingDead(t *ad.Tape) (*ad.Var, *ad.Var) {
	d := t.Custom(nil, []float64{math.NaN()}, nil, nil)
	return d, d
}

// stickBreakingInput validates psi and returns n = N−1 and its entries,
// row-major.
func stickBreakingInput(fn string, psi mat.Matrix) (int, []float64, error) {
	if psi == nil {
		return 0, nil, fmt.Errorf("relax: %s: nil matrix", fn)
	}
	r, c := psi.Dims()
	if r != c {
		return 0, nil, fmt.Errorf("relax: %s: psi is %d×%d, not square", fn, r, c)
	}
	if r == 0 {
		return 0, nil, fmt.Errorf("relax: %s: psi is empty, need (N−1)×(N−1) with N >= 2", fn)
	}
	data := make([]float64, r*r)
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			v := psi.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, nil, fmt.Errorf("relax: %s: psi entry (%d, %d) is %v", fn, i, j, v)
			}
			data[i*r+j] = v
		}
	}
	return r, data, nil
}

// stickBreakingGap returns u − l for remaining row mass r, column capacity
// c and remaining capacity suf = Σ_{k>j} c_k to the right, written as the
// minimum of the four differences so that no cancellation of r against
// itself occurs, and clamped at 0.
func stickBreakingGap(r, c, suf float64) float64 {
	// min(r, c) − max(0, r − suf) = min(r, c, suf, c + suf − r).
	return max(0, min(r, c, suf, c+suf-r))
}

// logSigmoidPrime returns log σ'(z) = log σ(z) + log σ(−z), stable for
// large |z|.
func logSigmoidPrime(z float64) float64 {
	a := math.Abs(z)
	return -a - 2*math.Log1p(math.Exp(-a))
}

// stickBreakingTrace holds, per free entry of a forward pass, what the
// adjoint needs: β = σ(z), 1 − β = σ(−z) (each accurate, also near 0), the
// interval width u − l and the flags of the active bounds. The zero value
// records nothing.
type stickBreakingTrace struct {
	beta, beta1, gap, flags []float64
}

// item returns the trace of matrix b of a batch of m-entry matrices.
func (tr stickBreakingTrace) item(b, m int) stickBreakingTrace {
	if tr.beta == nil {
		return tr
	}
	s := func(v []float64) []float64 { return v[b*m : (b+1)*m] }
	return stickBreakingTrace{s(tr.beta), s(tr.beta1), s(tr.gap), s(tr.flags)}
}

// stickBreakingForward fills x (N×N, row-major, N = n+1) from psi (n×n) and
// returns log |det J|. work has length >= 3N. It fills tr unless tr is the
// zero trace.
func stickBreakingForward(psi []float64, n int, x, work []float64, tr stickBreakingTrace) float64 {
	N := n + 1
	col, suf, shift := work[:N], work[N:2*N], work[2*N:3*N]
	for k := range col {
		col[k] = 1
	}
	for j := 0; j < n; j++ {
		shift[j] = math.Log(float64(N - j - 1))
	}
	var logDet float64
	for i := 0; i < n; i++ {
		var s float64
		for j := N - 1; j >= 0; j-- {
			suf[j] = s
			s += col[j]
		}
		row := x[i*N : (i+1)*N]
		r := 1.0
		for j := 0; j < n; j++ {
			zij := psi[i*n+j] - shift[j]
			// σ(z) and σ(−z) from one exponential.
			e := math.Exp(-math.Abs(zij))
			lo, hi := e/(1+e), 1/(1+e) // σ(−|z|), σ(|z|)
			b, b1 := hi, lo
			if zij < 0 {
				b, b1 = lo, hi
			}
			c := col[j]
			var f float64
			u := c
			if r <= c {
				u = r
				f += sbUpperRow
			}
			var l float64
			if d := r - suf[j]; d > 0 {
				l = d
				f += sbLowerPos
			}
			g := stickBreakingGap(r, c, suf[j])
			// r − l and c − u, the slack on each side, without cancellation.
			rMinusL := r
			if f >= sbLowerPos {
				rMinusL = suf[j]
			}
			var v, rNext, cNext float64
			if zij < 0 {
				// x = l + β g; accurate when β is small.
				bg := b * g
				v = l + bg
				rNext = rMinusL - bg
				cNext = c - v
			} else {
				// x = u − (1−β) g; accurate when β is near 1, where the
				// remainders r − x and c − x are small.
				bg := b1 * g
				v = u - bg
				if f == sbUpperRow || f == sbUpperRow+sbLowerPos {
					rNext, cNext = bg, (c-r)+bg
				} else {
					rNext, cNext = (r-c)+bg, bg
				}
			}
			v = max(0, v)
			row[j] = v
			r = max(0, rNext)
			col[j] = max(0, cNext)
			// log σ'(z) = −|z| − 2 log(1 + e^−|z|).
			logDet += math.Log(g) - math.Abs(zij) - 2*math.Log1p(e)
			if tr.beta != nil {
				k := i*n + j
				tr.beta[k], tr.beta1[k], tr.gap[k], tr.flags[k] = b, b1, g, f
			}
		}
		row[n] = r
		col[n] = max(0, col[n]-r)
	}
	copy(x[n*N:], col)
	return logDet
}

// stickBreakingBackward adds to gPsi (n×n) the adjoint of psi, given the
// adjoint gX (N×N, or nil for none) of x and gLD of log |det J|, using the
// record of stickBreakingForward. work has length >= 3n.
//
// Every quantity of the forward pass is a function of the free entries
// x_mk: the last column and row are affine in them, r_ij and c_j are sums
// along row i and column j, and (using Σ_k c_k = N − i)
//
//	r_ij − Σ_{k>j} c_k = i + j + 2 − N − Σ_{m<=i, k<=j, (m,k)≠(i,j)} x_mk,
//
// a sum over the rectangle above-left of (i, j). Visiting entries in reverse
// order, the adjoint of x_mk is complete when it is reached, and the
// contributions of later u_ij and l_ij are kept as running row, column and
// rectangle sums, so the sweep is O(n²).
func stickBreakingBackward(n int, gX []float64, gLD float64, tr stickBreakingTrace, gPsi, work []float64) {
	N := n + 1
	rectCol := work[:n]   // Σ_{i'>i, j'>=j} l̄_i'j'
	colU := work[n : 2*n] // Σ_{i'>i} ū_i'j over column-capacity upper bounds
	rowSuf := work[2*n : 3*n]
	clear(work[:3*n])
	for i := n - 1; i >= 0; i-- {
		var rectRow, rowU float64 // Σ_{j'>j} l̄_ij', Σ_{j'>j} ū_ij' (row bounds)
		for j := n - 1; j >= 0; j-- {
			k := i*n + j
			var xb float64
			if gX != nil {
				xb = gX[i*N+j] - gX[n*N+j] - gX[i*N+n] + gX[n*N+n]
			}
			xb -= rectCol[j] + rectRow + rowU + colU[j]
			b, b1, g := tr.beta[k], tr.beta1[k], tr.gap[k]
			gPsi[k] += xb*g*b*b1 + gLD*(b1-b)
			ub, lb := xb*b, xb*b1
			if gLD != 0 {
				ub += gLD / g
				lb -= gLD / g
			}
			f := tr.flags[k]
			if f == sbUpperRow || f == sbUpperRow+sbLowerPos {
				rowU += ub
			} else {
				colU[j] += ub
			}
			if f >= sbLowerPos {
				rectRow += lb
			}
			rowSuf[j] = rectRow
		}
		for j := 0; j < n; j++ {
			rectCol[j] += rowSuf[j]
		}
	}
}
