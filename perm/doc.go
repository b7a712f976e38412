// Package perm provides permutations as values, conversions to and from
// permutation matrices, candidate masks, and the evaluation metrics used by
// Mena et al., "Learning Latent Permutations with Gumbel-Sinkhorn Networks"
// (ICLR 2018).
//
// # Convention
//
// A Perm p of size n maps row i to column p[i]. Its permutation matrix P is
// the n×n 0-1 matrix with P[i][p[i]] = 1 and zeros elsewhere, so that
//
//	(P x)[i]   = x[p[i]]          (Apply)
//	(P A)[i,:] = A[p[i],:]        (ApplyRows)
//	P Q        = matrix of p.Compose(q), with p.Compose(q)[i] = q[p[i]]
//	P^T        = matrix of p.Inverse()
//
// The seed paper writes a scrambled object as X̃ = P X and reconstructs it as
// P^{-1} X̃ = P^T X̃; with this package that is p.Inverse().ApplyRows(xTilde).
//
// A Mask is a set of allowed (row, column) pairs, for assignments
// constrained to candidates (see relax.MatchingMasked).
//
// # Metrics
//
// KendallTau, ProportionWrong and AnyWrong compare a predicted permutation
// with the true one; L1 and L2 compare a reconstruction with its target
// (mean absolute and mean squared difference, as in the paper's tables and
// its reference implementation). All of them return a single float64 per
// instance so that averaging over a test set gives the published numbers
// ("Prop. wrong", "Prop. any wrong", "Kendall tau", "l1", "l2").
package perm
