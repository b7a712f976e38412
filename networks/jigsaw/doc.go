// Package jigsaw implements Sinkhorn networks for jigsaw puzzles and for the
// assembly of arbitrary digits from pieces (Mena, Belanger, Linderman, Snoek,
// "Learning Latent Permutations with Gumbel-Sinkhorn Networks", ICLR 2018,
// Sections 3 and 4.2-4.3).
//
// # Puzzles
//
// An image is cut into a p × p grid of N = p² pieces (Grid; when p does not
// divide the side, the image is first centre-cropped to p·⌊side/p⌋, which for
// MNIST drops a frame of at most 2 px that is mostly blank; Config.Crop and
// NewGridCrop choose a smaller centred square). Stacking the pieces in
// position order gives the N-row matrix X; a puzzle is X̃ = P X for a
// uniformly random permutation matrix P, so row i of X̃ is the true piece
// p[i] (package perm's convention).
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
// The rows of the paper's network see one piece each, so a piece's scores
// cannot depend on which digit the other pieces show. Config.Context adds
// that (a variant, not the paper's network): with f_i the pooled features of
// piece i, the hidden layer is h_i = ReLU(A f_i + b + C m), m = (1/N) Σ_j f_j,
// and row i of g is W h_i + c. The mean m is the same for every order of the
// pieces, so g stays permutation equivariant (a DeepSets-style pooling).
// Adding C m to the logits directly would change nothing: a term shared by
// all rows is a per-column constant, which the column normalisations of S
// and the assignment M ignore; it has to pass through the nonlinearity.
//
// Row i of g scores piece i alone, so the assignment M(g) is linear, while
// a jigsaw puzzle is quadratic: where a piece belongs depends on its
// neighbours. Config.Refine (also a variant) adds rounds of edge matching.
// With P = S(g/τ), b_d(j) the border strip of piece j on side d and q_d the
// position next to q on side d, a round adds
//
//	g[i, q] += Σ_d b_d(i)ᵀ M_d s_d(q),   s_d(q) = Σ_j P[j, q_d] b_opp(d)(j),
//
// the match of piece i's strips, through learned matrices M_d, with the
// strips that the soft pieces around q turn towards it (s_d(q) = 0 where
// q has no neighbour on side d). Permuting the pieces permutes P's rows,
// which leaves every s_d alone and permutes the added rows: g stays
// equivariant.
//
// M(g) still scores each piece's position on its own; package
// networks/jigsaw/decode decodes by the quadratic score of the hard
// arrangement, with the network's own edge compatibilities (Net.Edges,
// Strips), seams, fitted pair weights, ensembles and a critic.
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
// Two pieces traded cost f the squared difference of their pixels, so
// faint pieces, with a few grey pixels, cost almost nothing wherever they
// go. Config.LossPower γ compares φ(X) and P^T φ(X̃) instead, with
// φ(x) = sign(x)·|x|^γ applied to the pixels (not to the network's input);
// γ < 1 lifts grey values and so weighs faint pieces more.
//
// Train draws minibatches, permutations and noise from one random stream
// seeded by TrainConfig.Seed. With TrainConfig.Checkpoint it saves that
// stream's state with the weights and Adam's moments, so an interrupted run
// resumes exactly where it stopped.
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
// Identical pieces bound what any method can score on the index-based
// metrics: nothing in a puzzle tells them apart, and the scrambling is
// uniform, so they end up in effect at random among themselves. Oracle
// places every piece right up to that; ScoreAll of its predictions is the
// best expected Kendall tau, prop. wrong and prop. any wrong for the puzzles
// (on 3 × 3 MNIST, Kendall tau about 0.78).
//
// # Assembly
//
// With Config.Heads > 1, each class has its own dense output layer on the
// shared convolution, and a puzzle's label selects the head. Head k trained
// only on digits of class k learns to place any set of pieces into a k; see
// Net.Assemble and Net.AssemblyRates.
package jigsaw
