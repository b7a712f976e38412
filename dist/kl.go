package dist

import (
	"fmt"
	"math"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/par"
)

// Gumbel-space KL divergence.
//
// The Gumbel-Sinkhorn distribution GS(X, τ) has no tractable density, but it
// is the image under the Sinkhorn operator of the Gumbel-space variable
// Z = (X + ε)/τ, and the prior GS(0, τ_prior) is the image of Z' = ε'/τ_prior
// under the same map. The seed paper (appendix "Inference with the implicit
// Gumbel-Sinkhorn distribution") replaces KL(GS(X, τ) ‖ GS(0, τ_prior)) in
// the ELBO by KL(Z ‖ Z'), which is an upper bound on it (data processing
// inequality), so the ELBO computed with it is still a lower bound, if a
// looser one; it has a closed form because the entries are independent
// scaled Gumbels.
//
// Derivation, per entry (x fixed, ε standard Gumbel). If h = (a + g)/b with
// g standard Gumbel, then g = bh - a and
//
//	log p_h(z) = log b - (bz - a) - exp(a - bz).
//
// For q: a = x, b = τ; for p: a = 0, b = τ_prior. Write r = τ_prior/τ and
// evaluate at z = (x + ε)/τ, so that τz - x = ε and τ_prior z = r(x + ε):
//
//	log q(z) = log τ - ε - exp(-ε)
//	log p(z) = log τ_prior - r(x + ε) - exp(-r(x + ε))
//	log q(z) - log p(z) = log(τ/τ_prior) - ε - exp(-ε) + r x + r ε + exp(-r x) exp(-r ε).
//
// Taking expectations over ε with E[ε] = γ and E[exp(tε)] = Γ(1 - t) (so
// E[exp(-ε)] = Γ(2) = 1 and E[exp(-rε)] = Γ(1 + r)):
//
//	KL = log(τ/τ_prior) - 1 + γ(r - 1) + r x + Γ(1 + r) exp(-r x).
//
// It is 0 at x = 0, τ = τ_prior, and its derivative in x is
// r (1 - Γ(1 + r) exp(-r x)). Summing over the N² entries gives the seed's
// N²(log(τ/τ_prior) - 1 + γ(r - 1)) + r Σ x_ij + Γ(1 + r) Σ exp(-r x_ij)
// (the seed's intermediate lines carry sign typos; this final form is the
// one derived here).

// gumbelKLParams validates the temperatures and returns r = τ_prior/τ,
// the per-entry constant log(τ/τ_prior) - 1 + γ(r - 1) and log Γ(1 + r).
func gumbelKLParams(fn string, tau, tauPrior float64) (r, c, lg float64, err error) {
	if !(tau > 0) || math.IsInf(tau, 1) {
		return 0, 0, 0, fmt.Errorf("dist: %s: tau must be finite and > 0, got %v", fn, tau)
	}
	if !(tauPrior > 0) || math.IsInf(tauPrior, 1) {
		return 0, 0, 0, fmt.Errorf("dist: %s: tauPrior must be finite and > 0, got %v", fn, tauPrior)
	}
	r = tauPrior / tau
	c = math.Log(tau/tauPrior) - 1 + EulerGamma*(r-1)
	lg, _ = math.Lgamma(1 + r)
	return r, c, lg, nil
}

// GumbelKL returns the closed-form KL divergence between the Gumbel-space
// variables of GS(X, τ) and of the prior GS(0, τ_prior),
//
//	KL((X + ε)/τ ‖ ε'/τ_prior) = Σ_ij [ log(τ/τ_prior) - 1 + γ(r - 1) + r x_ij + Γ(1 + r) exp(-r x_ij) ],
//
// with r = τ_prior/τ and γ the Euler-Mascheroni constant, for the entries x
// of X in any layout (a matrix, a batch, the logits of a categorical in the
// "Concrete in Gumbel space" VAE). Entries equal to -Inf mark forbidden
// pairs (masked logits) and are left out of the sum; NaN and +Inf are
// errors. Γ(1 + r) exp(-r x) is evaluated as exp(log Γ(1 + r) - r x), so a
// large r does not overflow before a large x brings it back down.
func GumbelKL(x []float64, tau, tauPrior float64) (float64, error) {
	r, c, lg, err := gumbelKLParams("GumbelKL", tau, tauPrior)
	if err != nil {
		return math.NaN(), err
	}
	var kl float64
	for i, v := range x {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 1):
			return math.NaN(), fmt.Errorf("dist: GumbelKL: entry %d is %v", i, v)
		case math.IsInf(v, -1):
			continue
		}
		kl += c + r*v + math.Exp(lg-r*v)
	}
	return kl, nil
}

