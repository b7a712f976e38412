package mcmc

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// stdNormal is log N(x; 0, I) up to a constant.
func stdNormal(x, grad []float64) (float64, error) {
	s := 0.0
	for i, v := range x {
		s -= 0.5 * v * v
		grad[i] = -v
	}
	return s, nil
}

func TestHMCAdaptsAndFreezes(t *testing.T) {
	h, err := NewHMC(3, stdNormal, HMCOptions{Adapt: 500})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := []float64{3, -3, 0}
	for range 500 {
		if _, err := h.Step(rng, x); err != nil {
			t.Fatal(err)
		}
	}
	eps := h.StepSize()
	if !(eps > 0.1 && eps < 2) {
		t.Fatalf("adapted step size %v", eps)
	}
	acc, m2 := 0, 0.0
	const n = 4000
	for range n {
		a, err := h.Step(rng, x)
		if err != nil {
			t.Fatal(err)
		}
		if a {
			acc++
		}
		m2 += x[0] * x[0] / n
	}
	if h.StepSize() != eps {
		t.Errorf("step size changed after adaptation: %v, then %v", eps, h.StepSize())
	}
	if rate := float64(acc) / n; rate < 0.65 || rate > 0.95 {
		t.Errorf("acceptance %.3f after adapting to 0.8", rate)
	}
	// E[x²] = 1. The mean of x² over n independent draws has variance 2/n;
	// allowing an integrated autocorrelation time of up to 4, five standard
	// deviations are 5·sqrt(8/n).
	if math.Abs(m2-1) > 5*math.Sqrt(8.0/n) {
		t.Errorf("E[x²] = %.3f, want 1", m2)
	}
	if h.Divergences() != 0 {
		t.Errorf("%d divergences on a Gaussian", h.Divergences())
	}
}

func TestHMCDivergenceRejected(t *testing.T) {
	// A half-space target: the density is zero (log -Inf) for x < 0, so
	// trajectories that cross the wall are divergent and rejected, and the
	// chain never leaves x >= 0.
	wall := func(x, grad []float64) (float64, error) {
		grad[0] = -1
		if x[0] < 0 {
			return math.Inf(-1), nil
		}
		return -x[0], nil
	}
	h, err := NewHMC(1, wall, HMCOptions{StepSize: 0.5, Leapfrog: 5})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	x := []float64{0.1}
	for range 2000 {
		if _, err := h.Step(rng, x); err != nil {
			t.Fatal(err)
		}
		if x[0] < 0 {
			t.Fatalf("chain left the support: %v", x)
		}
	}
	if h.Divergences() == 0 {
		t.Errorf("no divergence recorded next to the wall")
	}
}

func TestHMCErrors(t *testing.T) {
	for _, c := range []struct {
		dim int
		f   func(x, g []float64) (float64, error)
		o   HMCOptions
	}{
		{0, stdNormal, HMCOptions{}},
		{1, nil, HMCOptions{}},
		{1, stdNormal, HMCOptions{Leapfrog: -1}},
		{1, stdNormal, HMCOptions{StepSize: -1}},
		{1, stdNormal, HMCOptions{TargetAccept: 1}},
		{1, stdNormal, HMCOptions{Adapt: -1}},
	} {
		if _, err := NewHMC(c.dim, c.f, c.o); err == nil {
			t.Errorf("NewHMC(%d, %v): no error", c.dim, c.o)
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	h, _ := NewHMC(2, stdNormal, HMCOptions{})
	if _, err := h.Step(rng, []float64{1}); err == nil {
		t.Errorf("wrong length: no error")
	}
	bad := errors.New("boom")
	h, _ = NewHMC(1, func(x, g []float64) (float64, error) { return 0, bad }, HMCOptions{})
	if _, err := h.Step(rng, []float64{1}); !errors.Is(err, bad) {
		t.Errorf("density error: got %v", err)
	}
	h, _ = NewHMC(1, func(x, g []float64) (float64, error) { return math.NaN(), nil }, HMCOptions{})
	if _, err := h.Step(rng, []float64{1}); err == nil {
		t.Errorf("NaN density at the current state: no error")
	}
}

func TestHMCDiagonalMass(t *testing.T) {
	// Independent coordinates with standard deviations 0.01 and 100: with
	// the identity metric ε must resolve the small scale, and the large one
	// barely moves; the adapted diagonal metric puts both on scale one.
	sd := []float64{0.01, 100}
	f := func(x, grad []float64) (float64, error) {
		s := 0.0
		for i, v := range x {
			z := v / sd[i]
			s -= 0.5 * z * z
			grad[i] = -z / sd[i]
		}
		return s, nil
	}
	rng := rand.New(rand.NewPCG(2, 2))
	h, err := NewHMC(2, f, HMCOptions{Adapt: 1000, DiagonalMass: true})
	if err != nil {
		t.Fatal(err)
	}
	x := []float64{0.05, -300}
	for range 1000 {
		if _, err := h.Step(rng, x); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("adapted M⁻¹ %.4g, ε %.3g", h.InvMass(), h.StepSize())
	// The last metric window holds 325 draws; allow for their
	// autocorrelation.
	for i, v := range h.InvMass() {
		if r := v / (sd[i] * sd[i]); r < 0.6 || r > 1.6 {
			t.Errorf("M⁻¹[%d] = %.4g, want about %.4g", i, v, sd[i]*sd[i])
		}
	}
	const n = 4000
	var m2 [2]float64
	for range n {
		if _, err := h.Step(rng, x); err != nil {
			t.Fatal(err)
		}
		for i, v := range x {
			m2[i] += v * v / (sd[i] * sd[i]) / n
		}
	}
	// E[(x_i/sd_i)²] = 1, within 5 sd allowing an autocorrelation time of 4.
	for i := range m2 {
		if math.Abs(m2[i]-1) > 5*math.Sqrt(8.0/n) {
			t.Errorf("E[(x_%d/sd)²] = %.3f, want 1", i, m2[i])
		}
	}
}
