package mcmc

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// HMCOptions are the settings of an HMC kernel. The zero value gives the
// defaults.
type HMCOptions struct {
	// Leapfrog is the number L of leapfrog steps per trajectory; 0 means 10.
	Leapfrog int
	// StepSize is the initial leapfrog step size ε; 0 means the heuristic
	// of Hoffman and Gelman (2014, Algorithm 4) at the first step: ε is
	// doubled or halved until the acceptance probability of one leapfrog
	// step crosses 1/2.
	StepSize float64
	// TargetAccept is the mean acceptance probability δ that dual
	// averaging aims at while adapting; 0 means 0.8.
	TargetAccept float64
	// Adapt is the number of first steps during which ε is adapted by dual
	// averaging. Afterwards ε is frozen at its averaged value, so that the
	// chain is a time-homogeneous Markov chain. Set it to the number of
	// steps the kernel takes during burn-in.
	Adapt int
	// DiagonalMass turns on the adaptation of a diagonal mass matrix
	// during the Adapt steps (see HMC); without it the mass matrix is the
	// identity.
	DiagonalMass bool
}

// HMC is Hamiltonian Monte Carlo (Duane et al. 1987; Neal 2011) on R^d for
// a differentiable log density log π(x), with a diagonal mass matrix M.
//
// A step draws a momentum p ~ N(0, M), follows the Hamiltonian
// H(x, p) = -log π(x) + pᵀM⁻¹p/2 for L leapfrog steps of size ε,
//
//	p ← p + (ε/2) ∇log π(x),   x ← x + ε M⁻¹p,   p ← p + (ε/2) ∇log π(x),
//
// and accepts the end point with probability min(1, exp(H(x₀, p₀) - H(x, p))).
// The leapfrog map is volume preserving and reversible (after negating p),
// so this is a Metropolis-Hastings step on (x, p) that leaves
// π(x) N(p; 0, M) invariant. M⁻¹ should approximate the posterior
// covariance, so that every coordinate moves on its own scale; M = I unless
// DiagonalMass is set. Each trajectory uses a step size drawn
// uniformly in [0.9ε, 1.1ε], which avoids the periodic orbits of a fixed
// ε·L. A trajectory whose energy error exceeds 1000 or that reaches a
// non-finite density is a divergence and is rejected.
//
// During the first Adapt steps ε is tuned by the dual averaging of Hoffman
// and Gelman (2014, section 3.2): with a_t the acceptance probability of
// step t, δ the target, μ = log(10 ε₀), γ = 0.05, t₀ = 10 and κ = 0.75,
//
//	H̄_t = (1 - 1/(t+t₀)) H̄_{t-1} + (δ - a_t)/(t+t₀),
//	log ε_t = μ - √t/γ · H̄_t,
//	log ε̄_t = t^{-κ} log ε_t + (1 - t^{-κ}) log ε̄_{t-1},
//
// and afterwards ε = ε̄_Adapt.
//
// With DiagonalMass, as in Stan, the adaptation has three phases: the first
// 15% of the Adapt steps tune ε alone; the next 70% are cut into windows of
// 25, 50, 100, … steps (the last one stretched to the end of the phase),
// over each of which the variance v_i of every coordinate is accumulated
// (Welford); at the end of a window M⁻¹ is set to the regularised variance
// (n v_i + 5·10⁻³)/(n + 5) for its n draws, and dual averaging restarts
// from the current ε. The last 15% tune ε for the final metric. An HMC keeps its adaptation state and scratch
// space and is not safe for concurrent use: create one per chain.
type HMC struct {
	f   func(x, grad []float64) (float64, error)
	dim int
	o   HMCOptions

	started            bool
	t                  int // adaptation steps taken
	logEps, logEpsBar  float64
	hBar, mu           float64
	steps              int
	x0, p, grad, grad0 []float64
	lastX, lastGrad    []float64 // state and gradient where the last step ended
	lastLogP           float64
	haveLast           bool
	divergences        int

	invMass    []float64 // diagonal of M⁻¹
	wN         int       // Welford count, mean and sum of squares
	wMean, wM2 []float64
	windowEnd  int // step at which the current metric window ends
}

// Dual averaging constants of Hoffman and Gelman (2014).
const (
	daGamma = 0.05
	daT0    = 10
	daKappa = 0.75
)

