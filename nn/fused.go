package nn

import (
	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/f64"
)

// Sequential records a Conv2D followed by a ReLU and a MaxPool2D, in
// either order (and a Flatten after them, if there is one), as one tape
// op: convolution, bias, rectifier and pooling in one pass over each
// sample, without the (N, F, H′, W′) activation between them or its
// adjoint.
//
// The fused op computes what the layers one after the other compute:
//
//   - forward, the same convolution sums in the same order (the implicit
//     im2col product of convForward) plus the bias, rounded the same way;
//     each window's first maximum in row-major order is taken over the raw
//     values, and the output is its rectified value. The two orders of
//     ReLU and pooling agree (see poolPixelMajor), and the output is the
//     unfused one bit for bit;
//   - backward, the adjoint of the convolution output is zero except at
//     the argmax of a window whose output is positive (ReLU's derivative
//     is 0 at and below 0), where it is that window's output adjoint (one
//     entry per window that chose the pixel, when windows overlap). The
//     products with it, W̄ += Ȳ_n·X_n and X̄_n = Ȳ_nᵀ·W, and the bias sums
//     skip its zeros. X̄ adds the filters in order, as the dense product
//     does, and a skipped term is a fused multiply-add of 0, which leaves
//     a finite running sum unchanged; so without overlapping windows X̄ is
//     the unfused one bit for bit (on the assembly path of internal/f64).
//     W̄ and b̄ add the pixels in window order rather than row-major pixel
//     order, which reassociates their sums and changes them by rounding
//     only.
//
// Skipping the zeros is where the time goes: with 2×2 pooling, W̄ and X̄
// cost a quarter of the dense products, and the rectifier, the pooling
// and their adjoints touch a quarter of the memory.

// fuseConvPool applies the first layers to x as one op when they are a
// Conv2D, a ReLU and a MaxPool2D (the last two in either order) that would
// run without error, and a Flatten after them too if there is one (the op
// then gives its output the flat shape directly). It returns the output
// and the number of layers it applied, or nil and 0 when the layers do not
// match or any of them would report an error, in which case the caller
// runs them one by one and they report it.
func fuseConvPool(t *ad.Tape, layers []Layer, x *ad.Var) (*ad.Var, int) {
	if len(layers) < 3 {
		return nil, 0
	}
	conv, ok := layers[0].(*Conv2D)
	if !ok || conv == nil {
		return nil, 0
	}
	var pool MaxPool2D
	if !(isReLU(layers[1]) && asPool(layers[2], &pool)) && !(asPool(layers[1], &pool) && isReLU(layers[2])) {
		return nil, 0
	}
	if t == nil || t.Err() != nil || x == nil || x.Tape() != t || conv.valid() != nil {
		return nil, 0
	}
	sh := x.Shape()
	if len(sh) != 4 || sh[1] != conv.InC {
		return nil, 0
	}
	ho, wo, err := conv.OutSize(sh[2], sh[3])
	if err != nil {
		return nil, 0
	}
	size, stride := pool.Size, pool.Stride
	if stride == 0 {
		stride = size
	}
	if size < 1 || stride < 1 || ho < size || wo < size {
		return nil, 0
	}
	g := convGeom{n: sh[0], c: sh[1], h: sh[2], w: sh[3], f: conv.OutC, ho: ho, wo: wo, k: conv.Kernel, stride: conv.Stride, pad: conv.Pad}
	pg := poolGeom{size: size, stride: stride, ho: (ho-size)/stride + 1, wo: (wo-size)/stride + 1}
	var b *ad.Var
	if conv.B != nil {
		b = t.Param(conv.B)
	}
	used := 3
	if len(layers) > 3 && isFlatten(layers[3]) && g.n > 0 {
		used = 4
	}
	return convReLUPool(t, &g, &pg, x, t.Param(conv.W), b, used == 4), used
}

func isFlatten(l Layer) bool {
	switch f := l.(type) {
	case Flatten:
		return true
	case *Flatten:
		return f != nil
	}
	return false
}

func isReLU(l Layer) bool {
	switch r := l.(type) {
	case ReLU:
		return true
	case *ReLU:
		return r != nil
	}
	return false
}

func asPool(l Layer, p *MaxPool2D) bool {
	switch m := l.(type) {
	case MaxPool2D:
		*p = m
		return true
	case *MaxPool2D:
		if m != nil {
			*p = *m
			return true
		}
	}
	return false
}

