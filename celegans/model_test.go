package celegans

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
	"github.com/permlab/permlab/vi"
)

// smallProblem simulates a few worms on a small synthetic connectome.
func smallProblem(t *testing.T, n, worms, known int, nu float64, seed uint64) (*Problem, *Simulation) {
	t.Helper()
	c, err := SyntheticConfig{N: n, Density: 0.3}.Generate(seed)
	require.NoError(t, err)
	sim, err := Simulate(c, SimConfig{Worms: worms, T: 200, KnownCount: known}, seed)
	require.NoError(t, err)
	masks, err := sim.PositionMasks(nu)
	require.NoError(t, err)
	p, err := FromSimulation(sim, masks)
	require.NoError(t, err)
	return p, sim
}

func supportValues(p *Problem, w mat.Matrix) []float64 {
	out := make([]float64, len(p.Support()))
	for e, rc := range p.Support() {
		out[e] = w.At(rc[0], rc[1])
	}
	return out
}

func TestModelMatchesStatsLogLik(t *testing.T) {
	p, sim := smallProblem(t, 12, 3, 2, 1, 1)
	m := NewModel(p)
	n, b := p.N(), p.Worms()
	tp := ad.NewTape()
	// Two samples: the truth, and random permutations.
	rng := rand.New(rand.NewPCG(1, 2))
	perms := [][]perm.Perm{{}, {}}
	pt := ad.Zeros(2, b, n, n)
	for k := 0; k < 2; k++ {
		for j := 0; j < b; j++ {
			q := sim.Worms[j].Perm
			if k == 1 {
				// A random permutation admitted by the mask: the model
				// ignores P off the mask.
				sc := mat.NewDense(n, n, nil)
				for i := 0; i < n; i++ {
					for c := 0; c < n; c++ {
						sc.Set(i, c, rng.Float64())
					}
				}
				var err error
				q, err = relax.MatchingMasked(sc, p.Masks[j])
				require.NoError(t, err)
			}
			perms[k] = append(perms[k], q)
			qm, err := q.Matrix()
			require.NoError(t, err)
			copy(pt.Data[(k*b+j)*n*n:], qm.RawMatrix().Data)
		}
	}
	wvec := supportValues(p, sim.W)
	wt := ad.Zeros(2, len(wvec))
	copy(wt.Data, wvec)
	copy(wt.Data[len(wvec):], wvec)
	ll := viModel(t, m).LogLik(tp, vi.Sample{"P": tp.Const(pt), "W": tp.Const(wt)})
	require.NoError(t, tp.Err())
	for k := 0; k < 2; k++ {
		want := 0.0
		for j := 0; j < b; j++ {
			var a mat.Dense
			pm, err := perms[k][j].Matrix()
			require.NoError(t, err)
			a.Mul(pm, sim.W)
			a.Mul(&a, pm.T())
			v, err := p.Stats[j].LogLik(&a, p.NoiseVar)
			require.NoError(t, err)
			want += v
		}
		assert.InDelta(t, want, ll.Value()[k], 1e-8*abs(want))
	}
	assert.Greater(t, ll.Value()[0], ll.Value()[1], "the truth is more likely than random labels")
}

// viModel returns m as the variational methods see it.
func viModel(t *testing.T, m *Model) vi.Model {
	t.Helper()
	vm, err := m.VI()
	require.NoError(t, err)
	return vm
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func TestModelGradient(t *testing.T) {
	p, _ := smallProblem(t, 7, 2, 1, 1, 3)
	m := NewModel(p)
	n, b, e := p.N(), p.Worms(), len(p.Support())
	rng := rand.New(rand.NewPCG(4, 5))
	pt := ad.Zeros(2, b, n, n)
	for i := range pt.Data {
		pt.Data[i] = rng.Float64() / float64(n)
	}
	wt := ad.Zeros(2, e)
	for i := range wt.Data {
		wt.Data[i] = rng.NormFloat64() * 0.3
	}
	vm := viModel(t, m)
	// The log-likelihood is a quartic in (P, W) with terms of size ~1e3:
	// central differences with h = 1e-6 are accurate to ~1e-7 relative.
	require.NoError(t, ad.GradCheck{Tol: 1e-5}.Check(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
		return vm.LogLik(tp, vi.Sample{"P": xs[0], "W": xs[1]})
	}, pt, wt))
}

func TestModelBadInput(t *testing.T) {
	p, _ := smallProblem(t, 6, 1, 0, 1, 2)
	m := NewModel(p)
	tp := ad.NewTape()
	vm := viModel(t, m)
	vm.LogLik(tp, vi.Sample{"P": tp.Const(ad.Zeros(1, 1, 5, 5)), "W": tp.Const(ad.Zeros(1, len(p.Support())))})
	require.Error(t, tp.Err())
	tp.Reset()
	vm.LogLik(tp, vi.Sample{})
	require.Error(t, tp.Err())
}

func TestLogLikGap(t *testing.T) {
	p, _ := smallProblem(t, 12, 2, 2, 1, 1)
	sw := DefaultSettings().SigmaW
	gap, err := p.LogLikGap(p.Truth, sw)
	require.NoError(t, err)
	assert.Equal(t, 0.0, gap, "the truth against itself")

	// Swap two unknown neurons of worm 0 whose identities the mask lets them
	// exchange: the gap is the collapsed log likelihood's difference, and
	// with T = 200 on a dense connectome the data favour the truth.
	known := map[int]bool{}
	for _, k := range p.Known[0] {
		known[k] = true
	}
	est := []perm.Perm{p.Truth[0].Clone(), p.Truth[1].Clone()}
	swapped := false
	for i := 0; i < p.N() && !swapped; i++ {
		for k := i + 1; k < p.N() && !swapped; k++ {
			if known[i] || known[k] || !p.Masks[0].Allowed(i, est[0][k]) || !p.Masks[0].Allowed(k, est[0][i]) {
				continue
			}
			est[0][i], est[0][k] = est[0][k], est[0][i]
			swapped = true
		}
	}
	require.True(t, swapped, "the masks admit a swap")
	gap, err = p.LogLikGap(est, sw)
	require.NoError(t, err)
	m := NewModel(p)
	m.SigmaW = sw
	le, err := Collapsed{m}.CollapsedLogLik(&models.State{Perms: map[string][]perm.Perm{SiteP: est}})
	require.NoError(t, err)
	lt, err := Collapsed{m}.CollapsedLogLik(&models.State{Perms: map[string][]perm.Perm{SiteP: p.Truth}})
	require.NoError(t, err)
	assert.InDelta(t, le-lt, gap, 1e-9)
	assert.Less(t, gap, 0.0)

	// Bad input is an error, never a panic.
	_, err = p.LogLikGap(est[:1], sw)
	assert.ErrorContains(t, err, "1 permutations for 2 worms")
	_, err = p.LogLikGap(est, 0)
	assert.ErrorContains(t, err, "sigmaW")
	bad := []perm.Perm{p.Truth[0].Clone(), p.Truth[1].Clone()}
	bad[1][0] = bad[1][1] // not a permutation
	_, err = p.LogLikGap(bad, sw)
	assert.ErrorContains(t, err, "worm 1")
	noTruth := *p
	noTruth.Truth = nil
	_, err = noTruth.LogLikGap(est, sw)
	assert.ErrorContains(t, err, "no ground truth")
}
