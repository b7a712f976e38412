package dist

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
)

// Concrete is the Concrete or Gumbel-Softmax distribution (Maddison, Mnih and
// Teh 2016; Jang, Gu and Poole 2016) on the open probability simplex of
// dimension k = len(Logits), with temperature λ = Temp > 0. A sample is
//
//	y = softmax((l + g)/λ),  g_i independent standard Gumbel,
//
// a relaxed one-hot vector: as λ → 0 it tends to the one-hot vector of
// argmax_i(l_i + g_i), a Categorical(l) sample. Its density with respect to
// Lebesgue measure on (y_1, …, y_{k-1}) is, with α = exp(l),
//
//	log p(y) = log (k-1)! + (k-1) log λ + Σ_i log α_i - (λ+1) Σ_i log y_i - k log Σ_i α_i y_i^{-λ},
//
// evaluated with log Σ_i α_i y_i^{-λ} = logsumexp_i(l_i - λ log y_i).
//
// Two other variables carry the same information. The log-sample x = log y
// (ExpConcrete) has, with respect to the measure dy_1⋯dy_{k-1}/Π_i y_i on the
// log-simplex, the density
//
//	log p(x) = log (k-1)! + (k-1) log λ + Σ_i (l_i - λ x_i) - k logsumexp_i(l_i - λ x_i),
//
// which equals log p(y) + Σ_i x_i and is the stable choice at small λ, where
// y underflows. The Gumbel-space variable z = (l + g)/λ, of which y is the
// softmax, has independent Gumbel(l_i/λ, 1/λ) entries. Ratios of densities
// (and so Monte Carlo KL estimates) are the same in y and in x; in z they
// differ, see GumbelKL.
//
// Logits must be finite (a -Inf logit would put the sample on a face of the
// simplex, where this density does not apply).
type Concrete struct {
	Logits []float64
	Temp   float64
}

// Validate returns an error if the parameters do not define a distribution.
func (c Concrete) Validate() error {
	if err := validLogits("Concrete", c.Logits, false); err != nil {
		return err
	}
	return validTemp("Concrete", c.Temp)
}

// validTemp checks that a temperature is finite and > 0.
func validTemp(fn string, temp float64) error {
	if !(temp > 0) || math.IsInf(temp, 1) {
		return fmt.Errorf("dist: %s: temperature must be finite and > 0, got %v", fn, temp)
	}
	return nil
}

// concreteConst returns log (k-1)! + (k-1) log λ.
func concreteConst(k int, temp float64) float64 {
	lf, _ := math.Lgamma(float64(k))
	return lf + float64(k-1)*math.Log(temp)
}

// RandGumbelSpace draws the Gumbel-space variable z = (l + g)/λ into dst
// (allocated when nil, else of length k) and returns it. Its softmax is a
// Concrete sample. A nil rng uses the global source of math/rand/v2.
func (c Concrete) RandGumbelSpace(dst []float64, rng *rand.Rand) ([]float64, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if dst == nil {
		dst = make([]float64, len(c.Logits))
	}
	if len(dst) != len(c.Logits) {
		return nil, fmt.Errorf("dist: Concrete: dst has %d values, want %d", len(dst), len(c.Logits))
	}
	for i, l := range c.Logits {
		dst[i] = (l + StandardGumbel(rng)) / c.Temp
	}
	return dst, nil
}

// Rand draws a sample y = softmax((l + g)/λ) into dst (allocated when nil,
// else of length k) and returns it. It uses the same draws as
// RandGumbelSpace, so with equal seeds y = softmax(z).
func (c Concrete) Rand(dst []float64, rng *rand.Rand) ([]float64, error) {
	z, err := c.RandGumbelSpace(dst, rng)
	if err != nil {
		return nil, err
	}
	lse := logSumExp(z)
	for i, v := range z {
		z[i] = math.Exp(v - lse)
	}
	return z, nil
}

// simplexTol is how far Σ y may be from 1 (or logsumexp(x) from 0) for a
// point still to count as on the simplex.
const simplexTol = 1e-6

