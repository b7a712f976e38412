package celegans

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/f64"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/vi"
)

// dataProblem returns the problem of sim and masks in both forms of the
// statistics: the moments (FromSimulation) and the data form.
func dataProblem(t *testing.T, sim *Simulation, masks []*perm.Mask) (moments, data *Problem) {
	t.Helper()
	moments, err := FromSimulation(sim, masks)
	require.NoError(t, err)
	data, err = FromSimulationData(sim, masks)
	require.NoError(t, err)
	require.True(t, data.Stats[0].DataForm())
	require.False(t, moments.Stats[0].DataForm())
	require.Equal(t, moments.Known, data.Known)
	require.Equal(t, moments.Truth, data.Truth)
	_, err = FromSimulationData(nil, masks)
	require.ErrorContains(t, err, "FromSimulationData: nil simulation")
	return moments, data
}

func simFor(t *testing.T, n, worms, known, steps int, nu float64, seed uint64) (*Simulation, []*perm.Mask) {
	t.Helper()
	c, err := SyntheticConfig{N: n, Density: 0.3}.Generate(seed)
	require.NoError(t, err)
	sim, err := Simulate(c, SimConfig{Worms: worms, T: steps, KnownCount: known}, seed)
	require.NoError(t, err)
	masks, err := sim.PositionMasks(nu)
	require.NoError(t, err)
	return sim, masks
}

// evalGrad evaluates m's LogLik through vi's adapter at P (dense
// (K, B, N, N) or sparse (K, NNZ)) and W, and returns the value and both
// gradients.
func evalGrad(t *testing.T, m *Model, p, w *ad.Tensor) (val, gp, gw []float64) {
	t.Helper()
	vm, err := vi.ModelOf(m)
	require.NoError(t, err)
	pp, wp := ad.NewParam("P", p), ad.NewParam("W", w)
	tp := ad.NewTape()
	ll := vm.LogLik(tp, vi.Sample{"P": tp.Param(pp), "W": tp.Param(wp)})
	require.NoError(t, tp.Err())
	tp.Backward(ad.Sum(ll))
	return append([]float64(nil), ll.Value()...), pp.Grad.Data, wp.Grad.Data
}

// TestDataFormMatchesMoments: the data form's value and gradients equal the
// moments form's, for dense values of P and for the sparse layout.
func TestDataFormMatchesMoments(t *testing.T) {
	sim, masks := simFor(t, 14, 2, 2, 60, 0.3, 1)
	pm, pd := dataProblem(t, sim, masks)
	mm, md := NewModel(pm), NewModel(pd)
	n, b, e := pm.N(), pm.Worms(), len(pm.Support())
	const k = 3
	rng := rand.New(rand.NewPCG(2, 3))
	pt := ad.Zeros(k, b, n, n)
	for q := range k {
		for j := range b {
			for i := range n {
				for c := range n {
					if pm.Masks[j].Allowed(i, c) {
						pt.Data[((q*b+j)*n+i)*n+c] = rng.Float64()
					}
				}
			}
		}
	}
	wt := ad.Zeros(k, e)
	for i := range wt.Data {
		wt.Data[i] = 0.3 * rng.NormFloat64()
	}
	v1, gp1, gw1 := evalGrad(t, mm, pt, wt)
	v2, gp2, gw2 := evalGrad(t, md, pt, wt)
	for q := range k {
		assert.InDelta(t, v1[q], v2[q], 1e-9*math.Abs(v1[q]), "value of sample %d", q)
	}
	assert.InDeltaSlice(t, gw1, gw2, 1e-8*maxAbs(gw1), "W gradient")
	assert.InDeltaSlice(t, gp1, gp2, 1e-8*maxAbs(gp1), "P gradient")

	// The sparse layout: the same entries, gathered.
	spec, err := models.Check(md)
	require.NoError(t, err)
	pats, err := spec.Perms[0].Patterns()
	require.NoError(t, err)
	width := spec.Perms[0].NNZ()
	sp := ad.Zeros(k, width)
	for q := range k {
		off := 0
		for j, pat := range pats {
			vals, err := pat.Values(mat.NewDense(n, n, pt.Data[(q*b+j)*n*n:(q*b+j+1)*n*n]))
			require.NoError(t, err)
			copy(sp.Data[q*width+off:], vals)
			off += pat.NNZ()
		}
	}
	v3, gp3, gw3 := evalGrad(t, md, sp, wt)
	assert.Equal(t, v2, v3, "the sparse layout reads the same entries")
	assert.Equal(t, gw2, gw3)
	for q := range k {
		off := 0
		for j, pat := range pats {
			want, err := pat.Values(mat.NewDense(n, n, gp2[(q*b+j)*n*n:(q*b+j+1)*n*n]))
			require.NoError(t, err)
			assert.Equal(t, want, gp3[q*width+off:q*width+off+pat.NNZ()])
			off += pat.NNZ()
		}
	}
}

