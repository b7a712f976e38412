// Package relax implements the operators that relate permutations to
// matrices: the matching operator M(X), its continuous relaxation the
// Sinkhorn operator S(X/τ) (Mena et al., "Learning Latent Permutations with
// Gumbel-Sinkhorn Networks", ICLR 2018), and the stick-breaking and rounding
// maps onto the Birkhoff polytope of Linderman et al. (AISTATS 2018).
//
// A permutation σ of {0, …, N−1} is identified with its permutation matrix
// P, P_ij = 1 if σ(i) = j (perm.Perm stores σ). The permutation matrices are
// the vertices of the Birkhoff polytope B_N, the doubly stochastic matrices
// (non-negative entries, every row and column summing to one).
//
// # Matching operator
//
// For a square matrix of scores X,
//
//	M(X) = argmax_{P permutation} ⟨P, X⟩_F = argmax_σ Σ_i X_{i,σ(i)},
//
// the linear assignment problem. Matching solves it exactly in O(N³) time
// at worst (Jonker-Volgenant shortest augmenting paths, started on a sparse
// problem of each row's best entries and checked against the rest); −Inf
// entries are forbidden assignments. MatchingSparse solves it on a sparse
// candidate graph (SparseScores, rows of candidate columns) in time that
// grows with the candidates rather than N², and reports a graph with no
// perfect matching as ErrInfeasible. M is the analogue of argmax for
// permutations: piecewise constant in X, so it has no useful gradient.
//
// # Sinkhorn operator
//
// The Sinkhorn operator is the analogue of the softmax. With T_r and T_c the
// row and column normalisations, T_r(A)_ij = A_ij / Σ_k A_ik and
// T_c(A)_ij = A_ij / Σ_k A_kj,
//
//	S⁰(X) = exp(X),  Sˡ(X) = T_c(T_r(Sˡ⁻¹(X))),  S(X) = lim_{l→∞} Sˡ(X).
//
// By Sinkhorn's theorem (1964) the limit exists for a positive matrix such
// as exp(X) and is doubly stochastic: S(X) = D₁ exp(X) D₂ for positive
// diagonal D₁, D₂, unique up to a scalar. Theorem 1 of Mena et al. gives S
// a variational meaning and the limit the softmax has:
//
//	S(X/τ) = argmax_{P ∈ B_N} ⟨P, X⟩_F + τ h(P),  h(P) = −Σ_ij P_ij log P_ij,
//
// the entropy-regularised assignment problem, and, when M(X) is unique
// (almost surely for X with a continuous distribution),
//
//	M(X) = lim_{τ→0⁺} S(X/τ).
//
// In practice the iteration is truncated after L steps; Sinkhorn, SinkhornVar
// and friends compute S^L(X/τ), which is column stochastic exactly and row
// stochastic up to the truncation error. Convergence is linear but slows down
// as τ decreases (near τ → 0 it can become O(1/L)), so small temperatures
// need more iterations for the same accuracy; SinkhornTol iterates to a
// tolerance instead.
//
// The computation is carried out in the log domain: with Z = X/τ, a row
// normalisation is Z ← Z − logsumexp_rows(Z) and a column normalisation
// Z ← Z − logsumexp_cols(Z), so nothing overflows or underflows to NaN even
// for τ = 1e-4 and |X| = 1e6. Every iterate has the form Z − α1ᵀ − 1βᵀ, and
// the implementation works on the potentials α, β: each half-step is one
// matrix-vector product with a kernel exp(Z − f1ᵀ − 1gᵀ) whose reference
// potentials f, g are refreshed (with the max-shift of the log-sum-exp)
// whenever the scaling factors would leave a safe range. This gives the
// log-domain result to rounding error at the cost of about N² exponentials
// per refresh instead of 2N² per iteration.
//
// Entries of X equal to −Inf are forbidden: their probability is exactly
// zero. A row or column with no finite entry is an error. If the allowed
// entries admit no perfect matching, S(X) does not exist; the truncated
// operator is still finite but does not converge.
//
// SinkhornVar and LogSinkhornVar record S^L(X/τ) and its logarithm on an ad
// tape as a single fused op, for (N, N) or batched (B, N, N) inputs. The
// backward pass is the exact gradient of the truncated L-step operator,
// obtained by reversing the iterations: for a row half-step Z' = Z −
// logsumexp_rows(Z) the adjoint is Ḡ = Ḡ' − P' ⊙ (Ḡ'1)1ᵀ with P' = exp(Z'),
// and likewise for columns. It needs only O(N² + LN) memory per matrix.
// Batches are processed in parallel on at most GOMAXPROCS goroutines, with
// results independent of the number of goroutines. SinkhornImplicitVar
// instead iterates to convergence and differentiates the limit S(X/τ)
// implicitly, through the linear system its row and column constraints
// define: O(N³) per matrix whatever the number of iterations, worthwhile
// when many are needed (small τ). SparseSinkhorn, SparseSinkhornVar and
// SparseSinkhornImplicitVar (and their Log forms) are these operators on a
// sparse candidate pattern (SparsePattern, values in CSR order), at
// O(NNZ·L) time and O(NNZ + N·L) memory instead of O(N²·L) and O(N²).
//
// Adding Gumbel noise turns these operators into distributions: M(X + ε) is a
// Gumbel-Matching sample and S((X + ε)/τ) a Gumbel-Sinkhorn sample, its
// reparameterisable relaxation (package dist).
//
// # Stick-breaking and rounding (Linderman et al. 2018)
//
// Two other ways to relax permutations, used as baselines in the seed paper:
//
//   - StickBreaking maps an unconstrained (N−1)×(N−1) matrix ψ onto B_N by
//     filling the matrix entry by entry, each at a logistic fraction σ(ψ_ij)
//     of the interval that keeps the remaining rows and columns fillable.
//     The map is invertible (StickBreakingInverse) with a triangular
//     Jacobian, so a Gaussian on ψ gives a distribution on B_N with an
//     explicit density.
//   - Rounding moves a matrix Ψ toward its nearest permutation matrix P,
//     P̃ = τΨ + (1 − τ)P, with 0 < τ ≤ 1. Ψ is typically a Gaussian
//     perturbation of a Sinkhorn-normalised mean. The map is invertible on
//     its image (RoundingInverse) with log-Jacobian N² log τ, again giving an
//     explicit density.
//
// # Errors
//
// Functions return errors, never panic, on bad input: non-square or empty
// matrices, NaN or +Inf entries, τ ≤ 0, iters < 1, infeasible masks. The
// differentiable forms record the error on the tape (ad.Tape.Fail) and
// return the tape's dead Var.
package relax
