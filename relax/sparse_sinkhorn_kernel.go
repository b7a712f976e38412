package relax

import (
	"fmt"
	"math"
	"runtime"
	"sync"
)

// This file holds the engine of the sparse Sinkhorn operators. It follows
// the dense engine (sinkhorn_kernel.go) with the n×n kernel replaced by its
// entries on the pattern: with reference potentials (f, g) of a segment,
//
//	K_e = exp(X_e/τ − f_i − g_j)   for every stored entry e = (i, j),
//
// and scalings a, b with P_e = a_i K_e b_j. A row half-step is
// a_i = 1/Σ_{e∈row i} K_e b_j over the CSR entries, a column half-step
// b_j = 1/Σ_{e∈col j} K_e a_i over the transpose (a copy of K in CSC
// order), each O(nnz) multiply-adds without an exponential. Kernels are
// rebuilt in the log domain, with the max-shift, under the same scaling
// bounds as the dense engine (sinkScaleMin, sinkScaleMax, sinkKernMinLog),
// so the results agree with the log-domain iteration to rounding error.
//
// Every value the engine computes (a scaling, a kernel entry, an output
// entry, a gradient entry) is a sum or product over one row's or one
// column's entries in their fixed order, written by one goroutine. Rows
// and columns can therefore be split over goroutines in any way
// (spsRunner) without changing a bit of the result: the output is the same
// for any GOMAXPROCS. The only reductions across rows are maxima and
// logical ands, which do not depend on the order.
//
// The backward pass reverses the half-steps one by one: for a row
// half-step Z' = Z − lse_rows(Z) with P' = exp(Z'), the adjoint becomes
// G − P' ⊙ (G1)1ᵀ, for a column half-step G − P' ⊙ 1(1ᵀG). P' is a_h K b_h
// with the scalings after half-step h, which the forward pass keeps (2L
// vectors of N), so a half-step costs O(nnz) and the memory is O(nnz + LN).
// A column half-step and the row half-step before it are reversed in one
// pass over the rows. The column sums of the adjoint that a column
// half-step needs are tracked rather than summed: reversing a column
// half-step leaves them zero (P' has unit column sums), reversing a row
// half-step with row sums r sets them to −P'ᵀr, a pass over the
// transposed kernel like a forward column half-step (the dense engine
// tracks its sums the same way). So each iteration costs the same two
// passes backward as forward. Kernels of earlier segments are recomputed,
// bit for bit, from their reference potentials.

// spsParMin is the number of stored entries from which one matrix's
// half-steps are split over goroutines (when the batch is too small to
// keep them busy). A variable so that tests can exercise the split on
// small patterns.
var spsParMin = 1 << 15

// spsRebuildEvery, when positive, makes the engine rebuild its kernel at
// every half-step h > 0 that it divides, as if the scalings had left their
// bounds. A rebuild changes the representation, not the result (to
// rounding), so this is a test hook for the segment logic, which natural
// inputs reach only in extreme cases (a row rebuild after a column
// rebuild, say).
var spsRebuildEvery = 0

// spsRunner splits loops over rows or columns over at most that many
// goroutines (≤ 1: the calling goroutine only).
type spsRunner int

// chunks calls fn(k, lo, hi) for contiguous ranges covering [0, n), one
// per goroutine, and returns the number of ranges.
func (r spsRunner) chunks(n int, fn func(k, lo, hi int)) int {
	w := min(int(r), n)
	if w <= 1 {
		fn(0, 0, n)
		return 1
	}
	var wg sync.WaitGroup
	for k := 1; k < w; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(k, k*n/w, (k+1)*n/w)
		}()
	}
	fn(0, 0, n/w)
	wg.Wait()
	return w
}

// each calls fn on ranges covering [0, n).
func (r spsRunner) each(n int, fn func(lo, hi int)) {
	r.chunks(n, func(_, lo, hi int) { fn(lo, hi) })
}

// all calls fn on ranges covering [0, n) and reports whether every call
// returned true.
func (r spsRunner) all(n int, fn func(lo, hi int) bool) bool {
	var ok [64]bool
	w := min(int(r), n, len(ok))
	used := spsRunner(w).chunks(n, func(k, lo, hi int) { ok[k] = fn(lo, hi) })
	for _, v := range ok[:used] {
		if !v {
			return false
		}
	}
	return true
}