func maxAbs(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = math.Max(m, math.Abs(v))
	}
	return m
}

// TestDataFormGradient checks the data form's gradient in the sparse
// layout by finite differences.
func TestDataFormGradient(t *testing.T) {
	sim, masks := simFor(t, 8, 2, 1, 30, 0.3, 3)
	_, pd := dataProblem(t, sim, masks)
	m := NewModel(pd)
	spec, err := models.Check(m)
	require.NoError(t, err)
	width, e := spec.Perms[0].NNZ(), len(pd.Support())
	rng := rand.New(rand.NewPCG(4, 5))
	pt := ad.Zeros(2, width)
	for i := range pt.Data {
		pt.Data[i] = rng.Float64() / 3
	}
	wt := ad.Zeros(2, e)
	for i := range wt.Data {
		wt.Data[i] = 0.3 * rng.NormFloat64()
	}
	vm, err := vi.ModelOf(m)
	require.NoError(t, err)
	require.NoError(t, ad.GradCheck{Tol: 1e-5}.Check(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
		return ad.Sum(vm.LogLik(tp, vi.Sample{"P": xs[0], "W": xs[1]}))
	}, pt, wt))
}

// TestDataFormDeterminism: the value and gradients do not depend on
// GOMAXPROCS (N large enough that the rows are split).
func TestDataFormDeterminism(t *testing.T) {
	sim, masks := simFor(t, 300, 1, 20, 12, 0.05, 5)
	_, pd := dataProblem(t, sim, masks)
	m := NewModel(pd)
	spec, err := models.Check(m)
	require.NoError(t, err)
	width, e := spec.Perms[0].NNZ(), len(pd.Support())
	rng := rand.New(rand.NewPCG(6, 7))
	pt := ad.Zeros(2, width)
	for i := range pt.Data {
		pt.Data[i] = rng.Float64()
	}
	wt := ad.Zeros(2, e)
	for i := range wt.Data {
		wt.Data[i] = 0.1 * rng.NormFloat64()
	}
	var ref [3][]float64
	for _, procs := range []int{1, 2, 8} {
		old := runtime.GOMAXPROCS(procs)
		v, gp, gw := evalGrad(t, m, pt, wt)
		runtime.GOMAXPROCS(old)
		if ref[0] == nil {
			ref = [3][]float64{v, gp, gw}
			continue
		}
		assert.Equal(t, ref[0], v, "value at GOMAXPROCS %d", procs)
		assert.Equal(t, ref[1], gp, "P gradient at GOMAXPROCS %d", procs)
		assert.Equal(t, ref[2], gw, "W gradient at GOMAXPROCS %d", procs)
	}
}

