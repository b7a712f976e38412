package mcmc

import (
	"context"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// coupled is a model whose swap deltas depend on every other part of the
// state: y_i = x_{σ₀(i)} + x_{σ₁(i)} + c z_i + ε_i, ε_i ~ N(0, s²), with
// two permutations σ₀, σ₁ of one site, uniform, known z, and, if shift, a
// real site c ~ N(0, 1) (c = 0 otherwise). A swap of rows i and k of σ₀
// changes two residuals, and the change depends on σ₁ (through
// x_{σ₁(i)} − x_{σ₁(k)}) and on c (through c (z_i − z_k)).
type coupled struct {
	x, y, z []float64
	s       float64
	shift   bool
	conj    bool // c has an exact conditional (Conjugate); HMC moves it otherwise
}

func newCoupled(seed uint64, n int, s float64) *coupled {
	rng := rand.New(rand.NewPCG(seed, 3))
	m := &coupled{x: make([]float64, n), y: make([]float64, n), z: make([]float64, n), s: s}
	for i := range m.x {
		m.x[i], m.z[i] = rng.NormFloat64(), rng.NormFloat64()
	}
	s0, s1 := rng.Perm(n), rng.Perm(n)
	for i := range m.y {
		m.y[i] = m.x[s0[i]] + m.x[s1[i]] + 0.5*m.z[i] + m.s*rng.NormFloat64()
	}
	return m
}

func (m *coupled) Sites() []models.Site {
	sites := []models.Site{&models.PermSite{Name: "P", N: len(m.y), Batch: 2}}
	if m.shift {
		sites = append(sites, &models.RealSite{Name: "c", Prior: models.Normal{Sigma: 1}})
	}
	return sites
}

// shiftOf returns c in s.
func (m *coupled) shiftOf(s *models.State) float64 {
	if !m.shift {
		return 0
	}
	return s.Reals["c"][0]
}

func (m *coupled) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	n, k := len(m.y), z.K()
	p := ad.Reshape(z.Perm("P"), k, 2*n, n) // the two permutations stacked
	px := ad.Reshape(ad.MatMul(p, t.Const(&ad.Tensor{Shape: []int{n, 1}, Data: m.x})), k, 2, n)
	pred := ad.SumAxis(px, 1)
	if m.shift {
		pred = ad.Add(pred, ad.MatMul(ad.Reshape(z.Real("c"), k, 1), t.Const(&ad.Tensor{Shape: []int{1, n}, Data: m.z})))
	}
	r := ad.Sub(pred, t.Const(&ad.Tensor{Shape: []int{n}, Data: m.y}))
	return ad.Scale(ad.SumAxis(ad.Square(r), 1), -0.5/(m.s*m.s))
}

// delta is the change of the log-likelihood when rows i and k of p exchange
// their columns, other being the other permutation: the one formula both
// fast paths below use, so that they agree to the bit.
func (m *coupled) delta(p, other perm.Perm, c float64, i, k int) float64 {
	res := func(r, col int) float64 { d := m.x[col] + m.x[other[r]] + c*m.z[r] - m.y[r]; return d * d }
	return -0.5 * (res(i, p[k]) + res(k, p[i]) - res(i, p[i]) - res(k, p[k])) / (m.s * m.s)
}

// coupledSwap adds the SwapDeltaer fast path, which reads the state on
// every call.
type coupledSwap struct{ *coupled }

func (m coupledSwap) SwapDelta(s *models.State, site string, b, i, k int) (float64, error) {
	ps := s.Perms["P"]
	return m.delta(ps[b], ps[1-b], m.shiftOf(s), i, k), nil
}

// coupledPrep adds the SwapPreparer fast path, which copies the other
// permutation and c when it prepares: a delta the engine failed to prepare
// again after they changed would give other numbers, and other chains.
type coupledPrep struct {
	coupledSwap
	preps *atomic.Int64
}

func (m coupledPrep) PrepareSwap(s *models.State, site string, b int) (func(p perm.Perm, i, k int) float64, error) {
	m.preps.Add(1)
	other, c := s.Perms["P"][1-b].Clone(), m.shiftOf(s)
	return func(p perm.Perm, i, k int) float64 { return m.delta(p, other, c, i, k) }, nil
}

