package dist

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mathext"

	"github.com/permlab/permlab/ad"
)

// This file holds log-likelihood helpers for the common observation models,
// written for the LogLik method of a models.Model. They share one shape
// convention, stated in full in the documentation of NormalLogLik:
//
//   - the parameters θ (means, logits, log-rates) carry the sample axis:
//     shape (K, E...), with E the shape of one data set (possibly empty);
//   - the observations y have shape E (one data set shared by the K samples,
//     the usual case) or (K, E...) (one per sample); any other pair is an
//     error;
//   - the result has shape (K): out[k] = Σ_e log p(y_e | θ_{k,e}), the shape
//     LogLik must return;
//   - for categorical helpers the class axis C is the last axis of E.
//
// Bad input (nil Vars, shapes outside the convention, invalid scales,
// observations outside the support) is recorded on the tape with Tape.Fail,
// as every ad op does; parameter values are not checked (NaN in, NaN out).

// logLikShapes checks the observations y against the parameters param under
// the shape convention and returns K and the number of observations per
// sample, M = |E|. It records an error on t (and returns ok false) otherwise.
func logLikShapes(t *ad.Tape, fn, param string, y, p *ad.Var) (k, m int, ok bool) {
	ps := p.Shape()
	if len(ps) == 0 {
		failVar(t, "%s: %s is a scalar; want shape (K, ...) with the sample axis K first", fn, param)
		return 0, 0, false
	}
	k = ps[0]
	if k < 1 {
		failVar(t, "%s: %s has shape %v; want K >= 1 samples on the leading axis", fn, param, ps)
		return 0, 0, false
	}
	if ys := y.Shape(); !slices.Equal(ys, ps) && !slices.Equal(ys, ps[1:]) {
		failVar(t, "%s: observations have shape %v; with %s of shape %v want %v (shared by the K samples) or %v",
			fn, ys, param, ps, ps[1:], ps)
		return 0, 0, false
	}
	return k, p.Size() / k, true
}

