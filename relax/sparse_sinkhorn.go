package relax

import (
	"fmt"
	"sync"

	"github.com/permlab/permlab/ad"
)

// SparseSinkhorn returns the truncated Sinkhorn operator S^L(X/τ), L =
// iters, of every matrix of the batch x, computed on the stored entries
// only: the result has x's pattern and holds P_e for every entry. It is the
// dense operator Sinkhorn applied to the matrix with −Inf outside the
// pattern, at O(NNZ·L) time and O(NNZ) memory instead of O(N²·L) and
// O(N²), and agrees with it to rounding (the sums run in another order).
//
// As for Sinkhorn, NaN or +Inf values, a row or column without a finite
// value, τ ≤ 0 or not finite, τ so small that X/τ overflows, and iters < 1
// are errors, as are a nil x or pattern and a number of values that is not
// a multiple of NNZ. The matrices of a batch are computed in parallel, or
// one matrix's rows and columns are split over goroutines when the batch
// is small; the result does not depend on GOMAXPROCS.
func SparseSinkhorn(x *SparseLogits, tau float64, iters int) (*SparseLogits, error) {
	return sparseSinkhorn("SparseSinkhorn", x, tau, iters, false)
}

// SparseLogSinkhorn is SparseSinkhorn returning log S^L(X/τ) on the
// pattern; −Inf values give −Inf.
func SparseLogSinkhorn(x *SparseLogits, tau float64, iters int) (*SparseLogits, error) {
	return sparseSinkhorn("SparseLogSinkhorn", x, tau, iters, true)
}

func sparseSinkhorn(fn string, x *SparseLogits, tau float64, iters int, logOut bool) (*SparseLogits, error) {
	if err := x.check(); err != nil {
		return nil, fmt.Errorf("relax: %s: %w", fn, err)
	}
	if err := checkTauIters(tau, iters); err != nil {
		return nil, fmt.Errorf("relax: %s: %w", fn, err)
	}
	p := x.Pattern
	n, nnz, batch := p.n, p.NNZ(), x.Batch()
	out := &SparseLogits{Pattern: p, Values: make([]float64, len(x.Values))}
	errs := make([]error, batch)
	spsForBatch(batch, nnz, 4*iters*nnz, func(k int, r spsRunner) {
		xk := x.Matrix(k)
		if err := spsCheck(p, xk, tau); err != nil {
			errs[k] = err
			return
		}
		// The work area (two kernels, the scalings, one segment's
		// potentials, ones and two potentials for the output) comes from
		// a pool, as the dense operator's does.
		need := 2*nnz + 7*n
		slab, _ := spsSlabs.Get().(*[]float64)
		if slab == nil || cap(*slab) < need {
			slab = new([]float64)
			*slab = make([]float64, need)
		}
		defer spsSlabs.Put(slab)
		free := (*slab)[:need]
		alloc := func(k int) []float64 {
			b := free[:k:k]
			free = free[k:]
			return b
		}
		w := newSpsWork(alloc, p, xk, tau, iters, false)
		w.run = r
		w.iterate(iters, 0)
		dst := out.Matrix(k)
		alpha, beta := alloc(n), alloc(n)
		if logOut {
			w.logOut(dst, alpha, beta)
		} else {
			w.expOut(dst, alpha, beta)
		}
	})
	for k, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("relax: %s: matrix %d: %w", fn, k, err)
		}
	}
	return out, nil
}

// spsSlabs recycles the work areas of sparseSinkhorn (*[]float64).
var spsSlabs sync.Pool

// SparseSinkhornVar records S^L(x/τ), L = iters, on x's tape for values x
// on the pattern p: x has shape (NNZ) for one matrix or (B, NNZ) for a
// batch sharing the pattern, entries in the pattern's order, and the
// result has x's shape. It is the sparse counterpart of SinkhornVar (one
// fused op, the exact gradient of the truncated operator by reversing the
// iterations) at O(NNZ·L) time and O(NNZ + N·L) memory per matrix; the
// forward pass is SparseSinkhorn's. Gradients flow to the stored entries
// only: entries outside the pattern have none, as −Inf entries of the
// dense operator have zero gradient.
//
// Invalid input (see SparseSinkhorn; also a nil pattern or a shape that is
// not (NNZ) or (B, NNZ)) is recorded on the tape with Tape.Fail and the
// tape's dead Var returned. A nil x, or one on no tape, gives nil.
func SparseSinkhornVar(x *ad.Var, p *SparsePattern, tau float64, iters int) *ad.Var {
	return sparseSinkhornVar("SparseSinkhornVar", x, p, tau, iters, false)
}

