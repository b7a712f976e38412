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
// row after row, zero-padded on the right. The assembly kernels compute a
// 6×8 or 4×8 tile of C as 12 or 8 running sums of 4 lanes: each step
// broadcasts one entry of A per row and multiplies it into two loads of
// the panel. Twelve independent sums keep both FMA pipes of a core busy
// through the latency of a fused multiply-add, which eight cover only
// just, so rows go six at a time where they can. Tiles on the right edge
// are computed into a scratch tile and copied out; the last (fewer than
// four) rows go through the same kernel with the same fused multiply-adds
// in the same order. The order of the k-sum is fixed (k = 0, 1, …) in
// every kernel, so a product does not depend on how the tiles are
// scheduled or which kernel computes them.
//
// An entry of C depends only on its row of A and its column of B, and is
// computed by one kernel call whatever the blocking, so callers may split
// the rows of a product (by slicing A and C) and its column panels
// (GemmPanels) over goroutines in any way and get the same bits; package
// ad does both for its matrix products. GemmAdd accumulates into C (each
// entry's running sum starts from its old value), PackTo and PackTransTo
// reuse a Packed's storage, and PackTransTo packs the transpose of a
// matrix for products such as A·Bᵀ.
//
// Packing reads B in order: PackTo moves four rows at a time into every
// panel (a walk down each column strip in turn would stride through
// memory, which for a power-of-two width defeats the cache and the
// prefetcher), and PackTransTo interleaves eight rows of Bᵀ into a panel
// by 4×4 transposes in registers. Prepare, PackPanels and
// PackTransPanels pack a range of panels at a time, so that a caller can
// pack a block of panels just before multiplying by it, on the goroutine
// that does so. Transpose uses the same 4×4 register transposes.
//
// # AVX-512
//
// On CPUs with AVX-512F, Gemm and GemmAdd take two full panels at a time
// through one more kernel, a 6×16 tile held in twelve 8-lane registers
// (one per row and panel). Each lane runs the same chain of fused
// multiply-adds over p = 0, 1, … as the AVX2 kernels, so the bits do not
// change; only the time does (the same instructions do twice the work).
//
// # Products with an implicit left factor
//
// GemmGather and GemmGatherAdd run the same 4×8 kernel on an m×k matrix A
// that is not stored: entry (i, p) is read from a slice x at
// rows[i] + offs[p]. With x a zero-padded image, rows the corners of the
// output pixels' windows and offs the filter taps, A is the im2col matrix
// of a convolution, which is then never copied out; with rows[i] = i and
// offs[p] = p·m, A is the transpose of a k×m matrix. The sums are those
// of Gemm and GemmAdd on the explicit A, bit for bit.
//
// # Products with a sparsity pattern
//
// A Blocks describes where an m×k matrix may be nonzero, by blocks of six
// rows: the column ranges each block uses. GemmSkip multiplies such a
// matrix (the left factor) by a packed B over those ranges only, and
// GemmOn computes a product only on the blocks such a pattern covers in
// the output. A skipped term is the product of an exact zero, which
// leaves a running sum of fused multiply-adds unchanged, so both give
// Gemm's bits on every entry they compute. Package celegans uses them for
// relaxed permutations on candidate masks, with the rows ordered so that
// a block's rows allow similar columns.
//
// # Adam
//
// AdamUpdate applies the Adam step to a slice of parameters and zeroes
// their gradients, four entries per instruction. It uses no fused
// multiply-adds: every multiplication, addition, division and square root
// is a separately rounded IEEE-754 operation, in the order of the scalar
// loop, so the result is that loop's bit for bit on either path.
//
// # Max-pooling
//
// MaxArg folds rows into a running elementwise maximum and remembers which
// row each maximum came from (the first, on ties), four rows per pass
// with compares and blends in place of branches.
//
// # Exponential and logarithms
//
// Exp, Log and Log1p apply math.Exp, math.Log and math.Log1p to a slice and
// return their bits exactly, four entries per pass. Each assembly routine
// is a transcription of the scalar algorithm package math runs on amd64 (the
// fused-multiply-add path of its Exp assembly, its Log assembly, the Go code
// of Log1p for 0 ≤ x < 1 − 2⁻²⁰), operation for operation with the same
// rounding, and picks branches by mask instead of jumps; an entry outside
// the range a routine covers (overflow, subnormals, infinities, NaN) sends
// its group of four through package math. Results therefore never depend
// on which path ran, and callers such as the Bernoulli likelihood of
// nn keep the bits they had with the scalar loops.
package f64
