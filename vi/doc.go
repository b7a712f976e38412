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
//
// # Fitting a models.Model
//
// FitModel fits a model written once against package models (the contract
// MCMC and exact enumeration run too): it builds a guide per site, a
// Gumbel-Sinkhorn guide over the effective masks of each permutation site
// and a mean-field Normal guide of shape (K, Shape...) for each real site,
// adds the sites' priors to the ELBO (the Gumbel-space KL; the closed-form
// Gaussian KL for a models.Normal prior, a Monte Carlo log-ratio for any
// other real prior) and runs Fit. Its answer is a models.Posterior.
//
// Layout. A permutation site whose masks leave each row a few candidates
// (N >= SparseMinN and at most SparseDensity of the entries allowed) gets
// a SparseGumbelSinkhorn guide: the same family, prior and KL, with
// logits, noise and Sinkhorn iterations over the allowed entries only, so
// that a step costs O(K·L·NNZ) instead of O(K·L·B·N²); a rounding guide
// (GuideRounding) of such a site is a SparseRounding. The samples of a
// sparse guide reach the model in the sparse layout of package models,
// shape (K, NNZ); a LogLik that reads the site with Sample.Perm gets them
// scattered into the dense shape, one that reads Sample.PermSparse gets
// them as they are and never forms anything N × N.
// ModelOptions.PermLayout overrides the choice.
//
// Priors. A GumbelSinkhornPrior GS(X₀, τ_prior) is a density on the
// Gumbel-space node and is targeted exactly; by default the guide uses the
// prior's temperature, so that q = GS(X, τ_prior) contains the prior. A
// uniform prior has no Gumbel-space density; VI replaces it by the
// surrogate GS(0, τ_prior) and says so in the posterior's notes. The
// surrogate's hard samples M(ε) are uniform over permutations when nothing
// is masked (close to uniform over the admitted ones otherwise).
//
// Temperatures. By default τ_prior follows τ (TauPrior 0): the KL is then
// KL(X + ε ‖ ε), free of τ, and τ only sets how soft the likelihood's
// argument S((X + ε)/τ) is. As τ → 0 the objective tends to the ELBO of the
// Gumbel-Matching family GM(X) in the τ-free Gumbel space, the family the
// posterior is read from (below). A fixed τ_prior instead makes the KL's
// pull on X grow like (τ_prior/τ)² as τ falls and pins X to a constant
// (the uniform distribution). τ itself trades gradient noise (small τ) for
// relaxation bias (large τ: relaxed matrices are averages of permutations,
// which a likelihood such as ‖P·r − y‖² scores unlike any permutation); the
// default anneals it geometrically from 1 to 0.1 over the fit, a schedule
// chosen against constant temperatures on small point-matching problems
// (vi/NOTES.md has the comparison).
//
// Reading q(P). The marginals of a permutation site are the frequencies of
// PosteriorDraws hard draws M(X + ε) of the fitted guide, the τ → 0 limit
// of GS(X, τ), and Mode is the answer of the check below (with the check
// off, the matching of those marginals). The mean of
// relaxed samples S((X + ε)/τ) is not used: at τ > 0 it is biased towards
// the uniform matrix and is not the marginal of any distribution over
// permutations, so it could not be compared with MCMC or exact
// enumeration. The Gumbel-space KL bounds the KL in permutation space from
// above and can be much looser (the latter is at most log N! from a
// uniform prior, the former grows without bound with X), so q's marginals
// are close to, not equal to, the exact ones.
//
// Starts and restarts. Permutation posteriors are multimodal and each fit
// finds one mode. Starts runs several fits from random initialisations
// (InitScale, derived from Seed) and keeps the one whose polished states
// reach the highest log posterior (below); with the check off, the one with
// the highest fresh ELBO estimate: ELBOSamples samples at the final
// temperature with the same
// random numbers for every fit, at the final parameters. A fresh estimate
// is preferred to the mean of the last steps' estimates because those were
// taken at moving parameters (and, with annealing, temperatures), and
// common random numbers make the comparison sharper than independent
// estimates. Restart ends a fit once its ELBO stops rising (Plateau) and
// spends the steps saved on further fits, within Starts·Steps steps in all;
// with an annealed τ the ELBO also moves with τ, so restarts suit a
// constant τ best.
//
// Budgets, traces and guides of the model's own. ModelOptions.Budget bounds
// the whole call: the fits stop early enough for the posterior's draws,
// whose cost is timed on the guides as they go, and the check of the
// answer takes a tenth of the budget and stops at its end; the result is
// what they reached (BudgetExhausted says so). ModelOptions.Trace reports
// each fit's current estimate every TraceEvery steps, for
// accuracy-against-time curves. A model that needs a
// guide the automatic ones lack implements GuideProvider and returns its
// own PermGuide or RealGuide for the sites it chooses; FitModel fits, reads
// and checks it like the others. Fit and FitModel share their defaults
// (DefaultK, the learning-rate schedule from DefaultLRStart to
// DefaultLREnd, DefaultProgressEvery).
//
// # Checking the answer
//
// The ELBO is a relaxed objective: it scores soft matrices and a factorised
// family, and cannot see how probable the hard permutation a fit reports
// is. Even on small models the plain method can settle, with confident
// marginals and no warning, in a permutation tens to hundreds of nats less
// probable than the exact mode (benchmarks/vicheck counts how often,
// family by family).
// The model itself can tell: its likelihood accepts one-hot permutations.
// So FitModel checks its answer by default (ModelOptions.Polish):
//
//  1. For every fit it takes the mode (the matching of its marginals) and
//     Polish.Draws (4) of its hard draws, and Polish.Restarts (4) random
//     admitted permutations independent of every fit.
//  2. Each is improved by models.Scorer.Polish, a local search under the
//     model's log posterior of the permutations, J = log ∫ p(y | P, θ) p(θ)
//     dθ + log p(P), with the real sites θ integrated out (analytically for
//     a Collapser, by quadrature up to three coordinates, by Laplace's
//     approximation up to models.MaxLaplaceDims): swaps, 3-cycles and
//     rearrangements of random blocks of four rows, within the masks and
//     fixed rows, with the model's SwapDelta fast path where it has one.
//  3. Fits are ranked by the highest J their states reach, and the most
//     probable state found becomes Mode; ModelResult.Polish reports J, the
//     nats gained over the chosen fit's own mode and where the answer came
//     from.
//
// It warns when the answer is more than Polish.WarnNats (default
// DefaultPolishWarnNats = 2 nats, a factor e² ≈ 7.4 in probability) more
// probable than the chosen fit's own mode, and when fits end in different
// modes: then the fit's marginals are centred on the wrong permutation, or
// cover one of several modes, and only Mode is to be trusted.
//
// What it guarantees. The answer is a local maximum of J under those
// moves and never less probable than the fit's own mode. J is exact where
// the real sites are collapsed or integrated by quadrature, exact for
// sites that enter linearly with Gaussian noise under Laplace's
// approximation, approximate for other Laplace sites, and a profile (the
// maximum over the sites, which flatters permutations they can be fitted
// to) beyond models.MaxLaplaceDims coordinates; ModelResult.Polish says
// which. The answer is not proven to be the global maximum: the search
// never enumerates (that is models.Exact's job), so its cost grows
// polynomially, O(n³) evaluations per pass over the 3-cycles of a
// permutation of size n, and a search can end in the wrong mode
// (models.ExampleScorer_Polish shows one). benchmarks/vicheck measures,
// family by family, how often the answer is the exact mode and how often
// a wrong one comes without a warning; its README has the tables.
//
// What it costs. ModelResult.Polish.Elapsed and Evals: on the models of
// benchmarks/vicheck a small part of the fit's own time, more where the
// likelihood has no fast path and n is large. Polish.Off restores the
// paper's plain method, fits ranked by their ELBO and Mode the matching of
// the marginals.
//
// Which engine to use. VI with the check when a point estimate of the
// permutation is what matters and the model is large. Its marginals are
// mode-seeking and overconfident; for calibrated marginals, start MCMC
// from the polished states, mcmc.CalibrationOptions(res.Polish.States(4),
// seed), a fraction of default MCMC's sweeps (benchmarks/vicheck measures the
// distance to the exact marginals and the time). Default MCMC when the model
// is small or its swap moves are cheap (a few microseconds each, as for
// point matching, where it is faster than VI). models.Exact when n is small
// enough to enumerate: it is the ground truth.
//
// # Amortized models
//
// FitAmortized fits a models.Amortized, a model with latents z_n per data
// point (local sites) and possibly latents g shared by all (global sites).
// The local guide is amortized: a user network, the Encoder, maps the
// observations x_n to the parameters of q(z_n | x_n), logits for a
// categorical site and a mean and log standard deviation for a real one,
// and is trained jointly with the model's own parameters
// (models.Parametric, e.g. a decoder) and the global guides (those of
// FitModel). Each step takes a minibatch B of the shuffled data set and
// minimises
//
//	−ELBO_B/N,   ELBO_B = (N/|B|) Σ_{n∈B} [ (1/K) Σ_k log p(x_n | z_n⁽ᵏ⁾, g⁽ᵏ⁾) − D_n ] − D_g,
//
// an unbiased estimate of −ELBO/N: the local terms are scaled to the full
// data set and the global divergence D_g is counted once; dividing by N
// keeps the learning rate independent of N. The loop is that of package
// nn/train: epochs in the order EpochRand(Seed, e), the step's
// randomness from StepRand(Seed, s) (first for the model's Observe, then
// the global and local noise), Adam, atomic checkpoints and bit-exact
// resumption after kill -9.
//
// A categorical site's relaxed sample is y = softmax(u), u = (l + g)/τ with
// l the encoder's logits, g standard Gumbel noise and τ the step's
// temperature (Tau, annealed by step); the estimators differ in the node
// and its divergence D_n:
//
//   - GumbelSoftmax (Jang et al. 2016): the analytic KL of the categorical
//     q(z_n | x_n) = softmax(l) to the categorical prior, Σ q log(q/p). It
//     targets the discrete model's prior but is not the KL of the relaxed
//     node, so at τ > 0 the objective is not a bound.
//   - Concrete (Maddison et al. 2016): the node is y, with the prior
//     Concrete(p, τ_prior) and the single-sample log-ratio of the Concrete
//     densities, evaluated on log y. It targets a relaxed model whose prior
//     is the Concrete, and is a bound on that model's evidence.
//   - GumbelSpace (Mena et al. 2018, appendix): the node is u, with prior
//     (l₀ + g')/τ_prior (l₀ the prior logits as given, 0 for uniform) and
//     the closed-form KL between Gumbels; since y = softmax(u), its ELBO is
//     below the Concrete one (data processing inequality), as the
//     Gumbel-Sinkhorn guides' is for permutations.
//
// τ_prior follows τ unless TauPrior is set. CatDivergence computes D_n,
// summed over a minibatch, from given logits and samples, for code that
// records a loss of its own on the same terms (package models/vae's
// LossNoise does). Held-out evaluation
// (Validation, EvalAmortized) reports the negative ELBO per data point of
// the discrete model, with exact one-hot draws z ~ q and the analytic KL,
// whatever the training estimator, so that the three are compared on the
// same scale.
package vi
