package relax

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
)

// Round returns the permutation whose matrix P is nearest to psi in
// Frobenius norm. Since ‖P − Ψ‖² = N − 2⟨P, Ψ⟩ + ‖Ψ‖², this is the
// permutation maximising ⟨P, Ψ⟩, found by Matching. psi must be square and
// finite.
func Round(psi mat.Matrix) (perm.Perm, error) {
	return roundMasked("Round", psi, nil)
}

// RoundMasked is Round over the permutations allowed by the mask (nil
// allows all): the allowed permutation nearest to psi. It returns an error
// wrapping ErrInfeasible when the mask admits no permutation.
func RoundMasked(psi mat.Matrix, allowed *perm.Mask) (perm.Perm, error) {
	return roundMasked("RoundMasked", psi, allowed)
}

func roundMasked(fn string, psi mat.Matrix, allowed *perm.Mask) (perm.Perm, error) {
	n, data, err := roundingInput(fn, psi, allowed)
	if err != nil {
		return nil, err
	}
	var m Matcher
	p, err := m.SolveRaw(nil, n, data, allowed)
	if err != nil {
		return nil, fmt.Errorf("relax: %s: %w", fn, err)
	}
	return p, nil
}

// Rounding is the rounding map of Linderman et al. (2018) toward the
// permutations allowed by the mask (nil allows all): with P = round(Ψ) the
// nearest allowed permutation matrix (see RoundMasked),
//
//	P̃ = τ Ψ + (1 − τ) P,  0 < τ <= 1.
//
// It returns P̃ and the permutation of P.
//
// P̃ has the same nearest permutation as Ψ: for any other allowed Q and
// τ < 1, ⟨Q − P, P̃⟩ = τ⟨Q − P, Ψ⟩ + (1 − τ)(⟨Q, P⟩ − N) < 0, since
// ⟨Q, Ψ⟩ <= ⟨P, Ψ⟩ and ⟨Q, P⟩ <= N − 2 (and P̃ = Ψ when τ = 1). The map is
// therefore invertible (see RoundingInverse); inside a cell where round(Ψ)
// is constant it is Ψ ↦ τΨ + const, so
//
//	log |det ∂P̃/∂Ψ| = N² log τ,
//
// and a density on Ψ gives P̃ the density q(P̃) = p_Ψ(Ψ(P̃)) τ^(−N²) on the
// image. The image is the part of each cell shrunk toward its vertex, and is
// all of the space only when τ = 1 (P̃ = Ψ).
//
// psi must be square, non-empty and finite, and the mask, if any, its size.
func Rounding(psi mat.Matrix, tau float64, allowed *perm.Mask) (*mat.Dense, perm.Perm, error) {
	const fn = "Rounding"
	if err := roundingTau(fn, tau); err != nil {
		return nil, nil, err
	}
	n, data, err := roundingInput(fn, psi, allowed)
	if err != nil {
		return nil, nil, err
	}
	var m Matcher
	p, err := m.SolveRaw(nil, n, data, allowed)
	if err != nil {
		return nil, nil, fmt.Errorf("relax: %s: %w", fn, err)
	}
	roundingApply(data, n, p, tau, 1-tau)
	return mat.NewDense(n, n, data), p, nil
}

// RoundingInverse inverts Rounding: for P̃ in its image it returns Ψ and
// the permutation p of P = round(P̃) = round(Ψ), with
//
//	Ψ = (P̃ − (1 − τ) P) / τ.
//
// When P̃ is not in the image, that is round(Ψ) ≠ P beyond a tolerance of a
// few ulps of the objective ⟨P, Ψ⟩, the error wraps ErrOutsideImage. Errors
// for bad input are as for Rounding.
func RoundingInverse(pt mat.Matrix, tau float64, allowed *perm.Mask) (*mat.Dense, perm.Perm, error) {
	const fn = "RoundingInverse"
	if err := roundingTau(fn, tau); err != nil {
		return nil, nil, err
	}
	n, data, err := roundingInput(fn, pt, allowed)
	if err != nil {
		return nil, nil, err
	}
	var m Matcher
	p, err := m.SolveRaw(nil, n, data, allowed)
	if err != nil {
		return nil, nil, fmt.Errorf("relax: %s: %w", fn, err)
	}
	if tau == 1 {
		return mat.NewDense(n, n, data), p, nil
	}
	roundingApply(data, n, p, 1/tau, -(1-tau)/tau)
	if err := roundingInImage(&m, n, data, p, tau, allowed); err != nil {
		return nil, nil, fmt.Errorf("relax: %s: %w", fn, err)
	}
	return mat.NewDense(n, n, data), p, nil
}

