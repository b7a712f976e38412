// Package vi fits variational posteriors by stochastic gradient ascent on a
// reparameterized evidence lower bound (ELBO).
//
// For data y, latents z = (z_1, …, z_m) and a factorised variational family
// q(z) = Π_s q_s(z_s), the ELBO is
//
//	ELBO = E_q[log p(y | z)] − Σ_s KL(q_s ‖ p_s) ≤ log p(y).
//
// The model supplies log p(y | z) on an ad.Tape (Model.LogLik). Each latent
// site is a Guide: a variational family with its own prior. A guide draws K
// reparameterized samples z_s = g(θ_s, ε) (so that ∂/∂θ passes through the
// sample) and supplies its divergence term, either in closed form (Normal
// guides; the Gumbel-space KL of Gumbel-Sinkhorn guides) or as a per-sample
// Monte Carlo term log q_s(z_s) − log p_s(z_s). The estimate
//
//	ELBO ≈ (1/K) Σ_k [log p(y | z⁽ᵏ⁾) − Σ_{s∈MC} (log q_s(z_s⁽ᵏ⁾) − log p_s(z_s⁽ᵏ⁾))] − Σ_{s∈closed} KL_s
//
// is unbiased, and so is its gradient.
//
// # Gumbel-Sinkhorn guides
//
// For a latent permutation, GumbelSinkhorn parameterises q(P) = GS(X, τ):
// P = S((X + ε)/τ) with ε iid standard Gumbel. The KL between Gumbel-Sinkhorn
// distributions has no closed form; following Mena et al. (2018), the
// divergence is taken in Gumbel space between the stochastic nodes
// (X + ε)/τ and ε/τ_prior, which is available in closed form and upper-bounds
// the KL of the relaxed permutations.
//
// # Fitting
//
// Fit runs the optimisation: it steps an optimizer from package optim with a
// learning-rate schedule, lets guides anneal their temperatures by step,
// reports progress through a callback, honours context cancellation, and
// writes checkpoints atomically (write to a temporary file, sync, rename).
// Every step draws its randomness from a stream derived from (Seed, step), so
// a run that is interrupted at any point, even by kill -9, and resumed from
// its last checkpoint ends with exactly the same parameters as an
// uninterrupted run with the same seed.
package vi
