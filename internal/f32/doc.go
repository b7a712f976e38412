// Package f32 holds the single-precision matrix product behind permlab's
// float32 training path: C = A·B, or C += A·B, for float64 matrices A, B
// and C whose product is computed in float32.
//
// # Arithmetic
//
// Every entry of A and B is rounded to the nearest float32 once, when it
// is packed. An entry of C is then one running float32 sum over the inner
// index p = 0, 1, …, k−1 of fused multiply-adds, converted exactly to
// float64 when it is stored; GemmAdd adds that float64 value to C's old
// entry in float64. The relative error of an entry against the exact
// product of the unrounded inputs is therefore about k·2⁻²⁴ of Σ|a||b| in
// the worst case (rounding the inputs adds 2⁻²⁴ each), against k·2⁻⁵³ for
// package f64: enough for the gradients of stochastic training, not for
// the linear algebra of the inference engines, which stays in float64.
//
// # Layout
//
// The left factor is stored row-major in float32 (PackLeft), with zero
// rows up to a multiple of six; the right factor in panels of sixteen
// columns (PackPanels), stored row after row, as package f64 does with
// eight, zero past the last column. Both are rounded with vector
// conversions (four float64 to four float32 per instruction). A right
// factor held transposed, as Bᵀ in the adjoint dA = dC·Bᵀ, is packed
// straight from its transpose by PackPanelsTrans, and a left factor held
// transposed, as Aᵀ in dB = Aᵀ·dC, by PackLeftTrans: both round 4×4
// blocks and transpose them in registers, giving the same float32 entries
// without a transposed float64 copy.
//
// On amd64 with AVX2 and FMA, a 6×16 tile of C is twelve running sums of
// eight float32 lanes, each step broadcasting one entry of A per row and
// multiplying it into the two halves of a panel row: twice the lanes of
// the float64 kernel for the same instructions. With AVX-512F, Gemm takes
// two full panels at a time through a 6×32 tile in twelve 16-lane
// registers, each lane the same chain of fused multiply-adds as in the
// AVX2 kernel, so the bits are the same. Elsewhere a Go loop does
// the same sums in the same order; whether its multiply-adds are fused is
// up to the compiler, so the two paths agree to rounding, not bit for bit.
//
// An entry of C is computed by exactly one kernel call over the whole
// inner dimension, whatever the blocking, so callers may split the row
// blocks and the column panels of a product over goroutines in any way
// and get the same bits.
package f32