// NewHMC returns an HMC kernel on R^dim. logDensity returns log π(x) up to
// an additive constant and writes ∇log π(x) into grad (of length dim); it
// must not keep x or grad, and it must be a fixed function of x: Step reuses
// the value and gradient where the previous step ended when x is unchanged.
func NewHMC(dim int, logDensity func(x, grad []float64) (float64, error), o HMCOptions) (*HMC, error) {
	switch {
	case dim < 1:
		return nil, fmt.Errorf("mcmc: NewHMC: dimension must be >= 1, got %d", dim)
	case logDensity == nil:
		return nil, errors.New("mcmc: NewHMC: nil log density")
	case o.Leapfrog < 0:
		return nil, fmt.Errorf("mcmc: NewHMC: Leapfrog must be >= 0, got %d", o.Leapfrog)
	case o.StepSize < 0 || math.IsNaN(o.StepSize) || math.IsInf(o.StepSize, 0):
		return nil, fmt.Errorf("mcmc: NewHMC: StepSize must be finite and >= 0, got %v", o.StepSize)
	case o.TargetAccept < 0 || o.TargetAccept >= 1 || math.IsNaN(o.TargetAccept):
		return nil, fmt.Errorf("mcmc: NewHMC: TargetAccept must be in [0, 1), got %v", o.TargetAccept)
	case o.Adapt < 0:
		return nil, fmt.Errorf("mcmc: NewHMC: Adapt must be >= 0, got %d", o.Adapt)
	}
	if o.Leapfrog == 0 {
		o.Leapfrog = 10
	}
	if o.TargetAccept == 0 {
		o.TargetAccept = 0.8
	}
	return &HMC{
		f: logDensity, dim: dim, o: o,
		x0: make([]float64, dim), p: make([]float64, dim),
		grad: make([]float64, dim), grad0: make([]float64, dim),
		lastX: make([]float64, dim), lastGrad: make([]float64, dim),
		invMass: ones(dim), wMean: make([]float64, dim), wM2: make([]float64, dim),
	}, nil
}

// StepSize returns the current step size ε: the adapted value while
// adapting, the frozen averaged value afterwards, and 0 before the first
// step.
func (h *HMC) StepSize() float64 {
	if !h.started {
		return 0
	}
	if h.adapting() {
		return math.Exp(h.logEps)
	}
	return math.Exp(h.logEpsBar)
}

// InvMass returns a copy of the diagonal of the inverse mass matrix M⁻¹.
func (h *HMC) InvMass() []float64 { return slices.Clone(h.invMass) }

// Divergences returns the number of divergent trajectories after
// adaptation.
func (h *HMC) Divergences() int { return h.divergences }

func (h *HMC) adapting() bool { return h.steps < h.o.Adapt }

// forget drops the value and gradient kept from the previous step, for a
// density that other kernels change between steps (RunModel's conditional
// of the real sites given the permutations).
func (h *HMC) forget() { h.haveLast = false }

// Step performs one HMC transition of x in place.
func (h *HMC) Step(rng *rand.Rand, x []float64) (bool, error) {
	if len(x) != h.dim {
		return false, fmt.Errorf("mcmc: HMC: state has length %d, want %d", len(x), h.dim)
	}
	// The density and gradient at x are known from the previous step unless
	// the caller changed x in between.
	var logp0 float64
	if h.haveLast && slices.Equal(x, h.lastX) {
		logp0 = h.lastLogP
		copy(h.grad0, h.lastGrad)
	} else {
		var err error
		logp0, err = h.f(x, h.grad0)
		if err != nil {
			return false, err
		}
	}
	if math.IsNaN(logp0) || math.IsInf(logp0, 0) || !allFinite(h.grad0) {
		return false, fmt.Errorf("mcmc: HMC: log density or gradient is not finite at the current state (log π = %v)", logp0)
	}
	if !h.started {
		eps := h.o.StepSize
		if eps == 0 {
			var err error
			if eps, err = h.findStepSize(rng, x, logp0); err != nil {
				return false, err
			}
		}
		h.logEps, h.logEpsBar, h.mu = math.Log(eps), math.Log(eps), math.Log(10*eps)
		h.started = true
	}
	adapting := h.adapting()
	eps := h.StepSize() * (0.9 + 0.2*rng.Float64())

	copy(h.x0, x)
	for i := range h.p {
		h.p[i] = rng.NormFloat64() / math.Sqrt(h.invMass[i])
	}
	h0 := -logp0 + h.kinetic(h.p)
	logp, divergent, err := h.leapfrog(x, h.p, h.grad0, eps, h.o.Leapfrog)
	if err != nil {
		copy(x, h.x0)
		return false, err
	}
	logA := h0 - (-logp + h.kinetic(h.p))
	if divergent || math.IsNaN(logA) || -logA > 1000 {
		divergent = true
		logA = math.Inf(-1)
	}
	if adapting {
		h.adapt(math.Min(1, math.Exp(logA)))
	} else if divergent {
		h.divergences++
	}
	h.steps++
	accept := logA >= 0 || math.Log(rng.Float64()) < logA
	if accept {
		copy(h.lastX, x)
		copy(h.lastGrad, h.grad)
		h.lastLogP = logp
	} else {
		copy(x, h.x0)
		copy(h.lastX, x)
		copy(h.lastGrad, h.grad0)
		h.lastLogP = logp0
	}
	h.haveLast = true
	if adapting && h.o.DiagonalMass {
		h.adaptMass(x)
	}
	return accept, nil
}