// max calls fn on ranges covering [0, n) and returns the largest result.
func (r spsRunner) max(n int, fn func(lo, hi int) float64) float64 {
	var res [64]float64
	w := min(int(r), n, len(res))
	used := spsRunner(w).chunks(n, func(k, lo, hi int) { res[k] = fn(lo, hi) })
	m := res[0]
	for _, v := range res[1:used] {
		m = max(m, v)
	}
	return m
}

// spsPlan decides how a batch is computed: matrices in parallel, each on
// one goroutine (inner = 1), or one after another with their rows and
// columns split over inner goroutines. Both give the same bits.
func spsPlan(batch, nnz int) (inner spsRunner) {
	workers := runtime.GOMAXPROCS(0)
	if workers > 1 && batch < workers && nnz >= spsParMin {
		return spsRunner(workers)
	}
	return 1
}

// spsForBatch calls fn(k, runner) for every matrix of the batch, following
// spsPlan; work estimates the operations of one call.
func spsForBatch(batch, nnz, work int, fn func(k int, r spsRunner)) {
	if inner := spsPlan(batch, nnz); inner > 1 {
		for k := 0; k < batch; k++ {
			fn(k, inner)
		}
		return
	}
	sinkParallel(batch, work, func(k int) { fn(k, 1) })
}

// spsDot returns Σ_e k[e]·v[idx[e]], in a fixed order.
func spsDot(k []float64, idx []int32, v []float64) float64 {
	idx = idx[:len(k)]
	var s0, s1, s2, s3 float64
	e := 0
	for ; e+4 <= len(k); e += 4 {
		s0 += k[e] * v[idx[e]]
		s1 += k[e+1] * v[idx[e+1]]
		s2 += k[e+2] * v[idx[e+2]]
		s3 += k[e+3] * v[idx[e+3]]
	}
	for ; e < len(k); e++ {
		s0 += k[e] * v[idx[e]]
	}
	return (s0 + s1) + (s2 + s3)
}

// spsSubScaled sets g[e] −= k[e]·a·y[idx[e]] and returns the sum of the
// new g, in a fixed order.
func spsSubScaled(g, k []float64, idx []int32, y []float64, a float64) float64 {
	g, idx = g[:len(k)], idx[:len(k)]
	var s0, s1, s2, s3 float64
	e := 0
	for ; e+4 <= len(k); e += 4 {
		v0 := g[e] - k[e]*a*y[idx[e]]
		v1 := g[e+1] - k[e+1]*a*y[idx[e+1]]
		v2 := g[e+2] - k[e+2]*a*y[idx[e+2]]
		v3 := g[e+3] - k[e+3]*a*y[idx[e+3]]
		g[e], g[e+1], g[e+2], g[e+3] = v0, v1, v2, v3
		s0 += v0
		s1 += v1
		s2 += v2
		s3 += v3
	}
	for ; e < len(k); e++ {
		v := g[e] - k[e]*a*y[idx[e]]
		g[e] = v
		s0 += v
	}
	return (s0 + s1) + (s2 + s3)
}

// spsSum returns Σ_e k[e], in a fixed order.
func spsSum(k []float64) float64 {
	var s0, s1, s2, s3 float64
	e := 0
	for ; e+4 <= len(k); e += 4 {
		s0 += k[e]
		s1 += k[e+1]
		s2 += k[e+2]
		s3 += k[e+3]
	}
	for ; e < len(k); e++ {
		s0 += k[e]
	}
	return (s0 + s1) + (s2 + s3)
}