// ConjugateSites and SampleConditional are the exact draw of c, when conj
// is set: given σ₀ and σ₁ it is Gaussian with precision 1 + Σ_i z_i²/s²
// and mean Σ_i z_i r_i/s² over that, r_i = y_i − x_{σ₀(i)} − x_{σ₁(i)}.
// Without conj, c moves by HMC.
func (m *coupled) ConjugateSites() []string {
	if m.shift && m.conj {
		return []string{"c"}
	}
	return nil
}

func (m *coupled) SampleConditional(rng *rand.Rand, s *models.State, site string) error {
	ps := s.Perms["P"]
	prec, sum := 1.0, 0.0
	for i, y := range m.y {
		prec += m.z[i] * m.z[i] / (m.s * m.s)
		sum += m.z[i] * (y - m.x[ps[0][i]] - m.x[ps[1][i]])
	}
	s.Reals["c"][0] = sum/(m.s*m.s)/prec + rng.NormFloat64()/math.Sqrt(prec)
	return nil
}

func TestCoupledFastPaths(t *testing.T) {
	m := newCoupled(1, 6, 0.3)
	m.shift = true
	var preps atomic.Int64
	for _, fm := range []models.Model{coupledSwap{m}, coupledPrep{coupledSwap{m}, &preps}} {
		if err := models.CheckFastPaths(fm, 20, 1, 1e-9); err != nil {
			t.Fatalf("%T: %v", fm, err)
		}
	}
}

// The prepared swap deltas make the same chains, draw for draw, as the
// per-call SwapDelta: every change of the state that a prepared delta
// depends on is seen, whether a move of the other permutation, an exchange
// of tempered replicas, or a Gibbs or HMC move of c. Each case is one where
// that change alone can leave a delta stale: without c, moves of the other
// permutation and exchanges; without tempering, c's moves. (Removing any
// one of the engine's invalidations fails a case.) And the engine prepares
// once per permutation, replica and sweep at most, not once per proposal.
func TestRunModelPreparedSwapSameChain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		shift, conj bool
		temps       int
	}{
		{"permutations, tempered", false, false, 4},
		{"Gibbs", true, true, 1},
		{"HMC", true, false, 1},
		{"Gibbs and HMC, tempered", true, true, 4},
	} {
		const chains, burn, draws, n = 2, 30, 100, 6
		m := newCoupled(2, n, 0.1)
		m.shift, m.conj = tc.shift, tc.conj
		o := ModelOptions{Seed: 5, Chains: chains, Burn: burn, Draws: draws, Temperatures: tc.temps, BetaMin: 0.05, BlockMoves: -1}
		var preps atomic.Int64
		a, err := RunModel(context.Background(), coupledSwap{m}, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := RunModel(context.Background(), coupledPrep{coupledSwap{m}, &preps}, o)
		if err != nil {
			t.Fatal(err)
		}
		ad, bd := a.Posterior.Perms["P"].Draws, b.Posterior.Perms["P"].Draws
		if len(ad) != chains*draws || len(bd) != len(ad) {
			t.Fatalf("%s: %d and %d draws", tc.name, len(ad), len(bd))
		}
		moved := 0
		for d := range ad {
			if !slicesEqualPerm(ad[d], bd[d]) {
				t.Fatalf("%s: draw %d: SwapDelta %v, PrepareSwap %v", tc.name, d, ad[d], bd[d])
			}
			if d > 0 && !slicesEqualPerm(ad[d], ad[d-1]) {
				moved++
			}
		}
		if moved == 0 {
			t.Errorf("%s: the chains never moved", tc.name)
		}
		if tc.shift {
			ac, bc := a.Posterior.Reals["c"].Draws, b.Posterior.Reals["c"].Draws
			for d := range ac {
				if ac[d][0] != bc[d][0] {
					t.Fatalf("%s: draw %d: c %v (SwapDelta) against %v (PrepareSwap)", tc.name, d, ac[d][0], bc[d][0])
				}
			}
		}
		if most := int64(chains * (burn + draws) * tc.temps * 2); preps.Load() == 0 || preps.Load() > most {
			t.Errorf("%s: %d preparations, want at least one and at most one per permutation, replica and sweep (%d)", tc.name, preps.Load(), most)
		}
		t.Logf("%s: %d preparations for %d swap proposals, %d draws that moved", tc.name, preps.Load(), chains*(burn+draws)*tc.temps*2*n, moved)
	}
}
