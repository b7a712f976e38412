package dist

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/permlab/permlab/ad"
)

// logSqrt2Pi is log √(2π).
const logSqrt2Pi = 0.91893853320467274178032973640561763986139747363778

// Normal is a multivariate normal distribution with diagonal covariance:
// independent coordinates x_i ~ N(μ_i, σ_i²), with joint log density
//
//	log p(x) = Σ_i [ -log √(2π) - log σ_i - (x_i - μ_i)² / (2σ_i²) ].
//
// Sigma holds either one standard deviation per coordinate (len(Mu) values)
// or a single value shared by every coordinate. Every σ must be finite and
// > 0 and every μ finite.
type Normal struct {
	Mu    []float64
	Sigma []float64
}

// Validate returns an error if the parameters do not define a distribution.
func (n Normal) Validate() error {
	if len(n.Sigma) != 1 && len(n.Sigma) != len(n.Mu) {
		return fmt.Errorf("dist: Normal: need 1 or %d values of Sigma, got %d", len(n.Mu), len(n.Sigma))
	}
	for i, m := range n.Mu {
		if math.IsNaN(m) || math.IsInf(m, 0) {
			return fmt.Errorf("dist: Normal: Mu[%d] must be finite, got %v", i, m)
		}
	}
	for i, s := range n.Sigma {
		if !(s > 0) || math.IsInf(s, 1) {
			return fmt.Errorf("dist: Normal: Sigma[%d] must be finite and > 0, got %v", i, s)
		}
	}
	return nil
}

// Dim returns the number of coordinates, len(Mu).
func (n Normal) Dim() int { return len(n.Mu) }

// sigma returns σ_i, resolving a shared value.
func (n Normal) sigma(i int) float64 {
	if len(n.Sigma) == 1 {
		return n.Sigma[0]
	}
	return n.Sigma[i]
}

// LogProb returns the joint log density of x, which must have Dim values.
func (n Normal) LogProb(x []float64) (float64, error) {
	if err := n.Validate(); err != nil {
		return math.NaN(), err
	}
	if len(x) != len(n.Mu) {
		return math.NaN(), fmt.Errorf("dist: Normal: LogProb: x has %d values, want %d", len(x), len(n.Mu))
	}
	var lp float64
	for i, m := range n.Mu {
		s := n.sigma(i)
		z := (x[i] - m) / s
		lp -= logSqrt2Pi + math.Log(s) + 0.5*z*z
	}
	return lp, nil
}

// Rand draws a sample μ + σ ⊙ ε, ε ~ N(0, I), into dst (allocated when nil;
// otherwise it must have Dim values) and returns it. A nil rng uses the
// global source of math/rand/v2.
func (n Normal) Rand(dst []float64, rng *rand.Rand) ([]float64, error) {
	if err := n.Validate(); err != nil {
		return nil, err
	}
	if dst == nil {
		dst = make([]float64, len(n.Mu))
	}
	if len(dst) != len(n.Mu) {
		return nil, fmt.Errorf("dist: Normal: Rand: dst has %d values, want %d", len(dst), len(n.Mu))
	}
	for i, m := range n.Mu {
		dst[i] = m + n.sigma(i)*stdNormal(rng)
	}
	return dst, nil
}

// Entropy returns the differential entropy Σ_i (log σ_i + ½ log(2πe)).
func (n Normal) Entropy() (float64, error) {
	if err := n.Validate(); err != nil {
		return math.NaN(), err
	}
	var h float64
	for i := range n.Mu {
		h += math.Log(n.sigma(i)) + logSqrt2Pi + 0.5
	}
	return h, nil
}

// stdNormal returns one standard normal draw from rng (nil: global source).
func stdNormal(rng *rand.Rand) float64 {
	if rng == nil {
		return rand.NormFloat64()
	}
	return rng.NormFloat64()
}

// FillNormal fills dst with independent standard normal samples, drawn in
// order from rng (nil: the global source) by its NormFloat64, and returns
// dst. It is the noise of every reparameterized Gaussian sample in permlab,
// μ + σ ⊙ ε, and the twin of FillGumbel.
func FillNormal(dst []float64, rng *rand.Rand) []float64 {
	for i := range dst {
		dst[i] = stdNormal(rng)
	}
	return dst
}

// NormalVar is a diagonal normal distribution whose parameters are values on
// an ad tape: location Mu and log standard deviation LogSigma (unconstrained,
// as a variational family needs; for σ given directly pass ad.Log(sigma)).
// Mu and LogSigma must broadcast against each other under the rules of
// package ad (for example a scalar LogSigma shared by every coordinate); the
// distribution's shape is the larger of the two.
//
// Errors (nil parameters, shapes that do not broadcast, a wrong noise
// shape) are recorded on the tape, as every ad op does.
type NormalVar struct {
	Mu       *ad.Var
	LogSigma *ad.Var
}

