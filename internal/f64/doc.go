// Package f64 holds the float64 kernels behind permlab's hot loops: y += a·x,
// x·y, and C = A·B against a B that is used many times (packed once).
//
// On amd64 machines with AVX2 and FMA the kernels are written in assembly:
// four doubles per instruction with fused multiply-adds. Elsewhere they fall
// back to gonum's kernels and gonum's Dgemm. The two paths round differently
// (a fused multiply-add rounds once), so results agree to a few ulps, not
// bit for bit; on one machine every call is deterministic, whatever
// GOMAXPROCS is, because no kernel splits its work across goroutines.
//
// # Packed products
//
// Gemm multiplies an m×k row-major A by a k×n matrix B that was packed by
// Pack into column panels of width 8: panel p holds columns 8p … 8p+7 of B
// row after row, zero-padded on the right. The assembly kernel computes a
// 4×8 tile of C as 8 running sums of 4 lanes: each step broadcasts four
// entries of A (one per row) and multiplies them into two loads of the
// panel. Tiles on the right edge are computed into a scratch tile and
// copied out; the last m mod 4 rows are sums of scaled rows of B with the
// same fused multiply-adds in the same order. The order of the k-sum is fixed (k = 0, 1, …), so a
// product does not depend on how the tiles are scheduled.
//
// A row of C depends only on the same row of A, so callers may split the
// rows of a product over goroutines in any way and get the same bits;
// package ad does this for its matrix products. GemmAdd accumulates into C
// (each entry's running sum starts from its old value), PackTo and
// PackTransTo reuse a Packed's storage, and PackTransTo packs the
// transpose of a matrix for products such as A·Bᵀ.
package f64