// adaptMass accumulates x in the metric window and sets M⁻¹ at its end.
func (h *HMC) adaptMass(x []float64) {
	lo, hi := h.o.Adapt*15/100, h.o.Adapt*85/100
	if h.steps <= lo || h.steps > hi {
		return
	}
	if h.windowEnd == 0 {
		h.windowEnd = lo + 25
	}
	h.wN++
	for i, v := range x {
		d := v - h.wMean[i]
		h.wMean[i] += d / float64(h.wN)
		h.wM2[i] += d * (v - h.wMean[i])
	}
	if h.steps < min(h.windowEnd, hi) {
		return
	}
	if h.wN < 3 {
		h.windowEnd = hi
		return
	}
	n := float64(h.wN)
	for i := range h.invMass {
		v := h.wM2[i] / (n - 1)
		h.invMass[i] = (n*v + 5e-3) / (n + 5)
	}
	// The next window is twice as long, or stretched to the end of the
	// phase if the one after it would not fit.
	size := 2 * (h.windowEnd - (h.steps - h.wN))
	h.windowEnd = h.steps + size
	if h.windowEnd+2*size > hi {
		h.windowEnd = hi
	}
	h.wN = 0
	clear(h.wMean)
	clear(h.wM2)
	// Restart dual averaging from the current step size.
	h.t, h.hBar, h.mu = 0, 0, h.logEps+math.Log(10)
	h.logEpsBar = h.logEps
}

func (h *HMC) kinetic(p []float64) float64 {
	s := 0.0
	for i, v := range p {
		s += v * v * h.invMass[i]
	}
	return 0.5 * s
}

func ones(n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 1
	}
	return x
}

// leapfrog moves (x, p) by l leapfrog steps of size eps, starting from the
// gradient g0 at x, and leaves the end point's gradient in h.grad. It returns
// the log density at the end and whether the trajectory diverged.
func (h *HMC) leapfrog(x, p, g0 []float64, eps float64, l int) (float64, bool, error) {
	g := h.grad
	copy(g, g0)
	var logp float64
	for range l {
		for i := range p {
			p[i] += 0.5 * eps * g[i]
			x[i] += eps * h.invMass[i] * p[i]
		}
		var err error
		logp, err = h.f(x, g)
		if err != nil {
			return 0, false, err
		}
		if math.IsNaN(logp) || math.IsInf(logp, 0) || !allFinite(g) {
			return math.Inf(-1), true, nil
		}
		for i := range p {
			p[i] += 0.5 * eps * g[i]
		}
	}
	return logp, false, nil
}

// adapt performs one dual-averaging update with acceptance probability a.
func (h *HMC) adapt(a float64) {
	h.t++
	t := float64(h.t)
	h.hBar = (1-1/(t+daT0))*h.hBar + (h.o.TargetAccept-a)/(t+daT0)
	h.logEps = h.mu - math.Sqrt(t)/daGamma*h.hBar
	w := math.Pow(t, -daKappa)
	h.logEpsBar = w*h.logEps + (1-w)*h.logEpsBar
}

// findStepSize is Algorithm 4 of Hoffman and Gelman (2014): starting from
// ε = 1, double (or halve) ε while the acceptance probability of a single
// leapfrog step stays above (below) 1/2.
func (h *HMC) findStepSize(rng *rand.Rand, x []float64, logp0 float64) (float64, error) {
	xs := slices.Clone(x)
	p := make([]float64, h.dim)
	accept := func(eps float64) (float64, error) {
		copy(xs, x)
		for i := range p {
			p[i] = rng.NormFloat64() / math.Sqrt(h.invMass[i])
		}
		h0 := -logp0 + h.kinetic(p)
		logp, div, err := h.leapfrog(xs, p, h.grad0, eps, 1)
		if err != nil || div {
			return math.Inf(-1), err
		}
		return h0 - (-logp + h.kinetic(p)), nil
	}
	eps := 1.0
	la, err := accept(eps)
	if err != nil {
		return 0, err
	}
	dir := -1.0
	if la > math.Log(0.5) {
		dir = 1
	}
	for range 100 {
		if dir*la <= dir*math.Log(0.5) {
			break
		}
		eps *= math.Pow(2, dir)
		if la, err = accept(eps); err != nil {
			return 0, err
		}
	}
	return eps, nil
}

func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