// LogProb returns log p(y). It is -Inf for y off the open simplex (an entry
// <= 0, or |Σ y - 1| > 1e-6) and an error for NaN entries or a wrong length.
func (c Concrete) LogProb(y []float64) (float64, error) {
	if err := c.Validate(); err != nil {
		return math.NaN(), err
	}
	k := len(c.Logits)
	if len(y) != k {
		return math.NaN(), fmt.Errorf("dist: Concrete: LogProb: y has %d values, want %d", len(y), k)
	}
	var sum, sumLogY, sumL float64
	a := make([]float64, k)
	for i, v := range y {
		if math.IsNaN(v) {
			return math.NaN(), fmt.Errorf("dist: Concrete: LogProb: y[%d] is NaN", i)
		}
		if !(v > 0) {
			return math.Inf(-1), nil
		}
		ly := math.Log(v)
		sum += v
		sumLogY += ly
		sumL += c.Logits[i]
		a[i] = c.Logits[i] - c.Temp*ly
	}
	if math.Abs(sum-1) > simplexTol {
		return math.Inf(-1), nil
	}
	return concreteConst(k, c.Temp) + sumL - (c.Temp+1)*sumLogY - float64(k)*logSumExp(a), nil
}

// LogProbLog returns the ExpConcrete log density of x = log y (see the type
// documentation). It is -Inf when |logsumexp(x)| > 1e-6 (x is not the log
// of a point of the simplex) and an error for NaN entries or a wrong length.
func (c Concrete) LogProbLog(x []float64) (float64, error) {
	if err := c.Validate(); err != nil {
		return math.NaN(), err
	}
	k := len(c.Logits)
	if len(x) != k {
		return math.NaN(), fmt.Errorf("dist: Concrete: LogProbLog: x has %d values, want %d", len(x), k)
	}
	a := make([]float64, k)
	var s float64
	for i, v := range x {
		if math.IsNaN(v) {
			return math.NaN(), fmt.Errorf("dist: Concrete: LogProbLog: x[%d] is NaN", i)
		}
		a[i] = c.Logits[i] - c.Temp*v
		s += a[i]
	}
	if lse := logSumExp(x); !(math.Abs(lse) <= simplexTol) {
		return math.Inf(-1), nil
	}
	return concreteConst(k, c.Temp) + s - float64(k)*logSumExp(a), nil
}

// LogProbGumbelSpace returns the log density of the Gumbel-space variable
// z = (l + g)/λ, whose entries are independent Gumbel(l_i/λ, 1/λ):
//
//	Σ_i [ log λ + (l_i - λ z_i) - exp(l_i - λ z_i) ].
func (c Concrete) LogProbGumbelSpace(z []float64) (float64, error) {
	if err := c.Validate(); err != nil {
		return math.NaN(), err
	}
	if len(z) != len(c.Logits) {
		return math.NaN(), fmt.Errorf("dist: Concrete: LogProbGumbelSpace: z has %d values, want %d", len(z), len(c.Logits))
	}
	logTemp := math.Log(c.Temp)
	var lp float64
	for i, v := range z {
		if math.IsNaN(v) {
			return math.NaN(), fmt.Errorf("dist: Concrete: LogProbGumbelSpace: z[%d] is NaN", i)
		}
		u := c.Logits[i] - c.Temp*v
		lp += logTemp + u - math.Exp(u)
	}
	return lp, nil
}

// ConcreteVar is a batch of independent Concrete distributions whose logits
// are a value on an ad tape: the last axis of Logits (size k) indexes the
// categories and the leading axes index independent distributions, for
// example (batch, latents, k) in a categorical VAE. Temp is a constant
// (anneal it between steps).
//
// Errors (nil logits, a bad temperature, mismatched shapes) are recorded on
// the tape, as every ad op does.
type ConcreteVar struct {
	Logits *ad.Var
	Temp   float64
}

// check returns the tape and whether the distribution is usable.
func (c ConcreteVar) check(fn string) (*ad.Tape, bool) {
	if c.Logits == nil {
		return nil, false
	}
	t := c.Logits.Tape()
	if t.Err() != nil {
		return t, false
	}
	if err := validTemp("ConcreteVar."+fn, c.Temp); err != nil {
		t.Fail(err)
		return t, false
	}
	if s := c.Logits.Shape(); len(s) == 0 || s[len(s)-1] == 0 {
		failVar(t, "ConcreteVar.%s: Logits must have a last (category) axis of size >= 1, got shape %v", fn, s)
		return t, false
	}
	return t, true
}

