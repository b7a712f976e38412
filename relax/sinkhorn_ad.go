package relax

import (
	"fmt"

	"github.com/permlab/permlab/ad"
)

// SinkhornVar records S^L(x/τ) with L = iters on x's tape, for x of shape
// (N, N) or a batch (B, N, N); the result has x's shape. It is one fused op:
// the forward pass is the log-domain iteration of Sinkhorn and the backward
// pass is the exact gradient of the truncated L-step operator (not of its
// limit), obtained by reversing the iterations. Memory beyond the input and
// output is O(N² + L·N) per matrix. Batches are processed in parallel on at
// most GOMAXPROCS goroutines, with results independent of the schedule.
//
// Invalid input (see Sinkhorn; also a shape that is not (N, N) or (B, N, N))
// is recorded on the tape with Tape.Fail and the tape's dead Var returned.
// A nil x, or one on no tape, gives nil.
func SinkhornVar(x *ad.Var, tau float64, iters int) *ad.Var {
	return sinkhornVar("SinkhornVar", x, tau, iters, false)
}

// LogSinkhornVar is SinkhornVar returning log S^L(x/τ). It is the better
// choice when the result feeds a log-likelihood, and it carries gradients to
// entries whose probability underflows.
func LogSinkhornVar(x *ad.Var, tau float64, iters int) *ad.Var {
	return sinkhornVar("LogSinkhornVar", x, tau, iters, true)
}

func sinkhornVar(fn string, x *ad.Var, tau float64, iters int, logOut bool) *ad.Var {
	if x == nil || x.Tape() == nil {
		return nil
	}
	t := x.Tape()
	fail := func(format string, args ...any) *ad.Var {
		t.Fail(fmt.Errorf("relax: "+fn+": "+format, args...))
		// With an error on the tape Custom records nothing and returns
		// the dead Var.
		return t.Custom(nil, nil, []*ad.Var{x}, nil)
	}
	if t.Err() != nil {
		return t.Custom(nil, nil, []*ad.Var{x}, nil)
	}
	if err := checkTauIters(tau, iters); err != nil {
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
	works, scratch := newSinkBatch(t, xv, batch, n, tau, iters)
	errs := make([]error, batch)
	sinkParallel(batch, 4*iters*nn, func(k int) {
		w := works[k]
		if err := sinkCheck(w.x, n, tau); err != nil {
			errs[k] = err
			return
		}
		w.run(iters, 0)
		dst := out[k*nn : (k+1)*nn]
		if logOut {
			w.logOut(dst, scratch[k][:n], scratch[k][n:])
		} else {
			w.expOut(dst, scratch[k][:n], scratch[k][n:])
		}
	})
	for k, err := range errs {
		if err != nil {
			if len(shape) == 3 {
				return fail("matrix %d: %v", k, err)
			}
			return fail("%v", err)
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
		backs := make([]*sinkBack, batch)
		for k := range backs {
			backs[k] = newSinkBack(t.Alloc, n, works[k].half)
		}
		sinkParallel(batch, 4*iters*nn, func(k int) {
			sb := backs[k]
			g := sb.g
			gk := gOut[k*nn : (k+1)*nn]
			if logOut {
				copy(g, gk)
			} else {
				// ∂l/∂log P = ∂l/∂P ⊙ P.
				for i, p := range out[k*nn : (k+1)*nn] {
					g[i] = gk[i] * p
				}
			}
			works[k].backward(gx[k*nn:(k+1)*nn], sb)
		})
	})
}

// newSinkBatch prepares one Sinkhorn workspace and one 2N scratch buffer per
// matrix of the batch xv (batch × n × n), all taken from the tape's pool
// before any goroutine starts.
func newSinkBatch(t *ad.Tape, xv []float64, batch, n int, tau float64, iters int) ([]*sinkWork, [][]float64) {
	nn := n * n
	works := make([]*sinkWork, batch)
	scratch := make([][]float64, batch)
	for k := range works {
		works[k] = newSinkWork(t.Alloc, xv[k*nn:(k+1)*nn], n, tau, iters)
		scratch[k] = t.Alloc(2 * n)
	}
	return works, scratch
}
