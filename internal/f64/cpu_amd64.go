package f64

import "golang.org/x/sys/cpu"

// hasAsm: the kernels need AVX2 and FMA (x/sys/cpu also checks that the
// operating system saves the YMM registers).
var hasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func axpyAsm(a float64, x, y []float64)

//go:noescape
func dotAsm(x, y []float64) float64

// kern4x8 sets the 4×8 tile at c (row stride ldc) to the product of the
// four rows at a (row stride lda, length k) with the k×8 panel at b.
//
//go:noescape
func kern4x8(k int, a *float64, lda int, b *float64, c *float64, ldc int)

// kern4x8acc adds to the 4×8 tile at c the product that kern4x8 computes,
// starting its running sums from the tile's values.
//
//go:noescape
func kern4x8acc(k int, a *float64, lda int, b *float64, c *float64, ldc int)

// axpy4Asm adds a[0]·x0 + … + a[3]·x3 to y, n entries each.
//
//go:noescape
func axpy4Asm(n int, a *[4]float64, x0, x1, x2, x3, y *float64)

// dot4Asm sets out[j] to the dot product of x with yj, n entries each.
//
//go:noescape
func dot4Asm(n int, x, y0, y1, y2, y3 *float64, out *[4]float64)

// maxArg4Asm updates the running maxima best and their labels at with the
// rows x0 … x3 in order, labelling a new maximum from xj with p[j].
//
//go:noescape
func maxArg4Asm(n int, p *[4]float64, x0, x1, x2, x3, best, at *float64)

// kern4x8off is kern4x8 with row r of A read from x at rows[r] + off[p]
// for p < k.
//
//go:noescape
func kern4x8off(k int, x *float64, rows *[4]int, off *int, b *float64, c *float64, ldc int)

// kern4x8offacc is kern4x8off adding to the tile at c.
//
//go:noescape
func kern4x8offacc(k int, x *float64, rows *[4]int, off *int, b *float64, c *float64, ldc int)

// adamAsm is AdamUpdate on n entries.
//
//go:noescape
func adamAsm(n int, c *AdamCoef, x, grad, m, v *float64)

// packRowsAsm copies, for q < np and r < rows, the 8 doubles at
// src[r·lds+8q:] to dst[q·ldp+8r:].
//
//go:noescape
func packRowsAsm(rows, np int, src *float64, lds int, dst *float64, ldp int)

// packTrans8Asm sets dst[8r+j] = src[j·lds+r] for j < 8 and r < k4, a
// multiple of 4.
//
//go:noescape
func packTrans8Asm(k4 int, src *float64, lds int, dst *float64)

// transpose4Asm writes the transposes of nb 4×4 blocks, side by side in
// the 4 rows at src (stride lds), one below the other at dst (stride ldd).
//
//go:noescape
func transpose4Asm(nb int, src *float64, lds int, dst *float64, ldd int)

// kern6x8 is kern4x8 on six rows of a.
//
//go:noescape
func kern6x8(k int, a *float64, lda int, b *float64, c *float64, ldc int)

// kern6x8acc is kern4x8acc on six rows of a.
//
//go:noescape
func kern6x8acc(k int, a *float64, lda int, b *float64, c *float64, ldc int)

// expAsm sets dst[i] = math.Exp(x[i]) four entries at a time from i = 0,
// stopping at the first group of four with an entry outside [−708, 708]
// or at the last whole group, and returns the number of entries done.
//
//go:noescape
func expAsm(n int, dst, x *float64) int

// log1pAsm sets dst[i] = math.Log1p(x[i]) four entries at a time from
// i = 0, stopping at the first group of four with an entry outside
// [0, 1 − 2⁻²⁰) or at the last whole group, and returns the number of
// entries done.
//
//go:noescape
func log1pAsm(n int, dst, x *float64) int

// logAsm sets dst[i] = math.Log(x[i]) four entries at a time from i = 0,
// stopping at the first group of four with an entry that is not a
// positive normal number or at the last whole group, and returns the
// number of entries done.
//
//go:noescape
func logAsm(n int, dst, x *float64) int

// logisticGradAsm is AddLogisticGrad on the first n − n mod 4 entries.
//
//go:noescape
func logisticGradAsm(n int, a float64, dst, x, e, y *float64)

// hasAVX512: the two-panel kernels kern6x16z and kern6x16zacc need
// AVX-512F (x/sys/cpu also checks that the operating system saves the
// ZMM registers).
var hasAVX512 = hasAsm && cpu.X86.HasAVX512F

// kern6x16z sets the 6×16 tile at c (row stride ldc) to the product of
// the six rows at a (row stride lda, length k) with two adjacent k×8
// panels, at b and b+ldb: kern6x8 on both panels at once, in 8-lane
// registers, with the same bits.
//
//go:noescape
func kern6x16z(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int)

// kern6x16zacc adds to the tile at c the product that kern6x16z computes,
// starting its running sums from the tile's values.
//
//go:noescape
func kern6x16zacc(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int)