// TestDataStats checks the data form against the moments: LogLik and
// Canonical agree, and what needs the moments says so.
func TestDataStats(t *testing.T) {
	sim, masks := simFor(t, 10, 2, 1, 40, 0.3, 7)
	pm, pd := dataProblem(t, sim, masks)
	y := sim.Worms[0].Y
	sm, sd := pm.Stats[0], pd.Stats[0]
	require.True(t, sd.DataForm())
	require.False(t, sm.DataForm())
	assert.Equal(t, y.At(3, 4), sd.Prev.At(4, 3))
	assert.Equal(t, y.At(4, 4), sd.Next.At(4, 3))
	a := mat.NewDense(10, 10, nil)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 10 {
		for j := range 10 {
			a.Set(i, j, 0.2*rng.NormFloat64())
		}
	}
	lm, err := sm.LogLik(a, 1.5)
	require.NoError(t, err)
	ld, err := sd.LogLik(a, 1.5)
	require.NoError(t, err)
	assert.InDelta(t, lm, ld, 1e-9*math.Abs(lm))
	p := sim.Worms[0].Perm
	cm, err := sm.Canonical(p)
	require.NoError(t, err)
	cd, err := sd.Canonical(p)
	require.NoError(t, err)
	lm, err = cm.LogLik(a, 1)
	require.NoError(t, err)
	ld, err = cd.LogLik(a, 1)
	require.NoError(t, err)
	assert.InDelta(t, lm, ld, 1e-9*math.Abs(lm))

	_, err = SumStats(sd, pd.Stats[1])
	assert.ErrorContains(t, err, "data form")
	_, err = NewDataStats(mat.NewDense(1, 3, nil))
	assert.ErrorContains(t, err, "at least 2 time steps")
	bad := mat.NewDense(3, 2, nil)
	bad.Set(1, 1, math.NaN())
	_, err = NewDataStats(bad)
	assert.ErrorContains(t, err, "y[1][1]")
	_, err = NewProblem(sim.Connectome, []*Stats{sm, sd}, masks, pm.Known, sim.NoiseVar, nil)
	assert.ErrorContains(t, err, "another form")

	// The exact-state paths run on the data form (TestDataFormExactPaths
	// checks their values).
	m := NewModel(pd)
	st := &models.State{Perms: map[string][]perm.Perm{SiteP: pd.Truth}, Reals: map[string][]float64{SiteW: make([]float64, len(pd.Support()))}}
	_, err = m.LogLikState(st)
	assert.NoError(t, err)
	assert.NoError(t, m.MaximizeConditional(st, SiteW))
	assert.Equal(t, []string{SiteW}, m.ConjugateSites())
	_, err = Collapsed{m}.CollapsedLogLik(st)
	assert.NoError(t, err)
}

// TestModelDenseProducts: the products with P as dense matrix products
// (masks above gemmDensity) and as sums of the allowed rows agree, value
// and gradients, whatever the mask.
func TestModelDenseProducts(t *testing.T) {
	for _, c := range []struct {
		n  int
		nu float64
	}{{20, 0.1}, {20, 0.4}, {20, 1}, {61, 0.1}} {
		nu := c.nu
		sim, masks := simFor(t, c.n, 2, 2, 40, nu, 9)
		p, err := FromSimulation(sim, masks)
		require.NoError(t, err)
		n := p.N()
		pt, wt := randomPW(p, 2, rand.New(rand.NewPCG(10, 11)))
		var ref [3][]float64
		for _, dense := range []bool{false, true} {
			m := NewModel(p)
			for j := range m.gemm {
				m.gemm[j] = dense
				if dense && m.pBlocks[j] == nil {
					// NewModel builds the row blocks for blocked worms only.
					m.rowOrder[j], m.rowPlace[j], m.pBlocks[j] = rowBlocks(n, m.cols[j])
				}
			}
			v, gp, gw := evalGrad(t, m, pt, wt)
			if !dense {
				ref = [3][]float64{v, gp, gw}
				continue
			}
			assert.InDeltaSlice(t, ref[0], v, 1e-9*maxAbs(ref[0]), "ν %g: value", nu)
			assert.InDeltaSlice(t, ref[1], gp, 1e-9*maxAbs(ref[1]), "ν %g: P gradient", nu)
			assert.InDeltaSlice(t, ref[2], gw, 1e-9*maxAbs(ref[2]), "ν %g: W gradient", nu)
		}
	}
}

// TestModelRowOrder: the dense products take P's rows in the order of
// rowBlocks, which skips the zero runs of a position mask; every value
// and gradient keeps the bits it has with the rows in their own order.
func TestModelRowOrder(t *testing.T) {
	sim, masks := simFor(t, 61, 2, 2, 40, 0.1, 9)
	p, err := FromSimulation(sim, masks)
	require.NoError(t, err)
	n := p.N()
	pt, wt := randomPW(p, 1, rand.New(rand.NewPCG(10, 12)))
	sorted := NewModel(p)
	plain := NewModel(p)
	identity := []int(perm.Identity(n))
	for j := range plain.gemm {
		require.True(t, sorted.gemm[j], "worm %d: the hard mask takes the dense products", j)
		assert.NotEqual(t, identity, sorted.rowOrder[j], "worm %d: rows reordered", j)
		blocks, err := f64.NewBlocks(n, n, plain.cols[j])
		require.NoError(t, err)
		assert.Less(t, sorted.pBlocks[j].Density(), 0.7*blocks.Density(), "worm %d: the order skips more", j)
		plain.rowOrder[j], plain.rowPlace[j], plain.pBlocks[j] = identity, identity, blocks
	}
	v1, gp1, gw1 := evalGrad(t, sorted, pt, wt)
	v2, gp2, gw2 := evalGrad(t, plain, pt, wt)
	for name, pair := range map[string][2][]float64{"value": {v1, v2}, "P gradient": {gp1, gp2}, "W gradient": {gw1, gw2}} {
		for i := range pair[0] {
			require.Equal(t, math.Float64bits(pair[1][i]), math.Float64bits(pair[0][i]), "%s %d", name, i)
		}
	}
}

