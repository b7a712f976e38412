package relax

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/permlab/permlab/internal/f64"
)

// This file holds the engine shared by the numeric and the differentiable
// Sinkhorn operators. See the package documentation for the mathematics; the
// notes here are about the numerics.
//
// Every iterate of the log-domain iteration has the form
//
//	log P = X/τ − α 1ᵀ − 1 βᵀ
//
// for row and column potentials α, β, and a half-step only updates one of
// them: a row normalisation sets α_i = logsumexp_j(X_ij/τ − β_j), a column
// normalisation sets β_j = logsumexp_i(X_ij/τ − α_i). Evaluating these
// log-sum-exps directly costs n² exponentials per half-step. Instead the
// engine keeps a kernel K = exp(X/τ − f 1ᵀ − 1 gᵀ) for reference potentials
// (f, g) and scalings a = exp(f − α), b = exp(g − β), so that P = diag(a) K
// diag(b) and a half-step is a matrix-vector product:
//
//	row:    a = 1 ⊘ (K b)        column: b = 1 ⊘ (Kᵀ a)
//
// The kernel is rebuilt (a "segment" starts) from the current potentials,
// with the max-shift of the log-sum-exp, whenever a new scaling would leave
// [2⁻²⁸⁰, 2²⁸⁰]; the half-step is then computed in the log domain proper.
// Kernel entries below 2⁻⁷⁰⁰ are stored as zero. Within these bounds a
// dropped entry changes a sum by less than n·2⁻⁴²⁰ relative to a sum of at
// least 2⁻²⁸⁰, so the accelerated half-step agrees with the log-domain one to
// rounding error, while the number of exponentials falls from 2Ln² to n² per
// segment (one segment for moderate τ; more for tiny τ, where most kernel
// entries are skipped as negligible).
//
// Within a segment one iteration reads K once: four rows at a time, the row
// half-step's dot products a_i = 1/(K_i·b) are taken and, while those rows
// are in the first-level cache, their contribution a_i K_i to the next
// column half-step's Kᵀa is added. The exponentials of a rebuild run on a
// vector kernel where the machine has one (see expShift).
//
// The adjoint of a half-step Z' = Z − lse_rows(Z) is Ḡ = Ḡ' − P ⊙ (Ḡ' 1)1ᵀ,
// with P = exp(Z') the normalised matrix (similarly for columns). Unrolled
// over a segment, the accumulated correction is K ⊙ (Σ_h x_h y_hᵀ), where for
// a row half-step x_h = a_h ⊙ r_h, y_h = b_h and for a column half-step
// x_h = a_h, y_h = b_h ⊙ c_h, with r_h, c_h the row and column sums of the
// adjoint at that point. Since a row half-step leaves P with unit row sums,
// it sets the adjoint's row sums to zero exactly and changes its column sums
// by b_h ⊙ Kᵀx_h (and symmetrically for columns), so each backward half-step
// is one matrix-vector product and the segment ends with one rank-(#steps)
// update. Only the scalings (O(Ln)), the reference potentials of each segment
// and one kernel are stored; kernels of earlier segments are recomputed.

const (
	// sinkScaleMax and sinkScaleMin bound the scalings a, b of an
	// accelerated half-step; outside them the kernel is rebuilt.
	sinkScaleMax = 0x1p280
	sinkScaleMin = 0x1p-280
	// sinkKernMinLog is the log of the smallest kernel entry kept
	// (≈ log 2⁻⁷⁰⁰); smaller entries are stored as zero.
	sinkKernMinLog = -485.0
	// sinkTinyProduct: below this, an output probability is recomputed
	// as exp(log P) instead of K·a·b, to keep full relative precision.
	sinkTinyProduct = 0x1p-1000
)

// sinkWork is the state of the truncated Sinkhorn iteration on one n×n
// matrix. Its buffers are supplied by the caller (pooled tape buffers for
// the differentiable form).
type sinkWork struct {
	n     int
	scale float64   // 1/τ: the iteration starts from Z = X·(1/τ)
	x     []float64 // X, row-major n×n; read only

	kern []float64 // n×n kernel of the current segment
	scal []float64 // one n-vector per half-step: the scaling it produced
	pot  []float64 // per segment: f (n) then g (n); grown by newSegment
	seg  []int     // first half-step of each segment
	ones []float64 // n ones: the scaling that a rebuild resets
	tmp  []float64 // n scratch
	idx  []int     // 0, 1, …, n−1: the rows, for the gather kernels
	a, b []float64 // current scalings
	half int       // half-steps performed
}