// spsCheck validates the values of one matrix on p: no NaN or +Inf, no
// finite value overflowing when scaled by 1/τ, and a finite value in every
// row and column (−Inf values forbid their entry).
func spsCheck(p *SparsePattern, x []float64, tau float64) error {
	lim := min(0.5*math.MaxFloat64*tau, math.MaxFloat64)
	if allAbsLE(x, lim) {
		return nil
	}
	scale := 1 / tau
	colOK := make([]bool, p.n)
	for i := 0; i < p.n; i++ {
		rowOK := false
		for e := p.rowPtr[i]; e < p.rowPtr[i+1]; e++ {
			v, j := x[e], p.cols[e]
			switch {
			case math.IsNaN(v):
				return fmt.Errorf("entry %d (%d,%d) is NaN", e, i, j)
			case math.IsInf(v, 1):
				return fmt.Errorf("entry %d (%d,%d) is +Inf", e, i, j)
			case math.IsInf(v, -1):
				continue
			case math.IsInf(v*scale, 0):
				return fmt.Errorf("entry %d (%d,%d) = %g overflows when divided by tau = %g", e, i, j, v, tau)
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

// spsWork is the state of the truncated Sinkhorn iteration on one matrix
// of a sparse pattern. Its buffers come from the caller.
type spsWork struct {
	p     *SparsePattern
	run   spsRunner
	scale float64   // 1/τ
	x     []float64 // the matrix's values, CSR order; read only

	kern  []float64 // nnz: kernel of the current segment, CSR order
	kernT []float64 // nnz: the same in CSC order
	scal  []float64 // keep: one n-vector per half-step; else two
	keep  bool      // whether every half-step's scaling is kept
	pot   []float64 // per segment: f (n) then g (n)
	seg   []int     // first half-step of each segment
	ones  []float64 // n ones
	a, b  []float64 // current scalings
	half  int       // half-steps performed
	every int       // spsRebuildEvery when the work area was made
}

// newSpsWork returns a work area for iters iterations on the values x,
// taking its buffers from alloc (which need not zero them). With keep, the
// scalings of every half-step are kept for the backward pass.
func newSpsWork(alloc func(int) []float64, p *SparsePattern, x []float64, tau float64, iters int, keep bool) *spsWork {
	n, nnz := p.n, len(p.cols)
	h := 2
	if keep {
		h = 2 * iters
	}
	w := &spsWork{
		p:     p,
		run:   1,
		scale: 1 / tau,
		x:     x,
		kern:  alloc(nnz),
		kernT: alloc(nnz),
		scal:  alloc(h * n),
		keep:  keep,
		pot:   alloc(2 * n),
		seg:   make([]int, 0, 4),
		ones:  alloc(n),
		every: spsRebuildEvery,
	}
	for i := range w.ones {
		w.ones[i] = 1
	}
	return w
}

// scalAt returns the buffer of half-step h's scaling.
func (w *spsWork) scalAt(h int) []float64 {
	n := w.p.n
	if !w.keep {
		h %= 2
	}
	return w.scal[h*n : (h+1)*n]
}

func (w *spsWork) newSegment() {
	if need := 2 * w.p.n * (len(w.seg) + 1); len(w.pot) < need {
		w.pot = append(w.pot[:len(w.pot):len(w.pot)], make([]float64, need-len(w.pot))...)
	}
}

func (w *spsWork) segPot(s int) (f, g []float64) {
	n := w.p.n
	return w.pot[2*s*n : (2*s+1)*n], w.pot[(2*s+1)*n : (2*s+2)*n]
}

// iterate performs up to iters row-then-column normalisations; with
// tol > 0 it stops after the first iteration whose row sums are all within
// tol of one. It returns the number of iterations performed.
func (w *spsWork) iterate(iters int, tol float64) int {
	w.seg = w.seg[:0]
	for l := 0; l < iters; l++ {
		h := 2 * l
		a, b := w.scalAt(h), w.scalAt(h+1)
		if len(w.seg) == 0 || w.forced(h) || !w.rowStep(a) {
			w.rebuildRow(h, a)
		}
		w.a = a
		if w.forced(h+1) || !w.colStep(b) {
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

// forced reports whether spsRebuildEvery asks for a rebuild at h.
func (w *spsWork) forced(h int) bool {
	return w.every > 0 && h > 0 && h%w.every == 0
}

// rowStep sets a_i = 1/(K b)_i and reports whether every sum was within
// the scaling bounds (if not, a holds garbage).
func (w *spsWork) rowStep(a []float64) bool {
	return w.scaleStep(a, w.p.rowPtr, w.p.colIdx, w.kern, w.b)
}

// colStep sets b_j = 1/(Kᵀa)_j, likewise.
func (w *spsWork) colStep(b []float64) bool {
	return w.scaleStep(b, w.p.colPtr, w.p.rowIdx, w.kernT, w.a)
}

// scaleStep sets dst_i = 1/Σ_e kern_e·src[idx_e] over the entries e of
// line i (ptr[i] to ptr[i+1]) of the kernel stored by rows (K) or by
// columns (Kᵀ), and reports whether every sum was within the scaling
// bounds.
func (w *spsWork) scaleStep(dst []float64, ptr []int, idx []int32, kern, src []float64) bool {
	return w.run.all(w.p.n, func(lo, hi int) bool {
		for i := lo; i < hi; i++ {
			e0, e1 := ptr[i], ptr[i+1]
			s := spsDot(kern[e0:e1], idx[e0:e1], src)
			if !(s >= sinkScaleMin && s <= sinkScaleMax) {
				return false
			}
			dst[i] = 1 / s
		}
		return true
	})
}

// rowKernel sets, for the rows [lo, hi) of a row segment with reference
// potentials (f, g), K_e = exp((X_e/τ − g_j) − f_i), where f_i is the
// row maximum of X_e/τ − g_j if setF (else f is read).
func (w *spsWork) rowKernel(lo, hi int, f, g []float64, setF bool) {
	p, sc := w.p, w.scale
	for i := lo; i < hi; i++ {
		e0, e1 := p.rowPtr[i], p.rowPtr[i+1]
		k := w.kern[e0:e1]
		x := w.x[e0:e1]
		idx := p.colIdx[e0:e1]
		m := math.Inf(-1)
		for e, v := range x {
			t := v*sc - g[idx[e]]
			k[e] = t
			m = max(m, t)
		}
		if setF {
			f[i] = m
		} else {
			m = f[i]
		}
		for e := range k {
			k[e] -= m
		}
	}
	expShift(w.kern[p.rowPtr[lo]:p.rowPtr[hi]], 0)
}

// colKernel sets, for the rows [lo, hi) of a column segment,
// K_e = exp((X_e/τ − f_i) − g_j).
func (w *spsWork) colKernel(lo, hi int, f, g []float64) {
	p, sc := w.p, w.scale
	for i := lo; i < hi; i++ {
		e0, e1 := p.rowPtr[i], p.rowPtr[i+1]
		k := w.kern[e0:e1]
		idx := p.colIdx[e0:e1]
		fi := f[i]
		for e, v := range w.x[e0:e1] {
			k[e] = (v*sc - fi) - g[idx[e]]
		}
	}
	expShift(w.kern[p.rowPtr[lo]:p.rowPtr[hi]], 0)
}

// fillT copies the kernel into CSC order.
func (w *spsWork) fillT() {
	p := w.p
	w.run.each(p.n, func(lo, hi int) {
		e0, e1 := p.colPtr[lo], p.colPtr[hi]
		kt := w.kernT[e0:e1]
		for q, e := range p.tperm[e0:e1] {
			kt[q] = w.kern[e]
		}
	})
}

// rebuildRow starts a segment at row half-step h: g = β (the current
// column potentials), f_i = max_e (X_e/τ − g_j) over row i, the kernel, and
// out = a = 1 ⊘ (K 1).
func (w *spsWork) rebuildRow(h int, out []float64) {
	p := w.p
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
	w.run.each(p.n, func(lo, hi int) {
		w.rowKernel(lo, hi, f, g, true)
		for i := lo; i < hi; i++ {
			out[i] = 1 / spsSum(w.kern[p.rowPtr[i]:p.rowPtr[i+1]])
		}
	})
	w.fillT()
	w.seg = append(w.seg, h)
	w.b = w.ones
}

// rebuildCol starts a segment at column half-step h: f = α (the current
// row potentials), g_j = max_e (X_e/τ − f_i) over column j, the kernel, and
// out = b = 1 ⊘ (Kᵀ 1).
func (w *spsWork) rebuildCol(h int, out []float64) {
	p, sc := w.p, w.scale
	w.newSegment()
	s := len(w.seg)
	f, g := w.segPot(s)
	fPrev, _ := w.segPot(s - 1) // a column step always follows a row step
	for i := range f {
		f[i] = fPrev[i] - math.Log(w.a[i])
	}
	// The column maxima of X/τ − f, gathered through the transpose.
	w.run.each(p.n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			m := math.Inf(-1)
			for q := p.colPtr[j]; q < p.colPtr[j+1]; q++ {
				e, i := p.tperm[q], p.rowIdx[q]
				m = max(m, w.x[e]*sc-f[i])
			}
			g[j] = m
		}
	})
	w.run.each(p.n, func(lo, hi int) { w.colKernel(lo, hi, f, g) })
	w.fillT()
	w.run.each(p.n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			out[j] = 1 / spsSum(w.kernT[p.colPtr[j]:p.colPtr[j+1]])
		}
	})
	w.seg = append(w.seg, h)
	w.a = w.ones
}

// recomputeKernel rebuilds the kernel of segment s (both orders) from its
// reference potentials, bit for bit as the forward pass computed it.
func (w *spsWork) recomputeKernel(s int) {
	f, g := w.segPot(s)
	if w.seg[s]%2 == 0 {
		w.run.each(w.p.n, func(lo, hi int) { w.rowKernel(lo, hi, f, g, false) })
	} else {
		w.run.each(w.p.n, func(lo, hi int) { w.colKernel(lo, hi, f, g) })
	}
	w.fillT()
}

// rowError returns max_i |Σ_{e∈row i} P_e − 1| for the current iterate.
func (w *spsWork) rowError() float64 {
	p := w.p
	return w.run.max(p.n, func(lo, hi int) float64 {
		e := 0.0
		for i := lo; i < hi; i++ {
			e0, e1 := p.rowPtr[i], p.rowPtr[i+1]
			s := spsDot(w.kern[e0:e1], p.colIdx[e0:e1], w.b)
			e = max(e, math.Abs(w.a[i]*s-1))
		}
		return e
	})
}

// potentials writes the current potentials: log P_e = X_e/τ − α_i − β_j.
func (w *spsWork) potentials(alpha, beta []float64) {
	f, g := w.segPot(len(w.seg) - 1)
	for i := range alpha {
		alpha[i] = f[i] - math.Log(w.a[i])
	}
	for j := range beta {
		beta[j] = g[j] - math.Log(w.b[j])
	}
}

// logOut writes log P of the current iterate into dst (nnz), using alpha
// and beta (n each) as scratch.
func (w *spsWork) logOut(dst, alpha, beta []float64) {
	p, sc := w.p, w.scale
	w.potentials(alpha, beta)
	w.run.each(p.n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			ai := alpha[i]
			for e := p.rowPtr[i]; e < p.rowPtr[i+1]; e++ {
				dst[e] = (w.x[e]*sc - ai) - beta[p.colIdx[e]]
			}
		}
	})
}

// expOut writes P of the current iterate into dst (nnz), using alpha and
// beta as scratch: K_e a_i b_j, or exp(log P_e) where that product is too
// small to carry full relative precision.
func (w *spsWork) expOut(dst, alpha, beta []float64) {
	p, sc := w.p, w.scale
	w.potentials(alpha, beta)
	w.run.each(p.n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			ai := w.a[i]
			for e := p.rowPtr[i]; e < p.rowPtr[i+1]; e++ {
				j := p.colIdx[e]
				v := w.kern[e] * ai * w.b[j]
				if v < sinkTinyProduct {
					v = math.Exp((w.x[e]*sc - alpha[i]) - beta[j])
				}
				dst[e] = v
			}
		}
	})
}