// SparseLogSinkhornVar is SparseSinkhornVar returning log S^L(x/τ).
func SparseLogSinkhornVar(x *ad.Var, p *SparsePattern, tau float64, iters int) *ad.Var {
	return sparseSinkhornVar("SparseLogSinkhornVar", x, p, tau, iters, true)
}

// spsVarPrelude holds what every sparse ad op checks first.
type spsVarPrelude struct {
	t     *ad.Tape
	batch int
	fail  func(format string, args ...any) *ad.Var
	dead  func() *ad.Var
}

// spsPrelude validates x's shape against p. ok false means the op is over:
// the caller returns v (nil, or the tape's dead Var).
func spsPrelude(fn string, x *ad.Var, p *SparsePattern) (pre spsVarPrelude, v *ad.Var, ok bool) {
	if x == nil || x.Tape() == nil {
		return pre, nil, false
	}
	t := x.Tape()
	pre.t = t
	pre.dead = func() *ad.Var { return t.Custom(nil, nil, []*ad.Var{x}, nil) }
	pre.fail = func(format string, args ...any) *ad.Var {
		t.Fail(fmt.Errorf("relax: "+fn+": "+format, args...))
		// With an error on the tape Custom records nothing and returns
		// the dead Var.
		return pre.dead()
	}
	if t.Err() != nil {
		return pre, pre.dead(), false
	}
	if p == nil {
		return pre, pre.fail("nil pattern"), false
	}
	shape := x.Shape()
	nnz := p.NNZ()
	switch {
	case len(shape) == 1 && shape[0] == nnz:
		pre.batch = 1
	case len(shape) == 2 && shape[1] == nnz:
		pre.batch = shape[0]
	default:
		return pre, pre.fail("shape must be (NNZ) or (B, NNZ) with NNZ = %d, got %v", nnz, shape), false
	}
	return pre, nil, true
}

func sparseSinkhornVar(fn string, x *ad.Var, p *SparsePattern, tau float64, iters int, logOut bool) *ad.Var {
	pre, v, ok := spsPrelude(fn, x, p)
	if !ok {
		return v
	}
	if err := checkTauIters(tau, iters); err != nil {
		return pre.fail("%v", err)
	}
	t, batch := pre.t, pre.batch
	n, nnz := p.n, p.NNZ()
	shape := x.Shape()
	xv := x.Value()
	out := t.AllocRaw(batch * nnz)
	works := make([]*spsWork, batch)
	scratch := make([][]float64, batch)
	for k := range works {
		works[k] = newSpsWork(t.AllocRaw, p, xv[k*nnz:(k+1)*nnz], tau, iters, true)
		scratch[k] = t.AllocRaw(2 * n)
	}
	errs := make([]error, batch)
	spsForBatch(batch, nnz, 4*iters*nnz, func(k int, r spsRunner) {
		w := works[k]
		w.run = r
		if err := spsCheck(p, w.x, tau); err != nil {
			errs[k] = err
			return
		}
		w.iterate(iters, 0)
		dst := out[k*nnz : (k+1)*nnz]
		if logOut {
			w.logOut(dst, scratch[k][:n], scratch[k][n:])
		} else {
			w.expOut(dst, scratch[k][:n], scratch[k][n:])
		}
	})
	for k, err := range errs {
		if err != nil {
			if len(shape) == 2 {
				return pre.fail("matrix %d: %v", k, err)
			}
			return pre.fail("%v", err)
		}
	}
	if !x.RequiresGrad() {
		return t.Custom(shape, out, []*ad.Var{x}, nil)
	}
	return t.Custom(shape, out, []*ad.Var{x}, func(gOut []float64, gIn [][]float64) {
		gx := gIn[0]
		if gx == nil {
			return
		}
		backs := make([]*spsBack, batch)
		for k := range backs {
			backs[k] = newSpsBack(t.AllocRaw, n, nnz)
		}
		spsForBatch(batch, nnz, 4*iters*nnz, func(k int, r spsRunner) {
			w, sb := works[k], backs[k]
			w.run = r
			gk := gOut[k*nnz : (k+1)*nnz]
			if logOut {
				copy(sb.g, gk)
			} else {
				// ∂l/∂log P = ∂l/∂P ⊙ P.
				for e, pv := range out[k*nnz : (k+1)*nnz] {
					sb.g[e] = gk[e] * pv
				}
			}
			w.backward(gx[k*nnz:(k+1)*nnz], sb)
		})
	})
}