// newSinkWork returns a work area for an n×n matrix and at most iters
// iterations, taking its buffers from alloc.
func newSinkWork(alloc func(int) []float64, x []float64, n int, tau float64, iters int) *sinkWork {
	h := 2 * iters
	w := &sinkWork{
		n:     n,
		scale: 1 / tau,
		x:     x,
		kern:  alloc(n * n),
		scal:  alloc(h * n),
		pot:   alloc(2 * n), // one segment; most runs need no more
		seg:   make([]int, 0, 4),
		ones:  alloc(n),
		tmp:   alloc(n),
		idx:   make([]int, n),
	}
	for i := range w.ones {
		w.ones[i] = 1
		w.idx[i] = i
	}
	return w
}

// sinkCheck validates one n×n matrix for the Sinkhorn operator: no NaN or
// +Inf, no finite entry overflowing when scaled by 1/τ, and at least one
// finite entry in every row and column (−Inf entries are forbidden ones).
func sinkCheck(x []float64, n int, tau float64) error {
	// Fast path: every entry finite and far from overflow (one comparison
	// per entry, false for NaN).
	lim := min(0.5*math.MaxFloat64*tau, math.MaxFloat64)
	if allAbsLE(x[:n*n], lim) {
		return nil
	}
	scale := 1 / tau
	colOK := make([]bool, n)
	for i := 0; i < n; i++ {
		rowOK := false
		for j, v := range x[i*n : (i+1)*n] {
			switch {
			case math.IsNaN(v):
				return fmt.Errorf("entry (%d,%d) is NaN", i, j)
			case math.IsInf(v, 1):
				return fmt.Errorf("entry (%d,%d) is +Inf", i, j)
			case math.IsInf(v, -1):
				continue
			case math.IsInf(v*scale, 0):
				return fmt.Errorf("entry (%d,%d) = %g overflows when divided by tau = %g", i, j, v, tau)
			}
			rowOK = true
			colOK[j] = true
		}
		if !rowOK {
			return fmt.Errorf("row %d has no finite entry", i)
		}
	}
	for j, ok := range colOK {
		if !ok {
			return fmt.Errorf("column %d has no finite entry", j)
		}
	}
	return nil
}

// allAbsLE reports whether |v| ≤ lim for every v in x (false for NaN).
func allAbsLE(x []float64, lim float64) bool {
	m := 0
	if useSinkAsm {
		m = len(x) &^ 3
		if m > 0 && !allAbsLEAsm(x[:m], lim) {
			return false
		}
	}
	for _, v := range x[m:] {
		if !(math.Abs(v) <= lim) {
			return false
		}
	}
	return true
}

// checkTauIters validates the scalar arguments shared by every form.
func checkTauIters(tau float64, iters int) error {
	if !(tau > 0) || math.IsInf(tau, 1) {
		return fmt.Errorf("tau must be > 0 and finite, got %g", tau)
	}
	if math.IsInf(1/tau, 1) {
		return fmt.Errorf("tau = %g is too small: 1/tau overflows", tau)
	}
	if iters < 1 {
		return fmt.Errorf("iters must be >= 1, got %d", iters)
	}
	return nil
}

// gemv sets y = K x (trans false) or y = Kᵀ x (trans true) for the
// kernel K. The products run on the four-row kernels of internal/f64, in
// the same order as the fused half-steps of rowColStep, so both give the
// same bits.
func (w *sinkWork) gemv(trans bool, x, y []float64) {
	if trans {
		clear(y)
		f64.AxpyGather(y, x, w.kern, w.n, w.idx)
		return
	}
	f64.DotGather(y, x, w.kern, w.n, w.idx)
}

// kernExp returns exp(d), or 0 when d is below sinkKernMinLog (or −Inf).
func kernExp(d float64) float64 {
	if d < sinkKernMinLog {
		return 0
	}
	return expKern(d)
}

// newSegment makes room for the potentials of segment len(w.seg). Further
// segments are rare (tiny τ), so their room comes from the heap rather than
// the caller's allocator, which may not be safe for concurrent use.
func (w *sinkWork) newSegment() {
	if need := 2 * w.n * (len(w.seg) + 1); len(w.pot) < need {
		w.pot = append(w.pot[:len(w.pot):len(w.pot)], make([]float64, need-len(w.pot))...)
	}
}