// poolGeom is the pooling of a fused op: windows of size×size pixels of
// the convolution output, stride apart, giving ho×wo outputs per filter.
type poolGeom struct {
	size, stride, ho, wo int
}

// poolLayout says which convolution outputs a fused op computes: only the
// pixels that lie in some window (64 of the 81 of a 9×9 output under 2×2
// pooling, which drops the last row and column), stored compactly.
type poolLayout struct {
	// covered lists those pixels in increasing order; row r of the
	// compact activation is pixel covered[r].
	covered []int
	// rows[r] is the corner of pixel covered[r]'s patch in the padded
	// sample, and offs[q] the place of tap q within a patch (the tables
	// of f64.GemmGather).
	rows, offs []int
	// win[o·l:(o+1)·l] are the compact rows of window o's pixels in
	// row-major order, padded to l, a multiple of four (f64.MaxArg's
	// block), with the window's first row, which never wins a strict
	// comparison against the maximum it starts.
	win []int
	l   int
}

func newPoolLayout(g *convGeom, pg *poolGeom) *poolLayout {
	np := g.pix()
	compact := make([]int, np)
	for p := range compact {
		compact[p] = -1
	}
	for i := range pg.ho {
		for j := range pg.wo {
			for u := range pg.size {
				for v := range pg.size {
					compact[(i*pg.stride+u)*g.wo+j*pg.stride+v] = 0
				}
			}
		}
	}
	lay := &poolLayout{l: (pg.size*pg.size + 3) / 4 * 4}
	allRows, offs := g.gatherTables()
	lay.offs = offs
	for p, c := range compact {
		if c == 0 {
			compact[p] = len(lay.covered)
			lay.covered = append(lay.covered, p)
			lay.rows = append(lay.rows, allRows[p])
		}
	}
	lay.win = make([]int, 0, pg.ho*pg.wo*lay.l)
	for i := range pg.ho {
		for j := range pg.wo {
			p0 := i*pg.stride*g.wo + j*pg.stride
			start := len(lay.win)
			for u := range pg.size {
				for v := range pg.size {
					lay.win = append(lay.win, compact[p0+u*g.wo+v])
				}
			}
			for len(lay.win)-start < lay.l {
				lay.win = append(lay.win, lay.win[start])
			}
		}
	}
	return lay
}

// convReLUPool records pool(relu(conv(x))), which is relu(pool(conv(x))),
// with filters w (F, C·K·K) and optional bias b (F). The output has shape
// (N, F, H″, W″), or (N, F·H″·W″) when flat.
func convReLUPool(t *ad.Tape, g *convGeom, pg *poolGeom, x, w, b *ad.Var, flat bool) *ad.Var {
	ins := []*ad.Var{x, w}
	var bias []float64
	if b != nil {
		ins = append(ins, b)
		bias = b.Value()
	}
	xv, wv := x.Value(), w.Value()
	out := g.n * g.f * pg.ho * pg.wo
	y := t.AllocRaw(out)
	// arg[o] is the compact row (see poolLayout) of window o's maximum,
	// where output o's adjoint flows when y[o] > 0; row numbers are far
	// below 2⁵³, so a float64 holds them exactly.
	arg := t.AllocRaw(out)
	lay := newPoolLayout(g, pg)
	convPoolForward(g, pg, lay, xv, wv, bias, y, arg)
	shape := []int{g.n, g.f, pg.ho, pg.wo}
	if flat {
		shape = []int{g.n, g.f * pg.ho * pg.wo}
	}
	return t.Custom(shape, y, ins, func(gy []float64, gIn [][]float64) {
		var gb []float64
		if len(gIn) > 2 {
			gb = gIn[2]
		}
		convPoolBackward(t, g, pg, lay, xv, wv, y, arg, gy, gIn[0], gIn[1], gb)
	})
}