// GumbelKLVar is GumbelKL on the tape: a scalar, differentiable in x (τ and
// τ_prior are constants), recorded as one fused op with the adjoint
//
//	∂KL/∂x_ij = r (1 - Γ(1 + r) exp(-r x_ij))   (0 for -Inf entries).
//
// Invalid temperatures or NaN/+Inf entries are recorded as the tape's error.
//
// In Gumbel-Sinkhorn variational inference the ELBO for a latent
// permutation with variational parameter X is estimated as
//
//	ELBO ≈ (1/K) Σ_k log p(data | S((X + ε_k)/τ)) - GumbelKLVar(X, τ, τ_prior)
//
// with K samples from GumbelSinkhornVar.Rsample; the KL term is exact, so
// it adds no Monte Carlo noise. Pass X itself, not its K-fold broadcast:
// the KL is a property of the distribution, not of the samples.
func GumbelKLVar(x *ad.Var, tau, tauPrior float64) *ad.Var {
	if x == nil {
		return nil
	}
	t := x.Tape()
	if t.Err() != nil {
		return deadOrNil(t)
	}
	r, c, lg, err := gumbelKLParams("GumbelKLVar", tau, tauPrior)
	if err != nil {
		t.Fail(err)
		return deadOrNil(t)
	}
	xv := x.Value()
	// e holds Γ(1 + r) exp(-r x) per entry for the backward pass; NaN marks
	// a skipped (-Inf) entry.
	e := t.AllocRaw(len(xv))
	// The exponentials on several goroutines for a large x, then the sum
	// in order, so that the bits do not depend on the number of threads.
	if len(xv) <= par.Grain {
		gumbelKLTerms(e, xv, lg, r)
	} else {
		par.Range(len(xv), par.Grain, func(lo, hi int) { gumbelKLTerms(e[lo:hi], xv[lo:hi], lg, r) })
	}
	var kl float64
	for i, v := range xv {
		switch {
		case math.IsNaN(v) || math.IsInf(v, 1):
			return failVar(t, "GumbelKLVar: entry %d is %v", i, v)
		case math.IsInf(v, -1):
			continue
		}
		kl += c + r*v + e[i]
	}
	out := t.Alloc(1)
	out[0] = kl
	return t.Custom(nil, out, []*ad.Var{x}, func(gOut []float64, gIn [][]float64) {
		g := gIn[0]
		if g == nil {
			return
		}
		if len(e) <= par.Grain {
			gumbelKLGrad(g, e, gOut[0], r)
		} else {
			par.Range(len(e), par.Grain, func(lo, hi int) { gumbelKLGrad(g[lo:hi], e[lo:hi], gOut[0], r) })
		}
	})
}

// gumbelKLTerms sets e[i] = exp(lg − r·x[i]), NaN where x[i] is −∞.
func gumbelKLTerms(e, x []float64, lg, r float64) {
	for i, v := range x {
		if math.IsInf(v, -1) {
			e[i] = math.NaN()
		} else {
			e[i] = math.Exp(lg - r*v)
		}
	}
}

// gumbelKLGrad adds g·r·(1 − e[i]) to dst[i] where e[i] is not NaN.
func gumbelKLGrad(dst, e []float64, g, r float64) {
	gr := g * r // (g·r)·(1 − e[i]) is how the product associates anyway
	for i, ei := range e {
		if !math.IsNaN(ei) {
			dst[i] += gr * (1 - ei)
		}
	}
}

// KLNormal returns KL(q ‖ p) for diagonal normals of the same dimension,
//
//	Σ_i [ log(σ_p,i/σ_q,i) + (σ_q,i² + (μ_q,i - μ_p,i)²)/(2σ_p,i²) - ½ ].
func KLNormal(q, p Normal) (float64, error) {
	if err := q.Validate(); err != nil {
		return math.NaN(), fmt.Errorf("dist: KLNormal: q: %w", err)
	}
	if err := p.Validate(); err != nil {
		return math.NaN(), fmt.Errorf("dist: KLNormal: p: %w", err)
	}
	if q.Dim() != p.Dim() {
		return math.NaN(), fmt.Errorf("dist: KLNormal: dimensions %d and %d differ", q.Dim(), p.Dim())
	}
	var kl float64
	for i := range q.Mu {
		sq, sp := q.sigma(i), p.sigma(i)
		d := q.Mu[i] - p.Mu[i]
		kl += math.Log(sp/sq) + (sq*sq+d*d)/(2*sp*sp) - 0.5
	}
	return kl, nil
}