// scalings returns the scalings (a_h, b_h) after half-step h of the
// segment starting at start: P_h = a_h K b_hᵀ on the pattern. It needs
// keep.
func (w *spsWork) scalings(h, start int) (a, b []float64) {
	cur := w.scalAt(h)
	prev := w.ones
	if h > start {
		prev = w.scalAt(h - 1)
	}
	if h%2 == 0 {
		return cur, prev
	}
	return prev, cur
}

// spsBack holds the scratch of one backward pass.
type spsBack struct {
	g    []float64 // nnz: adjoint of the current iterate
	r, c []float64 // n each: its row and column sums
	y    []float64 // n: b ⊙ c for a column half-step
}

func newSpsBack(alloc func(int) []float64, n, nnz int) *spsBack {
	return &spsBack{g: alloc(nnz), r: alloc(n), c: alloc(n), y: alloc(n)}
}

// colSums sets c_j = Σ_{e∈col j} g_e.
func (w *spsWork) colSums(g, c []float64) {
	p := w.p
	w.run.each(p.n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			s := 0.0
			for _, e := range p.tperm[p.colPtr[j]:p.colPtr[j+1]] {
				s += g[e]
			}
			c[j] = s
		}
	})
}

// backward adds to gx the gradient with respect to X of a loss whose
// gradient with respect to log P (the final iterate) is in sb.g; sb.g is
// overwritten. It must follow iterate on a work area made with keep.
func (w *spsWork) backward(gx []float64, sb *spsBack) {
	p, g := w.p, sb.g
	last := len(w.seg) - 1
	loaded := last
	segOf := func(h int) int {
		s := last
		for w.seg[s] > h {
			s--
		}
		return s
	}
	h := w.half - 1 // a column half-step
	// The adjoint's column sums: gathered once here, then tracked. Right
	// after a column half-step is reversed they are zero (P has unit
	// column sums); reversing a row half-step with row sums r then sets
	// them to −Pᵀr, one pass over the transposed kernel instead of a
	// gather of the whole adjoint.
	w.colSums(g, sb.c)
	for h >= 0 {
		s := segOf(h)
		if s != loaded {
			w.recomputeKernel(s)
			loaded = s
		}
		start := w.seg[s]
		if h%2 == 1 {
			ac, bc := w.scalings(h, start)
			y := spsMulTo(sb.y, bc, sb.c)
			if h-1 < start {
				// Segment boundary: the column half-step alone, leaving
				// the row sums for the row half-step of the previous
				// segment.
				w.backCol(g, y, sb.r, ac)
				h--
				continue
			}
			// The column half-step h and the row half-step h−1, in one
			// pass over the rows.
			ar, br := w.scalings(h-1, start)
			w.backColRow(g, y, ac, ar, br, sb.r)
			h -= 2
			if h >= 0 {
				w.colSumsAfterRow(sb.c, sb.r, br)
			}
			continue
		}
		a, b := w.scalings(h, start)
		w.backRow(g, sb.r, a, b)
		h--
		if h >= 0 {
			w.colSumsAfterRow(sb.c, sb.r, b)
		}
	}
	sc := w.scale
	w.run.each(p.n, func(lo, hi int) {
		e0, e1 := p.rowPtr[lo], p.rowPtr[hi]
		gx := gx[e0:e1]
		for e, v := range g[e0:e1] {
			gx[e] += v * sc
		}
	})
}

