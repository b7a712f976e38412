// Package vae is the categorical variational autoencoder of Jang, Gu and Poole
// (2016) and Maddison, Mnih and Teh (2016) on binarized MNIST, with the three
// stochastic nodes compared in the appendix of Mena et al. (2018, table 6):
// the Gumbel-Softmax, the Concrete with relaxed densities, and the Concrete
// in Gumbel space.
//
// # The model
//
// An image x ∈ {0, 1}^D (D = 784) has L = 20 latent categorical variables
// z_1, …, z_L of C = 10 classes each, uniform a priori, p(z_l = c) = 1/C, and
// a Bernoulli likelihood
//
//	log p(x | z) = Σ_d [ x_d log σ(f_d(z)) + (1 − x_d) log(1 − σ(f_d(z))) ],
//
// where the decoder f is a ReLU network 200-256-512-784 applied to the L one-hot
// vectors concatenated. The posterior is approximated by an amortized guide: an
// encoder 784-512-256-200 maps x to logits l(x) ∈ R^{L×C}, and
// q(z_l = c | x) = softmax(l_l(x))_c. Training maximises the evidence lower
// bound
//
//	ELBO(x) = E_q[log p(x | z)] − KL(q(z | x) ‖ p(z)) ≤ log p(x).
//
// # Three stochastic nodes
//
// The expectation is estimated with one reparameterized sample, which needs a
// continuous relaxation of z. With g standard Gumbel noise of the shape of l
// and a temperature τ, every estimator draws the Gumbel-space variable
// u = (l + g)/τ and feeds the relaxed one-hot y = softmax(u) to the decoder;
// they differ only in the KL term:
//
//   - GumbelSoftmax (Jang et al.): the analytic KL of the categorical q to the
//     uniform prior, Σ_l Σ_c q_lc log(C q_lc). It is not the KL of the relaxed
//     variables, so the objective is not a bound at τ > 0, but it is exact in
//     the limit and has no Monte Carlo noise.
//   - Concrete (Maddison et al.): the relaxed variables themselves, with a
//     Concrete(uniform, λ_p) prior and the single-sample estimate
//     log q(y) − log p(y), evaluated on x = log y with the ExpConcrete
//     densities (the ratio is the same and x does not underflow).
//   - GumbelSpace (Mena et al., appendix): the node is u itself, whose entries
//     are independent Gumbel(l/τ, 1/τ), with prior g'/τ_p; the KL between
//     Gumbels has a closed form (dist.GumbelKLVar). Since y = softmax(u), the
//     data processing inequality gives KL(u ‖ u') ≥ KL(y ‖ y'), so this ELBO
//     is a valid but looser bound than the Concrete one; the seed reports
//     that the loss is under half a nat.
//
// The prior temperature τ_p (Config.PriorTemp) defaults to the posterior's
// current temperature.
//
// # Training
//
// Images are binarized dynamically: each time an image enters a minibatch its
// pixels are redrawn as Bernoulli(intensity) from the step's random source,
// the usual protocol for density estimation on MNIST. The temperature follows
// the schedule of Jang et al., τ(t) = max(τ_min, τ_0 exp(−r t)), with t the
// step rounded down to a multiple of Anneal.Every (τ_0 = 1, τ_min = 0.5,
// r = 10⁻⁴, every 500 steps by default: the floor is reached after about
// 7,000 steps).
//
// The loss of a minibatch B is the mean −ELBO of its images, (1/|B|) Σ_{n∈B}
// −ELBO(x_n): the data-set objective Σ_n ELBO(x_n) estimated as (N/|B|) Σ_{n∈B}
// and divided by N, so that the learning rate does not depend on N.
//
// # One code path: the models contract
//
// In the vocabulary of package models each image has its own latent site
// z_n, a categorical of L×C, and the decoder's weights are parameters of
// the model. Amortized is the VAE on a set of images as a
// models.Amortized: local site "z" (a models.CatSite with the uniform
// prior), the decoder's Bernoulli as LogLik, the decoder's weights as its
// own parameters (models.Parametric), and Observe the dynamic binarization.
// Model.Encoder is its amortized guide: q(z_n | x_n) = q(z_n; l(x_n)),
// one function whose weights all data points share in place of N sets of
// variational parameters. vi.FitAmortized trains it, with the options
// Model.AmortizedOptions derives from the Config and the Anneal schedule
// (estimator Config.Estimator.CatEstimator(), TauPrior Config.PriorTemp),
// on the loop of package nn/train: Adam, seeded minibatches,
// checkpoints and bit-identical resumption. This is how examples/vae
// trains.
//
// The rest of the package computes the same objective through the same
// code: Task, for those who drive train.Run themselves, is a thin wrapper
// of vi.AmortizedTask on Amortized (the same loss, bit for bit, for the
// same random source; its parameters are Model.Params(), encoder first), and
// Model.Loss and LossNoise compute the KL term with vi.CatDivergence, the
// function the fit uses. The likelihood exists once too (Model.NegLogLik,
// which LogLik, LossNoise and Evaluate call), and a test checks the paths
// against a plain-loop computation of the loss.
//
// # Evaluation
//
// Evaluate reports, on a fixed binarization of a test set, the −ELBO of the
// discrete model (the reconstruction term averaged over K samples z ~ q, with
// the analytic KL) and the importance-weighted estimate
//
//	log p(x) ≈ log (1/K) Σ_k p(x | z_k) p(z_k) / q(z_k | x),  z_k ~ q(z | x),
//
// with one-hot z_k. It is a lower bound on log p(x) in expectation, tighter than
// the ELBO and tending to log p(x) as K grows (Burda et al. 2016). Both come with
// their standard errors over images.
//
// With q as its only proposal, the importance-weighted estimate settles
// slowly when q misses part of the posterior: for DefaultConfig's 20
// latents of 10 classes it is not settled at K = 1,000 (the runs are in
// models/vae/results/settle). AIS estimates −log p(x) by annealed
// importance sampling (Neal 2001) in the discrete model instead:
// chains start from z ~ q(z | x) and follow
//
//	f_β(z) = q(z | x)^(1−β) (p(z) p(x | z))^β,  β from 0 to 1,
//
// on the sigmoid schedule of Grosse et al. (2015), with an exact Gibbs
// update of one latent (its C values scored by the decoder) at each β. Each
// chain's weight is an unbiased estimate of p(x), so −log of their mean is,
// like the IW estimate, an upper bound on −log p(x) in expectation, but the
// chains move towards the posterior and the estimate settles with far fewer
// decoder evaluations. BDMC checks a schedule on data simulated from the
// model (Grosse, Ghahramani and Adams 2015): reverse chains started from the
// z that generated an image give a lower bound in expectation, and the gap
// between the two bounds the error of forward AIS on such data.
package vae
