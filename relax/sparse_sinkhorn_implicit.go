package relax

import (
	"errors"
	"fmt"
	"math"

	"github.com/permlab/permlab/ad"
)

// spsCGTol is the relative residual at which the conjugate gradient solve
// of the implicit system stops, and spsCGMaxIter bounds its iterations in
// units of N (plus a constant).
const (
	spsCGTol     = 1e-12
	spsCGMaxIter = 10
)

// SparseSinkhornImplicitVar records the Sinkhorn operator at convergence,
// S(x/τ), on x's tape for values x on the pattern p, of shape (NNZ) or
// (B, NNZ): the sparse counterpart of SinkhornImplicitVar. The forward pass
// iterates until every row sum is within tol of one, at most maxIters
// times (not converging is an error wrapping ErrNotConverged); it keeps
// only the current scalings, so its memory is O(NNZ) whatever maxIters.
//
// The backward pass differentiates the fixed point implicitly: with
// W = Ḡ ⊙ P (Ḡ the output adjoint), a = W1, b = Wᵀ1, it solves
//
//	(I − PᵀP + 11ᵀ/N) ν = b − Pᵀa,   μ = a − Pν,
//
// and ∂l/∂x_e = (W_e − P_e (μ_i + ν_j))/τ, as the dense operator does, but
// by conjugate gradients (each step one product with P and one with Pᵀ,
// O(NNZ)) instead of a Cholesky factorisation: O(NNZ·√κ) with κ the
// condition number 1/(1 − σ₂²), σ₂ the second singular value of P, the
// quantity that also sets the forward pass's rate of convergence. The
// solve stops at a relative residual of 1e-12. With a pattern of several
// blocks (SparsePattern.Blocks) the system is singular but consistent, and
// conjugate gradients still solve it, where the dense operator's Cholesky
// factorisation fails; a breakdown of the iteration (a direction of
// non-positive curvature) or no solution within 10N+100 steps is an error
// reported by Tape.Backward. A pattern without total support
// (SparsePattern.TotalSupport) typically fails earlier: the forward
// iteration converges only sublinearly and misses tol.
//
// Invalid input (see SparseSinkhornVar), tol ≤ 0 and maxIters < 1 are
// recorded on the tape. A nil x, or one on no tape, gives nil.
func SparseSinkhornImplicitVar(x *ad.Var, p *SparsePattern, tau, tol float64, maxIters int) *ad.Var {
	return sparseSinkhornImplicitVar("SparseSinkhornImplicitVar", x, p, tau, tol, maxIters, false)
}

// SparseLogSinkhornImplicitVar is SparseSinkhornImplicitVar returning
// log S(x/τ).
func SparseLogSinkhornImplicitVar(x *ad.Var, p *SparsePattern, tau, tol float64, maxIters int) *ad.Var {
	return sparseSinkhornImplicitVar("SparseLogSinkhornImplicitVar", x, p, tau, tol, maxIters, true)
}

func sparseSinkhornImplicitVar(fn string, x *ad.Var, p *SparsePattern, tau, tol float64, maxIters int, logOut bool) *ad.Var {
	pre, v, ok := spsPrelude(fn, x, p)
	if !ok {
		return v
	}
	if !(tol > 0) {
		return pre.fail("tol must be > 0, got %g", tol)
	}
	if err := checkTauIters(tau, maxIters); err != nil {
		return pre.fail("%v", err)
	}
	t, batch := pre.t, pre.batch
	n, nnz := p.n, p.NNZ()
	shape := x.Shape()
	xv := x.Value()
	out := t.AllocRaw(batch * nnz)
	// The backward pass needs P even when the output is log P.
	pv := out
	if logOut {
		pv = t.AllocRaw(batch * nnz)
	}
	works := make([]*spsWork, batch)
	scratch := make([][]float64, batch)
	for k := range works {
		works[k] = newSpsWork(t.AllocRaw, p, xv[k*nnz:(k+1)*nnz], tau, maxIters, false)
		scratch[k] = t.AllocRaw(2 * n)
	}
	errs := make([]error, batch)
	spsForBatch(batch, nnz, 4*maxIters*nnz, func(k int, r spsRunner) {
		w := works[k]
		w.run = r
		if err := spsCheck(p, w.x, tau); err != nil {
			errs[k] = err
			return
		}
		used := w.iterate(maxIters, tol)
		if used == maxIters {
			if e := w.rowError(); e > tol {
				errs[k] = fmt.Errorf("%w after %d iterations: max |row sum - 1| = %g > %g", ErrNotConverged, used, e, tol)
				return
			}
		}
		alpha, beta := scratch[k][:n], scratch[k][n:]
		w.expOut(pv[k*nnz:(k+1)*nnz], alpha, beta)
		if logOut {
			w.logOut(out[k*nnz:(k+1)*nnz], alpha, beta)
		}
	})
	for k, err := range errs {
		if err != nil {
			if len(shape) == 2 {
				return pre.fail("matrix %d: %w", k, err)
			}
			return pre.fail("%w", err)
		}
	}
	if !x.RequiresGrad() {
		return t.Custom(shape, out, []*ad.Var{x}, nil)
	}
	scale := 1 / tau
	return t.Custom(shape, out, []*ad.Var{x}, func(gOut []float64, gIn [][]float64) {
		gx := gIn[0]
		if gx == nil {
			return
		}
		bufs := make([][]float64, batch)
		for k := range bufs {
			bufs[k] = t.AllocRaw(2*nnz + 8*n)
		}
		errs := make([]error, batch)
		spsForBatch(batch, nnz, 8*nnz*n, func(k int, r spsRunner) {
			s := spsImplicit{p: p, run: r, buf: bufs[k]}
			errs[k] = s.backward(pv[k*nnz:(k+1)*nnz], gOut[k*nnz:(k+1)*nnz], gx[k*nnz:(k+1)*nnz], scale, logOut)
		})
		for k, err := range errs {
			if err != nil {
				t.Fail(fmt.Errorf("relax: %s: backward, matrix %d: %w", fn, k, err))
				return
			}
		}
	})
}