// segPot returns the reference potentials (f, g) of segment s.
func (w *sinkWork) segPot(s int) (f, g []float64) {
	n := w.n
	return w.pot[2*s*n : (2*s+1)*n], w.pot[(2*s+1)*n : (2*s+2)*n]
}

// run performs up to iters row-then-column normalisations. With tol > 0 it
// stops after the first iteration whose row sums are all within tol of 1
// (column sums are 1 after a column normalisation). It returns the number
// of iterations performed.
func (w *sinkWork) run(iters int, tol float64) int {
	n := w.n
	w.seg = w.seg[:0]
	for l := 0; l < iters; l++ {
		h := 2 * l
		a := w.scal[h*n : (h+1)*n]
		b := w.scal[(h+1)*n : (h+2)*n]
		if len(w.seg) == 0 || !w.rowColStep(a, b) {
			w.rebuildRow(h, a)
			w.gemv(true, a, b)
		}
		w.a = a
		if !invertScaling(b) {
			w.rebuildCol(h+1, b)
		}
		w.b = b
		w.half = h + 2
		if tol > 0 && w.rowError() <= tol {
			return l + 1
		}
	}
	return iters
}

// rowColStep performs an accelerated row half-step, a = 1 ⊘ (K b), and
// accumulates the column sums Kᵀa of the next half-step into c, four rows
// of K at a time, so that K is read from memory once per iteration instead
// of twice. It reports whether a stayed within the scaling bounds; if not,
// a and c hold garbage and the caller rebuilds.
func (w *sinkWork) rowColStep(a, c []float64) bool {
	n := w.n
	clear(c)
	for i := 0; i < n; i += 4 {
		rows := w.idx[i:min(i+4, n)]
		ai := a[i : i+len(rows)]
		f64.DotGather(ai, w.b, w.kern, n, rows)
		if !invertScaling(ai) {
			return false
		}
		f64.AxpyGather(c, ai, w.kern, n, rows)
	}
	return true
}

// invertScaling replaces every entry s of x by 1/s and reports whether all
// of them were within [sinkScaleMin, sinkScaleMax]; if not, x holds
// garbage.
func invertScaling(x []float64) bool {
	for i, s := range x {
		if !(s >= sinkScaleMin && s <= sinkScaleMax) {
			return false
		}
		x[i] = 1 / s
	}
	return true
}

// rebuildRow starts a segment at row half-step h: with the current column
// potentials β, it sets f_i = max_j(X_ij/τ − β_j), g = β,
// K = exp(X/τ − f 1ᵀ − 1 gᵀ) and out = a = 1 ⊘ (K 1).
func (w *sinkWork) rebuildRow(h int, out []float64) {
	n, sc := w.n, w.scale
	w.newSegment()
	s := len(w.seg)
	f, g := w.segPot(s)
	if s == 0 {
		clear(g)
	} else {
		_, gPrev := w.segPot(s - 1)
		for j := range g {
			g[j] = gPrev[j] - math.Log(w.b[j])
		}
	}
	for i := 0; i < n; i++ {
		xi := w.x[i*n : (i+1)*n]
		ki := w.kern[i*n : (i+1)*n]
		ki = ki[:len(xi)]
		g := g[:len(xi)]
		m := math.Inf(-1)
		for j, v := range xi {
			t := v*sc - g[j]
			ki[j] = t
			if t > m {
				m = t
			}
		}
		f[i] = m
		out[i] = 1 / expShift(ki, m)
	}
	w.seg = append(w.seg, h)
	w.b = w.ones
}

// rebuildCol starts a segment at column half-step h: with the current row
// potentials α, it sets f = α, g_j = max_i(X_ij/τ − α_i),
// K = exp(X/τ − f 1ᵀ − 1 gᵀ) and out = b = 1 ⊘ (Kᵀ 1).
func (w *sinkWork) rebuildCol(h int, out []float64) {
	n, sc := w.n, w.scale
	w.newSegment()
	s := len(w.seg)
	f, g := w.segPot(s)
	fPrev, _ := w.segPot(s - 1) // a column step always follows a row step
	for i := range f {
		f[i] = fPrev[i] - math.Log(w.a[i])
	}
	for j := range g {
		g[j] = math.Inf(-1)
	}
	for i := 0; i < n; i++ {
		fi := f[i]
		ki := w.kern[i*n : (i+1)*n]
		gg := g[:len(ki)]
		for j, v := range w.x[i*n : (i+1)*n] {
			t := v*sc - fi
			ki[j] = t
			if t > gg[j] {
				gg[j] = t
			}
		}
	}
	clear(out)
	for i := 0; i < n; i++ {
		ki := w.kern[i*n : (i+1)*n]
		gg := g[:len(ki)]
		for j, t := range ki {
			ki[j] = t - gg[j]
		}
		expShift(ki, 0)
		f64.Axpy(1, ki, out)
	}
	for j, t := range out {
		out[j] = 1 / t
	}
	w.seg = append(w.seg, h)
	w.a = w.ones
}

