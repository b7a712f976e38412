package relax

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
)

// SinkhornImplicitVar records the Sinkhorn operator at convergence, S(x/τ),
// on x's tape, for x of shape (N, N) or (B, N, N). The forward pass iterates
// as SinkhornTol does, until every row sum is within tol of one, at most
// maxIters times; not converging is an error (wrapping ErrNotConverged)
// recorded on the tape.
//
// The backward pass differentiates the fixed point implicitly rather than
// reversing the iterations. With P = S(x/τ) = exp(Z − α1ᵀ − 1βᵀ), Z = x/τ,
// the constraints P1 = 1, Pᵀ1 = 1 determine the potentials α, β. For an
// output adjoint Ḡ, let W = Ḡ ⊙ P, a = W1 and b = Wᵀ1. Then
//
//	∂l/∂Z = W − P ⊙ (μ1ᵀ + 1νᵀ),
//
// where (μ, ν) solves [I P; Pᵀ I] (μ, ν) = (a, b). The system is singular
// along (1, −1), which does not change μ1ᵀ + 1νᵀ; eliminating μ = a − Pν
// leaves
//
//	(I − PᵀP + 11ᵀ/N) ν = b − Pᵀa,
//
// symmetric positive definite when the support of P is connected, solved by
// Cholesky factorisation. The backward pass costs O(N³) per matrix whatever
// the number of iterations, and it is the gradient of the limit (exact up
// to the convergence tolerance), not of the truncated operator. It pays off
// over SinkhornVar when many iterations are needed, as at small τ; for
// L ≈ 20 the unrolled gradient of SinkhornVar is cheaper.
//
// Invalid input (see Sinkhorn), tol ≤ 0 or maxIters < 1 are recorded on the
// tape with Tape.Fail, as is a singular implicit system in the backward pass
// (reported by Tape.Backward). A nil x, or one on no tape, gives nil.
func SinkhornImplicitVar(x *ad.Var, tau, tol float64, maxIters int) *ad.Var {
	return sinkhornImplicitVar("SinkhornImplicitVar", x, tau, tol, maxIters, false)
}

// LogSinkhornImplicitVar is SinkhornImplicitVar returning log S(x/τ).
func LogSinkhornImplicitVar(x *ad.Var, tau, tol float64, maxIters int) *ad.Var {
	return sinkhornImplicitVar("LogSinkhornImplicitVar", x, tau, tol, maxIters, true)
}

func sinkhornImplicitVar(fn string, x *ad.Var, tau, tol float64, maxIters int, logOut bool) *ad.Var {
	if x == nil || x.Tape() == nil {
		return nil
	}
	t := x.Tape()
	dead := func() *ad.Var { return t.Custom(nil, nil, []*ad.Var{x}, nil) }
	fail := func(format string, args ...any) *ad.Var {
		t.Fail(fmt.Errorf("relax: "+fn+": "+format, args...))
		return dead()
	}
	if t.Err() != nil {
		return dead()
	}
	if !(tol > 0) {
		return fail("tol must be > 0, got %g", tol)
	}
	if err := checkTauIters(tau, maxIters); err != nil {
		return fail("%v", err)
	}
	shape := x.Shape()
	batch, n, ok := squareBatch(shape)
	if !ok {
		return fail("shape must be (N, N) or (B, N, N) with N > 0, got %v", shape)
	}
	xv := x.Value()
	nn := n * n
	out := t.Alloc(batch * nn)
	// The backward pass needs P even when the output is log P.
	p := out
	if logOut {
		p = t.Alloc(batch * nn)
	}
	works, scratch := newSinkBatch(t, xv, batch, n, tau, maxIters)
	errs := make([]error, batch)
	sinkParallel(batch, 4*maxIters*nn, func(k int) {
		w := works[k]
		if err := sinkCheck(w.x, n, tau); err != nil {
			errs[k] = err
			return
		}
		used := w.run(maxIters, tol)
		if used == maxIters {
			if e := w.rowError(); e > tol {
				errs[k] = fmt.Errorf("%w after %d iterations: max |row sum - 1| = %g > %g", ErrNotConverged, used, e, tol)
				return
			}
		}
		alpha, beta := scratch[k][:n], scratch[k][n:]
		w.expOut(p[k*nn:(k+1)*nn], alpha, beta)
		if logOut {
			w.logOut(out[k*nn:(k+1)*nn], alpha, beta)
		}
	})
	for k, err := range errs {
		if err != nil {
			if len(shape) == 3 {
				return fail("matrix %d: %w", k, err)
			}
			return fail("%w", err)
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
			bufs[k] = t.Alloc(2*nn + 4*n)
		}
		errs := make([]error, batch)
		sinkParallel(batch, 8*n*nn, func(k int) {
			errs[k] = implicitBackward(n, p[k*nn:(k+1)*nn], gOut[k*nn:(k+1)*nn], gx[k*nn:(k+1)*nn], scale, logOut, bufs[k])
		})
		for k, err := range errs {
			if err != nil {
				t.Fail(fmt.Errorf("relax: %s: backward, matrix %d: %w", fn, k, err))
				return
			}
		}
	})
}

// implicitBackward adds scale·∂l/∂Z to gx for the doubly stochastic p
// (n×n), given gOut = ∂l/∂P, or ∂l/∂log P when logOut. buf holds 2n² + 4n
// scratch values.
func implicitBackward(n int, p, gOut, gx []float64, scale float64, logOut bool, buf []float64) error {
	nn := n * n
	w := buf[:nn]
	sym := buf[nn : 2*nn]
	a := buf[2*nn : 2*nn+n]
	b := buf[2*nn+n : 2*nn+2*n]
	rhs := buf[2*nn+2*n : 2*nn+3*n]
	nu := buf[2*nn+3*n : 2*nn+4*n]
	// W = ∂l/∂log P, a = W1, b = Wᵀ1.
	clear(a)
	clear(b)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			v := gOut[i*n+j]
			if !logOut {
				v *= p[i*n+j]
			}
			w[i*n+j] = v
			a[i] += v
			b[j] += v
		}
	}
	pm := mat.NewDense(n, n, p)
	// rhs = b − Pᵀa.
	rv := mat.NewVecDense(n, rhs)
	rv.MulVec(pm.T(), mat.NewVecDense(n, a))
	for j := range rhs {
		rhs[j] = b[j] - rhs[j]
	}
	// M = I − PᵀP + 11ᵀ/n (upper triangle).
	m := mat.NewSymDense(n, sym)
	m.SymOuterK(-1, pm.T())
	inv := 1 / float64(n)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			v := m.At(i, j) + inv
			if i == j {
				v++
			}
			m.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(m) {
		return fmt.Errorf("implicit system I − PᵀP + 11ᵀ/N is not positive definite (disconnected support or τ too small)")
	}
	nv := mat.NewVecDense(n, nu)
	if err := ch.SolveVecTo(nv, rv); err != nil {
		return err
	}
	// μ = a − Pν; ∂l/∂Z = W − P ⊙ (μ1ᵀ + 1νᵀ).
	for i := 0; i < n; i++ {
		pi := p[i*n : (i+1)*n]
		s := 0.0
		for j, v := range pi {
			s += v * nu[j]
		}
		mu := a[i] - s
		gi := gx[i*n : (i+1)*n]
		wi := w[i*n : (i+1)*n]
		for j, v := range pi {
			gi[j] += (wi[j] - v*(mu+nu[j])) * scale
		}
	}
	return nil
}