// checkObs records an error on t unless every observation satisfies ok, which
// describes the support as want.
func checkObs(t *ad.Tape, fn string, y *ad.Var, want string, ok func(float64) bool) bool {
	for i, v := range y.Value() {
		if !ok(v) {
			failVar(t, "%s: observation %d is %v; want %s", fn, i, v, want)
			return false
		}
	}
	return true
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// perSample sums x, of shape (K, ...), over every axis but the first.
func perSample(x *ad.Var, k int) *ad.Var {
	return ad.SumAxis(ad.Reshape(x, k, -1), 1)
}

// start returns the tape of the inputs and whether the helper should go on:
// false when there is no tape, an input is nil, or the tape already holds an
// error. When it returns false with a tape, the caller returns deadOrNil(t).
func start(fn string, vs ...*ad.Var) (*ad.Tape, bool) {
	t := tapeOfVars(vs...)
	if t == nil {
		return nil, false
	}
	if t.Err() != nil {
		return t, false
	}
	for _, v := range vs {
		if v == nil {
			failVar(t, "%s: nil input", fn)
			return t, false
		}
	}
	return t, true
}

// NormalLogLik returns the Gaussian log-likelihood of observations y with
// means mean and one standard deviation sigma shared by every observation,
//
//	out[k] = Σ_e [ −log √(2π) − log σ − (y_e − μ_{k,e})² / (2σ²) ],
//
// for each of K samples, as a Var of shape (K): the value a models.Model's
// LogLik returns.
//
// Shapes, common to the log-likelihood helpers of this package (NormalLogLik,
// NormalLogLikLogSigma, BernoulliLogitLogLik, PoissonLogLik,
// CategoricalLogitLogLik, CategoricalLogitLogLikOneHot): the parameter
// carries the sample axis, mean of shape (K, E...), where E is the shape of
// one data set (E may be empty: a mean of shape (K) is one scalar
// observation per sample). The observations y have shape E, one data set
// shared by the K samples (the data, a constant: the usual case), or shape
// (K, E...), one data set per sample. The result sums over E. For n
// observations, y of shape (n) or (K, n) goes with a mean of shape (K, n);
// for an n×d data set, y of shape (n, d) or (K, n, d) with a mean of shape
// (K, n, d). Any other pair of shapes is an error.
//
// Errors, common to the helpers: nothing panics. A nil input, shapes outside
// the convention, an invalid scale, or observations outside the support
// (here: not finite) are recorded on the tape with Tape.Fail, the helper
// returns the tape's dead Var, and the error surfaces at Tape.Err or
// Tape.Backward; once the tape holds an error a helper records nothing more.
// Parameter values are not checked: NaN parameters give a NaN result. With
// every input nil (no tape) a helper returns nil.
//
// The helpers are differentiable in the parameters, so a model may write
// them with a relaxed permutation matrix P, as mean = P·r or logits =
// P·Θ·Pᵀ. Apply P to the parameters rather than to the observations: a
// Sinkhorn matrix has row sums 1 only up to its tolerance, so P·y may leave
// the support of y (a Bernoulli outcome slightly above 1) and be refused.
//
// sigma must be finite and > 0. NormalLogLik is differentiable in y and
// mean. For a standard deviation that is itself a latent variable, use
// NormalLogLikLogSigma.
func NormalLogLik(y, mean *ad.Var, sigma float64) *ad.Var {
	const fn = "NormalLogLik"
	t, ok := start(fn, y, mean)
	if !ok {
		return deadOrNil(t)
	}
	if !(sigma > 0) || math.IsInf(sigma, 1) {
		return failVar(t, "%s: sigma must be finite and > 0, got %v", fn, sigma)
	}
	k, m, ok := logLikShapes(t, fn, "mean", y, mean)
	if !ok || !checkObs(t, fn, y, "a finite value", isFinite) {
		return deadOrNil(t)
	}
	sq := perSample(ad.Square(ad.Sub(y, mean)), k)
	return ad.AddConst(ad.Scale(sq, -0.5/(sigma*sigma)), -float64(m)*(logSqrt2Pi+math.Log(sigma)))
}

// NormalLogLikLogSigma is NormalLogLik with the log standard deviation a
// Var, differentiable like the mean:
//
//	out[k] = Σ_e [ −log √(2π) − log σ_{k,e} − (y_e − μ_{k,e})² / (2σ_{k,e}²) ],
//
// with σ = exp(logSigma). y and mean have the shapes of NormalLogLik, and
// errors are recorded as there. logSigma may have
//
//   - one element: one σ shared by every sample and observation;
//   - shape (K), or (K, 1, …, 1) of rank at most mean's: one σ per sample,
//     shared by its observations (the value of a scalar real site, which
//     has shape (K) in a models.Sample). Shape (K) always means this, even
//     when E = (K);
//   - a shape that broadcasts to mean's under the rules of package ad: a
//     suffix of mean's shape (E itself: one σ per observation, shared by the
//     samples; (d) for the columns of an (n, d) data set), mean's shape, or
//     mean's shape with the last axis 1.
//
// Any other shape is an error recorded on the tape.
func NormalLogLikLogSigma(y, mean, logSigma *ad.Var) *ad.Var {
	const fn = "NormalLogLikLogSigma"
	t, ok := start(fn, y, mean, logSigma)
	if !ok {
		return deadOrNil(t)
	}
	k, m, ok := logLikShapes(t, fn, "mean", y, mean)
	if !ok || !checkObs(t, fn, y, "a finite value", isFinite) {
		return deadOrNil(t)
	}
	ms, ls := mean.Shape(), logSigma.Shape()
	obs, mu := y, mean
	switch {
	case logSigma.Size() == 1:
	case logSigma.Size() == k && len(ls) >= 1 && ls[0] == k && len(ls) <= len(ms):
		// One σ per sample: flatten to (K, M) against a (K, 1) column.
		mu = ad.Reshape(mean, k, m)
		if y.Size() == k*m && k > 1 {
			obs = ad.Reshape(y, k, m)
		} else {
			obs = ad.Reshape(y, m)
		}
		logSigma = ad.Reshape(logSigma, k, 1)
	case broadcastable(ms, ls) && logSigma.Size() <= mean.Size() && len(ls) <= len(ms):
	default:
		return failVar(t, "%s: logSigma has shape %v; with mean of shape %v want one element, (%d), or a shape that broadcasts to %v",
			fn, ls, ms, k, ms)
	}
	return perSample(NormalVar{Mu: mu, LogSigma: logSigma}.LogProb(obs), k)
}

// BernoulliLogitLogLik returns the log-likelihood of binary outcomes y under
// independent Bernoulli distributions with log-odds logits x, p = σ(x) =
// 1/(1 + e^{−x}):
//
//	out[k] = Σ_e [ y_e log σ(x_{k,e}) + (1 − y_e) log(1 − σ(x_{k,e})) ]
//	       = −Σ_e [ y_e softplus(−x_{k,e}) + (1 − y_e) softplus(x_{k,e}) ],
//
// shape (K), with the shapes of NormalLogLik (logits of shape
// (K, E...); y of shape E or (K, E...)). softplus(x) = log(1 + e^x) is computed
// as max(x, 0) + log1p(e^{−|x|}), so the result is accurate, relative to its
// size, for logits of any magnitude: a confident correct prediction (y = 1,
// x = 40) gives −4.2e−18, not 0, and a confident wrong one (y = 0, x = 800)
// gives −800, not −Inf.
//
// The outcomes must lie in [0, 1]; any other value (NaN, −1, 2) is an error
// recorded on the tape. Fractional y give the cross-entropy, the linear
// interpolation between the two outcomes. It is differentiable in logits
// (∂/∂x = y − σ(x)) and in y.
func BernoulliLogitLogLik(y, logits *ad.Var) *ad.Var {
	const fn = "BernoulliLogitLogLik"
	t, ok := start(fn, y, logits)
	if !ok {
		return deadOrNil(t)
	}
	k, _, ok := logLikShapes(t, fn, "logits", y, logits)
	if !ok || !checkObs(t, fn, y, "an outcome in [0, 1]", func(v float64) bool { return v >= 0 && v <= 1 }) {
		return deadOrNil(t)
	}
	pos := ad.Mul(y, ad.Softplus(ad.Neg(logits)))                 // y · (−log σ(x))
	neg := ad.Mul(ad.AddConst(ad.Neg(y), 1), ad.Softplus(logits)) // (1 − y) · (−log(1 − σ(x)))
	return ad.Neg(perSample(ad.Add(pos, neg), k))
}

// PoissonLogLik returns the log-likelihood of counts y under independent
// Poisson distributions with log-rates logRate, η = log λ:
//
//	out[k] = Σ_e [ y_e η_{k,e} − e^{η_{k,e}} − log y_e! ],
//
// shape (K), with the shapes of NormalLogLik (logRate of shape
// (K, E...); y of shape E or (K, E...)). The constant −log y! = −log Γ(y + 1) is
// included, so the value is the exact log probability mass and agrees with
// stat/distuv's Poisson.
//
// The counts must be finite and >= 0; a negative or NaN count is an error
// recorded on the tape. A count that is not an integer is accepted and
// evaluated by the same formula with log Γ(y + 1): the continuous extension,
// which is smooth in y but not a normalized density over real y. It is
// differentiable in logRate (∂/∂η = y − λ) and in y (∂/∂y = η − ψ(y + 1),
// with ψ the digamma function).
func PoissonLogLik(y, logRate *ad.Var) *ad.Var {
	const fn = "PoissonLogLik"
	t, ok := start(fn, y, logRate)
	if !ok {
		return deadOrNil(t)
	}
	k, _, ok := logLikShapes(t, fn, "logRate", y, logRate)
	if !ok || !checkObs(t, fn, y, "a finite count >= 0", func(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }) {
		return deadOrNil(t)
	}
	lp := ad.Sub(ad.Sub(ad.Mul(y, logRate), ad.Exp(logRate)), logFactorial(t, y))
	return perSample(lp, k)
}

// logFactorial returns log Γ(y + 1) elementwise, with adjoint ψ(y + 1).
func logFactorial(t *ad.Tape, y *ad.Var) *ad.Var {
	in := y.Value()
	val := t.Alloc(len(in))
	for i, v := range in {
		val[i], _ = math.Lgamma(v + 1)
	}
	return t.Custom(y.Shape(), val, []*ad.Var{y}, func(gOut []float64, gIn [][]float64) {
		if g := gIn[0]; g != nil {
			for i, v := range in {
				g[i] += gOut[i] * mathext.Digamma(v+1)
			}
		}
	})
}

// CategoricalLogitLogLik returns the log-likelihood of class labels under
// categorical distributions with unnormalized log-probabilities logits,
// normalized over the last axis (the C classes):
//
//	out[k] = Σ_r log softmax(l_{k,r})_{c_r} = Σ_r [ l_{k,r,c_r} − log Σ_c exp(l_{k,r,c}) ],
//
// shape (K), with the normalizer computed by ad.LogSoftmax, stable for
// logits of any magnitude. logits has shape (K, E...) with the classes last,
// E = (R..., C); labels holds one class in [0, C) per row r: R labels (the
// row-major order of E without its last axis), shared by the K samples, or
// K·R labels, one set per sample in row-major order. For n labelled items
// and logits of shape (K, n, C), pass n labels (or K·n). A label count that
// fits neither, a label out of range, or logits of rank < 2 is an error
// recorded on the tape. Logits −Inf (an impossible class) are allowed: a
// label of such a class has log-likelihood −Inf. It is differentiable in
// logits. labels must not change while the tape is in use.
func CategoricalLogitLogLik(labels []int, logits *ad.Var) *ad.Var {
	const fn = "CategoricalLogitLogLik"
	t, ok := start(fn, logits)
	if !ok {
		return deadOrNil(t)
	}
	ls := logits.Shape()
	if len(ls) < 2 || ls[0] < 1 || ls[len(ls)-1] < 1 {
		return failVar(t, "%s: logits have shape %v; want (K, ..., C) with K >= 1 samples first and C >= 1 classes last", fn, ls)
	}
	k, c := ls[0], ls[len(ls)-1]
	r := logits.Size() / (k * c)
	idx := labels
	switch len(labels) {
	case k * r:
	case r:
		idx = make([]int, 0, k*r)
		for range k {
			idx = append(idx, labels...)
		}
	default:
		return failVar(t, "%s: %d labels for logits of shape %v; want %d (shared by the K samples) or %d", fn, len(labels), ls, r, k*r)
	}
	for i, l := range labels {
		if l < 0 || l >= c {
			return failVar(t, "%s: label %d is %d; want a class in [0, %d)", fn, i, l, c)
		}
	}
	return perSample(ad.Gather(ad.LogSoftmax(logits, -1), idx), k)
}

// CategoricalLogitLogLikOneHot is CategoricalLogitLogLik with the classes
// given as one-hot rows y, of shape E or (K, E...) as for NormalLogLik, against logits of shape (K, E...) normalized
// over the last axis:
//
//	out[k] = Σ_{r,c} y_{r,c} log softmax(l_{k,r})_c.
//
// Rows that are probability vectors give the cross-entropy. The entries of y
// must be finite and >= 0 (an error is recorded otherwise); the row sums are
// not checked. Because every class enters the sum, an impossible class
// (logit −Inf) gives 0·(−Inf) = NaN even where y is 0: use a large negative
// finite logit, or the labels form, for such classes. It is differentiable in
// logits and y.
func CategoricalLogitLogLikOneHot(y, logits *ad.Var) *ad.Var {
	const fn = "CategoricalLogitLogLikOneHot"
	t, ok := start(fn, y, logits)
	if !ok {
		return deadOrNil(t)
	}
	if ls := logits.Shape(); len(ls) < 2 {
		return failVar(t, "%s: logits have shape %v; want (K, ..., C) with K samples first and C classes last", fn, ls)
	}
	k, _, ok := logLikShapes(t, fn, "logits", y, logits)
	if !ok || !checkObs(t, fn, y, "a finite weight >= 0", func(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }) {
		return deadOrNil(t)
	}
	return perSample(ad.Mul(y, ad.LogSoftmax(logits, -1)), k)
}