// recomputeKernel rebuilds the kernel of segment s from its reference
// potentials, bit for bit as the forward pass computed it.
func (w *sinkWork) recomputeKernel(s int) {
	n, sc := w.n, w.scale
	f, g := w.segPot(s)
	rowSeg := w.seg[s]%2 == 0
	for i := 0; i < n; i++ {
		fi := f[i]
		ki := w.kern[i*n : (i+1)*n]
		xi := w.x[i*n : (i+1)*n]
		xi, g := xi[:len(ki)], g[:len(ki)]
		if rowSeg {
			for j, v := range xi {
				ki[j] = v*sc - g[j]
			}
			expShift(ki, fi)
			continue
		}
		for j, v := range xi {
			ki[j] = (v*sc - fi) - g[j]
		}
		expShift(ki, 0)
	}
}

// rowError returns max_i |Σ_j P_ij − 1| for the current iterate.
func (w *sinkWork) rowError() float64 {
	w.gemv(false, w.b, w.tmp)
	e := 0.0
	for i, s := range w.tmp {
		e = max(e, math.Abs(w.a[i]*s-1))
	}
	return e
}

// potentials writes the current potentials: log P = X/τ − α 1ᵀ − 1 βᵀ.
func (w *sinkWork) potentials(alpha, beta []float64) {
	f, g := w.segPot(len(w.seg) - 1)
	for i := range alpha {
		alpha[i] = f[i] - math.Log(w.a[i])
	}
	for j := range beta {
		beta[j] = g[j] - math.Log(w.b[j])
	}
}

// logOut writes log P of the current iterate into dst (n×n), using the two
// n-vectors alpha and beta as scratch.
func (w *sinkWork) logOut(dst, alpha, beta []float64) {
	n, sc := w.n, w.scale
	w.potentials(alpha, beta)
	for i := 0; i < n; i++ {
		ai := alpha[i]
		di := dst[i*n : (i+1)*n]
		for j, v := range w.x[i*n : (i+1)*n] {
			di[j] = (v*sc - ai) - beta[j]
		}
	}
}

// expOut writes P of the current iterate into dst (n×n), using alpha and
// beta as scratch. Entries are K_ij a_i b_j, or exp(log P_ij) where that
// product is too small to carry full relative precision.
func (w *sinkWork) expOut(dst, alpha, beta []float64) {
	n, sc := w.n, w.scale
	potDone := false
	for i := 0; i < n; i++ {
		ai := w.a[i]
		ki := w.kern[i*n : (i+1)*n]
		di := dst[i*n : (i+1)*n]
		b := w.b[:len(ki)]
		j0 := 0
		if m := n &^ 3; useSinkAsm && m > 0 && !scaleRowAsm(di[:m], ki[:m], b[:m], ai) {
			// The first m products were computed as vectors and none is
			// tiny; the loop finishes the row. Otherwise it redoes it.
			j0 = m
		}
		for j := j0; j < len(ki); j++ {
			p := ki[j] * ai * b[j]
			if p < sinkTinyProduct {
				if !potDone {
					w.potentials(alpha, beta)
					potDone = true
				}
				p = math.Exp((w.x[i*n+j]*sc - alpha[i]) - beta[j])
			}
			di[j] = p
		}
	}
}

// sinkBack holds the scratch of one backward pass.
type sinkBack struct {
	g        []float64 // n×n adjoint of the current iterate
	xs, ys   []float64 // n×H and H×n factors of the rank update
	r, c     []float64 // row and column sums of g
	t, t2, m []float64 // n scratch each
	steps    []int     // 0, 1, …, H−1: the rows of the Y factor
}

