package optim

import (
	"fmt"
	"math"
)

// Schedule gives a value (a learning rate, a temperature) as a function of
// the step number, counted from 0.
type Schedule interface {
	At(step int) float64
}

// Constant is a schedule that always returns its value.
type Constant float64

// At implements Schedule.
func (c Constant) At(int) float64 { return float64(c) }

// Exponential decays geometrically from Start towards Floor:
// max(Floor, Start·Rate^(step/Every)). With Rate < 1 it anneals; it is the
// usual temperature schedule of Gumbel-Softmax training
// (τ = max(0.5, exp(−r·t))).
type Exponential struct {
	Start, Rate, Floor float64
	Every              int // steps per factor of Rate; 0 means 1
}

// At implements Schedule.
func (e Exponential) At(step int) float64 {
	every := e.Every
	if every <= 0 {
		every = 1
	}
	return math.Max(e.Floor, e.Start*math.Pow(e.Rate, float64(step)/float64(every)))
}

// Linear interpolates from Start at step 0 to End at step Steps and stays at
// End afterwards.
type Linear struct {
	Start, End float64
	Steps      int
}

// At implements Schedule.
func (l Linear) At(step int) float64 {
	if l.Steps <= 0 || step >= l.Steps {
		return l.End
	}
	f := float64(step) / float64(l.Steps)
	return l.Start + f*(l.End-l.Start)
}

// Cosine anneals from Start to End over Steps along half a cosine period.
type Cosine struct {
	Start, End float64
	Steps      int
}

// At implements Schedule.
func (c Cosine) At(step int) float64 {
	if c.Steps <= 0 || step >= c.Steps {
		return c.End
	}
	f := float64(step) / float64(c.Steps)
	return c.End + 0.5*(c.Start-c.End)*(1+math.Cos(math.Pi*f))
}

// Geometric interpolates log-linearly from Start at step 0 to End at step
// Steps (both > 0) and stays at End afterwards; useful for temperatures that
// span orders of magnitude.
type Geometric struct {
	Start, End float64
	Steps      int
}

// At implements Schedule.
func (g Geometric) At(step int) float64 {
	if g.Steps <= 0 || step >= g.Steps {
		return g.End
	}
	f := float64(step) / float64(g.Steps)
	return g.Start * math.Pow(g.End/g.Start, f)
}

// Validate checks that s gives finite positive values over steps [0, n).
// It samples the ends and a few points in between.
func Validate(s Schedule, n int) error {
	if s == nil {
		return fmt.Errorf("optim: nil schedule")
	}
	for _, k := range []int{0, n / 4, n / 2, 3 * n / 4, max(n-1, 0)} {
		v := s.At(k)
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("optim: schedule gives %v at step %d; want finite and > 0", v, k)
		}
	}
	return nil
}