func convPoolForward(g *convGeom, pg *poolGeom, lay *poolLayout, x, w, bias, y, arg []float64) {
	nc, nf := g.cols(), g.f
	nr, nq := len(lay.covered), pg.ho*pg.wo
	wt := packedPool.Get().(*f64.Packed)
	wt = f64.PackTransTo(wt, w, nc, nf) // Wᵀ, (C·K·K, F)
	defer packedPool.Put(wt)
	offs := lay.offs
	scratch := make([]*convScratch, workers(g.n))
	for i := range scratch {
		scratch[i] = getScratch(0, nr*nf)
		scratch[i].xpad = growTo(scratch[i].xpad, g.padSize())
		scratch[i].best = growTo(scratch[i].best, nf)
		scratch[i].at = growTo(scratch[i].at, nf)
	}
	xs := g.c * g.h * g.w
	parallelFor(len(scratch), g.n, func(wk, n int) {
		s := scratch[wk]
		g.padInto(x[n*xs:(n+1)*xs], s.xpad)
		// The covered rows of X_n·Wᵀ, (nr, F), pixel-major.
		f64.GemmGather(s.xpad, lay.rows, offs, wt, s.tmp)
		if bias != nil {
			// row += 1·b: a fused multiply-add by 1 rounds as the
			// plain sum does, so this is the unfused bias add.
			for r := range nr {
				f64.Axpy(1, bias, s.tmp[r*nf:(r+1)*nf])
			}
		}
		poolPixelMajor(nf, nq, lay, s.tmp, s.best, s.at, y[n*nf*nq:(n+1)*nf*nq], arg[n*nf*nq:(n+1)*nf*nq])
	})
	for _, s := range scratch {
		convPool.Put(s)
	}
}

// poolPixelMajor pools one sample's compact convolution output v, stored
// row by row (v[r·F + f] for the pixel covered[r]), into y and arg
// (F, nq).
//
// ReLU and max-pooling commute here: the first maximum of the raw values
// is the first maximum of the rectified ones whenever it is positive, and
// otherwise the rectified window is all zeros (the output is 0 either way)
// and no adjoint flows (ReLU's derivative is 0 at and below 0). A NaN only
// counts in the window's first pixel, in either order, since comparisons
// with it are false. So both orders take the raw maximum m, output
// max(m, 0), and let the adjoint through where m > 0.
func poolPixelMajor(nf, nq int, lay *poolLayout, v, best, at, y, arg []float64) {
	for o := range nq {
		win := lay.win[o*lay.l : (o+1)*lay.l]
		r0 := win[0]
		copy(best, v[r0*nf:(r0+1)*nf])
		for f := range at {
			at[f] = float64(r0)
		}
		f64.MaxArg(best, at, v, nf, win)
		storeWindow(best, at, y[o:], arg[o:], nq)
	}
}

// storeWindow writes one window's results for every filter f: the
// rectified maximum to y[f·nq] and its pixel to arg[f·nq]. (A separate
// function keeps the loop's few variables in registers.)
func storeWindow(best, at, y, arg []float64, nq int) {
	at = at[:len(best)]
	for f, m := range best {
		y[f*nq] = max(m, 0)
		arg[f*nq] = at[f]
	}
}

func growInts(s []int, n int) []int {
	if cap(s) < n {
		return make([]int, n)
	}
	return s[:n]
}

// sparseAdjoint collects the non-zero entries of one sample's
// convolution-output adjoint: for each filter f, the compact rows
// pix[start[f]:start[f+1]] that receive an adjoint, in window order, and
// the adjoints coef of their windows. y, gy and arg are the sample's
// (F, nq) output, its adjoint and the argmax rows; a window passes its
// adjoint on when its output is positive. pix and coef must hold F·nq
// entries. A pixel that two overlapping windows chose appears twice.
func sparseAdjoint(nf, nq int, y, gy, arg []float64, pix []int, coef []float64, start []int) {
	k := 0
	for f := range nf {
		start[f] = k
		a, g, yf := arg[f*nq:(f+1)*nq], gy[f*nq:(f+1)*nq], y[f*nq:(f+1)*nq]
		a, g = a[:len(yf)], g[:len(yf)]
		for o, v := range yf {
			// Written unconditionally and kept by advancing k, which
			// compiles to a compare and an add, not a branch that the
			// random signs would make mispredict.
			pix[k], coef[k] = int(a[o]), g[o]
			if v > 0 {
				k++
			}
		}
	}
	start[nf] = k
}