// randomPW returns k samples of P (uniform entries, off-mask ones too:
// the likelihood ignores them) and of W (normal, sd 0.3) for p.
func randomPW(p *Problem, k int, rng *rand.Rand) (pt, wt *ad.Tensor) {
	n := p.N()
	pt = ad.Zeros(k, p.Worms(), n, n)
	for i := range pt.Data {
		pt.Data[i] = rng.Float64()
	}
	wt = ad.Zeros(k, len(p.Support()))
	for i := range wt.Data {
		wt.Data[i] = 0.3 * rng.NormFloat64()
	}
	return pt, wt
}

// TestRowBlocksHardSetting reports, for the problem of benchmarks/celegans
// (BenchmarkELBOStep/hard: 279 neurons, 4 worms, 25 known, ν = 0.1, seed
// 1), the share of P's entries the masks allow and the work of the two
// products that skip blocks, with the rows in rowBlocks' order and in
// their own: the figures benchmarks/celegans/README.md quotes
// (go test ./celegans -run RowBlocksHardSetting -v).
func TestRowBlocksHardSetting(t *testing.T) {
	c, err := Synthetic(279, 1)
	require.NoError(t, err)
	sim, err := Simulate(c, SimConfig{Worms: 4, T: 1000, KnownCount: 25}, 1)
	require.NoError(t, err)
	masks, err := sim.PositionMasks(0.1)
	require.NoError(t, err)
	p, err := FromSimulation(sim, masks)
	require.NoError(t, err)
	m := NewModel(p)
	for j, mk := range masks {
		require.True(t, m.gemm[j])
		plain, err := f64.NewBlocks(279, 279, m.cols[j])
		require.NoError(t, err)
		allowed := float64(mk.Count()) / (279 * 279)
		skip, on := m.pBlocks[j].Density(), m.pBlocks[j].OnDensity()
		t.Logf("worm %d: mask allows %.3f; GemmSkip does %.3f of Gemm's work, GemmOn %.3f; in the rows' own order %.3f", j, allowed, skip, on, plain.Density())
		assert.Less(t, allowed, skip)
		assert.LessOrEqual(t, skip, on)
		assert.Less(t, on, 0.5)
		assert.Greater(t, plain.Density(), 0.7)
	}
}

// TestSolveDataForm: every method runs on a problem in the data form,
// polished, and gives the estimate it gives on the moments (MCMC's swap
// deltas and draws of W agree to rounding, and these seeds make the same
// decisions).
func TestSolveDataForm(t *testing.T) {
	sim, masks := simFor(t, 16, 1, 2, 60, 0.3, 2)
	pm, pd := dataProblem(t, sim, masks)
	s := DefaultSettings()
	s.Steps, s.Draws, s.PlateauWindow, s.Sweeps = 40, 5, 0, 200
	for _, m := range []Method{GumbelSinkhorn, Rounding, MCMC} {
		out, err := Solve(context.Background(), pd, m, s, 3)
		require.NoError(t, err, "%s", m)
		assert.False(t, math.IsNaN(out.PolishGain), "%s: polished", m)
		assert.Positive(t, out.Accuracy)
		ref, err := Solve(context.Background(), pm, m, s, 3)
		require.NoError(t, err, "%s", m)
		assert.Equal(t, ref.Perms, out.Perms, "%s: the moments' estimate", m)
		assert.InDelta(t, ref.PolishGain, out.PolishGain, 1e-6*math.Max(1, math.Abs(ref.PolishGain)), "%s", m)
	}
}
