// Package ad implements reverse-mode automatic differentiation on dense,
// row-major float64 tensors.
//
// A Tape records operations as they are evaluated (eagerly: every op computes
// its value at once) and Backward walks the record once in reverse, applying
// the chain rule. For a scalar loss l = f(x) built from ops y_k = g_k(...),
// the adjoint of every intermediate value, x̄ = ∂l/∂x, is accumulated as
//
//	x̄ += (∂g_k/∂x)ᵀ ȳ_k
//
// over every op k that read x, visiting ops in reverse order of creation.
//
// # Values
//
// Tensor is a shape plus a []float64 in row-major order; a batch of B
// matrices of size N×M has shape (B, N, M). A Var is a value recorded on a
// tape. Param is a persistent trainable tensor with a gradient accumulator:
// bring it onto a tape with Tape.Param, call Backward, and read Param.Grad.
// Const brings data on the tape without a gradient.
//
// # Errors
//
// Ops never panic on bad input. The first error (a shape mismatch, an axis
// out of range, Vars from two tapes) is stored on the tape and every later op
// becomes a no-op; Tape.Err and Tape.Backward report it. This keeps model code
// free of error checks on every line while still refusing to return a wrong
// gradient.
//
// # Broadcasting
//
// Binary ops (Add, Sub, Mul, Div) accept operands of equal shape, a scalar
// (one element) against anything, a suffix operand tiled over the leading axes
// (a (B,N,M) tensor with an (N,M) matrix or an (M) row), and a column operand
// whose shape is the other's with the last axis set to 1 (one value per row).
//
// # Precision
//
// Every value and adjoint is float64. The one exception is the arithmetic
// inside MatMul32, which rounds its factors to float32 and sums in float32
// (storing the results as float64) at about twice MatMul's speed, for the
// dense layers of networks trained by stochastic gradients; see
// internal/f32 for its error bound.
//
// # Threads
//
// A tape is used by one goroutine at a time, but some ops split their work
// over GOMAXPROCS goroutines: MatMul and the row-wise reductions by blocks
// of rows, and the elementwise ops (unary, full-shape binary, Reshape, and
// their adjoints) in chunks of a long slice (internal/par). Each entry is
// computed as the serial loop computes it, so values and gradients have
// the same bits on any number of threads.
//
// # Reuse
//
// Reset clears the record and keeps every buffer in a pool keyed by length,
// so a training loop that builds the same graph each step allocates nothing
// for values and adjoints after the first step.
//
// # Custom ops
//
// Tape.Custom records a fused operation whose value the caller computed and
// whose adjoint the caller supplies; package relax uses it for the Sinkhorn
// operator, whose L iterations would otherwise be 4L generic ops.
package ad
