package dist

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Categorical is the distribution over {0, …, k-1} with unnormalised log
// probabilities Logits:
//
//	P(i) = exp(l_i) / Σ_j exp(l_j).
//
// Logits may be -Inf (probability zero) but not NaN or +Inf, and at least
// one must be finite. Adding a constant to every logit changes nothing.
type Categorical struct {
	Logits []float64
}

// Validate returns an error if the logits do not define a distribution.
func (c Categorical) Validate() error {
	return validLogits("Categorical", c.Logits, true)
}

// validLogits checks a logit vector; allowNegInf admits -Inf entries as
// long as one entry is finite.
func validLogits(fn string, logits []float64, allowNegInf bool) error {
	if len(logits) == 0 {
		return fmt.Errorf("dist: %s: no logits", fn)
	}
	finite := false
	for i, l := range logits {
		switch {
		case math.IsNaN(l) || math.IsInf(l, 1):
			return fmt.Errorf("dist: %s: logit %d is %v", fn, i, l)
		case math.IsInf(l, -1):
			if !allowNegInf {
				return fmt.Errorf("dist: %s: logit %d is -Inf", fn, i)
			}
		default:
			finite = true
		}
	}
	if !finite {
		return fmt.Errorf("dist: %s: every logit is -Inf", fn)
	}
	return nil
}

// logSumExp returns log Σ exp(x_i), shifted by the maximum; -Inf if every
// entry is -Inf.
func logSumExp(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	if math.IsInf(m, 0) {
		return m
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

// LogProbs returns the normalised log probabilities l_i - log Σ_j exp(l_j).
func (c Categorical) LogProbs() ([]float64, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	lse := logSumExp(c.Logits)
	out := make([]float64, len(c.Logits))
	for i, l := range c.Logits {
		out[i] = l - lse
	}
	return out, nil
}

// Probs returns the probabilities softmax(logits).
func (c Categorical) Probs() ([]float64, error) {
	p, err := c.LogProbs()
	if err != nil {
		return nil, err
	}
	for i, l := range p {
		p[i] = math.Exp(l)
	}
	return p, nil
}

// LogProb returns log P(k); it is -Inf for k outside {0, …, len(Logits)-1}.
func (c Categorical) LogProb(k int) (float64, error) {
	if err := c.Validate(); err != nil {
		return math.NaN(), err
	}
	if k < 0 || k >= len(c.Logits) {
		return math.Inf(-1), nil
	}
	return c.Logits[k] - logSumExp(c.Logits), nil
}

// Rand draws a category with the Gumbel-max trick: argmax_i (l_i + g_i) with
// g_i independent standard Gumbel is distributed as Categorical(l). It uses
// exactly len(Logits) draws from rng (nil: the global source).
func (c Categorical) Rand(rng *rand.Rand) (int, error) {
	if err := c.Validate(); err != nil {
		return -1, err
	}
	best, arg := math.Inf(-1), -1
	for i, l := range c.Logits {
		g := StandardGumbel(rng)
		if v := l + g; arg < 0 || v > best {
			best, arg = v, i
		}
	}
	return arg, nil
}

// RandInverseCDF draws a category by inversion: the smallest k with
// Σ_{i<=k} P(i) > U for one uniform U on (0, 1). It uses one draw from rng
// (nil: the global source), against k Gumbels for Rand. Neither method
// returns a category of probability zero.
func (c Categorical) RandInverseCDF(rng *rand.Rand) (int, error) {
	if err := c.Validate(); err != nil {
		return -1, err
	}
	lse := logSumExp(c.Logits)
	u := uniformOpen(rng)
	var cum float64
	last := -1
	for i, l := range c.Logits {
		if math.IsInf(l, -1) {
			continue
		}
		last = i
		cum += math.Exp(l - lse)
		if u < cum {
			return i, nil
		}
	}
	// Rounding left the total just below U: take the last possible category.
	return last, nil
}