// spsImplicit is the implicit backward pass of one matrix.
type spsImplicit struct {
	p   *SparsePattern
	run spsRunner
	buf []float64 // 2·nnz + 8·n scratch
	pt  []float64 // P in CSC order
}

// mulP sets y = P v (rows).
func (s *spsImplicit) mulP(pv, v, y []float64) {
	p := s.p
	s.run.each(p.n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			e0, e1 := p.rowPtr[i], p.rowPtr[i+1]
			y[i] = spsDot(pv[e0:e1], p.colIdx[e0:e1], v)
		}
	})
}

// mulPT sets y = Pᵀ v (columns).
func (s *spsImplicit) mulPT(v, y []float64) {
	p := s.p
	s.run.each(p.n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			e0, e1 := p.colPtr[j], p.colPtr[j+1]
			y[j] = spsDot(s.pt[e0:e1], p.rowIdx[e0:e1], v)
		}
	})
}

// spsDotN returns x·y in index order.
func spsDotN(x, y []float64) float64 {
	y = y[:len(x)]
	s := 0.0
	for i, v := range x {
		s += v * y[i]
	}
	return s
}

// backward adds scale·∂l/∂Z to gx for the converged P (nnz values), given
// gOut = ∂l/∂P, or ∂l/∂log P when logOut.
func (s *spsImplicit) backward(pv, gOut, gx []float64, scale float64, logOut bool) error {
	return s.backwardMax(pv, gOut, gx, scale, logOut, spsCGMaxIter*s.p.n+100)
}

// backwardMax is backward with at most maxSteps conjugate gradient steps.
func (s *spsImplicit) backwardMax(pv, gOut, gx []float64, scale float64, logOut bool, maxSteps int) error {
	p := s.p
	n, nnz := p.n, p.NNZ()
	buf := s.buf
	take := func(k int) []float64 {
		b := buf[:k:k]
		buf = buf[k:]
		return b
	}
	w, pt := take(nnz), take(nnz)
	a, b, rhs, nu := take(n), take(n), take(n), take(n)
	res, dir, adir, u := take(n), take(n), take(n), take(n)
	s.pt = pt
	// W, its row sums a, P in CSC order, W's column sums b.
	s.run.each(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			e0, e1 := p.rowPtr[i], p.rowPtr[i+1]
			for e := e0; e < e1; e++ {
				v := gOut[e]
				if !logOut {
					v *= pv[e]
				}
				w[e] = v
			}
			a[i] = spsSum(w[e0:e1])
		}
	})
	s.run.each(n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			sum := 0.0
			for q := p.colPtr[j]; q < p.colPtr[j+1]; q++ {
				e := p.tperm[q]
				pt[q] = pv[e]
				sum += w[e]
			}
			b[j] = sum
		}
	})
	// rhs = b − Pᵀa.
	s.mulPT(a, rhs)
	for j := range rhs {
		rhs[j] = b[j] - rhs[j]
	}
	// Conjugate gradients on M ν = rhs, M = I − PᵀP + 11ᵀ/n.
	mul := func(v, y []float64) {
		s.mulP(pv, v, u)
		s.mulPT(u, y)
		m := spsSum(v) / float64(n)
		for j := range y {
			y[j] = (v[j] - y[j]) + m
		}
	}
	clear(nu)
	copy(res, rhs)
	copy(dir, rhs)
	rr := spsDotN(res, res)
	goal := spsCGTol * spsCGTol * rr
	for it := 0; rr > goal; it++ {
		if it >= maxSteps {
			return fmt.Errorf("%w: conjugate gradients on the implicit system stopped at relative residual %g after %d steps",
				ErrNotConverged, math.Sqrt(rr/goal)*spsCGTol, it)
		}
		mul(dir, adir)
		pAp := spsDotN(dir, adir)
		if !(pAp > 0) {
			return errors.New("implicit system I − PᵀP + 11ᵀ/N is not positive definite (disconnected support or τ too small)")
		}
		alpha := rr / pAp
		for j := range nu {
			nu[j] += alpha * dir[j]
			res[j] -= alpha * adir[j]
		}
		rrNew := spsDotN(res, res)
		beta := rrNew / rr
		rr = rrNew
		for j := range dir {
			dir[j] = res[j] + beta*dir[j]
		}
	}
	// μ = a − Pν; ∂l/∂Z = W − P ⊙ (μ1ᵀ + 1νᵀ).
	s.mulP(pv, nu, u)
	s.run.each(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			mu := a[i] - u[i]
			for e := p.rowPtr[i]; e < p.rowPtr[i+1]; e++ {
				gx[e] += (w[e] - pv[e]*(mu+nu[p.colIdx[e]])) * scale
			}
		}
	})
	return nil
}