// check returns the tape and the distribution's shape, or a nil tape when
// there is none, recording an error on it when the parameters are bad.
func (n NormalVar) check(fn string) (*ad.Tape, []int, bool) {
	t := tapeOfVars(n.Mu, n.LogSigma)
	if t == nil {
		return nil, nil, false
	}
	if n.Mu == nil || n.LogSigma == nil {
		failVar(t, "NormalVar.%s: nil Mu or LogSigma", fn)
		return t, nil, false
	}
	if t.Err() != nil {
		return t, nil, false
	}
	if !broadcastable(n.Mu.Shape(), n.LogSigma.Shape()) {
		failVar(t, "NormalVar.%s: shapes %v of Mu and %v of LogSigma do not broadcast", fn, n.Mu.Shape(), n.LogSigma.Shape())
		return t, nil, false
	}
	shape := n.Mu.Shape()
	if n.LogSigma.Size() > n.Mu.Size() {
		shape = n.LogSigma.Shape()
	}
	return t, shape, true
}

// Rsample returns a reparameterized sample μ + exp(log σ) ⊙ ε with ε ~ N(0,
// I) drawn from rng (nil: the global source) in row-major order. Gradients
// flow to Mu and LogSigma; ε is a constant.
func (n NormalVar) Rsample(rng *rand.Rand) *ad.Var {
	t, shape, ok := n.check("Rsample")
	if !ok {
		return deadOrNil(t)
	}
	return n.reparam(t.Const(normalNoise(t, rng, shape...)))
}

// normalNoise returns a tensor of iid standard normals, drawn from rng in
// row-major order, in a buffer from t's pool.
func normalNoise(t *ad.Tape, rng *rand.Rand, shape ...int) *ad.Tensor {
	size := 1
	for _, d := range shape {
		size *= d
	}
	return &ad.Tensor{Shape: append([]int{}, shape...), Data: FillNormal(t.Alloc(size), rng)}
}

// RsampleNoise is Rsample with the standard normal noise ε given: it
// returns μ + exp(log σ) ⊙ ε. ε may have the distribution's shape or extra
// leading axes (a stack of noise tensors), giving that many samples at once.
// It lets a caller hold the noise fixed, as a gradient check does.
func (n NormalVar) RsampleNoise(eps *ad.Tensor) *ad.Var {
	t, _, ok := n.check("RsampleNoise")
	if !ok {
		return deadOrNil(t)
	}
	if eps == nil {
		return failVar(t, "NormalVar.RsampleNoise: nil noise")
	}
	return n.reparam(t.Const(eps))
}

func (n NormalVar) reparam(eps *ad.Var) *ad.Var {
	return ad.Add(n.Mu, ad.Mul(ad.Exp(n.LogSigma), eps))
}

// LogProb returns the elementwise log density of x,
// -log √(2π) - log σ - ((x - μ)/σ)²/2, differentiable in x, Mu and LogSigma.
// Sum it (ad.Sum, ad.SumAxis) for a joint log density.
func (n NormalVar) LogProb(x *ad.Var) *ad.Var {
	t, _, ok := n.check("LogProb")
	if !ok {
		return deadOrNil(t)
	}
	if x == nil {
		return failVar(t, "NormalVar.LogProb: nil x")
	}
	z := ad.Mul(ad.Sub(x, n.Mu), ad.Exp(ad.Neg(n.LogSigma)))
	return ad.AddConst(ad.Neg(ad.Add(n.LogSigma, ad.Scale(ad.Square(z), 0.5))), -logSqrt2Pi)
}

// Entropy returns the total differential entropy as a scalar,
// Σ_i (log σ_i + ½ log(2πe)) over the distribution's shape.
func (n NormalVar) Entropy() *ad.Var {
	t, shape, ok := n.check("Entropy")
	if !ok {
		return deadOrNil(t)
	}
	size := 1
	for _, d := range shape {
		size *= d
	}
	// Under ad's broadcasting rules each element of LogSigma is used
	// size/len(LogSigma) times.
	rep := float64(size) / float64(n.LogSigma.Size())
	return ad.AddConst(ad.Scale(ad.Sum(n.LogSigma), rep), float64(size)*(logSqrt2Pi+0.5))
}

// deadOrNil returns the dead Var of t, or nil without a tape.
func deadOrNil(t *ad.Tape) *ad.Var {
	if t == nil {
		return nil
	}
	if t.Err() == nil {
		return failVar(t, "internal error: no error recorded")
	}
	return t.Custom(nil, nil, nil, nil)
}

// broadcastable reports whether shapes a and b combine under the
// broadcasting rules of package ad: equal shapes, a one-element operand, a
// suffix tiled over leading axes, or a column (last axis 1).
func broadcastable(a, b []int) bool {
	size := func(s []int) int {
		n := 1
		for _, d := range s {
			n *= d
		}
		return n
	}
	equal := func(x, y []int) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	smaller := func(big, small []int) bool {
		k := len(small)
		if k < len(big) && k > 0 && equal(big[len(big)-k:], small) {
			return true
		}
		return k == len(big) && k > 0 && small[k-1] == 1 && equal(big[:k-1], small[:k-1])
	}
	return equal(a, b) || size(a) == 1 || size(b) == 1 || smaller(a, b) || smaller(b, a)
}
