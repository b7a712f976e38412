package ad

import (
	"runtime"
	"sync"

	"github.com/permlab/permlab/internal/f32"
)

// MatMul32 is MatMul with the products of its value and of its adjoints
// computed in single precision: the factors are rounded to float32, each
// entry is a float32 sum of fused multiply-adds in a fixed order, and the
// result is stored in float64 (adjoints are added to in float64). Values
// and gradients stay float64 everywhere else on the tape, as do the
// parameters an optimizer updates, so only the products lose precision:
// an entry's error is about k·2⁻²⁴ of Σ|a||b| against k·2⁻⁵³ in MatMul.
//
// On CPUs with AVX2 and FMA a float32 product runs at about twice the
// float64 rate, which speeds up training networks whose time goes to
// dense layers; nothing else should use it. Shapes, parallelism and the
// independence of the bits from GOMAXPROCS are those of MatMul.
func MatMul32(a, b *Var) *Var {
	return matMul("MatMul32", a, b, &gemm32, backMatMul32)
}

var gemm32 = gemmSet{nn: gemmNN32, nt: gemmNT32, tn: gemmTN32}

func backMatMul32(y *Var) { backMatMulWith(&gemm32, y) }

// mm32Scratch holds the packed factors of the float32 products.
type mm32Scratch struct {
	left   *f32.Left
	packed *f32.Packed
}

var mm32Pool = sync.Pool{New: func() any { return new(mm32Scratch) }}

// gemmNN32 sets (or, with acc, adds to) c = a·b in float32, for a m×k,
// b k×n and c m×n, all row-major.
func gemmNN32(m, n, k int, a, b, c []float64, acc, par bool) {
	if m == 0 || n == 0 {
		return
	}
	s := mm32Pool.Get().(*mm32Scratch)
	product32(s, m, n, k, a[:m*k], b[:k*n], c, acc, par)
	mm32Pool.Put(s)
}

// gemmNT32 sets (or adds to) c = a·bᵀ in float32, for a m×k, b n×k and c
// m×n: the panels of bᵀ are packed straight from b (f32.PackPanelsTrans
// rounds and transposes 4×4 blocks in registers), the same float32
// entries a transposed copy would give.
func gemmNT32(m, n, k int, a, b, c []float64, acc, par bool) {
	if m == 0 || n == 0 {
		return
	}
	s := mm32Pool.Get().(*mm32Scratch)
	productPacked32(s, m, n, k, a[:m*k], b[:n*k], c, acc, par, f32.PackLeft, f32.PackPanelsTrans)
	mm32Pool.Put(s)
}

// gemmTN32 sets (or adds to) c = aᵀ·b in float32, for a k×m, b k×n and c
// m×n: the rows of aᵀ are packed straight from a (f32.PackLeftTrans).
func gemmTN32(m, n, k int, a, b, c []float64, acc, par bool) {
	if m == 0 || n == 0 {
		return
	}
	s := mm32Pool.Get().(*mm32Scratch)
	productPacked32(s, m, n, k, a[:k*m], b[:k*n], c, acc, par, f32.PackLeftTrans, f32.PackPanels)
	mm32Pool.Put(s)
}

// product32 computes c = a·b (or c += a·b) in float32 for the row-major
// m×k a and k×n b. Large products are split as packedProduct splits them:
// the rows of a are rounded first, in parallel blocks; then, where there
// are enough panels, each goroutine packs a block of panels of b and
// multiplies every row by it while it is in cache, and otherwise the
// panels are packed first and blocks of rows × panels multiplied. Every
// entry is computed by one kernel call, so the bits do not depend on the
// split.
func product32(s *mm32Scratch, m, n, k int, a, b, c []float64, acc, par bool) {
	productPacked32(s, m, n, k, a, b, c, acc, par, f32.PackLeft, f32.PackPanels)
}

// productPacked32 is product32 with the rows of the left factor filled by
// packLeft from a and the panels of the right factor by pack from b, each
// of which holds its factor (f32.PackLeft, f32.PackPanels) or its
// transpose (f32.PackLeftTrans, f32.PackPanelsTrans).
func productPacked32(s *mm32Scratch, m, n, k int, a, b, c []float64, acc, par bool,
	packLeft func(*f32.Left, []float64, int, int), pack func(*f32.Packed, []float64, int, int)) {
	l := f32.PrepareLeft(s.left, m, k)
	p := f32.Prepare(s.packed, k, n)
	s.left, s.packed = l, p
	nb, np := l.Blocks(), p.Panels()
	if serial(m, n, k, par) {
		packLeft(l, a, 0, nb)
		pack(p, b, 0, np)
		f32.Gemm(l, 0, nb, p, 0, np, c, acc)
		return
	}
	workers := runtime.GOMAXPROCS(0)
	// Blocks of rows and panels of about 128 KiB of float32 each.
	const cacheFloats = 1 << 15
	bb := max(1, cacheFloats/(6*max(k, 1)))
	nrb := (nb + bb - 1) / bb
	parallelFor(nrb, func(t int) { packLeft(l, a, t*bb, min((t+1)*bb, nb)) })
	qb, nq := splitPanels(np, max(1, cacheFloats/(16*max(k, 1))), workers)
	if nrb == 1 || nq >= 2*workers {
		parallelFor(nq, func(t int) {
			q0, q1 := t*qb, min((t+1)*qb, np)
			pack(p, b, q0, q1)
			for b0 := 0; b0 < nb; b0 += bb {
				f32.Gemm(l, b0, min(b0+bb, nb), p, q0, q1, c, acc)
			}
		})
		return
	}
	parallelFor(nq, func(t int) { pack(p, b, t*qb, min((t+1)*qb, np)) })
	parallelFor(nrb*nq, func(t int) {
		b0, q0 := (t/nq)*bb, (t%nq)*qb
		f32.Gemm(l, b0, min(b0+bb, nb), p, q0, min(q0+qb, np), c, acc)
	})
}
