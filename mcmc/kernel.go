package mcmc

import "math/rand/v2"

// Kernel is a Markov transition that updates a state of type S in place and
// leaves a target distribution invariant.
//
// Step performs one transition using rng as its only source of randomness.
// It reports whether a proposal was accepted; kernels without an
// accept/reject step (Gibbs updates) report true. A non-nil error stops the
// chain. A kernel value is only ever used by one chain at a time.
type Kernel[S any] interface {
	Step(rng *rand.Rand, s S) (accepted bool, err error)
}

// KernelFunc adapts an ordinary function to the Kernel interface. It is the
// usual way to apply a kernel over a part of a larger state, for example a
// SwapMH over one permutation field of a model state.
type KernelFunc[S any] func(rng *rand.Rand, s S) (bool, error)

// Step calls f(rng, s).
func (f KernelFunc[S]) Step(rng *rand.Rand, s S) (bool, error) { return f(rng, s) }

// Stage is one element of a sweep: Kernel applied Repeat times in a row.
// Repeat <= 0 counts as 1. Name labels the stage in acceptance statistics.
type Stage[S any] struct {
	Name   string
	Kernel Kernel[S]
	Repeat int
}

func (st Stage[S]) repeat() int {
	if st.Repeat <= 0 {
		return 1
	}
	return st.Repeat
}

// StageStats counts the transitions of one stage after burn-in.
type StageStats struct {
	Name     string
	Steps    int
	Accepted int
}

// Rate returns the acceptance rate Accepted/Steps, or NaN when no step was
// taken.
func (s StageStats) Rate() float64 {
	return AcceptanceRate(s.Accepted, s.Steps)
}
