package vi

import (
	"fmt"
	"math"
)

// Plateau watches a noisy objective that should increase, such as the
// per-step ELBO estimates of Fit, and says when it has stopped increasing.
//
// It compares the means of the latest two windows of Window values: the
// objective is on a plateau when the newer mean exceeds the older by no more
// than Z standard errors of the difference,
//
//	m_new − m_old ≤ Z·sqrt((s²_old + s²_new)/Window),
//
// with s² the sample variance of each window. The test is first made once
// 2·Window values have been added. Stochastic objectives keep fluctuating
// after convergence, so "stopped increasing" has to be judged against their
// own noise; the test does that without any scale set by hand.
type Plateau struct {
	Window int     // values per window, >= 2
	Z      float64 // standard errors the gain must reach, >= 0

	vals []float64
}

// NewPlateau returns a detector with the given window and threshold.
func NewPlateau(window int, z float64) (*Plateau, error) {
	if window < 2 {
		return nil, fmt.Errorf("vi: NewPlateau: window must be >= 2, got %d", window)
	}
	if !(z >= 0) || math.IsInf(z, 0) {
		return nil, fmt.Errorf("vi: NewPlateau: z must be finite and >= 0, got %v", z)
	}
	return &Plateau{Window: window, Z: z}, nil
}

// Add records the next value and reports whether the objective is on a
// plateau.
func (p *Plateau) Add(v float64) bool {
	w := p.Window
	if len(p.vals) >= 4*w {
		// Keep the values the test can still use; compacting only every
		// 2·Window values keeps Add O(Window) amortised.
		p.vals = append(p.vals[:0], p.vals[len(p.vals)-2*w+1:]...)
	}
	p.vals = append(p.vals, v)
	if len(p.vals) < 2*w {
		return false
	}
	last := p.vals[len(p.vals)-2*w:]
	mOld, vOld := meanVariance(last[:w])
	mNew, vNew := meanVariance(last[w:])
	return mNew-mOld <= p.Z*math.Sqrt((vOld+vNew)/float64(w))
}

// Mean returns the mean of the latest Window values (of all of them while
// fewer have been added), or NaN if none has.
func (p *Plateau) Mean() float64 {
	if len(p.vals) == 0 {
		return math.NaN()
	}
	m, _ := meanVariance(p.vals[max(0, len(p.vals)-p.Window):])
	return m
}

// Count returns how many of the latest values Mean averages.
func (p *Plateau) Count() int { return min(len(p.vals), p.Window) }

// Reset forgets every value.
func (p *Plateau) Reset() { p.vals = p.vals[:0] }

// meanVariance returns the mean and the sample variance of x (variance 0 when
// len(x) < 2).
func meanVariance(x []float64) (mean, variance float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	for _, v := range x {
		d := v - mean
		variance += d * d
	}
	return mean, variance / float64(len(x)-1)
}