// spsMulTo sets dst = x ⊙ y and returns it.
func spsMulTo(dst, x, y []float64) []float64 {
	y = y[:len(x)]
	dst = dst[:len(x)]
	for j, v := range x {
		dst[j] = v * y[j]
	}
	return dst
}

// colSumsAfterRow sets c = −b ⊙ (Kᵀ ar): the column sums of the adjoint
// after a row half-step with P = a K bᵀ was reversed, given ar = a ⊙ r
// (r the row sums it removed) and zero column sums before.
func (w *spsWork) colSumsAfterRow(c, ar, b []float64) {
	p := w.p
	w.run.each(p.n, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			e0, e1 := p.colPtr[j], p.colPtr[j+1]
			c[j] = -b[j] * spsDot(w.kernT[e0:e1], p.rowIdx[e0:e1], ar)
		}
	})
}

// backColRow reverses a column half-step (P = ac K bcᵀ, with bc ⊙ c in
// y, c the column sums of the adjoint) and the row half-step before it
// (P = ar K brᵀ), and leaves ar ⊙ r in arOut, r the row sums the second
// removed.
func (w *spsWork) backColRow(g, y, ac, ar, br, arOut []float64) {
	p := w.p
	w.run.each(p.n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			e0, e1 := p.rowPtr[i], p.rowPtr[i+1]
			k, gi, idx := w.kern[e0:e1], g[e0:e1], p.colIdx[e0:e1]
			gi, idx = gi[:len(k)], idx[:len(k)]
			r := spsSubScaled(gi, k, idx, y, ac[i])
			ar := ar[i] * r
			arOut[i] = ar
			for e, kv := range k {
				gi[e] -= kv * ar * br[idx[e]]
			}
		}
	})
}

// backCol reverses a column half-step alone (P = a K bᵀ, b ⊙ c in y) and
// leaves the adjoint's row sums in r.
func (w *spsWork) backCol(g, y, r, a []float64) {
	p := w.p
	w.run.each(p.n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			e0, e1 := p.rowPtr[i], p.rowPtr[i+1]
			k, gi, idx := w.kern[e0:e1], g[e0:e1], p.colIdx[e0:e1]
			gi, idx = gi[:len(k)], idx[:len(k)]
			r[i] = spsSubScaled(gi, k, idx, y, a[i])
		}
	})
}

// backRow reverses a row half-step given the adjoint's row sums r, which
// it overwrites with a ⊙ r.
func (w *spsWork) backRow(g, r, a, b []float64) {
	p := w.p
	w.run.each(p.n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			e0, e1 := p.rowPtr[i], p.rowPtr[i+1]
			k, gi, idx := w.kern[e0:e1], g[e0:e1], p.colIdx[e0:e1]
			gi, idx = gi[:len(k)], idx[:len(k)]
			ar := a[i] * r[i]
			r[i] = ar
			for e, kv := range k {
				gi[e] -= kv * ar * b[idx[e]]
			}
		}
	})
}
