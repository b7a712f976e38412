// Package models is the contract between a Bayesian model with latent
// permutations and the engines that fit it: write the model once, then fit
// it with Gumbel-Sinkhorn variational inference (package vi) and with MCMC
// (package mcmc), and compare the two, or both against exact enumeration.
//
// # Writing a model
//
// A model is an ordinary Go type that holds its data and has two methods
// (the Model interface). Sites declares each latent variable once, with its
// support and its prior:
//
//   - a *PermSite: Batch independent permutations of size N, each optionally
//     restricted by a candidate mask (row i may go to column j only if the
//     mask allows it) and with some rows fixed to known columns; prior
//     UniformPerm (the default) or GumbelSinkhornPrior;
//   - a *RealSite: a real tensor of a given shape with independent prior
//     coordinates (Normal).
//
// LogLik writes log p(y | z) once, on an ad tape. It reads the sites from a
// Sample by name: z.Perm("P") has shape (K, B, N, N) and z.Real("beta")
// shape (K, Shape...), K joint samples on the leading axis. A permutation
// arrives as a matrix P with P[i][j] the weight of "row i goes to column j":
// variational inference passes relaxed, doubly stochastic matrices
// S((X + ε)/τ), MCMC and Exact pass one-hot matrices. Because the likelihood
// is written with matrix products (P·y, Pᵀ·W·P, …) the same code serves both.
// For the point-matching model y_i = r_{σ(i)} + ε_i with ε_i ~ N(0, s² I):
//
//	func (m *Match) Sites() []models.Site {
//		return []models.Site{&models.PermSite{Name: "P", N: m.N}}
//	}
//
//	func (m *Match) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
//		p := ad.Reshape(z.Perm("P"), z.K(), m.N, m.N)            // (K, N, N)
//		pred := ad.MatMul(p, t.Const(m.Ref))                     // row i: Σ_j P_ij r_j
//		r := ad.Sub(pred, t.Const(m.Obs))                        // (K, N, 2)
//		return ad.Scale(ad.SumAxis(ad.Reshape(ad.Square(r), z.K(), -1), 1), -0.5/(m.S*m.S))
//	}
//
// Site names are checked when an engine is set up (Check): unknown, missing
// or duplicated sites, shapes and masks that do not fit, and fixed rows that
// contradict their mask are errors that name the site. Inside LogLik, a
// mistyped name passed to z.Perm or z.Real is recorded on the tape and the
// engine returns it as an error; it never panics.
//
// # Running both engines
//
//	post, err := vi.FitModel(ctx, m, vi.ModelOptions{...})   // Gumbel-Sinkhorn guides, automatic
//	post, err := mcmc.RunModel(ctx, m, mcmc.ModelOptions{...}) // swap moves, HMC, several chains
//	ex, err := models.Exact(m)                                 // small models: ground truth
//
// Every engine returns a *Posterior: for each permutation site the marginal
// matrix P(row i → column j), the mode (the matching of the marginals, which
// maximises the expected number of correct rows) and draws; for each real
// site the mean and spread; and notes and warnings, for example R̂ above 1.1
// when MCMC chains disagree, or the surrogate prior that VI used.
//
// # Priors: what each engine targets
//
// MCMC and Exact target p(z | y) with the declared priors exactly. VI in
// Gumbel space targets it exactly for GumbelSinkhornPrior; a UniformPerm
// prior has no Gumbel-space density, and vi uses the surrogate GS(0,
// τ_prior) in its place (the KL of the Gumbel-space nodes, Mena et al. 2018,
// appendix), which it states in the Posterior's notes. The surrogate is
// close to uniform over permutations for τ_prior of order 1 and above, and
// the two engines then aim at nearly, not exactly, the same posterior.
//
// # Amortized models
//
// Some models give every data point x_n latents of its own, z_n (a local
// site), besides latents g shared by the whole data set (a global site):
//
//	p(x, z, g) = p(g) Π_n p(z_n) p(x_n | z_n, g).
//
// Such a model implements Amortized: Sites declares the global sites (as
// in Model; possibly none), LocalSites the sites of one data point, a
// *CatSite (D independent categoricals of C classes, uniform or with prior
// logits) or a *RealSite with the shape of one data point's value, N the
// number of data points, Observe the observations of a minibatch (one row
// per point; errors for data the model cannot use name the point) and
// LogLik the per-point log p(x_n | z_n, g) of a minibatch, shape (K, B),
// read from a BatchSample: z.Cat("z") has shape (K, B, D, C), a local
// z.Real shape (K, B, Shape...), a global site its usual shape, z.X() the
// observations. A model with parameters of its own (a VAE's decoder) also
// implements Parametric. CheckAmortized validates the sites with errors
// naming them, as Check does.
//
// Variational inference fits it with an amortized guide (package vi,
// FitAmortized): an encoder network maps x_n to the parameters of
// q(z_n | x_n), so that the number of variational parameters does not grow
// with N, and the ELBO
//
//	ELBO = Σ_n E_q[log p(x_n | z_n, g) − log q(z_n | x_n)/p(z_n)] − KL(q(g) ‖ p(g))
//
// is a sum over data points plus a global term, which a minibatch B
// estimates without bias as (N/|B|) Σ_{n∈B} ELBO_n − KL(q(g) ‖ p(g)): the
// local terms are scaled to the full data set, the global one is counted
// once. MCMC and exact enumeration do not run amortized models.
//
// # Exact enumeration
//
// Exact is the ground truth for small models: it enumerates every admitted
// joint permutation state s (at most MaxExactStates) and weighs it by
// p(s) ∫ p(y | s, θ) p(θ) dθ. Real sites θ are integrated out either
// analytically, by the model's CollapsedLikelihood (the part of Collapser
// that Exact uses), or numerically when they have at most MaxExactRealDims
// coordinates in all: adaptive Gauss-Hermite quadrature around the Laplace
// approximation of each state, accepted when two successive orders agree
// within ExactQuadTol nats. The result's QuadError states the worst error
// estimate, the Posterior reports the numerically integrated sites' means
// and standard deviations, and ExactResult.Prob gives the posterior
// probability of any joint permutation state.
//
// # Checking an answer against the model
//
// A Scorer computes J(P), the model's log posterior of its permutations
// with the real sites integrated out (analytically for a Collapser, by
// quadrature or Laplace's approximation otherwise), and Scorer.Polish
// improves a state by a local search under J: swaps, 3-cycles and block
// rearrangements within the masks and fixed rows. Engines use it to check
// their answers (package vi does by default); users can score any two
// candidate answers with LogJoint and compare them in nats.
//
// # Fast paths
//
// Engines evaluate LogLik on one-hot matrices when they need the value at an
// exact state, which costs O(B N² …) per evaluation. A model can offer
// faster paths, found by type assertion as io.Copy finds io.WriterTo:
// StateLogLiker (the value without a tape), SwapDeltaer (the change when two
// rows of a permutation swap columns, for swap Metropolis-Hastings),
// SwapPreparer (the same change from a function prepared once for one
// permutation and valid while the rest of the state keeps its value, so
// that the work that depends on the other sites is done once per run of
// swaps rather than once per proposal), Conjugate (exact Gibbs draws of a
// real site) and Collapser (real sites integrated out analytically, so that
// permutation moves target p(y | permutations) and Exact needs no
// quadrature). CheckFastPaths tests a model's fast paths against LogLik.
package models
