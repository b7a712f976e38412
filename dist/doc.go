// Package dist provides probability distributions as first-class values:
// the vocabulary in which permlab models and variational families are
// written, from the Gaussian and Gumbel building blocks to distributions over
// relaxed one-hot vectors and over (relaxed) permutations.
//
// # Conventions
//
// As in gonum's stat/distuv, a distribution is a small struct of its
// parameters with the methods a statistician expects: Validate, LogProb,
// Rand, and where they exist Mean, CDF, Entropy. Unlike distuv, methods that
// can meet bad input return an error, and there is no random source in
// the struct: every sampling method takes an explicit *rand.Rand from
// math/rand/v2. That keeps a distribution an immutable value that any number
// of goroutines may share, each with its own generator, so results depend
// only on the seeds, never on GOMAXPROCS or scheduling; a nil *rand.Rand
// falls back to the global source of math/rand/v2, which is not
// reproducible. Noise is always drawn in row-major order of the sample, so
// the float64 and tape versions of a distribution give the same sample from
// the same seed, and FillGumbel and FillNormal give the noise itself.
//
// Errors. Invalid parameters make every method return an error, the one
// Validate returns. A malformed argument (a sample of the wrong size, NaN
// entries, a dst of the wrong size) is an error too. A well-formed value
// outside the support is not: LogProb returns -Inf and a nil error. The
// scalar Gumbel is the exception, written exactly as distuv writes its
// scalar distributions: its methods return a float64 alone, NaN when the
// parameters are invalid, and Validate says why.
//
// Value types and signatures. A sample has the type that suits it: int for
// Categorical, perm.Perm for GumbelMatching, []float64 for the vector
// distributions Normal and Concrete, an N×N *mat.Dense for the matrix
// distributions Rounding, StickBreaking and RoundingPrior, and a struct
// of views for GumbelSinkhorn. LogProb of a matrix distribution accepts any
// mat.Matrix. Where a sample is a slice or matrix of a size fixed by the
// parameters, Rand writes it into a buffer of the caller's,
//
//	Rand(dst T, rng *rand.Rand) (T, error)
//
// and returns dst, or a new buffer when dst is nil, so that a sampling
// loop can reuse one buffer; otherwise it returns a new value,
//
//	Rand(rng *rand.Rand) (T, error).
//
// RoundingPrior, a density for every size N, takes N instead: Rand(n, rng).
//
// Interfaces. Generic code is written against the small interfaces
// Validator, LogProber[T], Rander[T] (the second form of Rand) and
// Filler[T] (the first); Allocating turns a Filler into a Rander, and
// RandFunc and LogProbFunc adapt any function, for example the scalar
// Gumbel or one size of RoundingPrior. The float64 types implement
//
//	type             Rander[T]              Filler[T]     LogProber[T]
//	Categorical      int                    -             int
//	Normal           -                      []float64     []float64
//	Concrete         -                      []float64     []float64
//	GumbelMatching   perm.Perm              -             - (intractable)
//	GumbelSinkhorn   GumbelSinkhornSample   -             - (intractable)
//	Rounding         -                      *mat.Dense    mat.Matrix
//	StickBreaking    -                      *mat.Dense    mat.Matrix
//	RoundingPrior    -                      -             mat.Matrix
//	Gumbel           - (float64, no error)  -             - (float64, no error)
//
// and all of them Validator; the package checks this at compile time.
//
// The tape twins. A type with the suffix Var (NormalVar, ConcreteVar,
// GumbelSinkhornVar, StickBreakingVar, RoundingVar) holds parameters that are
// values on an ad tape. Its Rsample method draws a reparameterized sample:
// the noise is a constant on the tape and the sample a differentiable
// function of the parameters, so Tape.Backward carries the gradient of a
// Monte Carlo objective to them. RsampleNoise takes the noise explicitly, to
// hold it fixed (gradient checks) or to draw several samples at once by
// stacking noise along a new leading axis.
// The noise tensor is recorded without copying, as Tape.Const does, and must
// not change while the tape is in use.
// Errors on the tape side (nil parameters, bad shapes, τ <= 0) are recorded
// with Tape.Fail, as every ad op does, and surface at Tape.Err or Backward.
// On the tape, LogProb returns one value per independent distribution
// (elementwise for Normal and Gumbel, one per row for Concrete, one per
// matrix for StickBreaking and Rounding), since importance weighting needs
// them separately; KL functions (GumbelKLVar, KLNormalVar, KLNormalStdVar)
// return the total, which is what enters an ELBO. Because these shapes
// differ by design, the tape twins share conventions but no interface.
//
// # What each distribution supports
//
//	distribution     exact sample        reparameterized sample        log density
//	Normal           Rand                NormalVar.Rsample             LogProb, KLNormal, entropy;
//	                                                                   KLNormalVar, KLNormalStdVar
//	Gumbel           Rand (inversion)    -                             LogProb, CDF; GumbelLogProbVar
//	Categorical      Rand (Gumbel-max),  -                             LogProb
//	                 RandInverseCDF
//	Concrete         Rand                ConcreteVar.Rsample (y and z) LogProb (y), LogProbLog (log y),
//	                                                                   LogProbGumbelSpace (z)
//	GumbelMatching   Rand, RandBatch     - (not differentiable)        intractable
//	GumbelSinkhorn   Rand, RandSoft      GumbelSinkhornVar.Rsample     intractable; GumbelKL in Gumbel space
//	StickBreaking,   Rand                Rsample                       LogProb (change of variables)
//	Rounding
//
// StickBreaking and Rounding are the Birkhoff-polytope relaxations of
// Linderman et al. (2018); see their documentation.
//
// # The Gumbel-max trick and its relaxations
//
// If g_1, …, g_k are independent standard Gumbel variables, with density
// exp(-(g + e^{-g})), then argmax_i (l_i + g_i) is distributed as
// Categorical(softmax(l)). The argmax is not differentiable, so the Concrete
// or Gumbel-Softmax distribution (Maddison et al. 2016, Jang et al. 2016)
// replaces it by the softmax at temperature λ,
//
//	y = softmax((l + g)/λ),
//
// which tends to the one-hot argmax as λ → 0 and has the closed-form density
// given with Concrete.
//
// The seed paper (Mena et al. 2018) extends both steps to permutations.
// Perturbing an N×N score matrix X with N² independent Gumbels and solving
// the assignment problem gives the Gumbel-Matching distribution GM(X) with
// samples M(X + ε), M the matching operator (relax.Matching); relaxing M to
// the Sinkhorn operator S gives the Gumbel-Sinkhorn distribution GS(X, τ)
// with samples S((X + ε)/τ), which tend to M(X + ε) as τ → 0. Neither has a
// tractable density.
//
// # Inference in Gumbel space
//
// Both a variational posterior GS(X, τ) and a prior GS(0, τ_prior) are the
// same map S applied to simple variables: Z = (X + ε)/τ, whose entries are
// independent Gumbel(x_ij/τ, 1/τ), and Z' = ε'/τ_prior. The seed therefore
// treats Z as the stochastic node: the likelihood is evaluated at S(Z) and
// the KL term is KL(Z ‖ Z'), which has the closed form (per entry, with
// r = τ_prior/τ and γ Euler's constant)
//
//	KL = log(τ/τ_prior) - 1 + γ(r - 1) + r x + Γ(1 + r) exp(-r x),
//
// provided as GumbelKL and as the fused ad op GumbelKLVar (the derivation
// is in the source of GumbelKL).
// Since S is not invertible, KL(Z ‖ Z') >= KL(S(Z) ‖ S(Z')) by the data
// processing inequality, so the ELBO computed in Gumbel space is a valid,
// if looser, lower bound. The same construction applies to categorical
// latents: the "Concrete in Gumbel space" VAE uses z = (l + g)/λ with prior
// g/λ_prior and GumbelKLVar on the logits.
package dist