func newSinkBack(alloc func(int) []float64, n, half int) *sinkBack {
	return &sinkBack{
		g:  alloc(n * n),
		xs: alloc(n * half),
		ys: alloc(half * n),
		r:  alloc(n),
		c:  alloc(n),
		t:  alloc(n),
		t2: alloc(n),
		m:  alloc(n),
		steps: func() []int {
			s := make([]int, half)
			for i := range s {
				s[i] = i
			}
			return s
		}(),
	}
}

// scalings returns the scalings (a_h, b_h) after half-step h of the
// segment starting at start: P_h = diag(a_h) K diag(b_h).
func (w *sinkWork) scalings(h, start int) (a, b []float64) {
	n := w.n
	cur := w.scal[h*n : (h+1)*n]
	prev := w.ones
	if h > start {
		prev = w.scal[(h-1)*n : h*n]
	}
	if h%2 == 0 {
		return cur, prev
	}
	return prev, cur
}

// backward adds to gx the gradient with respect to X of a loss whose
// gradient with respect to log P (the final log iterate) is in sb.g; sb.g
// is overwritten. It must follow run.
func (w *sinkWork) backward(gx []float64, sb *sinkBack) {
	n := w.n
	g := sb.g
	sc := w.scale
	last := len(w.seg) - 1
	for s := last; s >= 0; s-- {
		start, end := w.seg[s], w.half
		if s < last {
			end = w.seg[s+1]
			w.recomputeKernel(s)
		}
		cnt := end - start
		// Row and column sums of the adjoint entering this segment.
		r, c := sb.r, sb.c
		clear(c)
		for i := 0; i < n; i++ {
			gi := g[i*n : (i+1)*n]
			r[i] = f64.Dot(gi, w.ones)
			f64.Axpy(1, gi, c)
		}
		for h := end - 1; h >= start; h-- {
			k := h - start
			a, b := w.scalings(h, start)
			y := sb.ys[k*n : (k+1)*n]
			if h%2 == 0 { // row half-step: x = a ⊙ r, y = b
				x := sb.t
				for i := range x {
					x[i] = a[i] * r[i]
					sb.xs[i*cnt+k] = x[i]
				}
				copy(y, b)
				if h > start {
					w.gemv(true, x, sb.t2)
					for j, v := range sb.t2 {
						c[j] -= b[j] * v
					}
				}
				clear(r)
			} else { // column half-step: x = a, y = b ⊙ c
				for j := range y {
					y[j] = b[j] * c[j]
				}
				for i, v := range a {
					sb.xs[i*cnt+k] = v
				}
				if h > start {
					w.gemv(false, y, sb.t2)
					for i, v := range sb.t2 {
						r[i] -= a[i] * v
					}
				}
				clear(c)
			}
		}
		// g -= K ⊙ (X Yᵀ), one row at a time: m = Yᵀ x_i, summed four
		// rows of Y at a time.
		ys := sb.ys[:cnt*n]
		m := sb.m
		for i := 0; i < n; i++ {
			clear(m)
			f64.AxpyGather(m, sb.xs[i*cnt:(i+1)*cnt], ys, n, sb.steps[:cnt])
			ki := w.kern[i*n : (i+1)*n]
			gi := g[i*n : (i+1)*n]
			m := m[:len(ki)]
			gi = gi[:len(ki)]
			if s > 0 {
				for j, kv := range ki {
					gi[j] -= kv * m[j]
				}
				continue
			}
			gxi := gx[i*n : (i+1)*n]
			gxi = gxi[:len(ki)]
			for j, kv := range ki {
				gxi[j] += (gi[j] - kv*m[j]) * sc
			}
		}
	}
}

// sinkParallelMin is the total work below which sinkParallel runs serially.
const sinkParallelMin = 1 << 16

// sinkParallel calls fn(i) for i in [0, n) on at most GOMAXPROCS
// goroutines. Items must be independent; the result then does not depend on
// the schedule.
//
// work estimates the floating-point operations of one call of fn; a batch
// whose total work is below sinkParallelMin runs on the calling goroutine,
// since waking workers costs more than it saves there: vi.FitModel on
// permutation regression with n = 6, whose every step sends a batch of
// eight 6×6 matrices, took 265 ms with the batches in parallel and 232 ms
// serial on two cores (one benchmark run of 5 fits each, 2026-11-28). Each
// fn(i) is computed the same way either way, so the results do not depend
// on it.
func sinkParallel(n, work int, fn func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 || n*work < sinkParallelMin {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}
