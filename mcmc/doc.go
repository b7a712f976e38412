// Package mcmc implements Markov chain Monte Carlo for models with latent
// permutations: transition kernels over a user-defined state, a runner that
// drives several chains in parallel, convergence diagnostics, and RunModel,
// which samples the posterior of any models.Model (swap and block moves,
// replica exchange, HMC) for comparison with variational inference and
// exact enumeration.
//
// # Kernels and sweeps
//
// A Kernel updates a state in place with one transition that leaves the
// target distribution invariant. Kernels that each leave the target
// invariant can be applied one after another; the composition still leaves
// it invariant, and a cycle of Stages (each kernel applied Repeat times) is
// one sweep. A Sampler runs Chains independent chains, each in its own
// goroutine with its own random source: chain c draws from
// rand.New(rand.NewPCG(s1, s2)) where (s1, s2) is derived from the master
// Seed and c alone, so results do not depend on GOMAXPROCS or on Workers.
// Each chain discards Burn sweeps, then records Samples draws, one every
// Thin sweeps.
//
// # Metropolis-Hastings with a non-symmetric proposal
//
// SwapMH samples a permutation p (row i goes to column p[i]) from an
// unnormalized target π(p), optionally restricted by a candidate mask (row i
// may take column c only if the mask allows (i, c)) and with some rows fixed.
// Let F be the free rows and, for a state p and a row i,
//
//	J(i, p) = { j ∈ F, j ≠ i : (i, p[j]) and (j, p[i]) are allowed }
//
// the partners of i, the rows whose label i can exchange with without
// leaving the mask. The proposal picks i uniformly in F, then j uniformly in
// J(i, p), and proposes p' = p with p[i] and p[j] exchanged. The same p' is
// reached by picking j first and then i, so
//
//	q(p → p') = (1/|F|) (1/|J(i, p)| + 1/|J(j, p)|).
//
// The partner counts change with the state, so q is not symmetric: the
// reverse move p' → p has probability (1/|F|)(1/|J(i, p')| + 1/|J(j, p')|).
// The proposal is accepted with probability
//
//	α = min(1, π(p') q(p' → p) / (π(p) q(p → p'))),
//
// which makes π the stationary distribution (detailed balance). Without the
// proposal ratio the chain would over-visit states with few partners. When
// no mask is given every free row is a partner of every other, the ratio is
// one, and the kernel is the classical random-transposition sampler. Targets
// that can compute log π(p') - log π(p) for a swap faster than two full
// evaluations implement SwapDeltaTarget.
//
// # Gibbs updates for Gaussian regression rows
//
// RegressionRows samples the rows of W in the linear-Gaussian model
//
//	y_t = W x_t + e_t,   e_t ~ N(0, η² I),   W[i, c] ~ N(0, σ_w²) for c ∈ s_i,
//
// where s_i is the support of row i (W[i, c] = 0 off the support). Given the
// sufficient statistics Sxx = Σ_t x_t x_tᵀ and Syx = Σ_t y_t x_tᵀ the rows are
// conditionally independent and row i restricted to s_i is Gaussian,
//
//	Λ = Sxx[s, s] / η² + I / σ_w²,   μ = Λ⁻¹ Syx[i, s]ᵀ / η²,   W[i, s] ~ N(μ, Λ⁻¹).
//
// With the Cholesky factor Λ = L Lᵀ, a draw is μ + L⁻ᵀ z with z ~ N(0, I),
// because Cov(L⁻ᵀ z) = L⁻ᵀ L⁻¹ = Λ⁻¹.
//
// # Diagnostics
//
// For m chains of n draws with chain means θ̄_j, chain variances s_j² and
// grand mean θ̄, the within- and between-chain variances are
// W = mean_j s_j² and B = n/(m-1) Σ_j (θ̄_j - θ̄)², and the pooled estimate of
// the posterior variance is var⁺ = (n-1)/n W + B/n. The potential scale
// reduction is R̂ = sqrt(var⁺ / W). SplitRHat first cuts every chain into its
// two halves (Vehtari, Gelman, Simpson, Carpenter and Bürkner 2021), so that
// a trend within a chain shows up as a between-chain difference; values
// above about 1.01 (strict) or 1.1 (lenient) signal non-convergence.
// RankRHat is their recommended form: the larger of the split R̂ of the
// rank-normalized draws and of the rank-normalized folded draws |θ - median|.
//
// The effective sample size of the mean is ESS = m n / τ with the integrated
// autocorrelation time τ = 1 + 2 Σ_{t≥1} ρ_t. The combined autocorrelation at
// lag t is ρ_t = 1 - (W - mean_j γ_{j,t}) / var⁺, where γ_{j,t} is the lag-t
// autocovariance of chain j. The noisy tail of the sum is cut with Geyer's
// initial monotone sequence: the pair sums Γ_k = ρ_{2k} + ρ_{2k+1} are summed
// while positive and forced to be non-increasing, so that
// τ = -1 + 2 Σ_k Γ_k. As in Stan, τ is bounded below by 1/log10(m n). The
// autocovariances are computed directly, lag by lag, only as far as the
// sequence needs, which costs O(m n τ) rather than the O(m n log n) of an FFT.
// For an AR(1) chain with coefficient ρ, τ = (1+ρ)/(1-ρ).
//
// # Running a model
//
// RunModel samples the posterior of any models.Model, the same value that
// vi.FitModel fits, and returns a models.Posterior. Its state is a
// models.State per tempered replica; every chain runs a ladder of replicas
// at inverse temperatures 1 = β₀ > β₁ > … > β_{K-1}, replica k targeting
//
//	π_k(s) ∝ exp(β_k L(s)) p(s),
//
// with L the log-likelihood and p the prior (the permutation priors' mass
// and the real sites' densities). Only β₀ = 1 is recorded. One sweep is,
// in order:
//
//  1. replica exchange: for each adjacent pair (k, k+1), propose to swap
//     the two states, accepted with probability
//     min(1, exp((β_k − β_{k+1})(L(s_{k+1}) − L(s_k)))), the priors
//     cancelling. A hot replica moves freely between modes, and exchanges
//     carry its state down the ladder.
//  2. per replica, per permutation site and per permutation b with f ≥ 2
//     free rows: f swap proposals (SwapMH, with the exact proposal ratio
//     under the effective mask), then ⌈f/2⌉ block proposals of up to 4 rows
//     (BlockMH, symmetric; see its documentation for the proof). Swaps use
//     the model's prepared swap delta when it implements
//     models.SwapPreparer, prepared again only after the replica's state
//     changed other than by that permutation's swaps (every stage that
//     may change a replica's state, and an accepted exchange, counts a new
//     generation of it); else its SwapDelta when it implements
//     models.SwapDeltaer; and otherwise they evaluate L through
//     models.LogLikState on one-hot values.
//  3. real sites: the model's exact Gibbs draw (models.Conjugate) for the
//     sites it lists, at β = 1; HMC with the tape's gradients for the
//     others, jointly, and at β < 1 for every real site. The HMC step size
//     (and, with HMCOptions.DiagonalMass, a diagonal mass matrix) is
//     adapted during burn-in and then frozen.
//
// The ladder is geometric, β_k = β_min^{k/(K-1)}, with K = 8 and β_min =
// 0.01 by default (GeometricLadder): at β_min a move that costs 100 nats of
// likelihood at β = 1 costs one, so a hot replica leaves any mode of a
// small model, and a constant ratio β_{k+1}/β_k gives roughly equal
// exchange rates along the ladder; ModelResult.Acceptance reports them per
// pair, and a rate near zero calls for more temperatures (Temperatures,
// Ladder).
//
// When the model implements models.Collapser, every permutation move
// targets the collapsed likelihood log ∫ p(y | s, c) p(c) dc instead of L,
// and after the moves of the β = 1 replica the collapsed sites are drawn
// from p(c | y, permutations) (SampleCollapsed), so they are still reported.
// A move under the marginal followed by an exact draw of c is a valid
// update of the pair; it removes the coupling between a permutation and a
// regression coefficient that traps a sampler alternating between them.
// The sites the model does not collapse are then moved given c, at β = 1
// only: a Collapser with such sites runs without tempering.
//
// Diagnostics are computed by default on the β = 1 draws: for every real
// coordinate the rank-normalized split R̂ and the bulk ESS; for a
// permutation site the worst of the same over the indicators "row i is on
// the pooled mode's column" of its free rows and over the log-likelihood
// trace. R̂ above 1.1 or ESS below 100 adds a warning to the Posterior,
// and so does an undefined R̂ when each chain kept one value for all its
// draws but not every chain the same one (chains stuck in different
// states); chains that all sit on one value (a posterior concentrated on
// one state) are not warned about.
//
// Budgets, traces and moves of the model's own. ModelOptions.Budget bounds
// the wall time of the set-up and the sampling: the chains run at once,
// each stops before a sweep that would not end within the budget (timed by
// its latest sweeps), less what ModelOptions.Reserve keeps for what follows
// the sampling, and the posterior holds the draws they all reached
// (BudgetExhausted says so). Since the length of such a run is not known
// ahead, its burn-in is best given as a share of the draws (Discard); and
// for a large model whose summaries would take long after the budget,
// Record and LogLikDiagnostics keep them to what the caller needs.
// ModelOptions.Trace reports each chain's β = 1 state every TraceEvery
// sweeps, or about a hundred times per chain, for accuracy-against-time
// curves. A model whose posterior
// needs a move the swaps and blocks make rarely implements MoveProvider:
// its PermMove proposals run after them every sweep, at every temperature,
// as Metropolis-Hastings steps with the Hastings ratio the move returns,
// and proposals its masks forbid are rejected.
//
// # Starting from variational inference
//
// Chains start from random admitted permutations and prior draws, from
// ModelOptions.Init (every chain the same state) or from Inits (chain c
// from Inits[c mod len(Inits)]). The last calibrates a variational fit:
// vi.FitModel reports the distinct states its check polished
// (ModelResult.Polish.States), which sit in the posterior's modes, and
// chains started there need a short burn-in and fewer temperatures
// (CalibrationOptions):
//
//	q, _ := vi.FitModel(ctx, m, vi.ModelOptions{Seed: 1})
//	cal, _ := mcmc.RunModel(ctx, m, mcmc.CalibrationOptions(q.Polish.States(4), 1))
//
// 650 sweeps per chain at 4 temperatures against the default 2000 at 8,
// with replica exchange still weighing the modes against each other. VI's
// marginals are mode-seeking; these are the sampler's. How close they come
// to the exact marginals, and at what fraction of default MCMC's wall
// time, is measured by benchmarks/vicheck.
package mcmc
