package ad

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/permlab/permlab/internal/f64"
)

// Products run on the packed AVX2/FMA kernels of internal/f64 (gonum's
// Dgemm where the CPU lacks them). Every entry of a product is one running
// sum over the inner index in increasing order, computed by exactly one
// goroutine, and sums over a batch (the adjoint of a shared factor) are
// taken in batch order. Work is split into blocks of rows and column
// panels, or into batch elements, only after that order is fixed, so a
// product's bits do not depend on GOMAXPROCS or on goroutine scheduling.
//
// Packing costs O(k·n) against the product's O(m·k·n). A plain row loop
// of f64.Axpy was slower than packing for every shape tried, down to
// (4,9)·(9,9); f64.AxpyGather, which adds four scaled rows of b per pass
// over a row of c, is faster for the few-row products that direct
// selects (the same fused sums in the same order, so the same bits).

// parMulAdds: products with fewer multiply-adds stay on one goroutine.
const parMulAdds = 1 << 16

// mmScratch holds the packed right factor, a transposed left factor and
// the index table of the direct path.
type mmScratch struct {
	packed *f64.Packed
	buf    []float64
	offs   []int
}

var mmPool = sync.Pool{New: func() any { return new(mmScratch) }}

func (s *mmScratch) trans(n int) []float64 {
	if cap(s.buf) < n {
		s.buf = make([]float64, n)
	}
	return s.buf[:n]
}

