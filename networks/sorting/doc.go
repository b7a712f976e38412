// Package sorting implements the Sinkhorn network that learns to sort numbers,
// the first experiment (Table 1) of Mena et al., "Learning Latent
// Permutations with Gumbel-Sinkhorn Networks" (ICLR 2018).
//
// # The network
//
// A list x̃ = (x̃_1, …, x̃_n) of real numbers is a scrambled version of its
// sorted list x. The network maps each number on its own, with the same
// weights, to one row of an n×n matrix of logits,
//
//	g(x̃)_i = W₂ ReLU(W₁ x̃_i + b₁) + b₂ ∈ ℝⁿ,   i = 1, …, n,
//
// a dense layer with 32 units and a dense layer with n outputs. Entry g_ij
// scores "number i belongs at position j". Because every number goes through
// the same map, the network is permutation equivariant: permuting the input
// permutes the rows of g in the same way, so the predicted order cannot
// depend on how the list was scrambled.
//
// At test time the prediction is the matching operator σ = M(g), the
// permutation maximising Σ_i g_{i,σ(i)} (relax.MatchingBatch): number i goes to
// position σ(i), and the sorted list is P_σᵀ x̃, that is
// σ.Inverse().Apply(x̃) in the convention of package perm.
//
// # Training
//
// M has no useful gradient, so training replaces it by a Gumbel-Sinkhorn
// sample, the Sinkhorn operator of the noisy logits at temperature τ,
//
//	P = S((g + c·ε)/τ),   ε_ij ~ Gumbel(0, 1) i.i.d.,
//
// a doubly stochastic matrix that tends to M(g + c·ε) as τ → 0 (Theorem 1 of
// the paper), with the noise factor c. The loss is the squared error of the
// soft reconstruction,
//
//	ℓ = mean over lists, samples and positions of (x − Pᵀ x̃)²,
//
// averaged over several Gumbel samples per list, and minimised with Adam.
// Every step draws fresh lists from U(0, 1); training on one fixed batch
// does not generalise. DefaultConfig follows the authors' public code in
// τ = 1, 5 Gumbel samples per list, L = 10 Sinkhorn iterations, noise
// factor c = 1 and Glorot-uniform weights. Its batches of 20 lists and its
// learning rate, annealed from 0.03 to 0.0003 along a cosine over
// DefaultSteps(n) steps, were chosen on validation lists (U(0, 1), from a
// seed no test uses) in place of the authors' batches of 10 and constant
// 0.1; the README has the comparison. At n ≥ 80 these settings leave many
// lists wrong; the command examples/sorting trains by default with L = 30
// iterations, noise factor 0.3, 400 steps and the checkpoint that sorts
// the most validation lists, which the README shows to match the paper.
//
// Config.TauEnd optionally anneals the temperature geometrically from τ at
// the first step to TauEnd at the last (Config.TauAt). A lower τ brings P
// closer to the hard matching M(g + c·ε), so that the loss sees the swaps of
// close neighbours that a soft P at τ = 1 blurs; the prediction M(g) itself
// is independent of τ. DefaultConfig leaves TauEnd at 0: annealing did
// not help on validation lists (networks/sorting/results/NOTES.md has the
// runs).
//
// # Generalising to other intervals
//
// The paper tests the network trained on U(0, 1) on shifted and scaled
// intervals without retraining. The network of the paper (variant Paper) sees
// the raw numbers, so on U(1000, 1001) its hidden units work far outside the
// range they were trained on, and nothing makes it sort there: trained with
// DefaultConfig, at n = 80 and above, it gets every list wrong.
//
// The variant Standardized fixes this by construction. Sorting is invariant
// to increasing affine maps a + b·x (b > 0), so the network may see the list
// through any such map chosen from the list itself. It feeds
//
//	z_i = (x̃_i − min x̃) / (max x̃ − min x̃)
//
// to the same per-number network (z_i = 0 for a constant list). The minimum
// and the range are symmetric functions of the list, so permuting x̃
// permutes z in the same way and the network stays permutation equivariant.
// Every list from any interval U(a, b) is mapped onto the same distribution
// of z as a list from U(0, 1), so the accuracy on U(0, 1) carries over to
// every interval, up to the rounding of x̃ − min x̃ (about 1e-13 relative for
// numbers near 1000, far below the gaps between sorted uniform numbers). The
// training loss still compares the raw numbers x̃, as in the paper.
//
// # Evaluation
//
// Evaluate draws test lists from U(low, high) and reports, as in the paper,
// the proportion of lists with any error (perm.AnyWrong, Table 1's measure),
// the proportion of misplaced numbers (perm.ProportionWrong) and Kendall's
// tau between the predicted and the true positions (perm.KendallTau).
package sorting