// Rsample returns a reparameterized sample y = softmax(z, last axis) and the
// Gumbel-space variable z = (logits + g)/λ, with g standard Gumbel noise of
// the logits' shape drawn from rng (nil: the global source) in row-major
// order. Gradients flow to Logits through both. Use z (with GumbelKLVar or
// GumbelLogProbVar) for inference in Gumbel space, y or ad.LogSoftmax(z, -1)
// (with LogProb or LogProbLog) for inference on the simplex.
func (c ConcreteVar) Rsample(rng *rand.Rand) (y, z *ad.Var) {
	t, ok := c.check("Rsample")
	if !ok {
		d := deadOrNil(t)
		return d, d
	}
	g := &ad.Tensor{Shape: append([]int{}, c.Logits.Shape()...), Data: FillGumbel(t.Alloc(c.Logits.Size()), rng)}
	return c.rsample(t.Const(g))
}

// RsampleNoise is Rsample with the standard Gumbel noise g given. g may have
// the logits' shape or extra leading axes (that many samples at once).
func (c ConcreteVar) RsampleNoise(g *ad.Tensor) (y, z *ad.Var) {
	t, ok := c.check("RsampleNoise")
	if !ok {
		d := deadOrNil(t)
		return d, d
	}
	if g == nil {
		d := failVar(t, "ConcreteVar.RsampleNoise: nil noise")
		return d, d
	}
	return c.rsample(t.Const(g))
}

func (c ConcreteVar) rsample(g *ad.Var) (y, z *ad.Var) {
	z = ad.Scale(ad.Add(c.Logits, g), 1/c.Temp)
	return ad.Softmax(z, -1), z
}

// sameLastAxis checks that v's last axis matches the logits'.
func (c ConcreteVar) sameLastAxis(t *ad.Tape, fn, name string, v *ad.Var) bool {
	if v == nil {
		failVar(t, "ConcreteVar.%s: nil %s", fn, name)
		return false
	}
	ls, vs := c.Logits.Shape(), v.Shape()
	if len(vs) == 0 || vs[len(vs)-1] != ls[len(ls)-1] {
		failVar(t, "ConcreteVar.%s: %s has shape %v, logits %v: last axes differ", fn, name, vs, ls)
		return false
	}
	return true
}

// LogProb returns log p(y) for each distribution of the batch (the shape of
// y and Logits broadcast, without the last axis), differentiable in y and
// Logits. y must lie in the open simplex along its last axis; a sample from
// Rsample does unless λ is so small that softmax underflows to 0, in which
// case use LogProbLog with ad.LogSoftmax(z, -1).
func (c ConcreteVar) LogProb(y *ad.Var) *ad.Var {
	t, ok := c.check("LogProb")
	if !ok || !c.sameLastAxis(t, "LogProb", "y", y) {
		return deadOrNil(t)
	}
	k := y.Shape()[len(y.Shape())-1]
	ly := ad.Log(y)
	a := ad.Sub(c.Logits, ad.Scale(ly, c.Temp)) // l_i - λ log y_i
	// Σ log α_i - (λ+1) Σ log y_i = Σ (l_i - λ log y_i) - Σ log y_i.
	s := ad.Sub(ad.SumAxis(a, -1), ad.SumAxis(ly, -1))
	lp := ad.Sub(s, ad.Scale(ad.LogSumExp(a, -1), float64(k)))
	return ad.AddConst(lp, concreteConst(k, c.Temp))
}

// LogProbLog returns the ExpConcrete log density of x = log y for each
// distribution of the batch, differentiable in x and Logits. x should be the
// log of a point of the simplex along its last axis, for example
// ad.LogSoftmax(z, -1) for z from Rsample.
func (c ConcreteVar) LogProbLog(x *ad.Var) *ad.Var {
	t, ok := c.check("LogProbLog")
	if !ok || !c.sameLastAxis(t, "LogProbLog", "x", x) {
		return deadOrNil(t)
	}
	k := x.Shape()[len(x.Shape())-1]
	a := ad.Sub(c.Logits, ad.Scale(x, c.Temp))
	lp := ad.Sub(ad.SumAxis(a, -1), ad.Scale(ad.LogSumExp(a, -1), float64(k)))
	return ad.AddConst(lp, concreteConst(k, c.Temp))
}

// LogProbGumbelSpace returns the elementwise log density of the
// Gumbel-space variable z, log λ + (l_i - λ z_i) - exp(l_i - λ z_i); sum it
// for the joint density. Differentiable in z and Logits.
func (c ConcreteVar) LogProbGumbelSpace(z *ad.Var) *ad.Var {
	t, ok := c.check("LogProbGumbelSpace")
	if !ok || !c.sameLastAxis(t, "LogProbGumbelSpace", "z", z) {
		return deadOrNil(t)
	}
	return GumbelLogProbVar(z, ad.Scale(c.Logits, 1/c.Temp), 1/c.Temp)
}