// KLNormalVar returns KL(q ‖ p) between diagonal normals on the tape as a
// scalar, summed over the broadcast shape of the four parameters and
// differentiable in all of them:
//
//	Σ_i [ log σ_p - log σ_q + ½ exp(2(log σ_q - log σ_p)) + ½ (μ_q - μ_p)² exp(-2 log σ_p) - ½ ].
//
// A standard normal prior is NormalVar{t.ConstScalar(0), t.ConstScalar(0)}.
func KLNormalVar(q, p NormalVar) *ad.Var {
	tq, _, okq := q.check("KLNormalVar")
	tp, _, okp := p.check("KLNormalVar")
	if !okq || !okp {
		if tq != nil {
			return deadOrNil(tq)
		}
		return deadOrNil(tp)
	}
	if tq != tp {
		return failVar(tq, "KLNormalVar: q and p are on different tapes")
	}
	dl := ad.Sub(q.LogSigma, p.LogSigma)
	ratio := ad.Scale(ad.Exp(ad.Scale(dl, 2)), 0.5)
	mean := ad.Scale(ad.Mul(ad.Square(ad.Sub(q.Mu, p.Mu)), ad.Exp(ad.Scale(p.LogSigma, -2))), 0.5)
	return ad.Sum(ad.AddConst(ad.Add(ad.Sub(mean, dl), ratio), -0.5))
}

// KLNormalStdVar returns KL(q ‖ p) on the tape, as a scalar, between the
// diagonal normal q = N(μ, diag σ²) with its standard deviations σ given
// directly, as a guide that sets σ = softplus(ρ) has them, and the
// isotropic prior p = N(m, s² I), m = priorMu and s = priorStd:
//
//	Σ_i [ log s - log σ_i + (σ_i² + (μ_i - m)²)/(2s²) - ½ ],
//
// evaluated as Σ_i [ (σ_i² + (μ_i - m)²)/(2s²) - log σ_i ] + D (log s - ½)
// over the D elements of the broadcast shape of mu and sigma (a scalar
// sigma is shared by every coordinate). It is differentiable in mu and
// sigma. KLNormalVar is the same divergence for the log σ parameterisation
// and a general prior. Every σ must be finite and > 0, every μ finite, and
// priorMu finite, priorStd finite and > 0; otherwise the tape records an
// error.
func KLNormalStdVar(mu, sigma *ad.Var, priorMu, priorStd float64) *ad.Var {
	t := tapeOfVars(mu, sigma)
	switch {
	case t == nil:
		return nil
	case mu == nil || sigma == nil:
		return failVar(t, "KLNormalStdVar: nil mu or sigma")
	case t.Err() != nil:
		return deadOrNil(t)
	case mu.Tape() != sigma.Tape():
		return failVar(t, "KLNormalStdVar: mu and sigma are on different tapes")
	case !broadcastable(mu.Shape(), sigma.Shape()):
		return failVar(t, "KLNormalStdVar: shapes %v of mu and %v of sigma do not broadcast", mu.Shape(), sigma.Shape())
	case math.IsNaN(priorMu) || math.IsInf(priorMu, 0):
		return failVar(t, "KLNormalStdVar: priorMu must be finite, got %v", priorMu)
	case !(priorStd > 0) || math.IsInf(priorStd, 1):
		return failVar(t, "KLNormalStdVar: priorStd must be finite and > 0, got %v", priorStd)
	}
	for i, v := range mu.Value() {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return failVar(t, "KLNormalStdVar: mu entry %d is %v", i, v)
		}
	}
	for i, v := range sigma.Value() {
		if !(v > 0) || math.IsInf(v, 1) {
			return failVar(t, "KLNormalStdVar: sigma entry %d is %v, want finite and > 0", i, v)
		}
	}
	d := max(mu.Size(), sigma.Size())
	// The order of the ops is part of the contract: vi.Normal's ELBO, which
	// golden tests pin bit for bit, depends on it.
	sq := ad.Square(sigma)
	dm := mu
	if priorMu != 0 {
		dm = ad.AddConst(mu, -priorMu)
	}
	v := priorStd * priorStd
	kl := ad.Sum(ad.Sub(ad.Scale(ad.Add(sq, ad.Square(dm)), 1/(2*v)), ad.Log(sigma)))
	return ad.AddConst(kl, float64(d)*(math.Log(priorStd)-0.5))
}