func convPoolBackward(t *ad.Tape, g *convGeom, pg *poolGeom, lay *poolLayout, x, w, y, arg, gy, gx, gw, gb []float64) {
	nc, nf := g.cols(), g.f
	nr, nq := len(lay.covered), pg.ho*pg.wo
	size, count := chunks(g.n, convChunks)
	var partialW, partialB []float64
	if gw != nil {
		partialW = t.Alloc(count * nf * nc)
	}
	if gb != nil {
		// b̄ per sample, summed over samples in order below.
		partialB = t.AllocRaw(g.n * nf)
	}
	offs := lay.offs
	scratch := make([]*convScratch, workers(count))
	for i := range scratch {
		s := getScratch(nr*nc, 0)
		s.xpad = growTo(s.xpad, g.padSize())
		s.pix = growInts(s.pix, nf*nq)
		s.coef = growTo(s.coef, nf*nq)
		s.start = growInts(s.start, nf+1)
		if gx != nil {
			s.byPix = growInts(s.byPix, nf*nq)
			s.byPixCoef = growTo(s.byPixCoef, nf*nq)
			s.pixStart = growInts(s.pixStart, nr+1)
		}
		scratch[i] = s
	}
	xs := g.c * g.h * g.w
	parallelFor(len(scratch), count, func(wk, q int) {
		s := scratch[wk]
		for n := q * size; n < min((q+1)*size, g.n); n++ {
			sparseAdjoint(nf, nq, y[n*nf*nq:(n+1)*nf*nq], gy[n*nf*nq:(n+1)*nf*nq], arg[n*nf*nq:(n+1)*nf*nq], s.pix, s.coef, s.start)
			if gb != nil {
				pb := partialB[n*nf : (n+1)*nf]
				for f := range nf {
					sum := 0.0
					for _, c := range s.coef[s.start[f]:s.start[f+1]] {
						sum += c
					}
					pb[f] = sum
				}
			}
			if gw != nil {
				// W̄[f,:] += Σ_p Ȳ_n[f,p]·X_n[p,:] over the non-zero
				// Ȳ_n[f,p], with the covered rows of X_n.
				g.padInto(x[n*xs:(n+1)*xs], s.xpad)
				im2col(s.xpad, lay.rows, offs, s.cols)
				pw := partialW[q*nf*nc : (q+1)*nf*nc]
				for f := range nf {
					a, b := s.start[f], s.start[f+1]
					f64.AxpyGather(pw[f*nc:(f+1)*nc], s.coef[a:b], s.cols, nc, s.pix[a:b])
				}
			}
			if gx != nil {
				// X̄_n[p,:] = Σ_f Ȳ_n[f,p]·W[f,:], filters in order, for
				// the covered pixels (the others get nothing).
				transposeSparse(nf, nr, s)
				gxn := gx[n*xs : (n+1)*xs]
				for r, p := range lay.covered {
					a, b := s.pixStart[r], s.pixStart[r+1]
					if a == b {
						continue
					}
					row := s.cols[r*nc : (r+1)*nc]
					clear(row)
					f64.AxpyGather(row, s.byPixCoef[a:b], w, nc, s.byPix[a:b])
					col2imPixel(g, p, row, gxn)
				}
			}
		}
	})
	for _, s := range scratch {
		convPool.Put(s)
	}
	if gw != nil {
		for q := range count {
			f64.Axpy(1, partialW[q*nf*nc:(q+1)*nf*nc], gw)
		}
	}
	if gb != nil {
		for n := range g.n {
			for f, v := range partialB[n*nf : (n+1)*nf] {
				gb[f] += v
			}
		}
	}
}

// transposeSparse regroups the per-filter lists of s (pix, coef, start)
// by compact row: for row p < np, the filters
// byPix[pixStart[p]:pixStart[p+1]] in increasing order and their adjoints
// byPixCoef.
func transposeSparse(nf, np int, s *convScratch) {
	cnt := s.pixStart
	clear(cnt)
	total := s.start[nf]
	for _, p := range s.pix[:total] {
		cnt[p+1]++
	}
	for p := range np {
		cnt[p+1] += cnt[p]
	}
	// cnt[p] is now the start of pixel p; fill, advancing a cursor per
	// pixel, then shift the cursors back into starts.
	for f := range nf {
		for k := s.start[f]; k < s.start[f+1]; k++ {
			p := s.pix[k]
			s.byPix[cnt[p]] = f
			s.byPixCoef[cnt[p]] = s.coef[k]
			cnt[p]++
		}
	}
	copy(cnt[1:], cnt[:np])
	cnt[0] = 0
}