// RoundingVar is Rounding on a tape: psi has shape (N, N) or (B, N, N) for a
// batch, rounded with the same mask (nil allows all). It returns P̃, of
// psi's shape and differentiable in psi (∂P̃/∂Ψ = τ I, since round(Ψ) is
// piecewise constant), and the permutation of each matrix.
//
// Invalid input (wrong rank, non-square or empty matrices, non-finite
// values, τ outside (0, 1], a mask of the wrong size or admitting no
// permutation) is recorded on the tape, and the result is its dead Var with
// nil permutations. A nil psi gives nil results.
func RoundingVar(psi *ad.Var, tau float64, allowed *perm.Mask) (*ad.Var, []perm.Perm) {
	const fn = "RoundingVar"
	if psi == nil {
		return nil, nil
	}
	t := psi.Tape()
	dead := func(err error) (*ad.Var, []perm.Perm) {
		t.Fail(err)
		return t.Custom(nil, []float64{math.NaN()}, nil, nil), nil
	}
	if err := t.Err(); err != nil {
		return dead(err)
	}
	if err := roundingTau(fn, tau); err != nil {
		return dead(err)
	}
	shape := psi.Shape()
	batch, n, ok := squareBatch(shape)
	if !ok {
		return dead(fmt.Errorf("relax: %s: psi has shape %v, want (N, N) or (B, N, N) with N >= 1", fn, shape))
	}
	if allowed != nil && allowed.Size() != n {
		return dead(fmt.Errorf("relax: %s: mask is %d×%d, psi is %d×%d", fn, allowed.Size(), allowed.Size(), n, n))
	}
	vals := psi.Value()
	for k, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return dead(fmt.Errorf("relax: %s: psi element %d is %v", fn, k, v))
		}
	}
	out := t.Alloc(len(vals))
	copy(out, vals)
	perms := make([]perm.Perm, batch)
	var m Matcher
	for b := range batch {
		blk := out[b*n*n : (b+1)*n*n]
		p, err := m.SolveRaw(nil, n, blk, allowed)
		if err != nil {
			return dead(fmt.Errorf("relax: %s: matrix %d: %w", fn, b, err))
		}
		perms[b] = p
		roundingApply(blk, n, p, tau, 1-tau)
	}
	y := t.Custom(shape, out, []*ad.Var{psi}, func(gOut []float64, gIn [][]float64) {
		if g := gIn[0]; g != nil {
			for i, v := range gOut {
				g[i] += tau * v
			}
		}
	})
	return y, perms
}

// RoundingLogDet returns log |det ∂P̃/∂Ψ| = N² log τ of the rounding map on
// N×N matrices.
func RoundingLogDet(n int, tau float64) float64 {
	return float64(n) * float64(n) * math.Log(tau)
}

// roundingApply sets data ← a·data + b·P in place, P the matrix of p.
func roundingApply(data []float64, n int, p perm.Perm, a, b float64) {
	for k := range data {
		data[k] *= a
	}
	for i, j := range p {
		data[i*n+j] += b
	}
}

// roundingInImage checks that p is still a nearest allowed permutation of
// psi (n×n, row-major): no permutation beats it by more than rounding
// error. The error wraps ErrOutsideImage.
func roundingInImage(m *Matcher, n int, psi []float64, p perm.Perm, tau float64, allowed *perm.Mask) error {
	q, err := m.SolveRaw(nil, n, psi, allowed)
	if err != nil {
		return err
	}
	var objP, objQ, scale float64
	for i := range n {
		objP += psi[i*n+p[i]]
		objQ += psi[i*n+q[i]]
	}
	for _, v := range psi {
		scale = max(scale, math.Abs(v))
	}
	// Ψ carries absolute errors of a few ulps of max|Ψ| + 1/τ per entry;
	// the objectives sum n of them.
	tol := 16 * float64(n) * 0x1p-52 * (scale + 1/tau)
	if objQ-objP > tol {
		return fmt.Errorf("nearest permutation of Ψ improves ⟨P, Ψ⟩ by %g: %w", objQ-objP, ErrOutsideImage)
	}
	return nil
}

func roundingTau(fn string, tau float64) error {
	if !(tau > 0 && tau <= 1) {
		return fmt.Errorf("relax: %s: tau must be in (0, 1], got %v", fn, tau)
	}
	return nil
}

// roundingInput validates a square finite matrix and its mask and returns
// n and a row-major copy of its entries.
func roundingInput(fn string, x mat.Matrix, allowed *perm.Mask) (int, []float64, error) {
	if x == nil {
		return 0, nil, fmt.Errorf("relax: %s: nil matrix", fn)
	}
	r, c := x.Dims()
	if r != c {
		return 0, nil, fmt.Errorf("relax: %s: matrix is %d×%d, not square", fn, r, c)
	}
	if r == 0 {
		return 0, nil, fmt.Errorf("relax: %s: matrix is empty", fn)
	}
	if allowed != nil && allowed.Size() != r {
		return 0, nil, fmt.Errorf("relax: %s: mask is %d×%d, matrix is %d×%d", fn, allowed.Size(), allowed.Size(), r, r)
	}
	data := make([]float64, r*r)
	for i := 0; i < r; i++ {
		for j := 0; j < r; j++ {
			v := x.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, nil, fmt.Errorf("relax: %s: entry (%d, %d) is %v", fn, i, j, v)
			}
			data[i*r+j] = v
		}
	}
	return r, data, nil
}
