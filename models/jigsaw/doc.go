// Package jigsaw implements Sinkhorn networks for jigsaw puzzles and for the
// assembly of arbitrary digits from pieces (Mena, Belanger, Linderman, Snoek,
// "Learning Latent Permutations with Gumbel-Sinkhorn Networks", ICLR 2018,
// Sections 3 and 4.2-4.3).
//
// # Puzzles
//
// An image is cut into a p × p grid of N = p² pieces (Grid; when p does not
// divide the side, the image is first centre-cropped to p·⌊side/p⌋, which for
// MNIST only drops blank border). Stacking the pieces in position order gives
// the N-row matrix X; a puzzle is X̃ = P X for a uniformly random permutation
// matrix P, so row i of X̃ is the true piece p[i] (package perm's convention).
// Reconstruction inverts it: X = P^T X̃.
//
// # Network
//
// The network g maps X̃ to an N × N matrix of logits whose row i scores the N
// positions for scrambled piece i. Every piece goes through the same layers:
// a convolution with n_f filters of size K_s (same padding), a ReLU, a max-pool
// of side and stride s, and a dense layer to N outputs. Because the layers
// are shared, g is permutation equivariant: g(P' X̃) = P' g(X̃) for any
// permutation P'. The rows are independent, possibly inconsistent, scores;
// the Sinkhorn operator S, alternately normalising rows and columns L times,
// mixes them into a doubly stochastic matrix (Theorem 1 of the paper:
// S(g/τ) → M(g) as τ → 0, where M is the exact assignment maximising
// ⟨P, g⟩).
//
// # Training
//
// The loss is the squared reconstruction error with the relaxed
// permutation, with Gumbel noise ε as a regulariser (it also makes M unique):
//
//	f(θ) = mean over images and draws of ‖X − S((g(X̃) + σε)/τ)^T X̃‖² / (N·d),
//
// with d values per piece, Config.Samples draws per image, and Adam on θ. At
// test time the assignment is hard, M(g(X̃)), computed exactly
// (relax.MatchingBatch), and the reconstruction is M^T X̃.
//
// # Metrics
//
// Score follows the paper: Kendall tau, the proportion of wrongly placed
// pieces and the proportion of puzzles with any wrong piece are computed on
// piece indices, so two identical (blank) pieces swapped count as wrong.
// PropWrongIdentical counts a piece as right when the piece placed at a
// position equals the true one pixel for pixel. l1 is the mean absolute pixel
// error of the hard reconstruction; l2 is given both as the mean squared error
// and as its square root (RMSE). The paper's l2 column exceeds its l1 column
// wherever both are non-zero, which a mean squared error of values in [0, 1]
// cannot do, so its l2 reads as an RMSE.
//
// # Assembly
//
// With Config.Heads > 1, each class has its own dense output layer on the
// shared convolution, and a puzzle's label selects the head. Head k trained
// only on digits of class k learns to place any set of pieces into a k; see
// Net.Assemble and Net.AssemblyRates.
package jigsaw
