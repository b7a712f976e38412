package models

import (
	"math"
	"testing"

	"github.com/permlab/permlab/ad"
)

// shiftModel is y_i = e^g·r_σ(i) + c + ε_i, ε_i ~ N(0, s²), with the shift
// c ~ N(0, 1) and, when scaled, the log scale g ~ N(0, 0.3²) (otherwise
// g = 0), which makes the posterior of g not Gaussian.
// Its LogLik is normalised, so that its evidence is comparable with the
// collapsed one.
type shiftModel struct {
	ref, obs []float64
	s        float64
	scaled   bool
}

func (m *shiftModel) Sites() []Site {
	sites := []Site{
		&PermSite{Name: "P", N: len(m.ref)},
		&RealSite{Name: "c", Prior: Normal{Sigma: 1}},
	}
	if m.scaled {
		sites = append(sites, &RealSite{Name: "g", Prior: Normal{Sigma: 0.3}})
	}
	return sites
}

func (m *shiftModel) LogLik(t *ad.Tape, z *Sample) *ad.Var {
	n, k := len(m.ref), z.K()
	p := ad.Reshape(z.Perm("P"), k, n, n)
	pred := ad.Reshape(ad.MatMul(p, t.Const(&ad.Tensor{Shape: []int{n, 1}, Data: m.ref})), k, n)
	if m.scaled {
		pred = ad.Mul(pred, ad.Exp(ad.Reshape(z.Real("g"), k, 1)))
	}
	pred = ad.Add(pred, ad.Reshape(z.Real("c"), k, 1))
	r := ad.Sub(pred, t.Const(&ad.Tensor{Shape: []int{n}, Data: m.obs}))
	c := -float64(n) / 2 * math.Log(2*math.Pi*m.s*m.s)
	return ad.AddConst(ad.Scale(ad.SumAxis(ad.Square(r), 1), -0.5/(m.s*m.s)), c)
}

// collapsedShift integrates c out analytically: y − e^g·r_σ ~ N(0, s²I + 11ᵀ).
// It implements CollapsedLikelihood and not Collapser.
type collapsedShift struct{ *shiftModel }

var _ CollapsedLikelihood = collapsedShift{}

func (m collapsedShift) CollapsedSites() []string { return []string{"c"} }

func (m collapsedShift) CollapsedLogLik(s *State) (float64, error) {
	g := 1.0
	if m.scaled {
		g = math.Exp(s.Reals["g"][0])
	}
	n := float64(len(m.ref))
	ss, sum := 0.0, 0.0
	for i, j := range s.Perms["P"][0] {
		e := m.obs[i] - g*m.ref[j]
		ss += e * e
		sum += e
	}
	s2 := m.s * m.s
	logDet := n*math.Log(s2) + math.Log1p(n/s2)
	return -0.5*(n*math.Log(2*math.Pi)+logDet) - 0.5*(ss-sum*sum/(s2+n))/s2, nil
}

func newShiftModel(n int, seed uint64, scaled bool) *shiftModel {
	pm := newPointMatch(n, seed)
	obs := make([]float64, n)
	for i := range obs {
		obs[i] = pm.obs[i] + 0.3 // shifted by c = 0.3
	}
	return &shiftModel{ref: pm.ref, obs: obs, s: 0.2, scaled: scaled}
}

// closeExact reports the largest differences of the marginals and of the
// log evidences of a and b.
func closeExact(t *testing.T, a, b *ExactResult) (marg, logZ float64) {
	t.Helper()
	ma, mb := a.Perms["P"].Marginals[0], b.Perms["P"].Marginals[0]
	r, c := ma.Dims()
	for i := range r {
		for j := range c {
			marg = math.Max(marg, math.Abs(ma.At(i, j)-mb.At(i, j)))
		}
	}
	return marg, math.Abs(a.LogEvidence - b.LogEvidence)
}

func TestExactUsesOnlyCollapsedLikelihood(t *testing.T) {
	m := newShiftModel(5, 11, false)
	col := collapsedShift{m}
	if _, ok := any(col).(Collapser); ok {
		t.Fatal("the test model must not implement Collapser")
	}
	ex, err := Exact(col)
	if err != nil {
		t.Fatal(err)
	}
	if ex.QuadError != 0 || ex.Reals != nil {
		t.Errorf("analytic collapse: QuadError %v, reals %v", ex.QuadError, ex.Reals)
	}
	// The same posterior by quadrature over c.
	num, err := Exact(m)
	if err != nil {
		t.Fatal(err)
	}
	dm, dz := closeExact(t, ex, num)
	t.Logf("collapsed vs numerical: marginals %.2g, log evidence %.2g (QuadError %.2g)", dm, dz, num.QuadError)
	if dm > 2*num.QuadError+1e-12 || dz > num.QuadError+1e-12 {
		t.Errorf("marginals differ by %v, log evidences by %v; QuadError %v", dm, dz, num.QuadError)
	}
}

func TestExactMixesCollapsedAndNumericalSites(t *testing.T) {
	m := newShiftModel(5, 12, true)
	mixed, err := Exact(collapsedShift{m}) // c analytically, g numerically
	if err != nil {
		t.Fatal(err)
	}
	num, err := Exact(m) // c and g numerically
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mixed.Reals["c"]; ok {
		t.Error("the collapsed site c is reported")
	}
	if mixed.QuadError <= 0 || num.QuadError <= 0 {
		t.Errorf("QuadError %v and %v", mixed.QuadError, num.QuadError)
	}
	dm, dz := closeExact(t, mixed, num)
	bound := mixed.QuadError + num.QuadError
	t.Logf("mixed vs numerical: marginals %.2g, log evidence %.2g (bounds %.2g, %.2g); notes %q", dm, dz, mixed.QuadError, num.QuadError, mixed.Notes)
	if dm > 2*bound+1e-12 || dz > bound+1e-12 {
		t.Errorf("marginals differ by %v, log evidences by %v; bound %v", dm, dz, bound)
	}
	a, b := mixed.Reals["g"], num.Reals["g"]
	if math.Abs(a.Mean[0]-b.Mean[0]) > 1e-6 || math.Abs(a.Std[0]-b.Std[0]) > 1e-6 {
		t.Errorf("g: %v ± %v mixed, %v ± %v numerical", a.Mean[0], a.Std[0], b.Mean[0], b.Std[0])
	}
}