// iota returns 0, 1, …, k−1 in s's storage.
func (s *mmScratch) iota(k int) []int {
	if cap(s.offs) < k {
		s.offs = make([]int, k)
	}
	idx := s.offs[:k]
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// direct reports whether gemmNN should add scaled rows of b in place
// (f64.AxpyGather) rather than pack b: for one or two rows, and for a few
// rows of a wide b small enough to stay in cache while each row of c reads
// all of it, such as the soft sort (1,100)·(100,100) and the jigsaw
// reconstruction (9,9)·(9,81), where packing b costs more than it saves.
// For small square products, and for a large b that each row would read
// from memory again, packing stays faster.
func direct(m, n, k int) bool {
	return m <= 2 || (m < 16 && n >= 32 && k*n <= 1<<13)
}

// gemmNN sets c = a·b, or adds it to c when acc, for a m×k, b k×n and c
// m×n, all row-major. With par it may split c into blocks of rows and
// columns over goroutines (packedProduct).
func gemmNN(m, n, k int, a, b, c []float64, acc, par bool) {
	if m == 0 || n == 0 {
		return
	}
	if direct(m, n, k) && f64.UsesFMA() {
		// Row i of c is Σ_p a[i,p]·(row p of b), accumulated in p order
		// with fused multiply-adds from 0 (or from c): the packed
		// kernel's sums, bit for bit, without packing b.
		s := mmPool.Get().(*mmScratch)
		idx := s.iota(k)
		for i := range m {
			ci := c[i*n : (i+1)*n]
			if !acc {
				clear(ci)
			}
			f64.AxpyGather(ci, a[i*k:(i+1)*k], b[:k*n], n, idx)
		}
		mmPool.Put(s)
		return
	}
	s := mmPool.Get().(*mmScratch)
	if serial(m, n, k, par) {
		// No closure: small products are called often enough for its
		// allocation to show.
		s.packed = f64.PackTo(s.packed, b, k, n)
		gemmRows(0, m, n, k, a, s.packed, c, acc)
	} else {
		p := f64.Prepare(s.packed, k, n)
		s.packed = p
		packedProduct(m, n, k, a, p, c, acc, func(q0, q1 int) { f64.PackPanels(p, b[:k*n], q0, q1) })
	}
	mmPool.Put(s)
}

// gemmNT sets (or, with acc, adds to) c = a·bᵀ for a m×k, b n×k, c m×n.
func gemmNT(m, n, k int, a, b, c []float64, acc, par bool) {
	if m == 0 || n == 0 {
		return
	}
	s := mmPool.Get().(*mmScratch)
	if serial(m, n, k, par) {
		s.packed = f64.PackTransTo(s.packed, b, k, n)
		gemmRows(0, m, n, k, a, s.packed, c, acc)
	} else {
		p := f64.Prepare(s.packed, k, n)
		s.packed = p
		packedProduct(m, n, k, a, p, c, acc, func(q0, q1 int) { f64.PackTransPanels(p, b[:n*k], q0, q1) })
	}
	mmPool.Put(s)
}

// gemmTN sets (or, with acc, adds to) c = aᵀ·b for a k×m, b k×n, c m×n.
// aᵀ is copied out first: reading it in place (f64.GemmGather) was as fast
// only when m is not a multiple of a large power of two, and up to 1.7
// times slower at the dense layers' weight gradients ((512,100)·(100,256),
// where the column walk down a thrashes the cache). Both give the same
// bits.
func gemmTN(m, n, k int, a, b, c []float64, acc, par bool) {
	if m == 0 || n == 0 {
		return
	}
	s := mmPool.Get().(*mmScratch)
	at := s.trans(m * k)
	if serial(m, n, k, par) {
		f64.Transpose(at, a[:k*m], k, m)
		s.packed = f64.PackTo(s.packed, b[:k*n], k, n)
		gemmRows(0, m, n, k, at, s.packed, c, acc)
	} else {
		transposeInto(at, a[:k*m], k, m, true)
		p := f64.Prepare(s.packed, k, n)
		s.packed = p
		packedProduct(m, n, k, at, p, c, acc, func(q0, q1 int) { f64.PackPanels(p, b[:k*n], q0, q1) })
	}
	mmPool.Put(s)
}

// packedProduct computes c = a·B (or c += a·B) for the m×k a and the k×n
// B prepared in p, whose panels pack(q0, q1) fills, on up to GOMAXPROCS
// goroutines. The work is cut into blocks of rows × column panels (see
// blocks). Where there are enough blocks of panels, as for a batch of 100
// against a 784×512 weight, each goroutine takes a block of panels, packs
// it and multiplies every block of rows by it at once, while it is in
// cache; a split by rows would have every goroutine read the whole of B.
// Otherwise (a few wide panels against many rows) the panels are packed
// first, in parallel, then the blocks multiplied. Every entry is computed
// by one kernel call whatever the split, so the bits do not depend on it.
func packedProduct(m, n, k int, a []float64, p *f64.Packed, c []float64, acc bool, pack func(q0, q1 int)) {
	np := p.Panels()
	workers := runtime.GOMAXPROCS(0)
	rb, nr, qb, nq := blocks(m, k, np, workers)
	if nr == 1 || nq >= 2*workers {
		parallelFor(nq, func(t int) {
			q0 := t * qb
			q1 := min(q0+qb, np)
			pack(q0, q1)
			for i0 := 0; i0 < m; i0 += rb {
				i1 := min(i0+rb, m)
				f64.GemmPanels(i1-i0, a[i0*k:i1*k], p, c[i0*n:i1*n], q0, q1, acc)
			}
		})
		return
	}
	parallelFor(nq, func(t int) { pack(t*qb, min((t+1)*qb, np)) })
	parallelFor(nr*nq, func(t int) {
		i0, q0 := (t/nq)*rb, (t%nq)*qb
		i1, q1 := min(i0+rb, m), min(q0+qb, np)
		f64.GemmPanels(i1-i0, a[i0*k:i1*k], p, c[i0*n:i1*n], q0, q1, acc)
	})
}

// serial reports whether an m×k·k×n product stays on one goroutine.
func serial(m, n, k int, par bool) bool { return !par || m*n*k < parMulAdds }

// blocks splits an m×k·k×(8·np) product into nr blocks of rb rows (a
// multiple of 4) and nq blocks of qb panels for the given number of
// workers: a block's rows of a and panels of b each take at most about
// 256 KiB (a quarter of a level-2 cache), and there are at least 8 blocks
// of panels per worker where the panels allow, so that uneven blocks
// balance out.
func blocks(m, k, np, workers int) (rb, nr, qb, nq int) {
	const cacheFloats = 1 << 15 // 256 KiB of float64
	rb = min((m+3)/4*4, max(4, cacheFloats/max(k, 1)/4*4))
	nr = (m + rb - 1) / rb
	qb, nq = splitPanels(np, max(1, cacheFloats/(8*max(k, 1))), workers)
	return rb, nr, qb, nq
}

// splitPanels cuts np panels into nq blocks of qb: blocks of at most
// maxQB panels, and at least 8 blocks per worker where the panels allow,
// so that uneven blocks balance out.
func splitPanels(np, maxQB, workers int) (qb, nq int) {
	nq = min(np, max((np+maxQB-1)/maxQB, 8*workers))
	qb = (np + nq - 1) / nq
	return qb, (np + qb - 1) / qb
}

// transposeInto writes the n×m transpose of the m×n src to dst, in blocks
// of 64 columns of src over goroutines if par.
func transposeInto(dst, src []float64, m, n int, par bool) {
	if !par {
		f64.Transpose(dst, src, m, n)
		return
	}
	const cols = 64
	parallelFor((n+cols-1)/cols, func(t int) {
		f64.TransposeCols(dst, src, m, n, t*cols, min((t+1)*cols, n))
	})
}

// gemmRows computes rows i0 … i1−1 of c = a·b (or c += a·b).
func gemmRows(i0, i1, n, k int, a []float64, b *f64.Packed, c []float64, acc bool) {
	if acc {
		f64.GemmAdd(i1-i0, a[i0*k:i1*k], b, c[i0*n:i1*n])
	} else {
		f64.Gemm(i1-i0, a[i0*k:i1*k], b, c[i0*n:i1*n])
	}
}

// parallelFor calls f(0), …, f(count−1) on up to GOMAXPROCS goroutines.
// The calls must write disjoint memory.
func parallelFor(count int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), count)
	if workers <= 1 {
		for i := range count {
			f(i)
		}
		return
	}
	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= count {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// batchParallel reports whether a batch of products should be split over
// goroutines by batch element (each product then runs on one goroutine).
func batchParallel(batch, mulAdds int) bool {
	return batch > 1 && batch*mulAdds >= parMulAdds
}

// MatMul returns the matrix product a·b over the last two axes.
//
// Supported shapes: (m,k)·(k,n) → (m,n); (B,m,k)·(B,k,n) → (B,m,n), one
// product per batch element; (B,m,k)·(k,n) → (B,m,n), the same right factor
// for every batch element; and (m,k)·(B,k,n) → (B,m,n).
//
// Large products run in parallel; the result is the same, bit for bit,
// whatever GOMAXPROCS is.
func MatMul(a, b *Var) *Var {
	return matMul("MatMul", a, b, &gemm64, backMatMul)
}

// gemmSet holds the three products of a matrix product and its adjoints,
// c = a·b, a·bᵀ and aᵀ·b, in one precision.
type gemmSet struct {
	nn, nt, tn func(m, n, k int, a, b, c []float64, acc, par bool)
}

var gemm64 = gemmSet{nn: gemmNN, nt: gemmNT, tn: gemmTN}

func matMul(op string, a, b *Var, g *gemmSet, back func(*Var)) *Var {
	t := tapeOf(a, b)
	if t == nil || !t.check(op, a, b) {
		return deadOf(t)
	}
	ra, rb := len(a.shape), len(b.shape)
	if ra < 2 || rb < 2 || ra > 3 || rb > 3 {
		return t.failf("%s: want rank-2 or rank-3 operands, got shapes %v and %v", op, a.shape, b.shape)
	}
	m, k := a.shape[ra-2], a.shape[ra-1]
	k2, n := b.shape[rb-2], b.shape[rb-1]
	if k != k2 {
		return t.failf("%s: inner dimensions differ: %v · %v", op, a.shape, b.shape)
	}
	batch := 1
	switch {
	case ra == 3 && rb == 3:
		if a.shape[0] != b.shape[0] {
			return t.failf("%s: batch sizes differ: %v · %v", op, a.shape, b.shape)
		}
		batch = a.shape[0]
	case ra == 3:
		batch = a.shape[0]
	case rb == 3:
		batch = b.shape[0]
	}
	var shape []int
	if ra == 2 && rb == 2 {
		shape = []int{m, n}
	} else {
		shape = []int{batch, m, n}
	}
	y := t.newOp(shape, back, a, b)
	y.a, y.b = a, b
	y.axis = batch
	matmulForward(g, a, b, y, batch, m, n, k)
	return y
}

func matmulForward(g *gemmSet, a, b, y *Var, batch, m, n, k int) {
	ra, rb := len(a.shape), len(b.shape)
	if rb == 2 {
		// (B·m, k)·(k, n) in one product.
		g.nn(batch*m, n, k, a.val, b.val, y.val, false, true)
		return
	}
	par := batchParallel(batch, m*n*k)
	perBatch(batch, par, func(p int) {
		ap := a.val
		if ra == 3 {
			ap = a.val[p*m*k : (p+1)*m*k]
		}
		g.nn(m, n, k, ap, b.val[p*k*n:(p+1)*k*n], y.val[p*m*n:(p+1)*m*n], false, !par)
	})
}

// perBatch calls f for every batch element, on several goroutines if par.
func perBatch(batch int, par bool, f func(p int)) {
	if par {
		parallelFor(batch, f)
		return
	}
	for p := range batch {
		f(p)
	}
}

func backMatMul(y *Var) { backMatMulWith(&gemm64, y) }

func backMatMulWith(gs *gemmSet, y *Var) {
	a, b := y.a, y.b
	batch := y.axis
	ra, rb := len(a.shape), len(b.shape)
	m, k := a.shape[ra-2], a.shape[ra-1]
	n := b.shape[rb-1]
	g := y.grad
	if rb == 2 {
		// ā = ȳ·bᵀ and b̄ = aᵀ·ȳ with the batch folded into the rows.
		// A fresh adjoint buffer is written, not zeroed and added to
		// (gradOut), with the same bits.
		if a.needGrad {
			ga, acc := a.gradOut()
			gs.nt(batch*m, k, n, g, b.val, ga, acc, true)
		}
		if b.needGrad {
			gb, acc := b.gradOut()
			gs.tn(k, n, batch*m, a.val, g, gb, acc, true)
		}
		return
	}
	par := batchParallel(batch, m*n*k)
	if a.needGrad {
		ga, acc := a.gradOut()
		if ra == 2 {
			// ā = Σ_p ȳ_p·b_pᵀ, accumulated in batch order.
			for p := range batch {
				gs.nt(m, k, n, g[p*m*n:(p+1)*m*n], b.val[p*k*n:(p+1)*k*n], ga, acc || p > 0, true)
			}
			if batch == 0 && !acc {
				clear(ga)
			}
		} else {
			perBatch(batch, par, func(p int) {
				gs.nt(m, k, n, g[p*m*n:(p+1)*m*n], b.val[p*k*n:(p+1)*k*n], ga[p*m*k:(p+1)*m*k], acc, !par)
			})
		}
	}
	if b.needGrad {
		gb, acc := b.gradOut()
		perBatch(batch, par, func(p int) {
			ap := a.val
			if ra == 3 {
				ap = a.val[p*m*k : (p+1)*m*k]
			}
			gs.tn(k, n, m, ap, g[p*m*n:(p+1)*m*n], gb[p*k*n:(p+1)*k*n], acc, !par)
		})
	}
}

// Transpose swaps the last two axes: (…, m, n) → (…, n, m).
func Transpose(x *Var) *Var {
	t := tapeOf(x)
	if t == nil || !t.check("Transpose", x) {
		return deadOf(t)
	}
	r := len(x.shape)
	if r < 2 {
		return t.failf("Transpose: want rank >= 2, got shape %v", x.shape)
	}
	m, n := x.shape[r-2], x.shape[r-1]
	shape := append(append(make([]int, 0, r), x.shape[:r-2]...), n, m)
	y := t.newOp(shape, backTranspose, x)
	y.a = x
	transposeBlocks(x.val, y.val, m, n, false)
	return y
}

// transposeBlocks writes (or adds, if add) the transpose of each m×n block
// of src into dst.
func transposeBlocks(src, dst []float64, m, n int, add bool) {
	bs := m * n
	if bs == 0 {
		return
	}
	for off := 0; off+bs <= len(src); off += bs {
		s, d := src[off:off+bs], dst[off:off+bs]
		for i := 0; i < m; i++ {
			row := s[i*n : (i+1)*n]
			for j, v := range row {
				if add {
					d[j*m+i] += v
				} else {
					d[j*m+i] = v
				}
			}
		}
	}
}

func backTranspose(y *Var) {
	if !y.a.needGrad {
		return
	}
	r := len(y.shape)
	// y is n×m blocks; its transpose is x's m×n layout.
	transposeBlocks(y.grad, y.a.gradBuf(), y.shape[r-2], y.shape[r-1], true)
}
