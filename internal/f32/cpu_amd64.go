package f32

import "golang.org/x/sys/cpu"

// hasAsm: the kernels need AVX2 and FMA (x/sys/cpu also checks that the
// operating system saves the YMM registers).
var hasAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kern6x16 sets the 6×16 float64 tile at c (row stride ldc) to the
// product, summed in float32, of the six rows at a (row stride lda,
// length k) with the k×16 panel at b.
//
//go:noescape
func kern6x16(k int, a *float32, lda int, b *float32, c *float64, ldc int)

// kern6x16acc adds to the tile at c the product that kern6x16 computes.
//
//go:noescape
func kern6x16acc(k int, a *float32, lda int, b *float32, c *float64, ldc int)

// cvtAsm rounds n float64 values (n a multiple of 16) to float32.
//
//go:noescape
func cvtAsm(n int, src *float64, dst *float32)

// packPanelsAsm fills rows 0 … k−1 of nq full panels (ldp float32 apart)
// from the rows of src (lds float64 apart), sixteen columns per panel.
//
//go:noescape
func packPanelsAsm(k, nq int, src *float64, lds int, dst *float32, ldp int)

// packTransAsm fills rows 0 … k4−1 (k4 a multiple of four) of nq full
// panels (ldp float32 apart) of the transpose of src, whose rows are lds
// float64 apart: panel q holds rows 16q … 16q+15 of src as its columns.
//
//go:noescape
func packTransAsm(k4, nq int, src *float64, lds int, dst *float32, ldp int)

// packLeftTransAsm sets dst[i·ldd + p] = float32(src[p·lds + i]) for
// i < m4 and p < k4, both multiples of four.
//
//go:noescape
func packLeftTransAsm(m4, k4 int, src *float64, lds int, dst *float32, ldd int)

// hasAVX512: the two-panel kernels need AVX-512F (x/sys/cpu also checks
// that the operating system saves the ZMM registers).
var hasAVX512 = hasAsm && cpu.X86.HasAVX512F

// kern6x32z sets the 6×32 float64 tile at c (row stride ldc) to the
// product, summed in float32, of the six rows at a (row stride lda,
// length k) with the two adjacent k×16 panels at b and b+ldb: kern6x16 on
// both panels at once, in 16-lane registers, with the same bits.
//
//go:noescape
func kern6x32z(k int, a *float32, lda int, b *float32, ldb int, c *float64, ldc int)

// kern6x32zacc adds to the tile at c the product that kern6x32z computes.
//
//go:noescape
func kern6x32zacc(k int, a *float32, lda int, b *float32, ldb int, c *float64, ldc int)
