// Package matching holds small models in which observations are matched
// to known items by a latent permutation: point matching (Problem), where n
// observed points in the plane are noisy copies of n reference points,
// permutation regression (Regression), where the covariate rows of a linear
// regression were shuffled, permuted Poisson counts (Counts), and matching
// through pairwise distances with candidate masks and known assignments
// (Pairwise). All implement models.Model and are small enough for
// models.Exact to enumerate, which makes them the models on which the
// engines (package vi, package mcmc) are checked against the exact answer.
//
// # Point matching
//
// Observed points y_1, …, y_n and reference points r_1, …, r_n in ℝ² are
// related by an unknown permutation σ,
//
//	y_i = r_{σ(i)} + ε_i,   ε_i ~ N(0, s² I₂),
//
// with σ uniform over the permutations admitted by a candidate mask (all n!
// when there is none). In the permutation matrix P of σ, with P_ij = 1 when
// σ(i) = j, the log likelihood is linear:
//
//	log p(Y | P) = ⟨P, X⟩ − n log(2π s²),   X_ij = −‖y_i − r_j‖² / (2s²),
//
// so the posterior is p(P | Y) ∝ exp(⟨P, X⟩) on the admitted permutations,
// an exponential family over permutations whose mode is the matching
// M(X) = argmax_P ⟨P, X⟩ restricted to the mask. Problem
// computes X once (Logits) and evaluates ⟨P, X⟩ as vec(P)ᵀ vec(X), one matrix
// product, so that the same LogLik serves the relaxed, doubly stochastic P of
// variational inference and the one-hot P of MCMC and exact enumeration.
//
// # Fast paths
//
// For an exact permutation the likelihood is a sum of n table entries,
// Σ_i X_{i,σ(i)}, and exchanging the columns of rows i and j changes it by
// X_{i,σ(j)} + X_{j,σ(i)} − X_{i,σ(i)} − X_{j,σ(j)}, in O(1). Problem
// implements both as models.StateLogLiker and models.SwapDeltaer, so swap
// Metropolis-Hastings runs without a tape.
//
// # Candidate masks
//
// Generate can restrict each observation to the reference points near its
// true source, as the C. elegans experiments of Mena et al. (2018) restrict
// each neuron to candidates near its position: with Config.Radius > 0, row i
// admits column j only when ‖r_{σ(i)} − r_j‖ < Radius, so the truth is always
// admitted.
//
// # Permutation regression
//
// Responses y_1, …, y_n follow a linear model whose covariate rows were
// shuffled by an unknown permutation σ,
//
//	y_i = x_{σ(i)}ᵀ β + ε_i,   ε_i ~ N(0, s²),   β ~ N(0, v I_d),
//
// with σ uniform. β and σ are strongly coupled: a different σ fits the data
// with a different β, and a sampler that alternates single swaps of σ with
// draws of β stays near a local maximum of the joint posterior. β is
// conjugate, though. Write X_σ for the n×d matrix with rows x_{σ(i)}.
// Completing the square in β,
//
//	−‖y − X_σ β‖²/(2s²) − ‖β‖²/(2v) = −‖y‖²/(2s²) + βᵀb − ½ βᵀΛβ,
//	Λ = I/v + X_σᵀX_σ/s²,   b = X_σᵀ y / s²,
//
// so β | y, σ ~ N(Λ⁻¹b, Λ⁻¹), and integrating β out,
//
//	log p(y | σ) = −(n/2) log(2π s²) − (d/2) log v − ½ log det Λ − ‖y‖²/(2s²) + ½ bᵀΛ⁻¹b,
//
// the density of N(0, s² I + v X_σX_σᵀ) at y in Woodbury form. Permuting the
// rows of X leaves X_σᵀX_σ = XᵀX unchanged, so Λ and its Cholesky factor are
// computed once, and p(y | σ) costs O(n d) per permutation. Regression
// implements this as models.Collapser: MCMC moves σ under p(y | σ) and draws
// β afterwards, and models.Exact enumerates σ.
//
// # Permuted Poisson counts
//
// Counts y_1, …, y_n follow a Poisson regression whose covariate rows
// x_j ∈ ℝ^d were shuffled by an unknown permutation σ,
//
//	y_i ~ Poisson(λ_i),   log λ_i = η_i = a + x_{σ(i)}ᵀ w,   a ~ N(μ_a, s_a²),
//
// with σ uniform over the permutations a candidate mask admits. The log
// baseline a is a real site of one coordinate; the weights w are known
// (NewCounts) or a second real site with independent normal coordinates
// (NewCountsLatentW), so that with one covariate the model has at most two
// real coordinates. The observation model is not Gaussian and a is not
// conjugate, so nothing is integrated out analytically. The log likelihood
//
//	log p(y | σ, a, w) = Σ_i [ y_i η_i − e^{η_i} − log y_i! ]
//
// is written on the tape with dist.PoissonLogLik, with η = a + P X w: for a
// relaxed P the log-rates, not the rates, are interpolated. Write o_j =
// x_jᵀ w. Because Σ_i e^{a + o_{σ(i)}} = e^a Σ_j e^{o_j} does not depend on
// σ, the likelihood depends on σ only through Σ_i y_i o_{σ(i)}, and
// exchanging the rows of i and j changes it by
//
//	(y_i − y_j)(o_{σ(j)} − o_{σ(i)}),
//
// in O(d) (SwapDelta), whatever a. With w known this factorizes the
// posterior: σ and a are independent given y,
//
//	p(σ | y) ∝ exp(⟨P_σ, X⟩),  X_ij = y_i o_j   (Counts.Logits),
//	p(a | y) ∝ exp(a Σ_i y_i − e^a Σ_j e^{o_j}) N(a; μ_a, s_a²),
//
// the first an exponential family over permutations whose mode pairs the
// largest counts with the largest offsets, the second a one-dimensional
// density that quadrature computes to any accuracy. With w latent, σ and w
// are coupled (the sign and size of w decide which ordering of the units
// the counts favour), as β and σ are in permutation regression. Counts
// implements models.StateLogLiker and models.SwapDeltaer.
//
// # Pairwise matching with candidates and known assignments
//
// n observations are matched to n reference items, and what is observed is
// a quantity for every pair of observations, a noisy copy of the known
// quantity of the matched pair of reference items. Pairwise uses distances:
//
//	D^obs_ik = D^ref_{σ(i)σ(k)} + ε_ik,   ε_ik ~ N(0, s²),   i < k,
//
// which are invariant to a rigid motion of the observed configuration, so
// the observations need no common frame with the reference. As in the C.
// elegans experiments of Mena et al. (2018), each observation is restricted
// to a few candidate items (a mask from positions: GeneratePairwise admits
// the items within a radius of the true one), and some observations have a
// known item (fixed rows, models.PermSite.Fixed). In the permutation matrix
// P of σ the log likelihood is
//
//	log p(D^obs | P) = −Σ_{i≠k} (D^obs_ik − (P D^ref Pᵀ)_ik)² / (4s²) − (n(n−1)/2) log(√(2π) s),
//
// quadratic in P: a quadratic assignment problem, not a linear one, so
// the posterior is not an exponential family in P and its mode is not a
// matching of fixed logits. The same two matrix products serve relaxed P,
// for which (P D^ref Pᵀ)_ik = Σ_{j,l} P_ij P_kl D^ref_jl averages the
// reference quantity over both rows' weights. Exchanging the columns of
// rows i and j changes only the pairs (i, k) and (j, k) with k ∉ {i, j} (the
// pair (i, j) keeps D^ref_{σ(i)σ(j)} by symmetry), so SwapDelta costs O(n)
// and LogLikState O(n²). There are no real sites, and models.Exact
// enumerates the permutations the mask and the fixed rows admit.
package matching
