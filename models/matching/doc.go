// Package matching holds two small models in which observations are matched
// to known items by a latent permutation: point matching (Problem), where n
// observed points in the plane are noisy copies of n reference points, and
// permutation regression (Regression), where the covariate rows of a linear
// regression were shuffled. Both implement models.Model and are small enough
// for models.Exact to enumerate, which makes them the models on which the
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
package matching
